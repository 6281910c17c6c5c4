"""Statement lists: the reply's shape, the verbatim rule, and the offline judge's lexical list."""

from __future__ import annotations

import json

import pytest

from flipgate.judges.replies import JudgeReplyError, read_statements
from flipgate.model import Statement, StatementLabel, Statements
from flipgate.output.comment_view import statements_ratio
from flipgate.verdict.evidence import lexical_statements

CONTEXT = "Refunds are issued within 30 days of the request.\nA replacement card is free."
ANSWER = "Refunds are issued within 30 days.\nThey cost a $12 fee. Anything else?"


def reply(*items: dict) -> str:
    return json.dumps({"statements": list(items)})


def test_a_well_formed_list_reads_with_its_denominator() -> None:
    items = read_statements(reply(
        {"text": "Refunds are issued within 30 days.", "label": "supported",
         "span": "Refunds are issued within 30 days of the request."},
        {"text": "They cost a $12 fee.", "label": "unsupported", "span": None},
        {"text": "Anything else?", "label": "not_a_claim", "span": None}), answer=ANSWER, context=CONTEXT)
    statements = Statements(items=items)
    assert (statements.supported, statements.total) == (1, 2)
    assert [s.text for s in statements.unsupported] == ["They cost a $12 fee."]
    assert items[0].span == "Refunds are issued within 30 days of the request."


def test_a_statement_copied_across_a_line_break_is_still_verbatim() -> None:
    items = read_statements(reply({"text": "within 30  days. They cost", "label": "unsupported",
                                   "span": None}), answer=ANSWER, context=CONTEXT)
    assert items[0].label is StatementLabel.UNSUPPORTED


@pytest.mark.parametrize(("items", "message"), [
    ([{"text": "Refunds arrive within a month.", "label": "supported", "span": None}],
     "statement 1 is not in the answer (paraphrased or invented)"),
    ([{"text": "They cost a $12 fee.", "label": "supported", "span": "A $12 fee applies."}],
     "statement 1 quotes a span that is not in the context"),
    ([{"text": "They cost a $12 fee.", "label": "maybe", "span": None}], "statement 1 label must be"),
    ([{"label": "supported"}], "statement 1 has no text"),
    ([], "no statements for a non-empty answer"),
])
def test_a_list_that_is_not_evidence_is_a_judge_error(items: list, message: str) -> None:
    with pytest.raises(JudgeReplyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_statements(reply(*items), answer=ANSWER, context=CONTEXT)


@pytest.mark.parametrize("content", ['{"statement": []}', '{"statements": "all good"}', "[]", "nope"])
def test_the_wrong_shape_is_a_judge_error(content: str) -> None:
    with pytest.raises(JudgeReplyError):
        read_statements(content, answer=ANSWER, context=CONTEXT)


def test_the_offline_judge_splits_and_labels_lexically() -> None:
    items = lexical_statements(CONTEXT, ANSWER, query="How long do refunds take?")
    assert [(s.text, s.label.value) for s in items] == [
        ("Refunds are issued within 30 days.", "supported"),
        ("They cost a $12 fee.", "unsupported"),
        ("Anything else?", "not_a_claim"),
    ]
    assert items[0].span == "Refunds are issued within 30 days of the request."
    # Its own statements pass the rule every judge's list must pass.
    again = read_statements(json.dumps({"statements": [
        {"text": s.text, "label": s.label.value, "span": s.span} for s in items]}),
        answer=ANSWER, context=CONTEXT)
    assert again == items


@pytest.mark.parametrize(("labels", "shown"), [
    ((), ""),
    ((StatementLabel.NOT_A_CLAIM,), "no checkable claim"),
    ((StatementLabel.SUPPORTED, StatementLabel.UNSUPPORTED, StatementLabel.NOT_A_CLAIM), "1 of 2 statements supported"),
])
def test_the_ratio_names_the_claims_only(labels, shown) -> None:
    items = tuple(Statement(text=f"s{i}", label=label, span=None) for i, label in enumerate(labels))
    assert statements_ratio(Statements(items=items)) == shown


def test_an_unsupported_statement_keeps_the_span_that_contradicts_it() -> None:
    items = read_statements(reply(
        {"text": "They cost a $12 fee.", "label": "unsupported", "span": "A replacement card is free."},
        {"text": "Anything else?", "label": "not_a_claim", "span": "A replacement card is free."}),
        answer=ANSWER, context=CONTEXT)
    assert items[0].span == "A replacement card is free."  # marked in the context for a reviewer
    assert items[1].span is None  # a non-claim cites nothing
    with pytest.raises(JudgeReplyError, match="quotes a span that is not in the context"):
        read_statements(reply({"text": "They cost a $12 fee.", "label": "unsupported",
                               "span": "Cards cost $5."}), answer=ANSWER, context=CONTEXT)
