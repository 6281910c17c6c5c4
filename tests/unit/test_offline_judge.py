"""The offline judge: the 1-5 rubric read lexically, relevance, crude fluency, no network."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from flipgate.config.schema import Config
from flipgate.judges.offline import (
    OfflineJudge,
    fluency_heuristic,
    grade_groundedness,
    key_facts,
    lexical_relevance,
)
from flipgate.model import Answer, Case, Verdict
from flipgate.output.progress import Silent
from flipgate.run.scoring import score_rows
from flipgate.verdict import gate

REPLACEMENT = Case(
    id="replacement-card-fee",
    category="pricing",
    query="How much does it cost to replace my debit card?",
    context=("Card replacement: If your debit card is lost, stolen or damaged, you can order a "
             "replacement in the mobile app or at any branch. Your first replacement each calendar "
             "year is free; after that, each replacement card costs $12. Replacement cards are "
             "mailed by standard delivery and arrive in five to seven business days."),
)
WITH_TRUTH = Case(
    id="dispute-window", category="policy",
    query="How long do I have to dispute a charge?",
    context=("Disputing a charge: Report an unauthorized or incorrect charge within 60 days of the "
             "statement on which it first appeared. You can dispute a charge in the mobile app."),
    ground_truth="Report the charge within 60 days of the statement on which it first appeared.",
)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


@pytest.fixture
def judge() -> OfflineJudge:
    return OfflineJudge(Config(cases="cases.jsonl"))


# --- groundedness: one row per level of the rubric ---------------------------------

@pytest.mark.parametrize(("case", "answer", "score", "reason_has"), [
    (REPLACEMENT, "", 3, "empty answer"),
    (REPLACEMENT, "  \n\t ", 3, "empty answer"),
    (REPLACEMENT, "Please contact customer support about replacement fees.", 3,
     '"Please contact customer support about replacement fees."'),
    (REPLACEMENT, "It depends on your account. Could you tell me more?", 3, "non-answer"),
    (REPLACEMENT, "Our savings accounts earn interest monthly on balances.", 1, "unrelated"),
    (REPLACEMENT, "A replacement costs $12, plus a $5 expedited delivery fee.", 2, '"$5"'),
    (REPLACEMENT, "A replacement costs $12. Premium members get overnight courier service.", 2,
     '"Premium members get overnight courier service."'),
    (REPLACEMENT, "You can order a replacement in the mobile app or at any branch.", 4, '"$12"'),
    (REPLACEMENT, "Your first replacement each calendar year is free; after that it costs $12.", 5,
     "supported and complete"),
    (REPLACEMENT, "Please contact support; the fee is $12 after your first free replacement each year.",
     5, "supported and complete"),
    (WITH_TRUTH, "You can dispute a charge in the mobile app.", 4, '"60 days" from the ground truth'),
    (WITH_TRUTH, "You have 60 days from the statement on which the charge first appeared.", 5,
     "ground truth"),
])
def test_groundedness_rubric(case: Case, answer: str, score: int, reason_has: str) -> None:
    result = grade_groundedness(case, answer)
    assert (result.value, result.error) == (score, None)
    assert reason_has in result.reason


def test_the_reason_names_every_unsupported_figure_and_statement() -> None:
    answer = ("A replacement debit card costs $12, and the fee is waived once per calendar year. "
              "If you need the card sooner, a $5 expedited delivery fee gets it to you in 2 business days.")
    reason = grade_groundedness(REPLACEMENT, answer).reason
    assert '"$5"' in reason and '"2 business days"' in reason
    assert "If you need the card sooner" in reason


def test_without_ground_truth_the_key_facts_are_the_sentences_closest_to_the_question() -> None:
    source, figures, _ = key_facts(REPLACEMENT)
    assert source == "the context"
    assert [f.text for f in figures] == ["$12"]


def test_a_context_unrelated_to_the_question_demands_nothing() -> None:
    case = Case(id="x", query="Where is the nearest branch?",
                context="Overdraft fees are $35 per item.")
    assert key_facts(case)[1:] == ([], frozenset())


def test_scores_map_to_the_contracts_buckets() -> None:
    assert gate.bucket_of(grade_groundedness(REPLACEMENT, "Please contact support.").value) \
        is gate.Bucket.NON_ANSWER
    assert gate.bucket_of(grade_groundedness(REPLACEMENT, "It costs $99.").value) \
        is gate.Bucket.UNGROUNDED


# --- determinism and the re-score -----------------------------------------------------

def test_the_confirming_rescore_agrees_so_a_new_ungrounded_answer_is_a_regression(
        judge: OfflineJudge) -> None:
    grounded = "Your first replacement each calendar year is free; after that it costs $12."
    invented = "A replacement costs $12, plus a $5 expedited delivery fee."
    baseline = run(judge.groundedness(REPLACEMENT, grounded))
    first = run(judge.groundedness(REPLACEMENT, invented))
    second = run(judge.groundedness(REPLACEMENT, invented, sample=1))
    assert first == second
    verdict, errors = gate.classify(baseline, first, second)
    assert (verdict, errors) == (Verdict.REGRESSION, [])


def test_the_judge_never_touches_the_network(judge: OfflineJudge,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the offline judge opened a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)

    async def everything() -> None:
        await judge.groundedness(REPLACEMENT, "It costs $12.")
        await judge.relevance([(REPLACEMENT, "It costs $12.")])
        await judge.fluency("It costs $12.")
        await judge.aclose()

    run(everything())


def test_the_scorer_runs_on_it_as_on_any_judge(judge: OfflineJudge) -> None:
    """What the Judge protocol promises, exercised by the real scorer: every reading
    comes back, typed, for every row, and the judge names itself as lexical."""
    answers = {"baseline": "Your first replacement each year is free; after that it costs $12.",
               "candidate": "A replacement costs $12, plus a $25 courier fee."}
    scored = run(score_rows(cases=[REPLACEMENT],
                            baseline={REPLACEMENT.id: Answer(answers["baseline"])},
                            candidate={REPLACEMENT.id: Answer(answers["candidate"])},
                            config=Config(cases="x"), judge=judge, progress=Silent()))
    [row] = scored.rows
    for side in (row.baseline, row.candidate):
        assert side.groundedness.ok and side.bucket is not None
        assert side.relevance is not None and side.relevance.score is not None
    assert row.errors == [] and row.verdict is not Verdict.ERROR
    assert (judge.info.provider, judge.info.model, judge.info.engine) == ("offline", "lexical-v1",
                                                                          "lexical")
    assert judge.info.lexical


# --- relevance ------------------------------------------------------------------------

@pytest.mark.parametrize(("answer", "at_least", "below"), [
    ("A replacement debit card costs $12.", 0.99, 1.01),
    ("Replacement debit cards are free the first time each year.", 0.74, 0.76),  # cost not answered
    ("Withdrawals at ATMs outside our network cost $3 each.", 0.24, 0.26),       # only "cost", by figure
    ("Our branches open at 9 a.m.", 0.0, 0.01),
])
def test_relevance_is_the_share_of_the_question_the_answer_addresses(
        answer: str, at_least: float, below: float) -> None:
    relevance = lexical_relevance(REPLACEMENT, answer)
    assert relevance.error is None and not relevance.noncommittal
    assert relevance.score is not None and at_least <= relevance.score < below


@pytest.mark.parametrize("answer", ["", "Please contact support about that.",
                                    "Could you tell me which card?", "Happy to help!"])
def test_a_noncommittal_answer_has_relevance_zero(answer: str) -> None:
    relevance = lexical_relevance(REPLACEMENT, answer)
    assert (relevance.score, relevance.noncommittal) == (0.0, True)


def test_relevance_batch_keeps_order(judge: OfflineJudge) -> None:
    answers = ["A replacement debit card costs $12.", "Please contact support.",
               "Our branches open at 9 a.m."]
    readings = run(judge.relevance([(REPLACEMENT, a) for a in answers]))
    assert [r.score for r in readings] == [1.0, 0.0, 0.0]
    assert [r.noncommittal for r in readings] == [False, True, False]


# --- fluency (crude) --------------------------------------------------------------------

@pytest.mark.parametrize(("answer", "score", "fault"), [
    ("Your first replacement is free. After that, each one costs $12.", 5, "no structural fault"),
    ("It is $12; the first one each year is free.", 5, "no structural fault"),
    ("your first replacement is free. after that each one costs $12.", 4, "lower case"),
    ("yes a 3 percent fee applies to purchases abroad, premier cardholders pay none", 3,
     "does not end with punctuation"),
    ("Free. Then $12. Ok.", 4, "fragments"),
    ("The the fee is $12 after your first free replacement each year.", 4, "repeated"),
    ("The fee is ONLY $12 and ALWAYS waived first!!", 4, "shouting"),
    ("", 1, "empty"),
])
def test_fluency_heuristic(answer: str, score: int, fault: str) -> None:
    result = fluency_heuristic(answer)
    assert result.value == score
    assert fault in result.reason and "crude" in result.reason


def test_fluency_through_the_judge(judge: OfflineJudge) -> None:
    assert run(judge.fluency("It costs $12.")) == fluency_heuristic("It costs $12.")


# --- names the context does not hold ------------------------------------------------

MAGAZINES = Case(
    id="magazines", category="general",
    query="The Oberoi family is part of a hotel company that has a head office in what city?",
    context=("The Oberoi family is an Indian family that is famous for its involvement in hotels, "
             "namely through The Oberoi Group. The Oberoi Group is a hotel company with its head "
             "office in Delhi."),
)


@pytest.mark.parametrize(("answer", "name"), [
    ("The Oberoi family's hotel company, Marriott, has its head office in Delhi.", "Marriott"),
    ("Neha Sharma says the Oberoi Group head office is in Delhi.", "Neha"),  # opening a sentence
    ("The head office of the Oberoi Group is in Delhi, says Reuters.", "Reuters"),
])
def test_a_name_the_context_does_not_hold_is_unsupported(answer: str, name: str) -> None:
    score = grade_groundedness(MAGAZINES, answer)
    assert score.value == 2, score.reason
    assert "names not in the context" in score.reason and f'"{name}"' in score.reason


@pytest.mark.parametrize("answer", [
    "Delhi",
    "The Oberoi Group's head office is in Delhi.",
    "Based on the context, the head office is in Delhi.",  # a sentence's first word is no name
    "THE OBEROI GROUP: head office in Delhi.",
    "Sorry, I'm not sure of the year, but the head office is in Delhi.",
])
def test_names_the_context_holds_pass(answer: str) -> None:
    assert grade_groundedness(MAGAZINES, answer).value in (4, 5)


# --- framing, courtesy and words about the context are not claims ------------------------

@pytest.mark.parametrize("answer", [
    "Based on the provided passages, the head office is in Delhi.",
    "Based on the FAQ, the head office is in Delhi.",
    "Sure, I can help with that. The head office is in Delhi (Passage 3).",
    "According to passage 2, the Oberoi Group's head office is in Delhi [1].",
    "The head office is in Delhi. The year it opened is not explicitly stated in the passages.",
])
def test_framing_references_and_words_about_the_context_are_not_claims(answer: str) -> None:
    score = grade_groundedness(MAGAZINES, answer)
    assert score.value == 5, score.reason


def test_an_answer_only_about_what_the_context_lacks_is_a_non_answer() -> None:
    score = grade_groundedness(MAGAZINES, "The passages do not mention where the head office is.")
    assert score.value == 3 and "non-answer" in score.reason


@pytest.mark.parametrize(("answer", "score"), [
    ("After the first replacement each calendar year, a replacement costs $12.", 5),
    ("Beyond the first replacement each calendar year, it costs $12.", 5),
    ("Your first replacement each calendar year costs $12.", 2),  # the free one, priced
])
def test_a_figure_for_the_other_item_is_not_a_moved_figure(answer: str, score: int) -> None:
    result = grade_groundedness(REPLACEMENT, answer)
    assert result.value == score, result.reason


def test_headings_and_labels_are_style_not_names() -> None:
    answer = ("## Replacement Cards\n**Key Points:**\n"
              "- **Standard Delivery:** replacement cards arrive in five to seven business days.\n"
              "- Cost Overview: your first replacement each calendar year is free; after that, "
              "each replacement card costs $12.")
    score = grade_groundedness(REPLACEMENT, answer)
    assert score.value == 5, score.reason


def test_what_a_thing_is_said_to_be_must_be_in_the_context() -> None:
    """'X is a Y' claims Y: the judge names it, though X's words are all in the context."""
    case = Case(id="author", query="What does Ada Lane do?",
                context="Ada Lane wrote the novel Harbour Lights and lives in Bristol.")
    grounded = grade_groundedness(case, "Ada Lane wrote Harbour Lights, a novel.")
    invented = grade_groundedness(case, "Ada Lane is a painter.")
    assert grounded.value in (4, 5), grounded.reason
    assert invented.value == 2 and '("painter")' in invented.reason, invented.reason
