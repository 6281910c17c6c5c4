"""The gate's pure core: every rule about a row, and what the rows add up to.

Nothing here does I/O. Buckets, verdicts (and how a flip is confirmed: the
same judge again, a second-opinion judge, or both), the judge-error
override, which rows carry evidence and get a statement list, when a small
category may block, flagged answers, the kinds of row a reviewer reads
(`KINDS`), counts, the conclusion, the exit code and the commit state are
all functions of scores alone, so the contract's verdict table can be
tested row by row.
Renderers, the terminal and the status text read `KINDS`; none re-derives it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from flipgate.config.schema import DEFAULT_MIN_CASES_PER_CATEGORY
from flipgate.errors import EXIT_BAD_INPUT, EXIT_BLOCKED, EXIT_INCOMPLETE, EXIT_PASS
from flipgate.model import (
    Bucket,
    Case,
    Conclusion,
    Counts,
    Evidence,
    FluencySummary,
    JudgeInfo,
    Relevance,
    Report,
    Row,
    Score,
    Side,
    Statements,
    Verdict,
)
from flipgate.text.escaping import plural

_ANSWERING = (Bucket.PARTIAL, Bucket.GROUNDED)


def bucket_of(score: int) -> Bucket:
    """Map a 1-5 groundedness score (rubric with the query) to its bucket."""
    if score in (1, 2):
        return Bucket.UNGROUNDED
    if score == 3:
        return Bucket.NON_ANSWER
    if score == 4:
        return Bucket.PARTIAL
    if score == 5:
        return Bucket.GROUNDED
    raise ValueError(f"groundedness score out of range 1-5: {score!r}")


def needs_rescore(baseline: Bucket, candidate: Bucket) -> bool:
    """A candidate that newly fell to ungrounded must be scored a second time."""
    return candidate is Bucket.UNGROUNDED and baseline is not Bucket.UNGROUNDED


def is_tie(baseline: Bucket, candidate: Bucket) -> bool:
    """Rows where fluency may break the tie: partial or grounded on both sides, same bucket."""
    return baseline is candidate and baseline in _ANSWERING


# How a flip is confirmed (`judge.rescore` in the report): the same judge scores the
# candidate again, a second-opinion judge scores it instead, or both do.
SAME_JUDGE, SECOND_OPINION, BOTH = "same_judge", "second_opinion", "both"
CONFIRMATIONS = (SAME_JUDGE, SECOND_OPINION, BOTH)


# A deterministic judge's own re-score (the offline judge's) reads the answer again with
# the same function: it always agrees, so it is not a second opinion and confirms nothing.
# Its flips stand on that one reading, and nothing says they were "confirmed".
REREAD = "reread"


def confirmation_kind(mode: str | None, *, deterministic: bool) -> str | None:
    """How a regression's flip was confirmed, for its wording: `mode`, except a deterministic
    judge's same-judge re-score, which is `REREAD` (the same reading again)."""
    return REREAD if deterministic and mode == SAME_JUDGE else mode


def rereads(judge: JudgeInfo) -> bool:
    """Are this run's flips re-read rather than confirmed (the lexical judge, no second judge)?"""
    return confirmation_kind(judge.rescore, deterministic=judge.lexical) == REREAD


def confirmations_needed(mode: str) -> tuple[bool, bool]:
    """(same-judge re-score, second-opinion scoring) that a newly ungrounded row needs."""
    if mode not in CONFIRMATIONS:
        raise ValueError(f"unknown confirmation mode {mode!r}")
    return mode in (SAME_JUDGE, BOTH), mode in (SECOND_OPINION, BOTH)


NOT_JUDGED_OFFLINE = "not judged offline"
NOT_JUDGED = "not_judged"  # the set-aside rows' kind, and their field in Counts and report.json


def unscored(side: Side) -> str:
    """What a side without a score shows: not run (the run stopped first), set aside by the
    judge, or no score (a judge error)."""
    if side.not_run:
        return "not run"
    return NOT_JUDGED_OFFLINE if side.groundedness.set_aside else "no score"


def reads_ungrounded(score: Score) -> bool:
    """A confirming reading that agrees the answer is ungrounded: a 1-5 score in the
    ungrounded bucket, or a true/false instrument's "not grounded" (label False)."""
    if score.label is not None:
        return not score.label
    return score.value is not None and bucket_of(score.value) is Bucket.UNGROUNDED


def classify(baseline: Score, candidate: Score, rescore: Score | None = None, *,
             second: Score | None = None, mode: str = SAME_JUDGE) -> tuple[Verdict, list[str]]:
    """The verdict of one row, and the judge errors that explain an `error` verdict.

    A candidate that newly fell to ungrounded is confirmed as `mode` says: by
    `rescore` (the same judge's second, independent scoring), by `second` (the
    second-opinion judge), or by both. It is a regression only when every
    confirmation asked also reads ungrounded; any disagreement makes it
    `unstable`. A confirmation that is missing or failed is a judge error.
    """
    errors = [f"{side}: {s.error}" for side, s in (("baseline", baseline), ("candidate", candidate))
              if not s.ok and not s.set_aside]
    if errors:
        return Verdict.ERROR, errors
    if baseline.set_aside or candidate.set_aside:
        return Verdict.NOT_JUDGED, []  # no score to compare: shown as such, never a flip
    assert baseline.value is not None and candidate.value is not None
    before, after = bucket_of(baseline.value), bucket_of(candidate.value)

    if needs_rescore(before, after):
        wants_rescore, wants_second = confirmations_needed(mode)
        confirming = ([("re-score", rescore, "never re-scored")] if wants_rescore else []) + (
            [("second opinion", second, "the second opinion was never asked")] if wants_second else [])
        for name, score, missing in confirming:
            if score is None:
                return Verdict.ERROR, [f"candidate: newly ungrounded but {missing}"]
            if not score.ok:
                return Verdict.ERROR, [f"candidate {name}: {score.error}"]
        agree = all(score is not None and reads_ungrounded(score) for _, score, _ in confirming)
        return (Verdict.REGRESSION if agree else Verdict.UNSTABLE), []
    if after is Bucket.NON_ANSWER and before in _ANSWERING:
        return Verdict.NEW_NON_ANSWER, []
    if after is Bucket.UNGROUNDED:
        return Verdict.STILL_UNGROUNDED, []
    if after is not before:
        return Verdict.MOVED, []
    return Verdict.UNCHANGED, []


def needs_statements(verdict: Verdict) -> bool:
    """Rows whose candidate gets one extra statement-level judge request: the flips a
    reviewer must read, those that carry evidence. Never unchanged rows (cost)."""
    return carries_evidence(verdict)


def is_blocking(verdict: Verdict, category: str, blocking_categories: Collection[str]) -> bool:
    return verdict is Verdict.REGRESSION and category in blocking_categories


def category_sizes(categories: Iterable[str]) -> dict[str, int]:
    """Cases per category in this run."""
    sizes: dict[str, int] = {}
    for category in categories:
        sizes[category] = sizes.get(category, 0) + 1
    return sizes


def below_minimum(cases: int, min_cases: int) -> bool:
    return cases < min_cases


def blocks(verdict: Verdict, category: str, *, blocking_categories: Collection[str],
           category_cases: int, min_cases: int, strict: bool, mode: str) -> tuple[bool, str | None]:
    """Does this row block, and if a regression in a blocking category does not, why.

    With fewer than `min_cases` cases in its category one flip is a large share of
    the category, and one judge wobble would decide the release: a confirmed
    regression there blocks only when a second-opinion judge confirmed it, or
    when `strict` lets the same judge's re-score block alone.
    """
    if not is_blocking(verdict, category, blocking_categories):
        return False, None
    if not below_minimum(category_cases, min_cases) or strict or mode in (SECOND_OPINION, BOTH):
        return True, None
    return False, (f"{category} has {category_cases:,} case{'' if category_cases == 1 else 's'}; "
                   f"below {min_cases:,} a flip needs a second judge to block")


def held_back(row: Row) -> bool:
    """A regression in a blocking category that the sample-size rule kept from blocking
    (`blocks` gave it a reason): report.json's `counts.held_back`."""
    return row.verdict is Verdict.REGRESSION and not row.blocking and row.review_reason is not None


HELD_BACK = "held_back"  # its field in Counts and report.json's counts


def held_back_sentence(report: Report, *, limit: int | None = None) -> str | None:
    """What a pass left to a person, for the first words of the headline, the status and the
    job summary: the flips the sample-size rule held back ("3 confirmed flips did not block:
    safety has 2 cases, below 50; see gate.strict"; with the offline judge "3 flips", its
    re-score confirms nothing), and the answers the offline judge set aside ("2 answers not
    judged offline"). None when there is neither. Longer than `limit`, the categories are
    counted, not named."""
    held = report.counts[HELD_BACK]
    aside = report.counts[NOT_JUDGED]
    set_aside = f"{plural(aside, 'answer')} {NOT_JUDGED_OFFLINE}" if aside else None
    if not held:
        return set_aside
    tail = f"; {set_aside}" if set_aside else ""
    room = None if limit is None else limit - len(tail)
    sizes: dict[str, int] = {}
    minimum = 0
    for part in [part.report for part in report.suites] or [report]:
        for row in part.rows:
            info = part.categories.get(row.category)
            if held_back(row) and info is not None:
                sizes.setdefault(row.category, info.cases)
                minimum = max(minimum, info.minimum)
    noun = "flip" if rereads(report.judge) else "confirmed flip"
    below = f", below {minimum:,}" if minimum else ""
    lead = f"{plural(held, noun)} did not block: "
    named = ", ".join(f"{name} has {plural(cases, 'case')}" for name, cases in sizes.items())
    # Awaiting review, the way on is a person's decision; else the setting that lets them block.
    advice = ("a maintainer decides in the pull request"
              if report.conclusion is Conclusion.AWAITING_REVIEW else "see gate.strict")
    sentence = f"{lead}{named or 'too few cases'}{below}; {advice}"
    if room is not None and len(sentence) > room:
        sentence = f"{lead}{plural(len(sizes), 'category', 'categories')} with too few cases{below}; {advice}"
    return sentence + tail


# The mark each headline and status description starts with. A pass that held flips back
# is a warning, never a green tick: a person must read those flips before merging.
PASSED_MARK, HELD_BACK_MARK, BLOCKED_MARK, UNFINISHED_MARK, SKIPPED_MARK = "✅", "⚠️", "❌", "⚠️", "⏭️"


def headline_mark(report: Report) -> str:
    """✅ only for a pass that held nothing back and judged every answer; ⚠️ for one that
    held flips back or set answers aside (or a run that could not finish), ❌ for a block,
    ⏭️ for a skip."""
    if report.conclusion is Conclusion.FAILURE:
        return BLOCKED_MARK
    if report.conclusion is Conclusion.ERROR:
        return UNFINISHED_MARK
    if report.conclusion is Conclusion.SKIPPED:
        return SKIPPED_MARK
    return HELD_BACK_MARK if report.counts[HELD_BACK] or report.counts[NOT_JUDGED] else PASSED_MARK


# How the job log names a held-back row (a regression to review that the sample-size rule
# kept from blocking): its line comes before the other regressions to review.
HELD_BACK_ROW = "held-back regression"


def relevance_dropped(baseline: Relevance | None, candidate: Relevance | None,
                      threshold: float) -> bool:
    """The candidate fell below the threshold where the baseline was not below it."""
    if baseline is None or candidate is None or baseline.score is None or candidate.score is None:
        return False
    return candidate.score < threshold <= baseline.score


# Verdicts whose rows carry the evidence a reviewer needs to see why.
EVIDENCE_VERDICTS = frozenset({Verdict.REGRESSION, Verdict.UNSTABLE, Verdict.NEW_NON_ANSWER})


def carries_evidence(verdict: Verdict) -> bool:
    return verdict in EVIDENCE_VERDICTS


def side(response: str, groundedness: Score, *, relevance: Relevance | None = None,
         rescore: Score | None = None, fluency: Score | None = None,
         finish_reason: str | None = None, second_opinion: Score | None = None,
         statements: Statements | None = None, manipulation: tuple[str, ...] = (),
         generator_error: str | None = None, not_run: str | None = None) -> Side:
    """One answer's readings, with the bucket its groundedness score falls in."""
    bucket = bucket_of(groundedness.value) if groundedness.value is not None else None
    return Side(response=response, groundedness=groundedness, bucket=bucket, relevance=relevance,
                rescore=rescore, fluency=fluency, finish_reason=finish_reason,
                second_opinion=second_opinion, statements=statements, manipulation=manipulation,
                generator_error=generator_error, not_run=not_run)


def generator_failed(row: Row) -> bool:
    """A side's generator gave no answer (the application's code failed, or a render in it):
    the row is a generator error, never a judge error, and never passes."""
    return bool(row.baseline.generator_error or row.candidate.generator_error)


@dataclass(frozen=True)
class Policy:
    """How flips are confirmed, and what a confirmed regression in a blocking category
    needs to block: enough cases in its category, or a second judge, or `strict`."""

    min_cases: int = DEFAULT_MIN_CASES_PER_CATEGORY
    strict: bool = False
    mode: str = SAME_JUDGE  # how a flip is confirmed


def build_row(case: Case, baseline: Side, candidate: Side, *,
              blocking_categories: Collection[str], threshold: float,
              find_evidence: Callable[[Case, str], Evidence],
              policy: Policy | None = None, category_cases: int | None = None) -> Row:
    """The whole row: verdict, the judge-error override, blocking (with the sample-size
    rule), relevance drop, evidence, and a failed statement list as a judge error.

    `find_evidence(case, answer)` is asked only for rows whose verdict carries evidence.
    `category_cases` is how many cases the row's category has in this run; None counts
    it as large enough.
    """
    policy = policy or Policy()
    if baseline.not_run or candidate.not_run:
        # The run stopped before this row was scored: no verdict, no error of its own, never a
        # pass (`conclude`); a re-run scores it.
        return Row(case=case, baseline=baseline, candidate=candidate, verdict=Verdict.NOT_RUN)
    verdict, errors = classify(baseline.groundedness, candidate.groundedness, candidate.rescore,
                               second=candidate.second_opinion, mode=policy.mode)
    sides = (("baseline", baseline), ("candidate", candidate))
    failed = next((f"{label} generator: {one.generator_error}" for label, one in sides
                   if one.generator_error), None)
    if failed is not None:  # no answer to judge: the generator's error is the row's only one
        verdict, errors = Verdict.ERROR, [failed]
    else:
        errors += [f"{label} relevance: {one.relevance.error}" for label, one in sides
                   if one.relevance is not None and one.relevance.error]
    if errors and verdict is not Verdict.REGRESSION:
        # A row the judge could not fully score is neither a pass nor a move.
        # A confirmed regression stays listed as one, with its errors beside it.
        verdict = Verdict.ERROR
    if candidate.statements is not None and candidate.statements.error:
        # A statement list that is not evidence is a judge error of that step;
        # the verdict still stands on its scores.
        errors.append(f"candidate statements: {candidate.statements.error}")
    blocking, review_reason = blocks(
        verdict, case.category, blocking_categories=blocking_categories,
        category_cases=policy.min_cases if category_cases is None else category_cases,
        min_cases=policy.min_cases, strict=policy.strict, mode=policy.mode)
    return Row(
        case=case, baseline=baseline, candidate=candidate, verdict=verdict,
        blocking=blocking,
        relevance_drop=relevance_dropped(baseline.relevance, candidate.relevance, threshold),
        errors=errors,
        evidence=find_evidence(case, candidate.response) if carries_evidence(verdict) else None,
        confirmed_by=policy.mode if verdict is Verdict.REGRESSION else None,
        review_reason=review_reason,
    )


def retrieval_drift(frozen: Verdict, live: Verdict | None) -> bool:
    """The end-to-end verdict (live retrieval) differs from the frozen one: the change behaves
    differently on what retrieval returns today, so look at retrieval first. A side that
    could not be judged is an error, not drift. Drift never blocks."""
    return live is not None and Verdict.ERROR not in (frozen, live) and frozen is not live


def is_flagged(row: Row) -> bool:
    """An answer that addresses its grader: a person reads the row, whatever its verdict."""
    return bool(row.candidate.manipulation or row.baseline.manipulation)


# --------------------------------------------------------------------------
# The kinds of row a reviewer reads, most important first
# --------------------------------------------------------------------------

class Tier(StrEnum):
    """How much room a kind's rows get when the comment must shrink."""

    BLOCKING = "blocking"      # the last rows ever left out
    MUST_READ = "must_read"
    WORTH_READING = "worth_reading"
    SKIM = "skim"              # shown collapsed, left out first


@dataclass(frozen=True)
class Phrase:
    """A count in words: "1 judge error", "3 judge errors"."""

    one: str
    many: str | None = None

    def of(self, count: int) -> str:
        return plural(count, self.one, self.many)


@dataclass(frozen=True)
class Kind:
    """One kind of row: which rows it holds and every name it goes by."""

    name: str                         # the comment's section key
    holds: Callable[[Row], bool]
    count_field: str                  # its key in Counts and report.json's counts
    status: Phrase                    # the commit status and the terminal's counts line
    label: str                        # the terminal's verdict column
    style: str                        # the terminal's style for that label
    title: str                        # the comment section's heading (or summary, when collapsed)
    about: str                        # one sentence under the heading; `{threshold}` is filled in
    layout: str                       # the table's columns: flips | relevance | errors | brief | ids
    nouns: str                        # "… and 3 more <nouns>"
    one_row: str                      # one such row in a line of its own (the job log's)
    tier: Tier
    about_reread: str = ""            # `about` when the run's flips are re-read (`rereads`)

    @property
    def collapsed(self) -> bool:
        return self.tier is Tier.SKIM


def _regression(row: Row) -> bool:
    return row.verdict is Verdict.REGRESSION


def _verdict(verdict: Verdict) -> Callable[[Row], bool]:
    return lambda row: row.verdict is verdict


KINDS: tuple[Kind, ...] = (
    Kind(name="blocking", holds=lambda row: _regression(row) and row.blocking,
         count_field="blocking_regressions",
         status=Phrase("blocking regression"), label="BLOCKING", style="bold red",
         title="❌ Blocking regressions",
         about="Newly ungrounded answers in a blocking category, confirmed by a second scoring: "
               "the same judge's re-score, unless the row names a second judge.",
         about_reread="Newly ungrounded answers in a blocking category, as the offline judge's "
                      "lexical checks read them; its re-score repeats that reading, so it is no "
                      "second opinion. Each row says which check decided.",
         layout="flips", nouns="blocking regressions", one_row="BLOCKING regression", tier=Tier.BLOCKING),
    Kind(name="generator_error", holds=generator_failed,
         count_field="generator_errors", status=Phrase("generator error"),
         label="generator error", style="bold yellow", title="🛠️ Generator errors",
         about="The generator gave no answer on these rows (the application's code failed, or "
               "a template in it); nothing was judged, and the run cannot pass until they answer.",
         layout="errors", nouns="rows with generator errors", one_row="generator error",
         tier=Tier.MUST_READ),
    Kind(name="errors", holds=lambda row: ((row.verdict is Verdict.ERROR or bool(row.errors))
                                           and not generator_failed(row)),
         count_field="errors", status=Phrase("judge error"),
         label="judge error", style="bold yellow", title="⚠️ Judge errors",
         about="The judge failed on these rows after retries; they count neither as a pass "
               "nor as a regression.",
         layout="errors", nouns="rows with judge errors", one_row="judge error", tier=Tier.MUST_READ),
    Kind(name="review", holds=lambda row: _regression(row) and not row.blocking,
         count_field="regressions_to_review",
         status=Phrase("to review", "to review"), label="review", style="red",
         title="🔎 Regressions to review",
         about="Confirmed regressions outside the blocking categories, or in a blocking "
               "category with too few cases for one judge to block: they do not block, but "
               "read them before merging.",
         about_reread="Regressions outside the blocking categories, or in a blocking category "
                      "with too few cases for one judge to block: they do not block, but read "
                      "them before merging.",
         layout="flips", nouns="regressions to review", one_row="regression to review", tier=Tier.MUST_READ),
    Kind(name="flagged", holds=is_flagged, count_field="manipulation_flags",
         status=Phrase("answer addresses the judge", "answers address the judge"),
         label="addresses judge", style="bold magenta",
         title="🚩 Answers that address the judge",
         about="These answers speak to the grader (instructions, score requests, fake rubric "
               "sections), found by a lexical check before judging. Their verdicts may have "
               "been steered: a person should read them, whatever the verdict says.",
         layout="flagged", nouns="flagged answers", one_row="answer addresses the judge", tier=Tier.MUST_READ),
    Kind(name="non_answers", holds=_verdict(Verdict.NEW_NON_ANSWER),
         count_field="new_non_answers",
         status=Phrase("new non-answer"), label="non-answer", style="yellow",
         title="🤐 New non-answers",
         about="The baseline answered; the candidate now asks for clarification, refuses or "
               "fills space.",
         layout="flips", nouns="new non-answers", one_row="new non-answer", tier=Tier.WORTH_READING),
    Kind(name="unstable", holds=_verdict(Verdict.UNSTABLE),
         count_field="unstable", status=Phrase("unstable", "unstable"),
         label="unstable", style="magenta", title="🎲 Unstable rows",
         about="Newly ungrounded on the first scoring, but a second scoring disagreed: a "
               "person should decide.",
         layout="flips", nouns="unstable rows", one_row="unstable row", tier=Tier.WORTH_READING),
    Kind(name="relevance", holds=lambda row: row.relevance_drop,
         count_field="relevance_drops",
         status=Phrase("relevance drop"), label="relevance drop", style="cyan",
         title="↘️ Relevance drops",
         about="Relevance fell below {threshold} where the baseline was at or above it.",
         layout="relevance", nouns="relevance drops", one_row="relevance drop", tier=Tier.WORTH_READING),
    Kind(name=NOT_JUDGED, holds=_verdict(Verdict.NOT_JUDGED),
         count_field=NOT_JUDGED, status=Phrase(NOT_JUDGED_OFFLINE, NOT_JUDGED_OFFLINE),
         label="not judged", style="dim", title="Not judged offline: set aside by the lexical judge",
         about="The offline judge could not weigh these answers (too long, or too little overlap "
               "with the context to tell): neither a pass nor a flip. Each row says why.",
         layout="brief", nouns="rows not judged offline", one_row="row not judged offline",
         tier=Tier.SKIM),
    Kind(name="not_run", holds=_verdict(Verdict.NOT_RUN),
         count_field="not_run", status=Phrase("not run", "not run"),
         label="not run", style="yellow", title="⏸️ Not run: the run stopped before these rows",
         about="The run stopped (a rate limit or the budget) before these rows were scored: "
               "neither a pass nor a flip. A re-run scores them; the cache keeps every reply "
               "already received, so it asks only for what is missing.",
         layout="ids", nouns="rows not run", one_row="row not run", tier=Tier.SKIM),
    Kind(name="moved", holds=_verdict(Verdict.MOVED),
         count_field="moved", status=Phrase("moved", "moved"),
         label="moved", style="", title="Moved: changed bucket, up or down", about="",
         layout="brief", nouns="moved rows", one_row="moved row", tier=Tier.SKIM),
    Kind(name="still_ungrounded", holds=_verdict(Verdict.STILL_UNGROUNDED),
         count_field="still_ungrounded",
         status=Phrase("still ungrounded", "still ungrounded"), label="still ungrounded",
         style="dim",
         title="Still ungrounded: ungrounded in both versions, not caused by this change",
         about="", layout="brief", nouns="still-ungrounded rows", one_row="still-ungrounded row", tier=Tier.SKIM),
)


def kind_about(kind: Kind, *, threshold: float, reread: bool = False) -> str:
    """The sentence under a kind's heading (`reread`: the run's flips were re-read, not confirmed)."""
    about = kind.about_reread if reread and kind.about_reread else kind.about
    return about.replace("{threshold}", str(threshold))


def kind_named(name: str) -> Kind:
    return next(kind for kind in KINDS if kind.name == name)


def kinds_of(row: Row) -> list[Kind]:
    """Every kind a row belongs to (the comment lists it in each), most important first."""
    return [kind for kind in KINDS if kind.holds(row)]


def kind_of(row: Row) -> Kind | None:
    """The row's most important kind; None for a row nobody needs to read."""
    return next((kind for kind in KINDS if kind.holds(row)), None)


# --------------------------------------------------------------------------
# What the rows add up to
# --------------------------------------------------------------------------

def count(rows: Iterable[Row], *, cases: int | None = None) -> Counts:
    """Rows per kind. `cases` overrides the number of rows (a run stopped before its rows)."""
    rows = list(rows)
    counts = Counts(cases=len(rows) if cases is None else cases)
    for kind in KINDS:
        counts[kind.count_field] = sum(1 for row in rows if kind.holds(row))
    counts[HELD_BACK] = sum(1 for row in rows if held_back(row))
    return counts


def regressions(counts: Counts) -> int:
    """Confirmed regressions, blocking or not (the action's `regressions` output)."""
    return counts.blocking_regressions + counts.regressions_to_review


def worth_reading(counts: Counts) -> bool:
    """Rows that do not block but that a reviewer should read."""
    return any(counts[kind.count_field] for kind in KINDS
               if kind.tier in (Tier.MUST_READ, Tier.WORTH_READING))


def run_blocks(rows: Iterable[Row]) -> bool:
    """A confirmed regression blocks the run: groundedness has decided it."""
    return any(row.blocking for row in rows)


def is_tied(row: Row) -> bool:
    """A row fluency may break the tie of: unchanged in partial or grounded."""
    return (row.verdict is Verdict.UNCHANGED and row.baseline.bucket is not None
            and row.candidate.bucket is not None and is_tie(row.baseline.bucket, row.candidate.bucket))


def fluency_wanted(rows: Sequence[Row]) -> list[int]:
    """The rows whose answers fluency is asked about, once groundedness is settled for the
    whole run: the tied rows, and none at all when the run blocks (fluency can never
    outweigh a regression, so asking would buy nothing)."""
    if run_blocks(rows):
        return []
    return [i for i, row in enumerate(rows) if is_tied(row)]


def fluency_summary(rows: Sequence[Row]) -> FluencySummary | None:
    """Mean fluency change over tied rows: a tie-breaker reported last, never a vote.
    On a run that blocks it says how many tied rows were not asked (`skipped`)."""
    if run_blocks(rows):
        skipped = sum(1 for row in rows if is_tied(row))
        return FluencySummary(rows=0, mean_delta=None, skipped=skipped) if skipped else None
    ties = [row for row in rows if row.verdict is Verdict.UNCHANGED
            and row.baseline.fluency is not None and row.candidate.fluency is not None]
    if not ties:
        return None
    deltas, failed = [], 0
    for row in ties:
        assert row.baseline.fluency is not None and row.candidate.fluency is not None
        before, after = row.baseline.fluency.value, row.candidate.fluency.value
        if before is None or after is None:
            failed += 1
        else:
            deltas.append(after - before)
    mean = round(sum(deltas) / len(deltas), 3) if deltas else None
    return FluencySummary(rows=len(deltas), mean_delta=mean, failed=failed)


FLUENCY_SKIPPED = "Fluency was not asked on "  # how the note below begins


def fluency_note(summary: FluencySummary | None) -> str | None:
    """The report's note when fluency was not asked because the gate blocked."""
    if summary is None or not summary.skipped:
        return None
    return (f"{FLUENCY_SKIPPED}{plural(summary.skipped, 'tied row')}: the gate blocked "
            "on a groundedness regression, and fluency never outweighs one.")


def conclude(counts: Counts, *, review: bool = False) -> Conclusion:
    """Judge errors win over a block: a run that could not score every row did not finish.
    With `review` (`gate.review: required`), a run that would pass but held flips back
    awaits a person's review instead of passing."""
    # Nor did one whose generator gave no answer on a row, or that stopped before some rows,
    # whatever the rest found.
    if counts.errors or counts.generator_errors or counts.not_run:
        return Conclusion.ERROR
    if counts.blocking_regressions:
        return Conclusion.FAILURE
    if review and counts[HELD_BACK]:
        return Conclusion.AWAITING_REVIEW
    return Conclusion.SUCCESS


# Worst first: one suite that could not finish makes the run unfinished, one that
# blocks makes it blocked; a run passes when each evaluated suite passed, and is
# skipped only when no suite needed gating.
_SEVERITY = (Conclusion.ERROR, Conclusion.FAILURE, Conclusion.AWAITING_REVIEW, Conclusion.SUCCESS,
             Conclusion.SKIPPED)


def worst(conclusions: Iterable[Conclusion]) -> Conclusion:
    """Several suites' conclusions as the run's one conclusion (and so one exit code
    and one commit state); no suite at all is skipped."""
    found = set(conclusions)
    return next((conclusion for conclusion in _SEVERITY if conclusion in found), Conclusion.SKIPPED)


def add_counts(parts: Iterable[Counts]) -> Counts:
    """Several suites' counts as one: every field summed, `cases` included."""
    total = Counts(cases=0)
    for part in parts:
        total.update(part)
    for field_name in ("cases", *(kind.count_field for kind in KINDS), HELD_BACK):
        total.setdefault(field_name, 0)
    return total


def exit_code(conclusion: Conclusion) -> int:
    return {
        Conclusion.SUCCESS: EXIT_PASS,
        Conclusion.SKIPPED: EXIT_PASS,
        Conclusion.AWAITING_REVIEW: EXIT_PASS,  # the status waits; the step does not fail
        Conclusion.FAILURE: EXIT_BLOCKED,
        Conclusion.ERROR: EXIT_INCOMPLETE,
    }.get(conclusion, EXIT_BAD_INPUT)


def commit_state(conclusion: Conclusion) -> str:
    """The `flipgate` commit status: a skipped run passes; one awaiting review is `pending`
    until a person decides (github/awaiting.py); anything unfinished is `error`."""
    return {Conclusion.SUCCESS: "success", Conclusion.SKIPPED: "success",
            Conclusion.AWAITING_REVIEW: "pending",
            Conclusion.FAILURE: "failure"}.get(conclusion, "error")
