"""The offline judge's contradiction check: what a lexical reader can see, and what it leaves alone.

Each contradiction row is an answer whose words are all (or nearly all) in
its context, so only the clash makes it ungrounded; each honest row beside
it repeats the context faithfully, negations included, and must not be
called ungrounded.
"""

from __future__ import annotations

import asyncio

import pytest

from flipgate.config.schema import Config
from flipgate.judges.offline import OfflineJudge, grade_groundedness
from flipgate.model import Case, StatementLabel
from flipgate.verdict import gate
from flipgate.verdict.contradiction import ENTITY, FIGURE, NEGATION, ORDER, find_clashes
from flipgate.verdict.evidence import analyse

THERMOSTAT = Case(
    id="thermostat-heating", category="safety",
    query="Can I use the T500 with my heating system?",
    context=("The T500 thermostat works with gas furnaces, heat pumps and central air "
             "conditioning. It does not support dual-fuel systems. Line-voltage heaters, such as "
             "240 V baseboard heaters, must not be connected to it."),
)
THERMOSTAT_ANSWER = ("Yes! The T500 works with gas furnaces and heat pumps, and also with "
                     "dual-fuel systems and 240 V baseboard heaters.")


def case(context: str, query: str = "What should I know?") -> Case:
    return Case(id="c", category="safety", query=query, context=context)


def test_the_thermostat_contradiction_is_ungrounded_and_names_the_passages() -> None:
    score = grade_groundedness(THERMOSTAT, THERMOSTAT_ANSWER)
    assert score.value == 2
    assert "It does not support dual-fuel systems." in score.reason
    assert "negation check" in score.reason
    assert "confirm" not in score.reason


def test_the_thermostat_rows_evidence_shows_the_clashing_passage() -> None:
    judge = OfflineJudge(Config(cases="cases.jsonl"))
    statements = asyncio.run(judge.statements(THERMOSTAT, THERMOSTAT_ANSWER)).items
    clashing = [s for s in statements if s.label is StatementLabel.UNSUPPORTED]
    assert [s.span for s in clashing] == ["It does not support dual-fuel systems."]
    assert clashing[0].text == THERMOSTAT_ANSWER.removeprefix("Yes! ")


def test_the_thermostat_flip_is_a_regression() -> None:
    honest = "The T500 works with gas furnaces, heat pumps and central air conditioning."
    before = grade_groundedness(THERMOSTAT, honest)
    after = grade_groundedness(THERMOSTAT, THERMOSTAT_ANSWER)
    assert gate.bucket_of(before.value or 0) is gate.Bucket.GROUNDED
    assert gate.classify(before, after, after)[0] is gate.Verdict.REGRESSION


# (context, query, answer, shape): every answer contradicts its context.
CONTRADICTIONS = [
    # negation: "does not support"
    ("The app does not support Android tablets. It runs on Android phones and iPads.",
     "Which devices does the app run on?", "The app supports Android tablets and iPads.", NEGATION),
    # "must not"
    ("Lithium batteries must not be packed in checked luggage. Carry them in your cabin bag.",
     "Where do lithium batteries go?", "You can pack lithium batteries in checked luggage.",
     NEGATION),
    # "never"
    ("We will never ask for your PIN by email or phone. Keep your PIN private.",
     "Will you ask for my PIN?", "We may ask for your PIN by email to verify your account.",
     NEGATION),
    # "no ... fee"
    ("There is no fee for replacement cards. Replacement cards arrive in five business days.",
     "What does a replacement card cost?", "A fee applies to replacement cards.", NEGATION),
    # "is not available"
    ("The premium plan is not available in Canada. It is sold in the United States.",
     "Can I buy the premium plan?", "The premium plan is available in Canada.", NEGATION),
    # "cannot"
    ("Gift cards cannot be exchanged for cash. They can be used for any purchase in store.",
     "Can I get cash for a gift card?", "Gift cards can be exchanged for cash at any store.",
     NEGATION),
    # "do not" (imperative)
    ("Do not give this medicine to children. Adults take one tablet a day.",
     "Can my child take it?", "You can give this medicine to children with food.", NEGATION),
    # "isn't covered"
    ("Flood damage isn't covered by the basic policy. Fire and theft are covered.",
     "Is flood damage covered?", "The basic policy covers flood damage, fire and theft.",
     NEGATION),
    # "are not allowed"
    ("Pets are not allowed in the rental apartments. Parking is included.",
     "Can I bring my dog?", "Pets are allowed in the rental apartments.", NEGATION),
    # "can't be used" (compatibility group: used -> works)
    ("The charger can't be connected to 12 V car sockets. Use a wall outlet.",
     "Can I charge in the car?", "The charger works with 12 V car sockets.", NEGATION),
    # "does not include"
    ("The basic plan does not include international roaming. Calls at home are unlimited.",
     "Does the plan include roaming?", "The basic plan includes international roaming.",
     NEGATION),
    # a bare yes to a question that names what is denied
    ("The T500 does not support dual-fuel systems.", "Does the T500 work with dual-fuel systems?",
     "Yes, it does.", NEGATION),
    # "neither ... nor"
    ("The kettle is neither dishwasher safe nor oven safe. Wipe it with a damp cloth.",
     "How do I clean the kettle?", "The kettle is dishwasher safe, so wash it there.", NEGATION),
    # the negation set against an affirmation by "but"
    ("Refunds are issued to the original card, but refunds are not issued as store credit.",
     "How are refunds issued?", "Refunds are issued as store credit.", NEGATION),
    # figure: money
    ("The late fee for a missed payment is $25.", "What is the late fee?",
     "The late fee for a missed payment is $40.", FIGURE),
    # figure: a duration
    ("Returns are accepted within 30 days of delivery.", "How long do I have to return it?",
     "Returns are accepted within 90 days of delivery.", FIGURE),
    # figure: a percentage
    ("The savings account pays 2% interest a year.", "What interest does savings pay?",
     "The savings account pays 4% interest a year.", FIGURE),
    # figure: a unit-bearing count (volts)
    ("The heater runs on 120 V household current.", "What voltage does the heater need?",
     "The heater runs on 240 V household current.", FIGURE),
    # figure: a time of day
    ("The branch opens at 9:00 a.m. on weekdays.", "When does the branch open?",
     "The branch opens at 7:00 a.m. on weekdays.", FIGURE),
    # "no ... is needed"
    ("No appointment is needed for a flu shot. Walk in during opening hours.",
     "Do I need an appointment?", "You need an appointment for a flu shot.", NEGATION),
    # figure moved from one item to another: the first card is free, later ones cost 5 pounds
    ("The first replacement card is free. Later replacements cost 5 pounds each.",
     "What does a replacement card cost?", "The first replacement card costs 5 pounds.", FIGURE),
    # figure moved: the delivery times of two services swapped
    ("Standard delivery takes 5 days. Express delivery takes 2 days.",
     "How long does standard delivery take?", "Standard delivery takes 2 days.", FIGURE),
    # the answer denies what the context affirms
    ("Cards can be used abroad. A 3% fee applies to purchases in other currencies.",
     "Can I use my card abroad?", "Cards cannot be used abroad.", NEGATION),
    ("The first replacement card is free. Later replacements cost 5 pounds each.",
     "What does a replacement card cost?", "The first replacement card is not free.", NEGATION),
    ("The Oberoi family is an Indian family that is famous for its involvement in hotels.",
     "What is the Oberoi family known for?", "The Oberoi family is not involved in hotels.",
     NEGATION),
    # entity: a place
    ("Free shipping applies to orders shipped to Canada.", "Where is shipping free?",
     "Free shipping applies to orders shipped to Mexico.", ENTITY),
    # entity: a plan name
    ("Screen repair is included with the Plus plan.", "Which plan includes screen repair?",
     "Screen repair is included with the Basic plan.", ENTITY),
]


@pytest.mark.parametrize(("context", "query", "answer", "shape"), CONTRADICTIONS)
def test_a_contradiction_is_ungrounded_with_its_passage(context: str, query: str, answer: str,
                                                       shape: str) -> None:
    the_case = case(context, query)
    score = grade_groundedness(the_case, answer)
    assert score.value in (1, 2), score.reason
    clashes = find_clashes(analyse(context, answer, query=query).statements, context, query=query)
    assert [clash.how for clash in clashes][:1] == [shape]
    assert clashes[0].passage in context and clashes[0].passage in score.reason


# (context, query, answer): faithful answers, most of them repeating a negation.
HONEST = [
    (THERMOSTAT.context, THERMOSTAT.query,
     "No, it does not support dual-fuel systems, and line-voltage heaters must not be connected."),
    (THERMOSTAT.context, THERMOSTAT.query,
     "The T500 works with gas furnaces, heat pumps and central air conditioning."),
    (THERMOSTAT.context, THERMOSTAT.query,
     "It works with heat pumps, but it does not support dual-fuel systems."),
    ("The app does not support Android tablets. It runs on Android phones and iPads.",
     "Which devices does the app run on?", "It runs on Android phones and iPads, not tablets."),
    ("Lithium batteries must not be packed in checked luggage. Carry them in your cabin bag.",
     "Where do lithium batteries go?", "Carry lithium batteries in your cabin bag."),
    ("We will never ask for your PIN by email or phone. Keep your PIN private.",
     "Will you ask for my PIN?", "No. We never ask for your PIN by email or phone."),
    ("There is no fee for replacement cards. Replacement cards arrive in five business days.",
     "What does a replacement card cost?", "Replacement cards are free."),
    ("There is no fee for replacement cards. Replacement cards arrive in five business days.",
     "What does a replacement card cost?", "There is no fee, and the card arrives in five business days."),
    ("The premium plan is not available in Canada. It is sold in the United States.",
     "Can I buy the premium plan?", "The premium plan is sold in the United States, not in Canada."),
    ("Gift cards cannot be exchanged for cash. They can be used for any purchase in store.",
     "Can I get cash for a gift card?", "Gift cards can't be exchanged for cash."),
    ("Do not give this medicine to children. Adults take one tablet a day.",
     "Can my child take it?", "Adults take one tablet a day; do not give it to children."),
    ("Flood damage isn't covered by the basic policy. Fire and theft are covered.",
     "Is flood damage covered?", "Fire and theft are covered."),
    ("Pets are not allowed in the rental apartments. Parking is included.",
     "Can I bring my dog?", "Parking is included, but pets are not allowed."),
    ("You cannot withdraw more than $500 a day from an ATM.", "How much can I withdraw?",
     "You can withdraw up to $500 a day from an ATM."),
    ("Payments made after 5 p.m. are not processed until the next business day.",
     "When is my payment processed?", "A payment made after 5 p.m. is processed the next business day."),
    ("The T500 does not support dual-fuel systems.", "Does the T500 work with heat pumps?",
     "Yes, it does."),
    ("The late fee for a missed payment is $25.", "What is the late fee?",
     "The late fee for a missed payment is $25."),
    ("Returns are accepted within 30 days of delivery.", "How long do I have to return it?",
     "You can return it within 30 days of delivery."),
    ("Free shipping applies to orders shipped to Canada.", "Where is shipping free?",
     "Orders shipped to Canada ship free."),
    ("Screen repair is included with the Plus plan.", "Which plan includes screen repair?",
     "The Plus plan includes screen repair."),
    ("Refunds are issued to the original card, but refunds are not issued as store credit.",
     "How are refunds issued?", "Refunds go back to the original card, never as store credit."),
    # another clause of the context affirms what the answer says
    ("The T500 does not support dual-fuel systems. The T700 supports dual-fuel systems.",
     "What about dual-fuel?", "The T700 supports dual-fuel systems."),
    # the answer states what the negation leaves open
    ("Late fees are never charged on the first missed payment. After that, a $25 fee applies.",
     "Is there a late fee?", "A $25 late fee applies after the first missed payment."),
    ("The warranty does not cover water damage. It covers manufacturing defects for two years.",
     "What does the warranty cover?", "It covers manufacturing defects for two years."),
    # each figure kept with its own item
    ("The first replacement card is free. Later replacements cost 5 pounds each.",
     "What does a replacement card cost?", "Later replacements cost 5 pounds each."),
    ("The first replacement card is free. Later replacements cost 5 pounds each.",
     "What does a replacement card cost?",
     "The first replacement card is free; after that a replacement costs 5 pounds."),
    ("Standard delivery takes 5 days. Express delivery takes 2 days.",
     "How fast is delivery?", "Express delivery takes 2 days, standard delivery 5 days."),
    # the other item, named by a bound or an ordinal
    ("The first replacement card is free. Later replacements cost 5 pounds each.",
     "What does a replacement card cost?",
     "After the first replacement card, a replacement costs 5 pounds."),
    ("The first replacement card is free. Later replacements cost 5 pounds each.",
     "What does a replacement card cost?", "A second replacement card costs 5 pounds."),
    # a figure from another sentence beside the closest sentence's own: an addition
    ("Standard shipping for small parcels costs $5. Orders over $50 ship free.",
     "What does shipping cost?", "Standard shipping for small parcels costs $5 on orders under $50."),
    # a negation the context makes too, beside an affirmation of something else
    ("Cards can be used abroad. Cards cannot be used at casinos.", "Where can I use my card?",
     "Cards cannot be used at casinos."),
    ("The T700 supports dual-fuel systems. The T500 does not support dual-fuel systems.",
     "Does the T500 support dual-fuel?", "No, the T500 does not support dual-fuel systems."),
    # the context's affirmation is bounded: it speaks of the other cards
    ("A fee applies to every card after the first.", "Is the first card free?",
     "You are not charged for the first card."),
    # a denial under a condition, or of the other item
    ("The first replacement card is free. Later replacements cost 5 pounds each.",
     "What does a replacement card cost?",
     "The first replacement card is not free if you want it sent by courier."),
    ("The first replacement card is free. Later replacements cost 5 pounds each.",
     "What does a replacement card cost?", "Additional replacement cards are not free."),
    # a denial that only bounds a figure
    ("You can withdraw cash abroad. Withdrawals are limited to $500 a day.",
     "How much can I withdraw abroad?", "You cannot withdraw more than $500 a day abroad."),
]


@pytest.mark.parametrize(("context", "query", "answer"), HONEST)
def test_a_faithful_answer_is_not_a_contradiction(context: str, query: str, answer: str) -> None:
    statements = analyse(context, answer, query=query).statements
    assert find_clashes(statements, context, query=query) == ()
    assert grade_groundedness(case(context, query), answer).value not in (1, 2)


# What the lexical reader cannot see, as docs/judges.md names it: each answer contradicts its
# context, and the offline judge does not read it as ungrounded. A change that catches one
# must move it to CONTRADICTIONS and update the docs.
BLIND_SPOTS = [
    # a denial worded without a negative
    ("Cards can be used abroad.", "Can I use my card abroad?",
     "Cards are blocked outside the country."),
    # a restriction worded without a negative
    ("The T500 only works with gas furnaces.", "Does the T500 work with heat pumps?",
     "The T500 works with heat pumps."),
    # an implication drawn from two figures
    ("Standard delivery takes 5 days. Express delivery takes 2 days.",
     "How long does standard delivery take?", "Standard delivery is quicker than express."),
    # a name the context holds, put in the wrong place
    ("Boston College is in Chestnut Hill. Stanford University is in California.",
     "Which university is in Chestnut Hill?", "Stanford University is in Chestnut Hill."),
]


@pytest.mark.parametrize(("context", "query", "answer"), BLIND_SPOTS)
def test_a_blind_spot_stays_what_the_docs_say(context: str, query: str, answer: str) -> None:
    assert grade_groundedness(case(context, query), answer).value not in (1, 2)


# --- order: which of two came first ------------------------------------------------

BRIDGES = ("The Kellan Bridge (opened 1932) crosses the river at Mardale. "
           "The Ostwick Viaduct was opened in 1894 and carried coal trains until 1965.")
WHICH_FIRST = "Which opened first, the Kellan Bridge or the Ostwick Viaduct?"


@pytest.mark.parametrize("answer", [
    "The Kellan Bridge was opened first.",
    "The Ostwick Viaduct was opened after the Kellan Bridge.",
    "The Kellan Bridge is older than the Ostwick Viaduct.",
])
def test_an_order_the_context_years_reverse_is_a_contradiction(answer: str) -> None:
    statements = analyse(BRIDGES, answer, query=WHICH_FIRST).statements
    clashes = find_clashes(statements, BRIDGES, query=WHICH_FIRST)
    assert [(c.how, c.claim) for c in clashes] == [(ORDER, answer)]
    assert grade_groundedness(case(BRIDGES, WHICH_FIRST), answer).value == 2


@pytest.mark.parametrize("answer", [
    "The Ostwick Viaduct was opened first.",
    "The Kellan Bridge was opened after the Ostwick Viaduct.",
    "The Ostwick Viaduct is older than the Kellan Bridge, and it carried coal trains.",
    "The Ostwick Viaduct opened in 1894, so it was opened first.",
])
def test_an_order_the_context_years_bear_out_is_no_clash(answer: str) -> None:
    statements = analyse(BRIDGES, answer, query=WHICH_FIRST).statements
    assert find_clashes(statements, BRIDGES, query=WHICH_FIRST) == ()
    assert grade_groundedness(case(BRIDGES, WHICH_FIRST), answer).value in (4, 5)
