"""The gate's pure core: buckets, verdicts, counts and the conclusion.

Nothing here does I/O. Every function is a function of scores alone, so the
contract's verdict table can be tested row by row.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from flipgate.errors import EXIT_BAD_INPUT, EXIT_BLOCKED, EXIT_INCOMPLETE, EXIT_PASS
from flipgate.model import Bucket, Conclusion, Counts, Relevance, Row, Score, Verdict

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


def confirmations_needed(mode: str) -> tuple[bool, bool]:
    """(same-judge re-score, second-opinion scoring) that a newly ungrounded row needs."""
    if mode not in CONFIRMATIONS:
        raise ValueError(f"unknown confirmation mode {mode!r}")
    return mode in (SAME_JUDGE, BOTH), mode in (SECOND_OPINION, BOTH)


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
              if not s.ok]
    if errors:
        return Verdict.ERROR, errors
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
        agree = all(score is not None and score.value is not None
                    and bucket_of(score.value) is Bucket.UNGROUNDED for _, score, _ in confirming)
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
    reviewer must read. Never unchanged rows (cost)."""
    return verdict in (Verdict.REGRESSION, Verdict.UNSTABLE, Verdict.NEW_NON_ANSWER)


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


def relevance_dropped(baseline: Relevance | None, candidate: Relevance | None,
                      threshold: float) -> bool:
    """The candidate fell below the threshold where the baseline was not below it."""
    if baseline is None or candidate is None or baseline.score is None or candidate.score is None:
        return False
    return candidate.score < threshold <= baseline.score


def is_flagged(row: Row) -> bool:
    """An answer that addresses its grader: a person reads the row, whatever its verdict."""
    return bool(row.candidate.manipulation or row.baseline.manipulation)


def count(rows: Iterable[Row]) -> Counts:
    counts = Counts()
    for row in rows:
        counts.cases += 1
        if is_flagged(row):
            counts.manipulation_flags += 1
        if row.verdict is Verdict.REGRESSION:
            if row.blocking:
                counts.blocking_regressions += 1
            else:
                counts.regressions_to_review += 1
        elif row.verdict is Verdict.NEW_NON_ANSWER:
            counts.new_non_answers += 1
        elif row.verdict is Verdict.UNSTABLE:
            counts.unstable += 1
        elif row.verdict is Verdict.MOVED:
            counts.moved += 1
        elif row.verdict is Verdict.STILL_UNGROUNDED:
            counts.still_ungrounded += 1
        if row.relevance_drop:
            counts.relevance_drops += 1
        if row.verdict is Verdict.ERROR or row.errors:
            counts.errors += 1
    return counts


def conclude(counts: Counts) -> Conclusion:
    """Judge errors win over a block: a run that could not score every row did not finish."""
    if counts.errors:
        return Conclusion.ERROR
    if counts.blocking_regressions:
        return Conclusion.FAILURE
    return Conclusion.SUCCESS


def exit_code(conclusion: Conclusion) -> int:
    return {
        Conclusion.SUCCESS: EXIT_PASS,
        Conclusion.SKIPPED: EXIT_PASS,
        Conclusion.FAILURE: EXIT_BLOCKED,
        Conclusion.ERROR: EXIT_INCOMPLETE,
    }.get(conclusion, EXIT_BAD_INPUT)
