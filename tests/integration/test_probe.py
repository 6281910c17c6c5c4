"""The judge probe: one chat and one embeddings request before any real work, sent at
the same time, with the real openai client against the loopback server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import openai
import pytest

from flipgate.errors import IncompleteError
from flipgate.llm.client import LLM, Limiter, RetryPolicy
from flipgate.llm.endpoints import Endpoint
from flipgate.llm.failures import ProviderError
from flipgate.llm.transport import capped_http_client

from support.openai_server import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def probe(server: FakeOpenAI) -> None:
    endpoint = Endpoint(kind="openai", base_url=server.base_url)
    client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key="sk-test", max_retries=0,
                                http_client=capped_http_client(openai))
    llm = LLM(client, endpoint, limiter=Limiter(limit=4), retry=RetryPolicy(max_retries=0))

    async def run() -> None:
        try:
            await llm.probe(model="judge-1", params={"max_tokens": 5}, role="judge model",
                            embedding_model="embed-1")
        finally:
            await client.close()

    asyncio.run(run())


def test_both_probes_are_in_flight_at_once(server: FakeOpenAI) -> None:
    server.latency = 0.2
    probe(server)
    assert len(server.chat_requests()) == 1 and len(server.embedding_requests()) == 1
    assert server.peak_concurrency == 2  # one round trip before the run, not two


def test_a_missing_embeddings_model_is_named_as_one(server: FakeOpenAI) -> None:
    server.missing_models.add("embed-1")
    with pytest.raises(ProviderError) as caught:
        probe(server)
    assert "HTTP 404" in str(caught.value) and "embeddings model embed-1" in str(caught.value)


def test_when_both_fail_the_judge_models_failure_is_the_one_said(server: FakeOpenAI) -> None:
    server.missing_models.update({"judge-1", "embed-1"})
    with pytest.raises(ProviderError) as caught:
        probe(server)
    assert "judge model judge-1" in str(caught.value)
    assert "embed-1" not in str(caught.value)


def test_a_server_error_on_the_embeddings_probe_stops_the_run_too(server: FakeOpenAI) -> None:
    server.fail("embeddings", status=500, times=1)
    with pytest.raises(IncompleteError) as caught:
        probe(server)
    assert "HTTP 500" in str(caught.value) and "embeddings model embed-1" in str(caught.value)
