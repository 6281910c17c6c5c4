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


def classify(baseline: Score, candidate: Score, rescore: Score | None = None) -> tuple[Verdict, list[str]]:
    """The verdict of one row, and the judge errors that explain an `error` verdict.

    `rescore` is the second, independent scoring of the candidate; it is only
    consulted when the candidate newly fell to ungrounded.
    """
    errors = [f"{side}: {s.error}" for side, s in (("baseline", baseline), ("candidate", candidate))
              if not s.ok]
    if errors:
        return Verdict.ERROR, errors
    assert baseline.value is not None and candidate.value is not None
    before, after = bucket_of(baseline.value), bucket_of(candidate.value)

    if needs_rescore(before, after):
        if rescore is None:
            return Verdict.ERROR, ["candidate: newly ungrounded but never re-scored"]
        if not rescore.ok:
            return Verdict.ERROR, [f"candidate re-score: {rescore.error}"]
        assert rescore.value is not None
        if bucket_of(rescore.value) is Bucket.UNGROUNDED:
            return Verdict.REGRESSION, []
        return Verdict.UNSTABLE, []
    if after is Bucket.NON_ANSWER and before in _ANSWERING:
        return Verdict.NEW_NON_ANSWER, []
    if after is Bucket.UNGROUNDED:
        return Verdict.STILL_UNGROUNDED, []
    if after is not before:
        return Verdict.MOVED, []
    return Verdict.UNCHANGED, []


def is_blocking(verdict: Verdict, category: str, blocking_categories: Collection[str]) -> bool:
    return verdict is Verdict.REGRESSION and category in blocking_categories


def relevance_dropped(baseline: Relevance | None, candidate: Relevance | None,
                      threshold: float) -> bool:
    """The candidate fell below the threshold where the baseline was not below it."""
    if baseline is None or candidate is None or baseline.score is None or candidate.score is None:
        return False
    return candidate.score < threshold <= baseline.score


def retrieval_drift(frozen: Verdict, live: Verdict | None) -> bool:
    """The end-to-end verdict (live retrieval) differs from the frozen one: the change behaves
    differently on what retrieval returns today, so look at retrieval first. A side that
    could not be judged is an error, not drift. Drift never blocks."""
    return live is not None and Verdict.ERROR not in (frozen, live) and frozen is not live


def count(rows: Iterable[Row]) -> Counts:
    counts = Counts()
    for row in rows:
        counts.cases += 1
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
