"""The deterministic evidence check: statements, figures, and what the context lacks."""

from __future__ import annotations

from decimal import Decimal

import pytest

from flipgate.model import Evidence
from flipgate.verdict.evidence import Kind, analyse, content_words, find_unsupported, split_statements, stem
from flipgate.verdict.figures import extract_figures

CARD_FAQ = (
    "Card replacement: If your debit card is lost, stolen or damaged, you can order a "
    "replacement in the mobile app or at any branch. Your first replacement each calendar "
    "year is free; after that, each replacement card costs $12. Replacement cards are mailed "
    "by standard delivery and arrive in five to seven business days."
)


# --- figures: equivalent forms match, near misses do not --------------------------

@pytest.mark.parametrize(("in_answer", "in_context"), [
    ("$12", "12 dollars"),
    ("12 dollars", "$12"),
    ("USD 12", "$12"),
    ("12 USD", "$12.00"),
    ("US$12", "$12"),
    ("twelve dollars", "$12"),
    ("$1,500", "$1500"),
    ("$1.5k", "$1,500"),
    ("twenty-five dollars", "$25"),
    ("one hundred and fifty dollars", "$150"),
    ("50 cents", "$0.50"),
    ("5-7 days", "five to seven days"),
    ("5 to 7", "5-7 business days"),
    ("five to seven business days", "5\u20137 days"),
    ("between 5 and 7 days", "5-7 days"),
    ("$5-$10", "$5 to $10"),
    ("seven days", "7 days"),
    ("30-day", "30 days"),
    ("two weeks", "14 days"),
    ("1 year", "12 months"),
    ("10%", "10 percent"),
    ("10 per cent", "10%"),
    ("1.5%", "1.5 percent"),
    ("March 1, 2026", "2026-03-01"),
    ("1 March 2026", "03/01/2026"),
    ("the 1st of March", "March 1, 2026"),
    ("9 a.m.", "9:00 AM"),
    ("5pm", "5:00 p.m."),
    ("1-800-555-0142", "(800) 555-0142"),
    ("24/7", "available 24/7"),
    ("12", "$12"),           # a bare number is vouched for by the amount
    ("2026", "March 1, 2026"),
    ("2%", "drops from 3% to 2%"),
    ("3%", "rises from 2% to 3%"),
])
def test_equivalent_figures_match(in_answer: str, in_context: str) -> None:
    evidence = find_unsupported(f"Our terms: {in_context}.", f"It is {in_answer}.")
    assert evidence.unsupported_figures == ()


@pytest.mark.parametrize(("in_answer", "in_context"), [
    ("$12", "$120"),
    ("$120", "$12"),
    ("5-7 days", "5 days"),
    ("5 days", "5-7 days"),
    ("1.5%", "15%"),
    ("15%", "1.5%"),
    ("$12", "12 days"),
    ("12 days", "$12"),
    ("12 months", "12 days"),
    ("\u20ac12", "$12"),
    ("$12", "12"),            # an amount needs the amount, not just the number
    ("March 2, 2026", "March 1, 2026"),
    ("March 1, 2027", "March 1, 2026"),
    ("10 a.m.", "10 p.m."),
    ("1-800-555-0143", "1-800-555-0142"),
    ("$5", "no fee at all"),
    ("two business days", "five to seven business days"),
])
def test_near_miss_figures_do_not_match(in_answer: str, in_context: str) -> None:
    evidence = find_unsupported(f"Our terms: {in_context}.", f"It is {in_answer}.")
    assert evidence.unsupported_figures == (in_answer,)


@pytest.mark.parametrize(("text", "expected"), [
    ("a 30-day window", [("30-day", "day", (Decimal(30), None))]),
    ("five to seven business days", [("five to seven business days", "day", (Decimal(5), Decimal(7)))]),
    ("a fee of 3%", [("3%", "percent", (Decimal(3), None))]),
    ("up to 3 fees per day", [("3", "count", (Decimal(3), None))]),
    ("from $5 to $3", [("$5", "usd", (Decimal(5), None)), ("$3", "usd", (Decimal(3), None))]),
    ("in May 2026", [("May 2026", "date", (2026, 5, None))]),
    ("call 1-800-555-0142, 24/7", [("1-800-555-0142", "literal", ("8005550142",)),
                                   ("24/7", "literal", ("24/7",))]),
    ("one of our branches", []),          # a lone "one" is a pronoun
    ("a one-time code", []),
    ("you may want to call", []),         # the modal, not the month
    ("one day", [("one day", "day", (Decimal(1), None))]),
    ("two cards", [("two", "count", (Decimal(2), None))]),
])
def test_extract_figures(text: str, expected: list[tuple[str, str, tuple[object, ...]]]) -> None:
    assert [(f.text, f.unit, f.value) for f in extract_figures(text)] == expected


def test_figures_echoed_from_the_query_are_not_invented() -> None:
    evidence = find_unsupported("Purchases abroad carry a 3% fee.",
                                "On a $200 purchase abroad you pay the 3% fee.",
                                query="Do I pay a fee on a $200 purchase abroad?")
    assert evidence.unsupported_figures == ()
    without_query = find_unsupported("Purchases abroad carry a 3% fee.",
                                     "On a $200 purchase abroad you pay the 3% fee.")
    assert without_query.unsupported_figures == ("$200",)


# --- statements -----------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("Sure! The fee is $1.50 per wire.", ["Sure!", "The fee is $1.50 per wire."]),
    ("Call before 9 a.m. Eastern. We open at 8.", ["Call before 9 a.m. Eastern.", "We open at 8."]),
    ("Please contact support; the fee is $12.", ["Please contact support", "the fee is $12."]),
    ("- first point\n- second point\n\n1. third", ["first point", "second point", "third"]),
    ("Fees apply in the U.S. and abroad (e.g. Canada).", ["Fees apply in the U.S. and abroad (e.g. Canada)."]),
    ('He said "no fee." Then he left.', ['He said "no fee."', "Then he left."]),
    ("   ", []),
])
def test_split_statements(text: str, expected: list[str]) -> None:
    assert split_statements(text) == expected


def test_semicolons_can_be_kept_inside_a_sentence() -> None:
    assert split_statements("It is $12; the first is free.", semicolons=False) == [
        "It is $12; the first is free."]


@pytest.mark.parametrize("paraphrase", [
    "Your first replacement card each calendar year costs nothing.",
    "The first card you replace each year is free of charge.",
    "After the first free one, replacements are $12 each.",
    "Replacement cards arrive by standard delivery.",
    "You can order one in the mobile app or at a branch.",
    "A stolen or damaged debit card can be replaced at any branch.",
])
def test_a_faithful_paraphrase_is_supported(paraphrase: str) -> None:
    assert find_unsupported(CARD_FAQ, paraphrase) == Evidence()


@pytest.mark.parametrize("invented", [
    "Premium members can get replacements overnight at no cost.",
    "Replacement cards keep the same number and expiry date.",
    "We also send a temporary virtual card to your digital wallet.",
])
def test_an_invented_claim_is_unsupported(invented: str) -> None:
    assert find_unsupported(CARD_FAQ, invented).unsupported_statements == (invented,)


def test_evidence_lists_figures_and_statements_as_written_once_each() -> None:
    answer = ("A replacement costs $12. Expedited delivery adds a $5 fee and takes 2 business days. "
              "We can also courier it to your hotel for $5.")
    evidence = find_unsupported(CARD_FAQ, answer)
    assert evidence.unsupported_figures == ("$5", "2 business days")
    assert evidence.unsupported_statements == (
        "Expedited delivery adds a $5 fee and takes 2 business days.",
        "We can also courier it to your hotel for $5.")


# --- non-answers ----------------------------------------------------------------

@pytest.mark.parametrize(("answer", "non_answer"), [
    ("Please contact support.", True),
    ("Please contact support; the fee is $12.", False),
    ("Please contact support. Replacements after the first each year cost $12.", False),
    ("It depends on your account type.", True),
    ("Could you tell me which card you mean?", True),
    ("I'm sorry, I can't help with that.", True),
    ("Thanks for reaching out! Let me know if you have other questions.", True),
    ("For more details, visit our website.", True),
    ("You'd need to speak with a banker at your branch about that.", True),
    ("Call us at 1-800-555-0142.", False),
    ("Your first replacement each calendar year is free.", False),
    ("Sure!", True),
])
def test_non_answer_needs_the_absence_of_any_checkable_claim(answer: str, non_answer: bool) -> None:
    assert analyse(CARD_FAQ, answer).non_answer is non_answer


def test_a_deflection_the_context_itself_gives_is_an_answer() -> None:
    context = "Stolen cards: call us right away and lock the card in the mobile app."
    analysis = analyse(context, "Call us right away.")
    assert [s.kind for s in analysis.statements] == [Kind.CLAIM]
    assert not analysis.non_answer
    assert analyse(CARD_FAQ, "Call us right away.").non_answer


def test_deflections_and_questions_are_not_listed_as_unsupported_statements() -> None:
    analysis = analyse(CARD_FAQ, "Which card do you mean? Please contact customer support.")
    assert [s.kind for s in analysis.statements] == [Kind.QUESTION, Kind.DEFLECTION]
    assert analysis.evidence() == Evidence()


# --- words ----------------------------------------------------------------------

@pytest.mark.parametrize("forms", [
    ("replacement", "replaced", "replacing", "replacements"),
    ("applies", "applied", "applying", "apply"),
    ("activation", "activated", "activate"),
    ("cancelled", "canceled", "cancel"),
    ("charges", "charged", "charging"),
])
def test_stem_joins_inflections(forms: tuple[str, ...]) -> None:
    assert len({stem(form) for form in forms}) == 1


def test_stem_keeps_app_and_apply_apart() -> None:
    assert stem("app") != stem("apply")


@pytest.mark.parametrize(("a", "b"), [
    ("the replacement costs", "the replacement fee"),
    ("at no charge", "free"),
    ("free of charge", "waived"),
    ("purchases made overseas", "purchases made outside the United States"),
    ("up to $500", "a limit of $500"),
    ("once per calendar year", "each calendar year"),
])
def test_paraphrases_share_content_words(a: str, b: str) -> None:
    assert content_words(a) == content_words(b)


@pytest.mark.parametrize("text", ["Please let me know if you have any other questions!",
                                  "Thanks for reaching out, happy to help.", "$12 or 5%."])
def test_no_content_words_in_filler_or_figures(text: str) -> None:
    assert content_words(text) == frozenset()


def test_up_to_date_is_not_a_limit() -> None:
    assert "limit" not in content_words("keep your number up to date")


# --- predicates: in "X is (a) Y" the claim is Y -------------------------------------

AUTHOR = ("Ada Lane wrote the novel Harbour Lights in 1998. She and her brother Tom Lane "
          "were cyclists in their youth and now live in Bristol.")


@pytest.mark.parametrize(("answer", "predicates"), [
    ("Ada Lane is a painter.", ("painter",)),
    ("Ada Lane was also a surgeon.", ("surgeon",)),
    ("Harbour Lights is a short novel.", ("short",)),
    ("Ada and Tom Lane were professional sailors.", ("professional", "sailors")),
    ("Harbour Lights is a play by Ada Lane.", ("play",)),
])
def test_a_predicate_the_context_never_uses_makes_the_statement_unsupported(
        answer: str, predicates: tuple[str, ...]) -> None:
    check = analyse(AUTHOR, answer).statements[0]
    assert (check.supported, check.unknown_predicates) == (False, predicates)


@pytest.mark.parametrize("answer", [
    "Harbour Lights is a novel by Ada Lane.",
    "Ada Lane and her brother were cyclists.",
    "Ada Lane's home is Bristol.",
])
def test_a_predicate_the_context_holds_is_supported(answer: str) -> None:
    check = analyse(AUTHOR, answer).statements[0]
    assert (check.supported, check.unknown_predicates) == (True, ())


def test_a_passive_verb_is_an_action_not_a_predicate() -> None:
    """'are mailed by' is read by coverage, not as what the cards are."""
    answer = "Replacement cards are mailed by standard delivery."
    assert analyse(CARD_FAQ, answer).statements[0].unknown_predicates == ()
