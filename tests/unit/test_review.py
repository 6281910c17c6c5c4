"""The evidence a reviewer checks: marked claims, the closest context sentence, a word diff."""

from __future__ import annotations

import pytest

from flipgate.judges.replies import strip_lead_in
from flipgate.model import Evidence
from flipgate.output.review import closest_sentence, mark_answer, review, word_diff
from flipgate.output.review_md import diff, inline, marked_answer

from support.gfm import read, to_html

CONTEXT = ("Replacement cards are mailed by standard delivery and arrive in five to seven "
           "business days. The first replacement each calendar year is free.")


def test_an_unsupported_statement_is_one_claim_with_its_closest_context_sentence() -> None:
    answer = "The first replacement is free. A $5 rush fee gets the card to you in 2 days."
    evidence = Evidence(unsupported_figures=("$5", "2 days"),
                        unsupported_statements=("A $5 rush fee gets the card to you in 2 days.",))
    pieces, claims = mark_answer(answer, CONTEXT, evidence)
    assert [(p.text, p.claim) for p in pieces] == [
        ("The first replacement is free. ", None),
        ("A $5 rush fee gets the card to you in 2 days.", 1)]
    assert [(c.number, c.closest) for c in claims] == [(1, CONTEXT.split(". ")[0] + ".")]


def test_a_figure_outside_any_unsupported_statement_is_its_own_claim() -> None:
    answer = "Cards arrive within 3 business days by standard delivery."
    pieces, claims = mark_answer(answer, CONTEXT, Evidence(unsupported_figures=("3 business days",)))
    assert [p.claim for p in pieces] == [None, 1, None]
    assert pieces[1].text == "3 business days" and claims[0].closest.startswith("Replacement")


def test_a_claim_nothing_in_the_context_mentions_has_no_closest_sentence() -> None:
    assert closest_sentence(CONTEXT, "Premier members earn lounge access.") is None


def test_the_word_diff_keeps_both_answers_once_and_marks_the_claim() -> None:
    baseline = "Each transfer costs $10."
    candidate = "Each transfer costs $10. Premier members pay nothing."
    found = review(context="Each transfer costs $10.", baseline=baseline, candidate=candidate,
                   evidence=Evidence(unsupported_statements=("Premier members pay nothing.",)))
    assert [(c.op, c.text, c.claim) for c in found.diff] == [
        ("same", "Each transfer costs $10.", None),
        ("ins", "Premier members pay nothing.", 1)]
    markdown = diff(found, 1_000)
    # the claim is one mark, a code span, not an insertion mark stacked on a claim mark
    assert markdown == "Each transfer costs $10. `Premier members pay nothing.`"


def test_answers_that_share_little_get_no_word_diff() -> None:
    assert word_diff("Cards are free.", "Please call us for anything about your account.") is None


def test_several_claims_are_numbered_and_the_markdown_stays_inert() -> None:
    answer = "Fees: $5 <script>x</script> and @team www.evil.example https://evil.example $7."
    found = review(context="No fees.", baseline="", candidate=answer,
                   evidence=Evidence(unsupported_figures=("$5", "$7")))
    markdown = marked_answer(found, 1_000)
    page = read(markdown)
    assert [tag for tag in page.tags if tag not in ("p", "/p")] == [
        "code", "/code", "sup", "/sup", "code", "/code", "sup", "/sup"]
    assert "<script>" not in to_html(markdown) and "@team" not in markdown
    assert "evil.example</a>" not in to_html(markdown)


def test_untrusted_text_cannot_carry_the_tag_sentinels() -> None:
    sneaky = "a \ue000bold\ue001 \ue002gone\ue003"
    found = review(context="", baseline="", candidate=sneaky, evidence=None)
    assert "`" not in marked_answer(found, 1_000) and "~~" not in marked_answer(found, 1_000)
    assert inline("\ue000x\ue001") == "`x`"  # only flipgate's own markers become marks


def test_a_long_answer_is_cut_to_the_limit_with_its_tags_closed() -> None:
    answer = "word " * 500 + "A $9 fee applies."
    found = review(context="", baseline="", candidate=answer,
                   evidence=Evidence(unsupported_statements=("A $9 fee applies.",)))
    markdown = marked_answer(found, 100)
    assert markdown.endswith("…") and len(markdown) < 120 and "`" not in markdown


@pytest.mark.parametrize(("reason", "kept"), [
    ("Let's think step by step: The answer adds a $5 fee.", "The answer adds a $5 fee."),
    ("Let us think step by step. Reasoning: the fee is new.", "the fee is new."),
    ("Step-by-step reasoning: ok", "ok"),
    ("Explanation — it is fine", "it is fine"),
    ("Analysis of the answer shows a new fee.", "Analysis of the answer shows a new fee."),
    ("Let's think step by step:", "Let's think step by step:"),  # nothing else: kept as is
])
def test_judge_boilerplate_lead_ins_are_stripped(reason: str, kept: str) -> None:
    assert strip_lead_in(reason) == kept


def test_a_judge_listing_thousands_of_claims_marks_at_most_max_claims_quickly() -> None:
    from flipgate.output.review import MAX_CLAIMS

    answer = "e.g. " * 200_000  # a megabyte the PR's prompt could produce
    evidence = Evidence(unsupported_statements=("e.g.",) * 200_000,
                        unsupported_figures=tuple(str(n) for n in range(5_000)))
    found = review(context="No fees.", baseline="", candidate=answer, evidence=evidence)
    assert 0 < len(found.claims) <= MAX_CLAIMS
    assert len(marked_answer(found, 1_200)) < 2_000
