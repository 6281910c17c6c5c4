"""The gate's rules for trusting a flip: how it is confirmed, when a small category may block,
which rows get statements, and flagged answers. One table row per case of a rule."""

from __future__ import annotations

import pytest

from flipgate.model import Case, Counts, Row, Score, Side, Verdict
from flipgate.verdict import gate


def s(value: int | None) -> Score | None:
    return None if value is None else Score(value=value, reason=f"scored {value}")


@pytest.mark.parametrize(("mode", "rescore", "second", "verdict"), [
    # same judge only: the re-score decides
    ("same_judge", 2, None, Verdict.REGRESSION),
    ("same_judge", 4, None, Verdict.UNSTABLE),
    # replace: the second judge decides, the re-score is not consulted
    ("second_opinion", None, 1, Verdict.REGRESSION),
    ("second_opinion", None, 5, Verdict.UNSTABLE),
    ("second_opinion", 5, 2, Verdict.REGRESSION),
    # both: both must agree
    ("both", 2, 2, Verdict.REGRESSION),
    ("both", 2, 5, Verdict.UNSTABLE),
    ("both", 4, 1, Verdict.UNSTABLE),
])
def test_a_newly_ungrounded_row_is_confirmed_as_the_mode_says(
        mode: str, rescore: int | None, second: int | None, verdict: Verdict) -> None:
    got, errors = gate.classify(s(5), s(2), s(rescore), second=s(second), mode=mode)
    assert (got, errors) == (verdict, [])


@pytest.mark.parametrize(("mode", "rescore", "second", "needle"), [
    ("second_opinion", 2, None, "the second opinion was never asked"),
    ("both", None, 2, "never re-scored"),
    ("both", 2, Score.failed("HTTP 500"), "candidate second opinion: HTTP 500"),
])
def test_a_missing_or_failed_confirmation_is_a_judge_error(mode, rescore, second, needle) -> None:
    second_score = second if isinstance(second, Score) else s(second)
    verdict, errors = gate.classify(s(5), s(2), s(rescore), second=second_score, mode=mode)
    assert verdict is Verdict.ERROR and needle in errors[0]


def test_rows_that_are_not_flips_never_consult_a_confirmation() -> None:
    assert gate.classify(s(5), s(5), None, second=None, mode="both") == (Verdict.UNCHANGED, [])
    assert gate.classify(s(2), s(1), None, second=None, mode="both") == (Verdict.STILL_UNGROUNDED, [])


@pytest.mark.parametrize(("cases", "strict", "mode", "blocking", "why"), [
    (50, False, "same_judge", True, None),                  # at the minimum: one judge may block
    (12, False, "same_judge", False, "policy has 12 cases; below 50 a flip needs a second judge to block"),
    (1, False, "same_judge", False, "policy has 1 case; below 50 a flip needs a second judge to block"),
    (12, True, "same_judge", True, None),                   # strict restores the same-judge block
    (12, False, "second_opinion", True, None),
    (12, False, "both", True, None),
])
def test_a_small_blocking_category_needs_a_second_judge(cases, strict, mode, blocking, why) -> None:
    assert gate.blocks(Verdict.REGRESSION, "policy", blocking_categories=("policy",),
                       category_cases=cases, min_cases=50, strict=strict, mode=mode) == (blocking, why)


@pytest.mark.parametrize("verdict", [v for v in Verdict if v is not Verdict.REGRESSION])
def test_only_regressions_block_whatever_the_size(verdict: Verdict) -> None:
    assert gate.blocks(verdict, "policy", blocking_categories=("policy",), category_cases=500,
                       min_cases=50, strict=True, mode="both") == (False, None)


def test_outside_the_blocking_categories_there_is_no_reason_to_give() -> None:
    assert gate.blocks(Verdict.REGRESSION, "smalltalk", blocking_categories=("policy",),
                       category_cases=3, min_cases=50, strict=False, mode="same_judge") == (False, None)


@pytest.mark.parametrize(("verdict", "asked"), [
    (Verdict.REGRESSION, True), (Verdict.UNSTABLE, True), (Verdict.NEW_NON_ANSWER, True),
    (Verdict.UNCHANGED, False), (Verdict.MOVED, False), (Verdict.STILL_UNGROUNDED, False),
    (Verdict.ERROR, False),
])
def test_statements_are_asked_for_flips_only(verdict: Verdict, asked: bool) -> None:
    assert gate.needs_statements(verdict) is asked


def test_category_sizes_count_cases() -> None:
    assert gate.category_sizes(["policy", "pricing", "policy"]) == {"policy": 2, "pricing": 1}


def test_a_flagged_answer_is_counted_whatever_its_verdict() -> None:
    def row(flags: tuple[str, ...], verdict: Verdict) -> Row:
        side = Side(response="r", groundedness=Score(5))
        candidate = Side(response="r", groundedness=Score(5), manipulation=flags)
        return Row(case=Case(id="a", query="q", context="c"), baseline=side, candidate=candidate,
                   verdict=verdict)

    flagged = row(('addresses the grader: "Dear grader"',), Verdict.UNCHANGED)
    assert gate.is_flagged(flagged) and not gate.is_flagged(row((), Verdict.UNCHANGED))
    counts: Counts = gate.count([flagged, row((), Verdict.MOVED)])
    assert (counts.manipulation_flags, counts.moved) == (1, 1)


def _row(*, second: int | None = None, rescore: int | None = 2, statements=None, category_cases=None,
         policy: gate.Policy | None = None) -> Row:
    case = Case(id="a", query="q", context="c", category="policy")
    return gate.build_row(
        case, gate.side("base", Score(5)),
        gate.side("cand", Score(2), rescore=s(rescore), second_opinion=s(second), statements=statements),
        blocking_categories=("policy",), threshold=0.7, find_evidence=lambda case, answer: None,
        policy=policy, category_cases=category_cases)


def test_build_row_applies_the_sample_size_rule_and_names_the_confirmation() -> None:
    held = _row(category_cases=12)
    assert (held.verdict, held.blocking, held.confirmed_by) == (Verdict.REGRESSION, False, "same_judge")
    assert held.review_reason == "policy has 12 cases; below 50 a flip needs a second judge to block"
    confirmed = _row(second=1, rescore=None, category_cases=12, policy=gate.Policy(mode="second_opinion"))
    assert (confirmed.blocking, confirmed.confirmed_by, confirmed.review_reason) == (
        True, "second_opinion", None)
    assert _row().blocking  # without a category size, the category counts as large enough


def test_a_statement_list_that_failed_is_a_judge_error_beside_the_verdict() -> None:
    from flipgate.model import Statements

    row = _row(statements=Statements(error="statements judge answered nonsense twice"))
    assert row.verdict is Verdict.REGRESSION and row.blocking
    assert row.errors == ["candidate statements: statements judge answered nonsense twice"]
    assert gate.conclude(gate.count([row])).value == "error"
