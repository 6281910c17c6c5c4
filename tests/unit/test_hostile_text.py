"""Text analysis on hostile answers: bounded, exact, and never fatal to a row.

How fast it is gets measured by benchmarks/bench_hostile_text.py; these
tests pin what it says.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from flipgate.judges.offline import fluency_heuristic, grade_groundedness
from flipgate.model import Case
from flipgate.verdict import evidence
from flipgate.verdict.evidence import EVIDENCE_LIMIT, analyse, cut_text, find_unsupported, split_statements
from flipgate.verdict.figures import MAX_FIGURE_DIGITS, extract_figures, figure_supported, same_fact

CONTEXT = "Refunds are issued within 30 days of the request."


def test_a_digit_run_of_any_length_is_one_literal_figure_compared_as_a_string() -> None:
    digits = "7" * 10_000
    [figure] = extract_figures(f"Your reference is {digits}.")
    assert figure.unit == "literal" and figure.text == digits
    assert figure_supported(figure, extract_figures(f"Reference {digits} applies."))
    assert not figure_supported(figure, extract_figures(f"Reference {digits[:-1]}8 applies."))


@pytest.mark.parametrize("length", [MAX_FIGURE_DIGITS + 1, 4_301, 50_000])
def test_long_digit_runs_never_raise_in_any_position(length: int) -> None:
    digits = "1" * length
    for text in (digits, f"{digits}th", f"${digits}", f"{digits} days", f"March {digits}",
                 f"{digits} March", f"between {digits} and {digits}9"):
        assert extract_figures(text), text


def test_figures_just_under_the_digit_limit_stay_exact_numbers() -> None:
    big = "9" * (MAX_FIGURE_DIGITS - 1)
    [a], [b] = extract_figures(f"{big} billion dollars"), extract_figures(f"{big[:-1]}8 billion dollars")
    assert a.unit == b.unit == "usd"
    assert a.value[0] == Decimal(big + "0" * 9)  # exact: no rounding to 28 digits
    assert not same_fact(a, b)


def test_number_words_stop_at_a_bounded_length() -> None:
    figures = extract_figures("one hundred " * 5_000)
    assert figures and all(figure.value[0] < 10**6 for figure in figures)


def test_abbreviations_do_not_split_however_many_there_are() -> None:
    assert split_statements("e.g. " * 20_000) == [("e.g. " * 20_000).strip()]
    assert split_statements("Fees vary, e.g. for cards. Call us.") == [
        "Fees vary, e.g. for cards.", "Call us."]
    assert split_statements("It is free (e.g. in the U.S.) today. Ask.") == [
        "It is free (e.g. in the U.S.) today.", "Ask."]


def test_an_answer_longer_than_the_limit_is_read_up_to_the_limit_and_says_so() -> None:
    invented_late = "Refunds are issued within 30 days. " * 1_000 + "A fee of $99 applies."
    analysis = analyse(CONTEXT, invented_late)
    assert len(invented_late) > EVIDENCE_LIMIT
    assert analysis.cut_at is not None and analysis.cut_at <= EVIDENCE_LIMIT
    assert analysis.notes == (f"evidence cut at {analysis.cut_at:,} characters",)
    assert analysis.unsupported_figures == ()  # the $99 lies past the cut
    assert analysis.evidence().notes == analysis.notes
    # The cut falls on a space, so no word or figure is halved.
    assert invented_late[analysis.cut_at] == " "


def test_a_short_answer_is_read_whole_and_carries_no_note() -> None:
    analysis = analyse(CONTEXT, "A fee of $99 applies.")
    assert analysis.cut_at is None and analysis.notes == ()
    assert [f.text for f in analysis.unsupported_figures] == ["$99"]
    assert cut_text("short") == ("short", None)


@pytest.mark.parametrize("answer", [
    "9" * 10_000,
    "e.g. " * 200_000,
    "(" * 500_000 + ")" * 500_000,
], ids=["10k-digits", "1MB-eg", "1MB-parens"])
def test_hostile_answers_get_a_verdict_and_a_note_from_the_offline_judge(answer: str) -> None:
    case = Case(id="x", query="How long do refunds take?", context=CONTEXT)
    score = grade_groundedness(case, answer)
    assert score.ok and score.value in (1, 2, 3)  # never grounded, never an error
    assert fluency_heuristic(answer).ok
    found = find_unsupported(CONTEXT, answer)
    if len(answer) > EVIDENCE_LIMIT:
        assert found.notes == (f"evidence cut at {cut_text(answer)[1]:,} characters",)
        assert "evidence cut at" in score.reason
    else:
        assert found.unsupported_figures == (answer,) and found.notes == ()


def test_an_analysis_that_fails_leaves_the_evidence_incomplete_not_the_run_ended(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str) -> list:
        raise RecursionError("something nobody foresaw")

    monkeypatch.setattr(evidence, "extract_figures", broken)
    found = find_unsupported(CONTEXT, "A fee of $99 applies.")
    assert found.unsupported_figures == () and found.unsupported_statements == ()
    assert found.notes == ("evidence incomplete: the analysis failed (RecursionError)",)


def test_thousands_of_figures_are_each_checked_against_thousands_known() -> None:
    context = " ".join(f"Plan {i} costs ${i + 10_000} from June {i % 28 + 1}, 2024." for i in range(3_000))
    answer = ". ".join(f"It is ${i + 10_000} from June {i % 30 + 1}, 2024" for i in range(0, 4_000, 7))

    analysis = analyse(context, answer)

    said = range(0, 4_000, 7)
    unsupported = {f.text for f in analysis.unsupported_figures}
    assert unsupported == {f"${i + 10_000}" for i in said if i >= 3_000} | {
        f"June {i % 30 + 1}, 2024" for i in said if i % 30 + 1 > 28}


def test_one_answer_the_offline_relevance_cannot_read_fails_only_its_own_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from flipgate.config.schema import Config
    from flipgate.judges import offline

    real = offline.lexical_relevance

    def fragile(case: Case, response: str):
        if response == "poison":
            raise RecursionError("nobody foresaw this")
        return real(case, response)

    monkeypatch.setattr(offline, "lexical_relevance", fragile)
    case = Case(id="x", query="How long do refunds take?", context=CONTEXT)
    judge = offline.OfflineJudge(Config())

    good, bad = asyncio.run(judge.relevance([(case, CONTEXT), (case, "poison")]))

    assert good.score is not None and good.error is None
    assert bad.score is None and bad.error == "relevance failed: RecursionError: nobody foresaw this"
