"""What a reviewer needs to check a verdict without leaving the pull request. Pure.

For a flipped row: the candidate's answer cut into pieces, each unsupported
figure or statement marked as a numbered claim; for each claim the context
passage that contradicts it (the judge's span, when its statements gave one)
or else the context sentence that shares most of its content words
("closest in the context"), or none when no sentence shares any; the whole
context cut into passages, those the judge's supported statements cite
marked as supporting and each claim's closest passage marked with the
claim's number; and, when the two answers are close enough for it to help,
a word-level diff baseline -> candidate.

Everything here is plain text and indexes; the comment's template escapes it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from flipgate.model import Evidence, Statement, StatementLabel
from flipgate.verdict.evidence import content_words, cut_text, split_statements

# Below this share of common words a word diff reads as noise: show both answers instead.
DIFF_SIMILARITY = 0.4
DIFF_MAX_WORDS = 2_000  # longer answers are not diffed: too slow to compute, too long to read
MAX_CLAIMS = 20  # claims marked in one answer; the rest are in report.json
MAX_PASSAGES = 40  # supporting passages marked in one context
MAX_PASSAGE_WORDS = 400  # a longer span is looked for verbatim only
_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True)
class Piece:
    """A run of the answer; `claim` is the claim's number (1-based) when it is unsupported."""

    text: str
    claim: int | None = None


@dataclass(frozen=True)
class Claim:
    number: int
    closest: str | None        # the context sentence closest to it; None: nothing mentions it
    cited: bool = False        # `closest` is the judge's own span, not the lexical match


@dataclass(frozen=True)
class Passage:
    """A run of the context: `supports` when a supported statement of the judge cites it,
    `claims` the numbers of the claims it contradicts or comes closest to."""

    text: str
    supports: bool = False
    claims: tuple[int, ...] = ()

    @property
    def marked(self) -> bool:
        return self.supports or bool(self.claims)


@dataclass(frozen=True)
class Change:
    """A run of the word diff: `op` is "same", "del" (baseline only) or "ins" (candidate only)."""

    op: str
    text: str
    claim: int | None = None   # inserted or kept candidate words inside an unsupported claim


@dataclass(frozen=True)
class Review:
    answer: tuple[Piece, ...]
    claims: tuple[Claim, ...]
    diff: tuple[Change, ...] | None   # None: the answers differ too much for a word diff
    context: tuple[Passage, ...] = ()  # the whole context, its cited passages marked

    @property
    def marked_passages(self) -> int:
        return sum(1 for passage in self.context if passage.marked)


def _spans(answer: str, evidence: Evidence) -> list[tuple[int, int]]:
    """Where each unsupported statement or figure sits in the answer, in order, not
    overlapping (a figure inside an unsupported statement is part of that claim).

    At most MAX_CLAIMS claims, each looked for in at most MAX_CLAIMS + 1 places: a
    judge's list of thousands of statements costs no more than a reader can read."""
    spans: list[tuple[int, int]] = []
    texts = dict.fromkeys(text for text in (*evidence.unsupported_statements,
                                            *evidence.unsupported_figures) if text)
    for text in texts:
        if len(spans) >= MAX_CLAIMS:
            break
        start = answer.find(text)
        for _attempt in range(MAX_CLAIMS + 1):
            if start < 0:
                break
            end = start + len(text)
            if not any(s < end and start < e for s, e in spans):
                spans.append((start, end))
                break
            start = answer.find(text, start + 1)
    return sorted(spans)


def _enclosing_statement(answer: str, span: tuple[int, int]) -> str:
    """The statement of the answer a figure stands in: what its closest sentence is sought for."""
    cursor = 0
    for statement in split_statements(answer):
        start = answer.find(statement, cursor)
        if start < 0:
            continue
        cursor = start + len(statement)
        if start <= span[0] and span[1] <= cursor:
            return statement
    return answer[span[0]:span[1]]


def closest_sentence(context: str, claim: str) -> str | None:
    """The context sentence sharing the most content words with `claim` (the first of
    equals); None when no sentence shares a single one."""
    wanted = content_words(claim)
    best, best_score = None, 0
    for sentence in split_statements(context):
        score = len(wanted & content_words(sentence))
        if score > best_score:
            best, best_score = sentence, score
    return best


def mark_answer(answer: str, context: str, evidence: Evidence,
                judge_spans: Mapping[str, str] | None = None) -> tuple[tuple[Piece, ...],
                                                                      tuple[Claim, ...]]:
    """The answer in pieces with its unsupported claims numbered, and each claim's closest
    context passage: the judge's span for that statement when it gave one
    (`judge_spans`: statement text -> span), else the lexically closest sentence."""
    pieces: list[Piece] = []
    claims: list[Claim] = []
    cursor = 0
    for start, end in _spans(answer, evidence):
        if start > cursor:
            pieces.append(Piece(answer[cursor:start]))
        number = len(claims) + 1
        pieces.append(Piece(answer[start:end], claim=number))
        cited = (judge_spans or {}).get(answer[start:end])
        claims.append(Claim(number, cited, cited=True) if cited else Claim(number, closest_sentence(
            context, _enclosing_statement(answer, (start, end)))))
        cursor = end
    if cursor < len(answer) or not pieces:
        pieces.append(Piece(answer[cursor:]))
    return tuple(pieces), tuple(claims)


def _words(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _TOKEN.finditer(text)]


def word_diff(baseline: str, candidate: str,
              pieces: Sequence[Piece] = ()) -> tuple[Change, ...] | None:
    """Baseline -> candidate word by word, the candidate's claims kept; None when the two
    share too little for a diff to read well."""
    before, after = _words(baseline), _words(candidate)
    if max(len(before), len(after)) > DIFF_MAX_WORDS:
        return None
    matcher = difflib.SequenceMatcher(a=[baseline[s:e] for s, e in before],
                                      b=[candidate[s:e] for s, e in after], autojunk=False)
    if matcher.quick_ratio() < DIFF_SIMILARITY or matcher.ratio() < DIFF_SIMILARITY:
        return None
    claim_at = _claim_lookup(pieces)
    changes: list[Change] = []

    def add(op: str, text: str, claim: int | None = None) -> None:
        if changes and changes[-1].op == op and changes[-1].claim == claim:
            changes[-1] = Change(op, f"{changes[-1].text} {text}", claim)
        else:
            changes.append(Change(op, text, claim))

    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            add("del", " ".join(baseline[s:e] for s, e in before[a0:a1]))
        if tag in ("insert", "replace", "equal"):
            for s, e in after[b0:b1]:
                add("same" if tag == "equal" else "ins", candidate[s:e], claim_at(s, e))
    return tuple(changes)


def _claim_lookup(pieces: Sequence[Piece]):  # noqa: ANN202 - a small closure
    """(start, end) of a candidate word -> the claim it belongs to, if any."""
    ranges, cursor = [], 0
    for piece in pieces:
        if piece.claim is not None:
            ranges.append((cursor, cursor + len(piece.text), piece.claim))
        cursor += len(piece.text)

    def claim_at(start: int, end: int) -> int | None:
        return next((number for s, e, number in ranges if s < end and start < e), None)
    return claim_at


def _find(context: str, passage: str, cursor: int = 0) -> tuple[int, int] | None:
    """Where `passage` stands in `context`: verbatim, else with any run of whitespace
    for each of its own (the judge's span is checked verbatim up to whitespace)."""
    start = context.find(passage, cursor)
    if start >= 0:
        return start, start + len(passage)
    words = passage.split()
    if not words or len(words) > MAX_PASSAGE_WORDS:
        return None
    found = re.compile(r"\s+".join(map(re.escape, words))).search(context, cursor)
    return (found.start(), found.end()) if found else None


def mark_context(context: str, *, supporting: Sequence[str],
                 claims: Sequence[Claim]) -> tuple[Passage, ...]:
    """The whole context in passages: those `supporting` names (spans the judge cited for
    supported statements) and each claim's closest passage marked, overlaps merged."""
    marks: list[tuple[int, int, bool, tuple[int, ...]]] = []
    for text in dict.fromkeys(s for s in supporting if s and s.strip()):
        if len(marks) >= MAX_PASSAGES:
            break
        if (where := _find(context, text)) is not None:
            marks.append((*where, True, ()))
    for claim in claims:
        if claim.closest and (where := _find(context, claim.closest)) is not None:
            marks.append((*where, False, (claim.number,)))
    bounds = sorted({0, len(context), *(at for start, end, _, _ in marks for at in (start, end))})
    passages: list[Passage] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        covering = [m for m in marks if m[0] <= start and end <= m[1]]
        passage = Passage(context[start:end], supports=any(m[2] for m in covering),
                          claims=tuple(sorted({n for m in covering for n in m[3]})))
        if passages and (passages[-1].supports, passages[-1].claims) == (passage.supports,
                                                                           passage.claims):
            passage = Passage(passages[-1].text + passage.text, passage.supports, passage.claims)
            passages.pop()
        passages.append(passage)
    return tuple(passages)


def cited_spans(statements: Sequence[Statement]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The judge's spans: those of supported statements, and unsupported statement -> the
    passage it said contradicts it."""
    supporting = tuple(s.span for s in statements
                       if s.label is StatementLabel.SUPPORTED and s.span)
    contradicting = {s.text: s.span for s in statements
                     if s.label is StatementLabel.UNSUPPORTED and s.span}
    return supporting, contradicting


def review(*, context: str, baseline: str, candidate: str, evidence: Evidence | None,
           statements: Sequence[Statement] = ()) -> Review:
    """A row's review. The answers are read as far as the evidence check reads them
    (`evidence.EVIDENCE_LIMIT`): the comment shows far less, and a hostile answer of a
    megabyte must cost no more here than there. `statements`: the judge's, whose spans
    mark the context."""
    candidate, _ = cut_text(candidate)
    baseline, _ = cut_text(baseline)
    supporting, contradicting = cited_spans(statements)
    pieces, claims = mark_answer(candidate, context, evidence or Evidence(), contradicting)
    return Review(answer=pieces, claims=claims,
                  diff=word_diff(baseline, candidate, pieces) if baseline.strip() else None,
                  context=mark_context(context, supporting=supporting, claims=claims))
