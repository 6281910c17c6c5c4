"""The offline judge reads figures as a person reads them: units, ranges, times, durations
in words; list and passage numbers are not figures. And the pharmacy row of issue 30: a
head that invents a dose is a regression against a baseline that stays grounded."""

from __future__ import annotations

import asyncio

import pytest

from flipgate.config.schema import Config
from flipgate.judges.offline import OfflineJudge, grade_groundedness
from flipgate.model import Case, StatementLabel
from flipgate.verdict import gate
from flipgate.verdict.figures import extract_figures

PHARMACY = Case(
    id="ibuprofen-dose", category="dosage",
    query="How many ibuprofen tablets can I take?",
    context=("Ibuprofen 200 mg tablets. Adults and children 12 years and over: take 1 or 2 tablets "
             "every 4 to 6 hours as needed. Do not exceed 6 tablets in 24 hours. Not for children "
             "under 12. The pharmacy counter is open from 9 am to 6 pm, with a lunch break from "
             "1:30 pm to 2 pm. A pharmacist can answer questions within an hour."),
)
GROUNDED = ("Adults and children 12 and over can take 1 to 2 tablets every 4 to 6 hours, "
            "and no more than 6 tablets in 24 hours.")
INVENTED = "Adults can take up to 3,200 mg a day, which is 16 tablets."


@pytest.mark.parametrize("answer", [
    GROUNDED,                                                        # "12 and over", "1 to 2"
    "Take 1 or 2 tablets every 4 to 6 hours; do not exceed 6 tablets in 24 hours.",
    "Each tablet is 200 mg, and you can take 1-2 tablets every 4 to 6 hours, up to 6 in 24 hours.",
])
def test_a_faithful_dose_is_grounded(answer: str) -> None:
    score = grade_groundedness(PHARMACY, answer)
    assert score.value in (4, 5), score.reason


@pytest.mark.parametrize(("answer", "decides"), [
    (INVENTED, '"16" where the context says "6"'),
    ("Adults can take 1 to 3 tablets every 4 to 6 hours.", '"1 to 3"'),
    ("Children 10 years and over can take 1 or 2 tablets.", '"10 years"'),
])
def test_an_invented_dose_is_ungrounded(answer: str, decides: str) -> None:
    score = grade_groundedness(PHARMACY, answer)
    assert score.value == 2, score.reason
    assert decides in score.reason.replace("'", '"')


def test_the_invented_dose_clashes_with_the_limit_not_the_first_sentence() -> None:
    judge = OfflineJudge(Config(cases="cases.jsonl"))
    statements = asyncio.run(judge.statements(PHARMACY, INVENTED)).items
    assert [(s.label, s.span) for s in statements] == [
        (StatementLabel.UNSUPPORTED, "Do not exceed 6 tablets in 24 hours.")]


def test_the_pharmacy_row_is_a_regression_not_still_ungrounded() -> None:
    before = grade_groundedness(PHARMACY, GROUNDED)
    after = grade_groundedness(PHARMACY, INVENTED)
    assert gate.bucket_of(before.value or 0) is not gate.Bucket.UNGROUNDED, before.reason
    assert gate.classify(before, after, after)[0] is gate.Verdict.REGRESSION


@pytest.mark.parametrize(("answer", "score"), [
    ("The counter closes for lunch from 1:30 to 2 pm.", (4, 5)),   # "1:30" is 1:30 pm here
    ("The counter closes for lunch from 12:30 to 2 pm.", (2,)),
    ("A pharmacist answers within an hour.", (4, 5)),
    ("A pharmacist answers within 1 hour.", (4, 5)),
    ("A pharmacist answers within a week.", (2,)),                 # a duration in words
])
def test_times_and_durations_in_words(answer: str, score: tuple[int, ...]) -> None:
    result = grade_groundedness(PHARMACY, answer)
    assert result.value in score, result.reason


def test_list_and_passage_numbers_are_not_figures() -> None:
    answer = ("Here is what the label says:\n1. Take 1 or 2 tablets every 4 to 6 hours (Passage 3).\n"
              "2. Do not exceed 6 tablets in 24 hours [4].")
    score = grade_groundedness(PHARMACY, answer)
    assert score.value in (4, 5), score.reason


@pytest.mark.parametrize(("text", "unit", "value", "noun"), [
    ("take 1 or 2 tablets", "count", (1, 2), "tablet"),
    ("200 mg tablets", "count", (200, None), "mg"),
    ("takes an hour", "hour", (1, None), None),
])
def test_figures_keep_what_they_count(text: str, unit: str, value: tuple[int, int | None],
                                      noun: str | None) -> None:
    [figure] = extract_figures(text)
    assert (figure.unit, figure.value, figure.noun) == (unit, value, noun)


@pytest.mark.parametrize("text", ["$10 an hour", "3 tablets a day", "an hour-long wait"])
def test_a_rate_is_not_a_duration(text: str) -> None:
    assert [f.unit for f in extract_figures(text)] in ([], ["usd"], ["count"])


@pytest.mark.parametrize(("answer", "score"), [
    ("Human Error is the finale of the third season.", (4, 5)),
    ("Human Error is the finale of the 3rd season.", (4, 5)),
    ("Human Error is the finale of the fourth season.", (2,)),   # an ordinal in words
    ("At first, Human Error was the finale of the third season.", (4, 5)),
])
def test_ordinals_in_words_are_figures(answer: str, score: tuple[int, ...]) -> None:
    case = Case(id="tv", query="Which season does Human Error end?",
                context="Human Error is the season finale of the third season of House.")
    result = grade_groundedness(case, answer)
    assert result.value in score, result.reason
