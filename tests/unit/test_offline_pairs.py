"""The offline judge reading a candidate beside its baseline, and the misreadings of long
answers it no longer makes (a negated list, a name after a comma, a name written as one word).
Every sentence here is written for these tests."""

from __future__ import annotations

import asyncio
import json

from flipgate.config.schema import Config
from flipgate.judges.offline import OfflineJudge, grade_groundedness, grade_pair
from flipgate.model import Answer, Case, Verdict
from flipgate.output.progress import Silent
from flipgate.run.scoring import score_rows
from flipgate.verdict import gate
from flipgate.verdict.contradiction import find_clashes
from flipgate.verdict.evidence import analyse, name_vocabulary, unknown_names
from flipgate.verdict.structured import readable_context

ARTICLE = Case(
    id="river-festival", query="Summarize the following news in 80 words:",
    context=("Calder's river festival will be listed as a protected tradition, the U.N. agency "
             "for culture said on Tuesday. Each summer the festival draws 40,000 visitors. The "
             "town had campaigned for the listing for nine years, Mayor Ines Varga said. During "
             "the festival, boat builders from the valley open their workshops to visitors. No "
             "funding comes with the listing, but the town expects more visitors from Canada."),
)
BASELINE = ("The U.N. agency for culture will list the river festival in Calder as a protected "
            "tradition. The festival draws 40,000 visitors each summer. Mayor Ines Varga said "
            "the town campaigned for the listing for nine years. Boat builders from the valley "
            "open their workshops to visitors.")


def _verdict(case: Case, baseline: str, candidate: str) -> Verdict:
    before, after = grade_pair(case, baseline, candidate)
    return gate.classify(before, after, after)[0]


def test_a_name_only_the_candidate_brings_in_is_a_flip_beside_its_baseline() -> None:
    candidate = BASELINE + " Visitors from Canada and Norway come to the festival each summer."
    alone = grade_groundedness(ARTICLE, candidate)
    assert not gate.reads_ungrounded(alone), alone.reason  # alone, one weak statement among many
    before, after = grade_pair(ARTICLE, BASELINE, candidate)
    assert after.value == 2 and "Norway" in after.reason and "beside the baseline" in after.reason
    assert gate.classify(before, after, after)[0] is Verdict.REGRESSION


def test_the_gate_reads_what_only_the_candidate_brings_in_as_a_regression_its_rescore_agrees() -> None:
    candidate = BASELINE + " Visitors from Canada and Norway come to the festival each summer."
    scored = asyncio.run(score_rows(
        cases=[ARTICLE], baseline={ARTICLE.id: Answer(BASELINE)},
        candidate={ARTICLE.id: Answer(candidate)}, config=Config(cases="x"),
        judge=OfflineJudge(Config(cases="x")), progress=Silent()))
    [row] = scored.rows
    assert row.verdict is Verdict.REGRESSION, row
    assert "Norway" in row.candidate.groundedness.reason


def test_a_name_the_baseline_also_writes_is_not_the_candidates_flip() -> None:
    said = BASELINE + " Some visitors come from Norway."
    candidate = said + " Visitors from Canada and Norway come to the festival each summer."
    assert _verdict(ARTICLE, said, candidate) is not Verdict.REGRESSION


def test_a_counted_figure_only_the_candidate_gives_is_a_flip_a_loose_one_is_not() -> None:
    counted = BASELINE + " The town campaigned with boat builders for four years."
    assert not gate.reads_ungrounded(grade_groundedness(ARTICLE, counted))
    assert _verdict(ARTICLE, BASELINE, counted) is Verdict.REGRESSION
    loose = BASELINE + " The town campaigned with boat builders for a year."
    assert _verdict(ARTICLE, BASELINE, loose) is not Verdict.REGRESSION


def test_the_reverse_pair_is_no_flip() -> None:
    candidate = BASELINE + " Visitors from Canada and Norway come to the festival each summer."
    assert _verdict(ARTICLE, candidate, BASELINE) is not Verdict.REGRESSION


CAFE = Case(
    id="cafe-record", query="Write an overview of this business:",
    context=json.dumps({
        "name": "Copper Kettle", "city": "Lowbridge", "categories": "Cafes, Bakeries",
        "attributes": {"OutdoorSeating": False, "RestaurantsReservations": False,
                       "WiFi": "free", "DogsAllowed": True},
    }),
)
CAFE_BASELINE = ("Copper Kettle is a cafe and bakery in Lowbridge. WiFi is free. Dogs are allowed. "
                 "There is no outdoor seating.")


def test_against_a_record_a_name_written_as_a_key_is_no_flip() -> None:
    candidate = CAFE_BASELINE + " The cafe in Lowbridge welcomes dogs and has free Wi-Fi, CA."
    assert _verdict(CAFE, CAFE_BASELINE, candidate) is not Verdict.REGRESSION


def test_a_negation_runs_on_over_the_list_after_it_until_a_but() -> None:
    denied = ("Copper Kettle is a cafe and bakery in Lowbridge. WiFi is free and dogs are allowed. "
              "They do not offer reservations, outdoor seating, or music.")
    assert not gate.reads_ungrounded(grade_groundedness(CAFE, denied))
    turned = ("Copper Kettle is a cafe and bakery in Lowbridge. WiFi is free and dogs are allowed. "
              "They do not take reservations, but they offer outdoor seating.")
    assert grade_groundedness(CAFE, turned).value == 2


def test_a_name_clash_needs_the_name_right_after_its_word() -> None:
    context = "Washington (CNN) Two shootings rocked Washington late on Thursday."
    answer = analyse(context, "Two shootings occurred in Washington, DC on Thursday.")
    assert find_clashes(answer.statements, context) == ()
    moved = "The summit opened in Canada on Monday."
    answer = analyse(moved, "The summit opened in Mexico on Monday.")
    assert [clash.how for clash in find_clashes(answer.statements, moved)] == ["entity"]


def test_a_name_the_context_writes_as_one_word_is_known() -> None:
    vocabulary = name_vocabulary("She will sing on Superbowl weekend.")
    assert unknown_names("She will sing on the weekend of the Super Bowl.", vocabulary) == ()
    assert unknown_names("She will sing at the Grand Bowl.", vocabulary) == ("Grand", "Bowl")


def test_a_long_answer_less_the_statements_its_baseline_shares_is_still_weighed_as_long() -> None:
    # Both sides say the boat builders open sheds to guests (a paraphrase read as unsupported);
    # the candidate adds a figure to it. Less that shared statement, two claims are left: they
    # are still part of a long answer, not a short one read statement by statement.
    shared = "Boat builders from the valley open their sheds to curious guests."
    baseline = BASELINE + " " + shared
    candidate = ("The festival draws 40,000 visitors each summer. The festival is vital to the "
                 "valley. Boat builders from the valley open 12 sheds to curious guests.")
    assert gate.reads_ungrounded(grade_groundedness(ARTICLE, candidate))  # alone: the 12
    before, after = grade_pair(ARTICLE, baseline, candidate)
    assert not gate.reads_ungrounded(before) and not gate.reads_ungrounded(after), after.reason


HOTEL_BAR = Case(
    id="bar-record", query="Write an overview of this business:",
    context=json.dumps({
        "name": "Tin Lantern", "city": "Lowbridge", "categories": "Bars, Cocktail Bars",
        "attributes": {"BusinessParking": {"street": True, "lot": True, "valet": False},
                       "WiFi": "no", "HappyHour": True},
    }),
)
BAR_FAITHFUL = ("Tin Lantern is a cocktail bar in Lowbridge. It has a happy hour. Guests can park "
                "on the street or in the lot.")


def test_a_record_attribute_is_named_by_its_word_and_one_of_its_parents() -> None:
    assert "No valet business parking." in readable_context(HOTEL_BAR.context)
    assert not gate.reads_ungrounded(grade_groundedness(HOTEL_BAR, BAR_FAITHFUL))
    valet = BAR_FAITHFUL + " Valet parking is offered at the door."
    score = grade_groundedness(HOTEL_BAR, valet)
    assert score.value == 2 and "valet" in score.reason.lower()


def test_a_value_that_says_no_is_a_denial_named_by_its_key_alone_and_a_short_key_is_one_word() -> None:
    text = readable_context(HOTEL_BAR.context)
    assert "No wifi attributes." in text and "wi fi" not in text
    assert not gate.reads_ungrounded(grade_groundedness(HOTEL_BAR, BAR_FAITHFUL + " There is no WiFi."))
    score = grade_groundedness(HOTEL_BAR, BAR_FAITHFUL + " Guests can use the WiFi at the bar.")
    assert score.value == 2 and "wifi" in score.reason.lower()
