"""The contract's verdict table, one row per rule."""

from __future__ import annotations

import pytest

from flipgate.errors import EXIT_BLOCKED, EXIT_INCOMPLETE, EXIT_PASS
from flipgate.model import Bucket, Case, Conclusion, Counts, Evidence, Relevance, Score, Verdict
from flipgate.verdict import gate

from support.factories import make_row


def s(value: int | None, error: str | None = None) -> Score:
    return Score(value=value, reason="", error=error) if value is not None else Score.failed(error or "boom")


@pytest.mark.parametrize(("score", "bucket"), [
    (1, Bucket.UNGROUNDED), (2, Bucket.UNGROUNDED), (3, Bucket.NON_ANSWER),
    (4, Bucket.PARTIAL), (5, Bucket.GROUNDED),
])
def test_bucket_of(score: int, bucket: Bucket) -> None:
    assert gate.bucket_of(score) is bucket


@pytest.mark.parametrize("score", [0, 6, -1])
def test_bucket_of_rejects_out_of_range(score: int) -> None:
    with pytest.raises(ValueError):
        gate.bucket_of(score)


@pytest.mark.parametrize(("baseline", "candidate", "rescore", "verdict"), [
    # regression: newly ungrounded, the second scoring agrees
    (5, 2, 1, Verdict.REGRESSION),
    (4, 1, 2, Verdict.REGRESSION),
    (3, 2, 2, Verdict.REGRESSION),
    # unstable: newly ungrounded, the second scoring disagrees
    (5, 2, 4, Verdict.UNSTABLE),
    (5, 1, 3, Verdict.UNSTABLE),
    # new non-answer: from partial or grounded to non_answer
    (5, 3, None, Verdict.NEW_NON_ANSWER),
    (4, 3, None, Verdict.NEW_NON_ANSWER),
    # still ungrounded: ungrounded both sides (no re-score needed)
    (2, 1, None, Verdict.STILL_UNGROUNDED),
    (1, 2, None, Verdict.STILL_UNGROUNDED),
    # moved: any other change of bucket, up or down
    (2, 5, None, Verdict.MOVED),
    (3, 4, None, Verdict.MOVED),
    (5, 4, None, Verdict.MOVED),
    (2, 3, None, Verdict.MOVED),
    # unchanged: same bucket
    (5, 5, None, Verdict.UNCHANGED),
    (4, 4, None, Verdict.UNCHANGED),
    (3, 3, None, Verdict.UNCHANGED),
])
def test_verdict_table(baseline: int, candidate: int, rescore: int | None, verdict: Verdict) -> None:
    got, errors = gate.classify(s(baseline), s(candidate), s(rescore) if rescore else None)
    assert got is verdict
    assert errors == []


@pytest.mark.parametrize(("baseline", "candidate", "rescore", "needle"), [
    (None, 5, None, "baseline"),
    (5, None, None, "candidate"),
    (None, None, None, "baseline"),
    (5, 2, None, "never re-scored"),
])
def test_error_rows_are_neither_pass_nor_regression(baseline, candidate, rescore, needle) -> None:
    verdict, errors = gate.classify(s(baseline), s(candidate), rescore)
    assert verdict is Verdict.ERROR
    assert any(needle in e for e in errors)


def test_failed_rescore_is_an_error_not_a_regression() -> None:
    verdict, errors = gate.classify(s(5), s(2), Score.failed("timeout"))
    assert verdict is Verdict.ERROR
    assert errors == ["candidate re-score: timeout"]


@pytest.mark.parametrize(("baseline", "candidate", "tie"), [
    (Bucket.GROUNDED, Bucket.GROUNDED, True),
    (Bucket.PARTIAL, Bucket.PARTIAL, True),
    (Bucket.NON_ANSWER, Bucket.NON_ANSWER, False),
    (Bucket.UNGROUNDED, Bucket.UNGROUNDED, False),
    (Bucket.PARTIAL, Bucket.GROUNDED, False),
])
def test_fluency_only_breaks_ties_in_answering_buckets(baseline, candidate, tie) -> None:
    assert gate.is_tie(baseline, candidate) is tie


@pytest.mark.parametrize(("category", "blocking"), [("pricing", True), ("general", False)])
def test_only_regressions_in_blocking_categories_block(category: str, blocking: bool) -> None:
    assert gate.is_blocking(Verdict.REGRESSION, category, ("pricing", "policy")) is blocking
    assert gate.is_blocking(Verdict.NEW_NON_ANSWER, category, ("pricing", "policy")) is False


@pytest.mark.parametrize(("base", "cand", "dropped"), [
    (0.9, 0.5, True),
    (0.7, 0.69, True),    # the threshold itself is not below it
    (0.6, 0.5, False),    # baseline was already below
    (0.9, 0.7, False),
    (None, 0.1, False),   # an unscored side is a judge error, not a drop
])
def test_relevance_drop(base, cand, dropped) -> None:
    assert gate.relevance_dropped(Relevance(score=base), Relevance(score=cand), 0.7) is dropped


def test_counts_and_conclusion() -> None:
    rows = [make_row(category="policy", before=5, after=2, rescore=1),
            make_row(category="chat", before=5, after=2, rescore=1),
            make_row(before=5, after=3, relevance=(0.9, 0.3)), make_row(before=5, after=2, rescore=5),
            make_row(before=4, after=5), make_row(before=2, after=1), make_row(before=5, after=5)]
    assert [row.verdict for row in rows] == [
        Verdict.REGRESSION, Verdict.REGRESSION, Verdict.NEW_NON_ANSWER, Verdict.UNSTABLE,
        Verdict.MOVED, Verdict.STILL_UNGROUNDED, Verdict.UNCHANGED]
    counts = gate.count(rows)
    assert counts == Counts(cases=7, blocking_regressions=1, regressions_to_review=1,
                            new_non_answers=1, unstable=1, moved=1, still_ungrounded=1,
                            relevance_drops=1, errors=0)
    assert gate.conclude(counts) is Conclusion.FAILURE


def test_judge_errors_win_over_a_block_and_keep_the_regression_listed() -> None:
    rows = [make_row(category="policy", before=5, after=2, rescore=1), make_row(before=5, after=None)]
    counts = gate.count(rows)
    assert counts.blocking_regressions == 1 and counts.errors == 1
    assert gate.conclude(counts) is Conclusion.ERROR


FAILED_RELEVANCE = Relevance(score=None, error="embeddings: HTTP 500")


@pytest.mark.parametrize(("before", "after", "rescore", "verdict"), [
    (5, 5, None, Verdict.ERROR),          # a pass the judge could not fully score is no pass
    (4, 5, None, Verdict.ERROR),          # nor a move
    (5, 2, 1, Verdict.REGRESSION),        # a confirmed regression stays one, errors beside it
])
def test_a_relevance_error_overrides_every_verdict_but_a_confirmed_regression(
        before: int, after: int, rescore: int | None, verdict: Verdict) -> None:
    case = Case(id="c", query="q", context="ctx", category="policy")
    row = gate.build_row(
        case, gate.side("a", s(before), relevance=Relevance(score=0.9)),
        gate.side("b", s(after), relevance=FAILED_RELEVANCE,
                  rescore=s(rescore) if rescore is not None else None),
        blocking_categories=("policy",), threshold=0.7, find_evidence=lambda c, r: Evidence())
    assert row.verdict is verdict
    assert row.errors == ["candidate relevance: embeddings: HTTP 500"]
    assert gate.count([row]).errors == 1


@pytest.mark.parametrize(("after", "rescore", "evidence"), [
    (2, 1, True),      # regression
    (2, 5, True),      # unstable
    (3, None, True),   # new non-answer
    (4, None, False),  # moved
    (5, None, False),  # unchanged
])
def test_only_rows_a_reviewer_must_read_carry_evidence(after: int, rescore: int | None,
                                                       evidence: bool) -> None:
    asked = []
    row = gate.build_row(
        Case(id="c", query="q", context="ctx"), gate.side("a", s(5)),
        gate.side("b", s(after), rescore=s(rescore) if rescore is not None else None),
        blocking_categories=(), threshold=0.7,
        find_evidence=lambda case, answer: asked.append(answer) or Evidence(("$12",)))
    assert (row.evidence is not None) is evidence and asked == (["b"] if evidence else [])


@pytest.mark.parametrize(("conclusion", "state"), [
    (Conclusion.SUCCESS, "success"), (Conclusion.SKIPPED, "success"),
    (Conclusion.FAILURE, "failure"), (Conclusion.ERROR, "error"),
])
def test_commit_states(conclusion: Conclusion, state: str) -> None:
    assert gate.commit_state(conclusion) == state


@pytest.mark.parametrize(("conclusion", "code"), [
    (Conclusion.SUCCESS, EXIT_PASS), (Conclusion.SKIPPED, EXIT_PASS),
    (Conclusion.FAILURE, EXIT_BLOCKED), (Conclusion.ERROR, EXIT_INCOMPLETE),
])
def test_exit_codes(conclusion: Conclusion, code: int) -> None:
    assert gate.exit_code(conclusion) == code
