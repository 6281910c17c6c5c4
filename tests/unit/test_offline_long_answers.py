"""The offline judge on long answers and structured contexts: what it weighs, what it sets
aside, and the misreadings it no longer makes. Every sentence here is written for these tests."""

from __future__ import annotations

import asyncio
import json

from flipgate.config.schema import Config
from flipgate.judges.offline import OfflineJudge, grade_groundedness, grade_pair
from flipgate.model import Answer, Case, Score, Verdict
from flipgate.output.progress import Silent
from flipgate.run.scoring import score_rows
from flipgate.verdict import gate
from flipgate.verdict.evidence import Kind, analyse, name_vocabulary, unknown_names
from flipgate.verdict.structured import readable_context

HARBOR = Case(id="harbor-term", query="Is there a minimum contract term for Harbor plans?",
              context="All Harbor plans are month to month. You can cancel at any time without a fee.")

ARTICLE = Case(
    id="river-festival", query="Summarize the following news in 80 words:",
    context=("The U.N. agency for culture said on Tuesday that the river festival in Calder will "
             "be listed as a protected tradition. The festival draws 40,000 visitors each summer. "
             "Mayor Ines Varga said the town had campaigned for the listing for nine years. "
             "Boat builders from the valley open their workshops to visitors during the festival. "
             "The listing brings no funding, but the town expects more visitors from the United "
             "States and Canada."),
)

CAFE = Case(
    id="cafe-record", query="Write an overview of this business:",
    context=json.dumps({
        "name": "Copper Kettle", "city": "Lowbridge", "categories": "Cafes, Bakeries",
        "hours": {"Monday": "17:0-21:30", "Sunday": "9:0-14:0"},
        "attributes": {"OutdoorSeating": False, "WiFi": "free", "DogsAllowed": True},
        "review_info": [{"review_stars": 5.0, "review_date": "2023-04-02 19:45:10",
                         "review_text": "The scones were warm and the staff friendly, a lovely stop."}],
    }),
)


def test_a_leading_no_reads_as_the_sentence_after_it() -> None:
    plain = grade_groundedness(HARBOR, "All Harbor plans are month to month, so you can cancel at any time.")
    with_no = grade_groundedness(
        HARBOR, "No. All Harbor plans are month to month, so you can cancel at any time.")
    assert plain.value == 5 and with_no.value == plain.value


def test_no_before_a_number_is_still_an_abbreviation() -> None:
    statements = analyse("Plan No. 5 costs $10.", "Plan No. 5 costs $10.").statements
    assert [s.text for s in statements] == ["Plan No. 5 costs $10."]


def test_names_written_another_way_are_known() -> None:
    vocabulary = name_vocabulary(ARTICLE.context)
    assert unknown_names("Later the UN agency wrote to Varga.", vocabulary) == ()
    assert unknown_names("Visitors come from the United States and from Canada.",
                         name_vocabulary("Visitors come from the U.S. and Canada.")) == ()
    assert unknown_names("Tourists from America and from Sundays trips.",
                         name_vocabulary("American tourists on Sunday.")) == ()
    assert unknown_names("An Oscar-winning film by Pell.", name_vocabulary("Pell won an Oscar.")) == ()
    assert unknown_names("Later the FAO agency wrote to Marlow.", vocabulary) == ("FAO", "Marlow")


def test_an_answer_introducing_itself_with_a_figure_is_not_a_claim() -> None:
    analysis = analyse(ARTICLE.context, "Here's the summary in 80 words:\nThe festival draws 40,000 visitors.")
    kinds = [s.kind for s in analysis.statements]
    assert kinds == [Kind.FILLER, Kind.CLAIM]


LONG_FAITHFUL = ("The U.N. agency for culture will list the river festival in Calder as a protected "
                 "tradition. The festival draws 40,000 visitors each summer. Mayor Ines Varga said "
                 "the town campaigned for the listing for nine years. Boat builders from the valley "
                 "open their workshops to visitors. The recognition is crucial for the town's pride.")


def test_one_unsupported_statement_among_many_is_not_the_answers_verdict() -> None:
    score = grade_groundedness(ARTICLE, LONG_FAITHFUL)
    assert score.ok and not gate.reads_ungrounded(score)
    assert "not weighed" in score.reason


def test_a_synonym_for_the_contexts_word_does_not_flag_a_long_answer() -> None:
    answer = LONG_FAITHFUL.replace("The recognition is crucial for the town's pride.",
                                   "The festival is vital to the valley.")
    assert not gate.reads_ungrounded(grade_groundedness(ARTICLE, answer))


def test_an_invented_figure_in_a_long_answer_is_still_decisive() -> None:
    score = grade_groundedness(ARTICLE, LONG_FAITHFUL.replace("40,000", "75,000"))
    assert score.value == 2 and "75,000" in score.reason


def test_an_answer_in_other_words_than_the_contexts_is_set_aside_never_ungrounded() -> None:
    answer = ("A beloved summer gathering has earned worldwide acclaim. Craftspeople welcome "
              "curious guests into their sheds. Local leaders lobbied patiently for recognition. "
              "Tourism may grow although money will not follow.")
    score = grade_groundedness(ARTICLE, answer)
    assert score.set_aside and score.value is None and score.error is None
    assert score.reason.startswith("not judged offline: too little overlap")
    assert not gate.reads_ungrounded(score)


def test_a_json_record_reads_as_sentences_without_its_timestamps() -> None:
    text = readable_context(CAFE.context)
    assert "no outdoor seating." in text.lower()
    assert "17:00 to 21:30" in text and "09:00 to 14:00" in text
    assert "2023-04-02" not in text and "19:45" not in text
    assert readable_context("Plain prose stays {as it is}.") == "Plain prose stays {as it is}."


def test_24_hour_times_and_review_timestamps_are_not_clashing_figures() -> None:
    answer = ("Copper Kettle is a cafe and bakery in Lowbridge. On Monday it opens from 5:00 pm "
              "to 9:30 pm, and on Sunday from 9:00 am to 2:00 pm. WiFi is free and dogs are allowed.")
    score = grade_groundedness(CAFE, answer)
    assert score.ok and not gate.reads_ungrounded(score), score.reason


def test_a_wrong_hour_against_a_json_record_is_caught() -> None:
    answer = ("Copper Kettle is a cafe and bakery in Lowbridge. On Monday it opens from 6:00 pm "
              "to 9:30 pm, and on Sunday from 9:00 am to 2:00 pm. WiFi is free and dogs are allowed.")
    assert grade_groundedness(CAFE, answer).value == 2


# The long baseline says it among many supported statements; the short candidate repeats it.
SHARED_SLIP = "The recognition is crucial for the town's pride."
SHORT = "The festival draws 40,000 visitors each summer. " + SHARED_SLIP


def test_a_misreading_both_sides_share_is_not_a_flip() -> None:
    alone = grade_groundedness(ARTICLE, SHORT)
    before, after = grade_pair(ARTICLE, LONG_FAITHFUL, SHORT)
    assert gate.reads_ungrounded(alone)  # read alone, the slip flags the short answer
    assert not gate.reads_ungrounded(before) and not gate.reads_ungrounded(after)
    verdict, _ = gate.classify(before, after, after)
    assert verdict is not Verdict.REGRESSION


def test_what_only_the_candidate_says_is_still_a_flip() -> None:
    candidate = LONG_FAITHFUL.replace("40,000", "75,000")
    before, after = grade_pair(ARTICLE, LONG_FAITHFUL, candidate)
    verdict, _ = gate.classify(before, after, after)
    assert verdict is Verdict.REGRESSION


def _score(case: Case, baseline: str, candidate: str) -> gate.Row:
    scored = asyncio.run(score_rows(
        cases=[case], baseline={case.id: Answer(baseline)}, candidate={case.id: Answer(candidate)},
        config=Config(cases="x"), judge=OfflineJudge(Config(cases="x")), progress=Silent()))
    [row] = scored.rows
    return row


def test_the_gate_reads_the_candidate_beside_its_baseline() -> None:
    assert _score(ARTICLE, LONG_FAITHFUL, SHORT).verdict is not Verdict.REGRESSION
    invented = SHORT.replace("40,000", "75,000")
    assert _score(ARTICLE, LONG_FAITHFUL, invented).verdict is Verdict.REGRESSION


def test_a_set_aside_answer_is_a_row_not_judged_never_a_flip_nor_an_error() -> None:
    aside = ("A beloved summer gathering has earned worldwide acclaim. Craftspeople welcome "
             "curious guests into their sheds. Local leaders lobbied patiently for recognition. "
             "Tourism may grow although money will not follow.")
    row = _score(ARTICLE, LONG_FAITHFUL, aside)
    assert row.verdict is Verdict.NOT_JUDGED and not row.blocking and row.errors == []
    assert gate.kind_of(row) is gate.kind_named("not_judged")
    counts = gate.count([row])
    assert counts.not_judged == 1 and counts.errors == 0 and gate.regressions(counts) == 0


def test_an_attribute_the_record_denies_is_caught_in_a_long_answer() -> None:
    answer = ("Copper Kettle is a cafe and bakery in Lowbridge. WiFi is free and dogs are allowed. "
              "Guests can enjoy outdoor seating on the terrace.")
    score = grade_groundedness(CAFE, answer)
    assert score.value == 2 and "outdoor seating" in score.reason.lower()


def test_a_negation_shared_with_prose_does_not_decide_a_long_answer() -> None:
    context = ("The museum reopened in May after a two-year renovation. The old cafe will not "
               "return. Visitors can now see the restored ceiling and a new wing for children.")
    case = Case(id="museum", query="Summarize the news:", context=context)
    answer = ("The museum reopened in May after a two-year renovation. Visitors can see the "
              "restored ceiling. A new wing welcomes children, and the museum cafe area was redone.")
    assert not gate.reads_ungrounded(grade_groundedness(case, answer))


def test_an_age_written_with_year_old_is_the_contexts_bare_number() -> None:
    case = Case(id="rescue", query="Summarize the news:",
                context="Sailor Tomas Brandt, 37, was found alive after 40 days at sea.")
    score = grade_groundedness(case, "A 37-year-old sailor, Tomas Brandt, was found alive after 40 days at sea.")
    assert not gate.reads_ungrounded(score), score.reason


def test_a_judge_error_beside_a_set_aside_side_is_still_an_error() -> None:
    verdict, errors = gate.classify(Score.failed("timed out"), Score.aside("not judged offline: x"))
    assert verdict is Verdict.ERROR and errors == ["baseline: timed out"]
    verdict, errors = gate.classify(Score(5), Score.aside("not judged offline: x"))
    assert verdict is Verdict.NOT_JUDGED and errors == []
