"""How the offline judge weighs a long answer: by what its statements show, not by any one.

A lexical reader misreads about one faithful statement in four (a paraphrase, a synonym for
the context's word), so over a long answer "one unsupported statement flags it all" flags
nearly every answer. An answer of `LONG_ANSWER` claims or more is weighed instead:

* **decisive findings** make it ungrounded: a name or an order the contradiction check reads
  against a passage, a figure in digits the context does not hold, and a name the context
  never uses in a statement mostly of new words;
* **weak findings** (a statement whose words are mostly not the context's, the words a
  retelling wraps facts in aside, a name the context never uses, a negation or figure clash,
  a loose figure such as "a week") are counted: when `ASIDE_SHARE` of the claims or more are weak, the
  reader cannot tell a paraphrase from an invention and the answer is **set aside** ("not
  judged offline"), never called ungrounded; below it they are reported, not decisive;
* an answer cut at the evidence limit is set aside too: the judge did not read it whole.

`shared_findings` is the pairwise rule: the findings a baseline makes too, which a candidate
is not charged with (a misreading both sides share is no flip). Pure functions only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from flipgate.verdict.contradiction import ENTITY, ORDER, Clash
from flipgate.verdict.evidence import (
    SUPPORT_THRESHOLD,
    Analysis,
    Kind,
    StatementCheck,
    content_words,
    coverage,
    cut_note,
    name_vocabulary,
    unknown_names,
)
from flipgate.verdict.figures import NUMBER_WORDS, Figure, vouched
from flipgate.verdict.structured import is_record_fact

# From this many claims an answer is weighed statement by statement.
LONG_ANSWER = 3
# Weak findings in at least this share of the claims: too little overlap to tell.
ASIDE_SHARE = 2 / 3


# Clashes that decide a long answer. A negation clash and a figure clash (a figure the context
# holds, given another item) are weak there: over many sentences a faithful paraphrase often
# shares a word with some denial, or a number with some other sentence. An invented figure
# is decisive anyway, as a figure the context does not hold.
DECISIVE_CLASHES = frozenset({ENTITY, ORDER})
_DIGIT = re.compile(r"\d")


def _written(figure: Figure) -> bool:
    """A figure written in digits; "a week", "a year" are too loose to decide a long answer."""
    return _DIGIT.search(figure.text) is not None


def _counted(figure: Figure) -> bool:
    """A figure written in digits or a number word ("four years", "six states"), not "a year"."""
    return _written(figure) or any(word in NUMBER_WORDS for word in figure.text.lower().split())


# Words a retelling wraps its facts in ("it offers", "is located", "overall", "customers
# praised"): no checkable fact, so in a long answer they neither support nor weaken a statement.
_GLUE = content_words(
    "offer offers offered located location overall receive received experience experiences option "
    "options known available feature features according describe described report reported "
    "mention mentioned highlight highlighted note noted provide provides include includes "
    "variety range various particular specific popular positive negative mixed praise praised "
    "appreciate appreciated enjoy enjoyed recommend recommended feedback establishment")


def _weak(check: StatementCheck, known: frozenset[str]) -> bool:
    """Is a long answer's statement mostly not in the context's words (wrapping words aside),
    or does it name what the context never does? An unknown "is a Y" alone is not enough:
    in a retelling it is mostly the writer's own word for the context's."""
    return bool(check.unknown_names) or coverage(check.words - _GLUE, known) < SUPPORT_THRESHOLD


def _invented_name(check: StatementCheck) -> bool:
    """A name the context never uses, in a statement whose other words are mostly not the
    context's either: something new brought in, not a name spelt another way."""
    return bool(check.unknown_names) and check.coverage < SUPPORT_THRESHOLD


@dataclass(frozen=True)
class Shared:
    """Findings of the baseline: its statements' words, and its unread figures' texts."""

    statements: tuple[frozenset[str], ...] = ()
    figures: frozenset[str] = frozenset()
    claims: frozenset[str] = field(default_factory=frozenset)

    def covers(self, check: StatementCheck) -> bool:
        """Does the baseline say this statement's content too (and misread it)?"""
        return check.text in self.claims or any(
            check.words and coverage(check.words, words) >= SUPPORT_THRESHOLD
            for words in self.statements)


NOTHING_SHARED = Shared()


def shared_findings(baseline: Analysis, clashes: Iterable[Clash]) -> Shared:
    """What the baseline's reading already finds: its unsupported or clashing statements."""
    clashing = {clash.claim for clash in clashes}
    bad = [check for check in baseline.statements
           if not check.supported or check.text in clashing
           or any(f in baseline.unsupported_figures for f in check.figures)]
    return Shared(statements=tuple(check.words for check in bad),
                  figures=frozenset(f.text for f in baseline.unsupported_figures),
                  claims=frozenset(check.text for check in bad))


def without_shared(analysis: Analysis, shared: Shared) -> Analysis:
    """The analysis less what the baseline shares: its misread statements and figures."""
    if shared is NOTHING_SHARED:
        return analysis
    kept = tuple(check for check in analysis.statements
                 if check.kind is not Kind.CLAIM or not shared.covers(check))
    figures = tuple(f for f in analysis.unsupported_figures
                    if f.text not in shared.figures and any(f in check.figures for check in kept))
    return replace(analysis, statements=kept, unsupported_figures=figures)


@dataclass(frozen=True)
class Weighed:
    clashes: tuple[Clash, ...] = ()
    decisive_checks: tuple[StatementCheck, ...] = ()
    weak: tuple[StatementCheck, ...] = ()
    aside: str = ""   # why the answer is set aside; "" when it is judged
    note: str = ""    # how many claims were read as supported, for the reason

    @property
    def decisive(self) -> bool:
        return bool(self.clashes or self.decisive_checks)


def weigh(analysis: Analysis, clashes: Sequence[Clash], *, record: bool = False) -> Weighed:
    """Weigh a long answer's findings (see the module docstring). Against a structured
    `record` a negation clash with one of its yes/no attributes is decisive too: "No outdoor
    seating." is the record's own word, not a paraphrase's accident."""
    claims = analysis.claims
    if analysis.cut_at is not None:
        return Weighed(aside=f"too long to weigh: {cut_note(analysis.cut_at)}")
    loose = {clash.claim for clash in clashes}
    clashes = [clash for clash in clashes if clash.how in DECISIVE_CLASHES
               or record and is_record_fact(clash.passage)]
    clashing = {clash.claim for clash in clashes}
    decisive = tuple(check for check in claims
                     if check.text not in clashing
                     and (any(f in analysis.unsupported_figures and _written(f) for f in check.figures)
                          or _invented_name(check) and not record))
    weak = tuple(check for check in claims
                 if (_weak(check, analysis.known_words) or check.text in loose)
                 and check not in decisive and check.text not in clashing)
    if clashes or decisive:
        return Weighed(tuple(clashes), decisive, weak)
    if len(weak) >= ASIDE_SHARE * len(claims):
        return Weighed(weak=weak, aside=f"too little overlap with the context to tell: {len(weak)} "
                                        f"of {len(claims)} statements are not in its words")
    read = len(claims) - len(weak)
    note = f"{read} of {len(claims)} claim(s)" + (
        f" ({len(weak)} in other words than the context's, not weighed)" if weak else "")
    return Weighed(weak=weak, note=note)


@dataclass(frozen=True)
class Novel:
    """A candidate's statement that brings in what neither the context nor its baseline says."""

    check: StatementCheck
    names: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()


def novel_findings(candidate: Analysis, baseline_text: str, baseline: Analysis, *,
                   record: bool = False) -> tuple[Novel, ...]:
    """The pairwise reading of a candidate beside a grounded baseline: a statement the baseline
    does not make (its words not covered by any baseline statement), with a name the context
    and the baseline never write, or a counted figure ("four years", "2,000") that neither
    holds. The baseline answered the same question from the same context without it, so it is
    no paraphrase of a shared fact: read strictly, it decides, where alone it would be weak.
    Against a structured `record` only figures count: its keys are written out as words, so a
    name spelt as a key ("WiFi") or an address ("CA", "Rd") is not read reliably."""
    spoken = name_vocabulary(baseline_text)
    said = [check.words for check in baseline.claims]
    said_figures = [figure for check in baseline.statements for figure in check.figures]
    found = []
    for check in candidate.claims:
        if any(check.words and coverage(check.words, words) >= SUPPORT_THRESHOLD for words in said):
            continue
        unsaid = set(unknown_names(check.text, spoken))
        names = () if record else tuple(name for name in check.unknown_names if name in unsaid)
        figures = tuple(f.text for f in check.figures if f in candidate.unsupported_figures
                        and _counted(f) and not vouched(f, said_figures))
        if names or figures:
            found.append(Novel(check, names, figures))
    return tuple(found)
