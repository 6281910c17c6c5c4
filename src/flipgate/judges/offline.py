"""The offline judge: lexical, deterministic, no network, no API key.

It scores with the same five groundedness levels as the LLM judges (the
rubric with the query), but reads words and figures instead of meaning:

  1  unrelated: the answer's content words are mostly absent from both the
     context and the question
  2  answers, but a figure, a name, what it says a thing is ("is a Y") or a
     statement is not in the context, or a claim contradicts it
     (`verdict/contradiction.py`: what the context negates or affirms, a
     figure or a name the context gives otherwise, a figure the context gives
     another item, an order its years reverse); the reason quotes the
     clashing passage
  3  non-answer: no checkable claim, only deflection ("contact support",
     "it depends"), a question back, a refusal or filler; also an empty answer
  4  supported, but it misses a key fact (below)
  5  supported and complete

"Complete" means the answer carries the key facts. With a `ground_truth`
they are its figures (or, when it has none, at least half of its content
words). Without one, they are the figures of the context sentences that
share the most content words with the question (or half of those
sentences' other content words when they hold no figure).

Because it is deterministic, the re-score (`sample=1`) always agrees with
the first scoring: a newly ungrounded row is a regression, never
`unstable`. That agreement is not a second opinion, so nothing this judge
decides is called "confirmed" (gate.py's `confirmation_phrase`): its rows
say what decided (the figure check, the negation clash). Relevance is the share of the question's
content words the answer addresses, 0 for a non-answer. Fluency is a crude
sentence-structure heuristic, nothing more.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from flipgate.config.schema import OFFLINE_MODEL, Config
from flipgate.judges.base import EMPTY_ANSWER
from flipgate.model import Case, JudgeInfo, Relevance, Score, Statement, StatementLabel, Statements
from flipgate.text.escaping import quoted
from flipgate.verdict import contradiction, evidence, figures, structured, weighing
from flipgate.verdict.contradiction import clash_reason, find_clashes
from flipgate.verdict.evidence import (
    Analysis,
    Kind,
    StatementCheck,
    analyse,
    content_words,
    coverage,
    cut_note,
    cut_text,
    lexical_statements,
    split_statements,
)
from flipgate.verdict.figures import Figure, extract_figures, same_fact
from flipgate.verdict.gate import NOT_JUDGED_OFFLINE, reads_ungrounded
from flipgate.verdict.structured import readable_context
from flipgate.verdict.weighing import (
    LONG_ANSWER,
    NOTHING_SHARED,
    Shared,
    novel_findings,
    shared_findings,
    weigh,
    without_shared,
)

# An answer is "unrelated" (1) when less than this share of its content words
# occurs in the context and the question, and it addresses less than this
# share of the question.
UNRELATED_BELOW = 1 / 3
# Without figures among the key facts, a complete answer carries at least
# this share of their content words.
KEY_WORDS_NEEDED = 1 / 2

# Question words that a figure of the right kind answers: "how much does it
# cost?" is addressed by "$12" even if the answer never says "cost".
_ANSWERED_BY_FIGURE: dict[str, frozenset[str]] = {
    "fee": frozenset({"usd", "eur", "gbp", "percent"}),
    "long": frozenset({"second", "minute", "hour", "day", "month"}),
}
_QUOTE_LIMIT = 90


def _listing(items: Sequence[str]) -> str:
    return ", ".join(quoted(item, _QUOTE_LIMIT) for item in items)


# --- completeness -------------------------------------------------------------

def key_facts(case: Case) -> tuple[str, list[Figure], frozenset[str]]:
    """What a complete answer must carry: (where it comes from, figures, content words)."""
    query_words = content_words(case.query)
    if case.ground_truth and case.ground_truth.strip():
        return ("the ground truth", extract_figures(case.ground_truth),
                content_words(case.ground_truth) - query_words)
    ranked = [(len(content_words(sentence) & query_words), sentence)
              for sentence in split_statements(case.context)]
    best = max((shared for shared, _ in ranked), default=0)
    if best == 0:
        return "the context", [], frozenset()
    key = [sentence for shared, sentence in ranked if shared == best]
    figures = [figure for sentence in key for figure in extract_figures(sentence)]
    words = frozenset().union(*(content_words(sentence) for sentence in key)) - query_words
    return "the context", figures, words


def missing_facts(case: Case, analysis: Analysis) -> tuple[str, list[str]]:
    """The key facts the answer leaves out, as written in their source."""
    source, figures, words = key_facts(case)
    if figures:
        said = analysis.figures
        missing = [f.text for f in figures if not any(same_fact(f, s) for s in said)]
        return source, list(dict.fromkeys(missing))
    if words and coverage(words, analysis.answer_words) < KEY_WORDS_NEEDED:
        return source, sorted(words - analysis.answer_words)
    return source, []


# --- groundedness -------------------------------------------------------------

def grade_groundedness(case: Case, response: str, *, shared: Shared = NOTHING_SHARED) -> Score:
    """The 1-5 groundedness of `response`, with a reason naming what decided it (and, for
    an answer too long to read whole, where its reading stopped), or the answer set aside
    (`Score.aside`) when the lexical reader cannot weigh it. `shared`: findings the
    baseline makes too, not counted against this answer (`grade_pair`)."""
    if not response.strip():
        return EMPTY_ANSWER
    readable = readable_case(case)
    whole = analyse(readable.context, response, query=case.query)
    analysis = without_shared(whole, shared)
    # Long or short is the whole answer's measure: less what the baseline shares, a long
    # answer is not read as a short one, statement by statement.
    score = _grade(readable, analysis, record=readable is not case,
                   long=len(whole.claims) >= LONG_ANSWER)
    if analysis.cut_at is None or score.set_aside:
        return score
    return Score(score.value, f"{score.reason} ({'; '.join(analysis.notes)})")


def grade_pair(case: Case, baseline: str, candidate: str) -> tuple[Score, Score]:
    """Both sides of a row. The flip is what the candidate says that the baseline did not:
    a candidate read ungrounded against a baseline that is not is read again without the
    findings the baseline shares (the same misreading on both sides is no flip)."""
    before, after = grade_groundedness(case, baseline), grade_groundedness(case, candidate)
    if before.set_aside or reads_ungrounded(before) or not baseline.strip() or not candidate.strip():
        return before, after
    readable = readable_case(case)
    base = analyse(readable.context, baseline, query=case.query)
    if not reads_ungrounded(after):
        return before, _beside(readable, base, baseline, candidate,
                               record=readable is not case) or after
    return before, grade_groundedness(case, candidate, shared=shared_findings(
        base, find_clashes(base.statements, readable.context, query=case.query)))


def _beside(case: Case, base: Analysis, baseline: str, candidate: str, *,
            record: bool) -> Score | None:
    """The candidate's statements its grounded baseline does not make, read strictly
    (`weighing.novel_findings`): an ungrounded reading naming them, or None."""
    found = novel_findings(analyse(case.context, candidate, query=case.query), baseline, base,
                           record=record)
    if not found:
        return None
    return Score(2, "unsupported beside the baseline: " + "; ".join(
        f"{'names' if novel.names else 'figures'} neither the context nor the baseline gives "
        f"({_listing(novel.names or novel.figures)}): {quoted(novel.check.text, _QUOTE_LIMIT)}"
        for novel in found))


def readable_case(case: Case) -> Case:
    """The case with a structured (JSON) context written out as sentences."""
    context = readable_context(case.context)
    return case if context is case.context else replace(case, context=context)


def _grade(case: Case, analysis: Analysis, *, record: bool = False, long: bool = False) -> Score:
    clashes = find_clashes(analysis.statements, case.context, query=case.query)
    if long and analysis.claims:
        weighed = weigh(analysis, clashes, record=record)
        if weighed.aside:
            return Score.aside(f"{NOT_JUDGED_OFFLINE}: {weighed.aside}")
        if weighed.decisive:
            return Score(2, "unsupported: " + "; ".join(
                [clash_reason(clash) for clash in weighed.clashes]
                + [_finding(check, analysis) for check in weighed.decisive_checks]))
        return _complete(case, analysis, note=weighed.note)
    if clashes:
        parts = [clash_reason(clash) for clash in clashes]
        if analysis.unsupported_figures:
            parts.append("figures not in the context: "
                         f"{_listing(analysis.evidence().unsupported_figures)}")
        return Score(2, "contradicts the context: " + "; ".join(parts))
    if analysis.non_answer:
        brush_off = next((s.text for s in analysis.statements
                          if s.kind in (Kind.DEFLECTION, Kind.QUESTION)), None)
        detail = f"; it deflects or asks back: {quoted(brush_off, _QUOTE_LIMIT)}" if brush_off else " (only filler)"
        return Score(3, f"non-answer: no checkable claim{detail}")

    answer_words = analysis.answer_words
    in_sources = coverage(answer_words, analysis.known_words)
    addressed = query_coverage(case.query, analysis.text, analysis)
    supported_figures = len(analysis.figures) - len(analysis.unsupported_figures)
    if in_sources < UNRELATED_BELOW and addressed < UNRELATED_BELOW and not supported_figures:
        return Score(1, f"unrelated: {in_sources:.0%} of the answer's content words occur in the "
                        f"context or question, and it addresses {addressed:.0%} of the question")

    evidence = analysis.evidence()
    if evidence.unsupported_figures or evidence.unsupported_statements:
        parts = []
        if evidence.unsupported_figures:
            parts.append(f"figures not in the context: {_listing(evidence.unsupported_figures)}")
        for statement in analysis.unsupported_statements:
            if statement.unknown_names:
                parts.append(f"names not in the context ({_listing(statement.unknown_names)}): "
                             f"{quoted(statement.text, _QUOTE_LIMIT)}")
            elif statement.unknown_predicates:
                parts.append(f"what it says a thing is, not in the context "
                             f"({_listing(statement.unknown_predicates)}): "
                             f"{quoted(statement.text, _QUOTE_LIMIT)}")
            else:
                parts.append(f"statement not supported ({statement.coverage:.0%} of its content "
                             f"words in the context): {quoted(statement.text, _QUOTE_LIMIT)}")
        return Score(2, "unsupported: " + "; ".join(parts))

    return _complete(case, analysis)


def _complete(case: Case, analysis: Analysis, *, note: str = "") -> Score:
    source, missing = missing_facts(case, analysis)
    claims = f"all {len(analysis.claims)} claim(s)" if not note else note
    if missing:
        return Score(4, f"supported but incomplete: {claims} are in the context, "
                        f"but it leaves out {_listing(missing)} from {source}")
    return Score(5, f"supported and complete: {claims} and "
                    f"{len(analysis.figures)} figure(s) are in the context, and it carries the "
                    f"key facts of {source}")


def _finding(check: StatementCheck, analysis: Analysis) -> str:
    bad = [f.text for f in check.figures if f in analysis.unsupported_figures]
    if bad:
        return f"figures not in the context ({_listing(bad)}): {quoted(check.text, _QUOTE_LIMIT)}"
    return f"names not in the context ({_listing(check.unknown_names)}): {quoted(check.text, _QUOTE_LIMIT)}"


def statements_with_clashes(case: Case, response: str) -> tuple[Statement, ...]:
    """The lexical statement list, each contradicting claim unsupported with the
    passage it clashes with as its span (the row's evidence shows that passage)."""
    case = readable_case(case)
    analysis = analyse(case.context, response, query=case.query)
    items = lexical_statements(case.context, response, query=case.query, analysis=analysis)
    clashes = {clash.claim: clash.passage
               for clash in find_clashes(analysis.statements, case.context, query=case.query)}
    return tuple(Statement(item.text, StatementLabel.UNSUPPORTED, span=clashes[item.text])
                 if item.text in clashes else item for item in items)


# --- relevance ----------------------------------------------------------------

def query_coverage(query: str, response: str, analysis: Analysis | None = None) -> float:
    """Share of the question's content words the answer addresses (1.0 for an empty question).

    A word counts as addressed when the answer uses it, uses a compound that
    starts with it ("cardholders" for "card"), or gives a figure of the kind
    the word asks for ("$12" for "cost").
    """
    wanted = content_words(query)
    if not wanted:
        return 1.0
    said = content_words(analysis.text if analysis else cut_text(response)[0])
    units = {figure.unit for figure in (analysis.figures if analysis
                                        else extract_figures(cut_text(response)[0]))}
    answered = {word for word, kinds in _ANSWERED_BY_FIGURE.items() if units & kinds}

    def addressed(word: str) -> bool:
        return word in said or word in answered or (
            len(word) >= 4 and any(other.startswith(word) for other in said))

    return sum(1 for word in wanted if addressed(word)) / len(wanted)


def lexical_relevance(case: Case, response: str) -> Relevance:
    """Relevance without a model: question coverage, 0 when the answer is noncommittal."""
    if not response.strip():
        return Relevance(score=0.0, noncommittal=True)
    analysis = analyse(case.context, response, query=case.query)
    if analysis.non_answer:
        return Relevance(score=0.0, noncommittal=True)
    return Relevance(score=round(query_coverage(case.query, analysis.text, analysis), 3))


def _row_relevance(case: Case, response: str) -> Relevance:
    """One answer's relevance; if its reading fails, that answer's error, not the batch's."""
    try:
        return lexical_relevance(case, response)
    except Exception as exc:  # noqa: BLE001 - one answer must not fail every row's relevance
        return Relevance(score=None, error=f"relevance failed: {type(exc).__name__}: {exc}")


# --- fluency ------------------------------------------------------------------

_REPEATED_WORD = re.compile(r"\b(\w+)\s+\1\b", re.IGNORECASE)
_REPEATED_MARKS = re.compile(r"[!?]{2,}")
_CAPITALISED_WORD = re.compile(r"\b[A-Z]{5,}\b")
_END = ('.', '!', '?', ')', '"', '\u201d', ':')


def fluency_heuristic(response: str) -> Score:
    """A crude 1-5 fluency from sentence structure: each fault found costs a point.
    Like the evidence, it reads the first `EVIDENCE_LIMIT` characters only."""
    response, cut_at = cut_text(response)
    statements = split_statements(response, semicolons=False)
    if not statements:
        return Score(1, "crude sentence-structure heuristic (not an LLM): empty answer")
    faults = []
    if any(s[0].islower() for s in statements):
        faults.append("a sentence starts in lower case")
    if not response.rstrip().endswith(_END):
        faults.append("it does not end with punctuation")
    mean_words = sum(len(s.split()) for s in statements) / len(statements)
    if mean_words < 4:
        faults.append(f"fragments ({mean_words:.1f} words a sentence)")
    elif mean_words > 35:
        faults.append(f"run-on sentences ({mean_words:.0f} words a sentence)")
    if _REPEATED_WORD.search(response):
        faults.append("a word is repeated")
    if _REPEATED_MARKS.search(response) or len(_CAPITALISED_WORD.findall(response)) >= 2:
        faults.append("shouting (capitals or repeated !/?)")
    found = "; ".join(faults) if faults else "no structural fault found"
    if cut_at is not None:
        found += f" ({cut_note(cut_at)})"
    return Score(max(1, 5 - len(faults)),
                 f"crude sentence-structure heuristic (not an LLM): {found}")


# --- the judge ----------------------------------------------------------------

def _code_hash() -> str:
    """The lexical judge's rubric is its code: a hash of the modules that decide."""
    digest = hashlib.sha256()
    for module_file in (__file__, evidence.__file__, figures.__file__, contradiction.__file__,
                        structured.__file__, weighing.__file__):
        digest.update(Path(module_file).read_bytes())
    return digest.hexdigest()


class OfflineJudge:
    """The `Judge` protocol on the lexical checks above: no network, same answer every time."""

    info = JudgeInfo(provider="offline", model=OFFLINE_MODEL, engine="lexical", auth=None,
                     rubric_version=OFFLINE_MODEL,
                     rubric_hash=dict.fromkeys(("groundedness", "relevance", "fluency", "statements"),
                                               _code_hash()))

    def __init__(self, config: Config) -> None:
        self.config = config

    async def groundedness(self, case: Case, response: str, *, sample: int = 0) -> Score:
        # Deterministic: every sample reads the same, so a re-score confirms.
        return grade_groundedness(case, response)

    async def groundedness_beside(self, case: Case, response: str, baseline: str) -> Score:
        """The candidate's reading beside its baseline (`grade_pair`): findings both share
        are no flip."""
        return grade_pair(case, baseline, response)[1]

    async def fluency(self, response: str) -> Score:
        return fluency_heuristic(response)

    async def statements(self, case: Case, response: str) -> Statements:
        return Statements(items=statements_with_clashes(case, response))

    async def relevance(self, items: Sequence[tuple[Case, str]]) -> list[Relevance]:
        return [_row_relevance(case, response) for case, response in items]

    async def probe(self) -> None:
        """Nothing to reach: the lexical judge runs here."""

    async def aclose(self) -> None:
        return None
