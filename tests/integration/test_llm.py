"""The LLM door against a real openai client on loopback: cache, validation, budget, batching."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from flipgate.llm.cache import Cache
from flipgate.llm.client import EMBEDDING_BATCHES_IN_FLIGHT, LLM, Budget, BudgetExceeded, Limiter
from flipgate.llm.endpoints import make_client, openai_endpoint

from support.factories import settings_now

MESSAGES = [{"role": "user", "content": "What is the card replacement fee?"}]


def make_llm(base_url: str, *, cache: Cache | None = None, budget: Budget | None = None,
             embedding_batch: int = 2048, limit: int = 4) -> LLM:
    endpoint = openai_endpoint(base_url, settings=settings_now())
    client = make_client(endpoint, settings=settings_now(), timeout=5, max_retries=1)
    return LLM(client, endpoint, limiter=Limiter(limit=limit), cache=cache, budget=budget,
               embedding_batch=embedding_batch)


def test_a_cached_reply_makes_no_second_request(openai_server, tmp_path: Path) -> None:
    async def twice() -> tuple[str, bool]:
        llm = make_llm(openai_server.base_url, cache=Cache(tmp_path))
        first = await llm.chat(model="gen-1", messages=MESSAGES, params={"temperature": 0})
        second = await llm.chat(model="gen-1", messages=MESSAGES, params={"temperature": 0})
        assert first.content == second.content and not first.cached
        return second.content, second.cached

    _, cached = asyncio.run(twice())
    assert cached
    assert len(openai_server.chat_requests()) == 1


@pytest.mark.parametrize("change", [
    {"params": {"temperature": 0.5}},
    {"model": "gen-2"},
    {"cache_tag": {"sample": 1}},
])
def test_any_difference_in_the_request_is_a_new_request(openai_server, tmp_path: Path, change) -> None:
    async def both() -> None:
        llm = make_llm(openai_server.base_url, cache=Cache(tmp_path))
        base = {"model": "gen-1", "messages": MESSAGES, "params": {"temperature": 0}}
        await llm.chat(**base)
        await llm.chat(**{**base, **change})

    asyncio.run(both())
    assert len(openai_server.chat_requests()) == 2


def test_replies_the_validator_rejects_are_never_served_from_cache(openai_server, tmp_path: Path) -> None:
    openai_server.on_generation(lambda body: "not json")

    def must_be_json(text: str) -> object:
        return json.loads(text)

    async def twice() -> None:
        llm = make_llm(openai_server.base_url, cache=Cache(tmp_path))
        for _ in range(2):
            await llm.chat(model="m", messages=MESSAGES, validate=must_be_json)

    asyncio.run(twice())
    assert len(openai_server.chat_requests()) == 2


def test_the_budget_stops_before_spending_more(openai_server) -> None:
    async def three() -> None:
        llm = make_llm(openai_server.base_url, budget=Budget(max_requests=2))
        for n in range(3):
            await llm.chat(model="m", messages=[{"role": "user", "content": f"q{n}"}])

    with pytest.raises(BudgetExceeded, match=r"max_requests \(2\) reached after 2 requests"):
        asyncio.run(three())
    assert len(openai_server.chat_requests()) == 2


def test_embeddings_go_out_in_as_few_batches_as_the_limit_allows(openai_server, tmp_path: Path) -> None:
    texts = [f"question number {i} about fees" for i in range(10)] + ["question number 0 about fees"]

    async def embed() -> list[list[float]]:
        llm = make_llm(openai_server.base_url, cache=Cache(tmp_path), embedding_batch=4)
        return await llm.embed(model="emb", texts=texts)

    vectors = asyncio.run(embed())
    assert len(vectors) == 11 and vectors[0] == vectors[10]
    sizes = sorted(len(r.body["input"]) for r in openai_server.embedding_requests())
    assert sizes == [2, 4, 4]  # 10 unique texts, batches of at most 4
    openai_server.clear()
    assert asyncio.run(embed()) == vectors  # all cached now
    assert openai_server.embedding_requests() == []


def test_embedding_batches_in_flight_are_bounded_whatever_the_concurrency(openai_server) -> None:
    """Each embeddings reply is the largest thing a run holds: memory follows this bound."""
    openai_server.latency = 0.05
    batches = 3 * EMBEDDING_BATCHES_IN_FLIGHT
    texts = [f"question number {i} about fees" for i in range(2 * batches)]

    async def embed() -> list[list[float]]:
        llm = make_llm(openai_server.base_url, embedding_batch=2, limit=64)
        lots = [llm.embed(model="emb", texts=texts[i:i + 2]) for i in range(0, len(texts), 2)]
        return [vector for vectors in await asyncio.gather(*lots) for vector in vectors]

    vectors = asyncio.run(embed())
    assert len(vectors) == len(texts) and len(openai_server.embedding_requests()) == batches
    assert openai_server.peak_concurrency == EMBEDDING_BATCHES_IN_FLIGHT


def test_a_request_identical_to_one_in_flight_is_shared_and_counted(openai_server) -> None:
    openai_server.latency = 0.05

    async def both() -> tuple[str, str, dict[str, int]]:
        llm = make_llm(openai_server.base_url)
        one, two = await asyncio.gather(*(llm.chat(model="m", messages=MESSAGES) for _ in range(2)))
        await llm.chat(model="m", messages=[{"role": "user", "content": "another question"}])
        return one.content, two.content, llm.usage.as_dict()

    first, second, usage = asyncio.run(both())
    assert first == second and len(openai_server.chat_requests()) == 2
    assert usage["requests"] == 2 and usage["shared_requests"] == 1
