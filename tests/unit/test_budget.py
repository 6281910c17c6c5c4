"""The hard budget: reserve the worst case before sending, settle on the reply."""

from __future__ import annotations

import pytest

from flipgate.llm.budget import Budget, BudgetExceeded, chat_worst_case, embedding_worst_case


def body(content: str, **params) -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                                       {"role": "user", "content": content}], **params}


@pytest.mark.parametrize("content", ["hello", "naïve café ☕ " * 50, "日本語のテキスト" * 100, ""])
def test_the_worst_case_never_counts_fewer_tokens_than_bytes_plus_the_reply(content) -> None:
    request = body(content, max_tokens=100)
    prompt_bytes = len(b"Be brief.") + len(content.encode("utf-8"))
    assert chat_worst_case(request) >= prompt_bytes + 100


def test_the_completion_allowance_follows_the_request() -> None:
    small = chat_worst_case(body("hi", max_tokens=10))
    assert chat_worst_case(body("hi", max_completion_tokens=10)) == small
    assert chat_worst_case(body("hi")) == small - 10 + 4096  # none set: the ceiling
    assert chat_worst_case(body("hi"), completion_ceiling=50) == small - 10 + 50
    assert chat_worst_case(body("hi", max_tokens=10, n=3)) == small + 20


def test_embeddings_are_bounded_by_their_bytes() -> None:
    assert embedding_worst_case(["abc", "é"]) == 3 + 1 + 2 + 1


def test_requests_in_flight_hold_their_worst_case_until_they_settle() -> None:
    budget = Budget(max_tokens=1000)
    budget.reserve(600)
    with pytest.raises(BudgetExceeded, match=r"may cost up to 500 tokens does not fit in the 400 left "
                                             r"\(0 spent, 600 reserved"):
        budget.reserve(500)
    budget.settle(600, spent=120)  # the reply reports what it really cost
    budget.reserve(500)
    assert (budget.tokens, budget.reserved_tokens) == (120, 500)
    budget.settle(500, spent=None)  # cut off or no usage reported: the worst case is spent
    assert budget.tokens == 620 and budget.reserved_tokens == 0
    assert budget.stats() == {"max_requests": None, "max_tokens": 1000, "spent_requests": 2,
                              "spent_tokens": 620, "reserved_tokens": 0, "refused_requests": 1,
                              "refused_tokens": 500}


def test_a_rate_limited_try_costs_nothing() -> None:
    budget = Budget(max_requests=1, max_tokens=100)
    budget.reserve(100)
    budget.cancel(100)
    budget.reserve(100)  # the room is back
    budget.settle(100, spent=90)
    with pytest.raises(BudgetExceeded, match=r"max_requests \(1\) reached after 1 requests"):
        budget.reserve(1)
