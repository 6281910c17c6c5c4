"""The HTTP transports under the LLM door: the SDK's aiohttp client (the default, chosen on
benchmarks/bench_client_cpu.py) and its httpx client (the fallback) keep the same contract.
Each test runs on both, with the real openai client against loopback servers: a refused
connection, a silent server, a dropped reply, a reply past the cap, a 429 with
`Retry-After` and `x-ratelimit-*` headers, the concurrency limit."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time

import openai
import pytest

from flipgate.llm.client import LLM, Limiter, RetryPolicy
from flipgate.llm.endpoints import Endpoint, make_client
from flipgate.llm.failures import describe_failure
from flipgate.llm.transport import AIOHTTP, HTTPX, MAX_CHAT_REPLY_BYTES, ReplyTooLarge, capped_http_client
from flipgate.settings import Settings

from support.hostile_http import HostileHTTP, Request, Send, flood, head, reply
from support.openai_server import FakeOpenAI

CHAT_OK = {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
BACKENDS = pytest.mark.parametrize("backend", [AIOHTTP, HTTPX])


def llm_on(backend: str, url: str, *, deadline: float = 10, retries: int = 0,
           limit: int = 4) -> LLM:
    endpoint = Endpoint(kind="openai", base_url=url + "/v1")
    client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key="sk-test", timeout=deadline,
                                max_retries=retries,
                                http_client=capped_http_client(openai, backend=backend))
    return LLM(client, endpoint, limiter=Limiter(limit=limit),
               retry=RetryPolicy(max_retries=retries, deadline=deadline))


async def chat(llm: LLM, text: str = "hi") -> str:
    try:
        completion = await llm.chat(model="m", messages=[{"role": "user", "content": text}])
        return completion.content
    finally:
        await llm.client.close()  # type: ignore[union-attr]


async def chat_many(llm: LLM, n: int) -> list[str]:
    """`n` different questions at once; their answers."""
    try:
        replies = await asyncio.gather(*(llm.chat(model="m", messages=[
            {"role": "user", "content": f"question {i}"}]) for i in range(n)))
        return [r.content for r in replies]
    finally:
        await llm.client.close()  # type: ignore[union-attr]


def failure_line(llm: LLM, exc: BaseException) -> str:
    return describe_failure(exc, endpoint=llm.endpoint, model="m", role="judge model", retries=0)


def test_the_default_client_is_the_sdks_aiohttp_one() -> None:
    endpoint = Endpoint(kind="openai", base_url="http://127.0.0.1:9/v1")
    client = make_client(endpoint, settings=Settings.from_environ({"OPENAI_API_KEY": "sk-test"}))
    assert isinstance(client._client, openai.DefaultAioHttpClient)


def test_without_aiohttp_the_client_falls_back_to_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # `import aiohttp` now fails
    endpoint = Endpoint(kind="openai", base_url="http://127.0.0.1:9/v1")
    client = make_client(endpoint, settings=Settings.from_environ({"OPENAI_API_KEY": "sk-test"}))
    assert not isinstance(client._client, openai.DefaultAioHttpClient)
    assert isinstance(client._client, openai.DefaultAsyncHttpxClient)


@BACKENDS
def test_a_refused_connection_is_could_not_connect_not_a_timeout(backend: str) -> None:
    with socket.socket() as taken:  # a port nothing listens on
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
    llm = llm_on(backend, f"http://127.0.0.1:{port}")
    with pytest.raises(openai.APIConnectionError) as caught:
        asyncio.run(chat(llm))
    assert not isinstance(caught.value, openai.APITimeoutError)
    assert "could not connect to" in failure_line(llm, caught.value)


@BACKENDS
def test_a_server_that_never_answers_is_a_timeout(backend: str) -> None:
    def silent(request: Request, send: Send) -> None:
        time.sleep(3)

    with HostileHTTP(silent) as server:
        llm = llm_on(backend, server.url, deadline=0.5)
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError) as caught:
            asyncio.run(chat(llm))
        assert time.monotonic() - started < 2.5  # the deadline, not the server's 3 s
    assert "no answer from" in failure_line(llm, caught.value)


@BACKENDS
def test_a_reply_cut_off_mid_body_is_a_lost_connection_and_retried(backend: str) -> None:
    body = json.dumps(CHAT_OK).encode()

    def handler(request: Request, send: Send) -> None:
        if len(server.requests) == 1:
            send(head(200, length=len(body)) + body[:10])  # then the connection closes
        else:
            send(reply(200, body))

    with HostileHTTP(handler) as server:
        assert asyncio.run(chat(llm_on(backend, server.url, retries=1))) == "ok"
        assert len(server.requests) == 2


@BACKENDS
@pytest.mark.parametrize("declared", [True, False], ids=["declared", "undeclared"])
def test_a_reply_past_the_cap_is_cut_off(backend: str, declared: bool) -> None:
    total = MAX_CHAT_REPLY_BYTES + 1

    def handler(request: Request, send: Send) -> None:
        send(head(200, length=total if declared else None))
        flood(send, total)

    with HostileHTTP(handler) as server:
        with pytest.raises(ReplyTooLarge):
            asyncio.run(chat(llm_on(backend, server.url)))
        assert sum(server.sent_bytes) < MAX_CHAT_REPLY_BYTES + 8 * 1024 * 1024


@BACKENDS
def test_retry_after_and_rate_limit_headers_reach_the_limiter(backend: str) -> None:
    server = FakeOpenAI()
    server.fail("generation", status=429, times=1, retry_after=0.2,
                headers={"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "0.2s"})
    server.start()
    try:
        llm = llm_on(backend, server.root_url, retries=0)
        started = time.monotonic()
        assert asyncio.run(chat(llm))
        waited = time.monotonic() - started
    finally:
        server.stop()
    assert len(server.chat_requests()) == 2  # the 429, then the answer
    assert waited >= 0.2
    assert llm.limiter.stats()["rate_limited"] == 1


@BACKENDS
def test_the_concurrency_limit_holds_on_the_wire(backend: str) -> None:
    server = FakeOpenAI()
    server.latency = 0.05
    server.start()

    try:
        answers = asyncio.run(chat_many(llm_on(backend, server.root_url, limit=6), 24))
    finally:
        server.stop()
    assert len(answers) == 24 and all(answers)
    assert server.peak_concurrency == 6


@BACKENDS
def test_a_proxy_in_the_environment_is_no_route_around_the_cap(
        backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "")
    body = json.dumps(CHAT_OK).encode()
    with HostileHTTP(lambda request, send: send(reply(200, body))) as server:
        assert asyncio.run(chat(llm_on(backend, server.url))) == "ok"  # sent directly
        assert len(server.requests) == 1


@BACKENDS
def test_connections_are_reused_when_the_server_keeps_them(backend: str) -> None:
    # Providers keep connections open; a client that opened one a request would pay a
    # TCP (and, at a provider, a TLS) set-up every time.
    server = FakeOpenAI(keep_alive=True)
    server.latency = 0.01
    server.start()

    try:
        answers = asyncio.run(chat_many(llm_on(backend, server.root_url, limit=4), 40))
    finally:
        server.stop()
    assert len(answers) == 40 and all(answers)
    assert 1 <= server.connections <= 4


# -- every form of `Retry-After` (issue 28, item 3) -------------------------------------------

FAR = "Wed, 03 Dec 2046 22:00:00 GMT"


@BACKENDS
@pytest.mark.parametrize("value", [FAR, "99999999999999999999"])
def test_a_retry_after_past_max_wait_in_any_form_fails_at_once_saying_what_came(
        backend: str, value: str) -> None:
    server = FakeOpenAI()
    server.fail("generation", status=429, times=5, retry_after=value)
    server.start()
    try:
        llm = llm_on(backend, server.root_url)
        llm.retry = RetryPolicy(max_retries=0, max_wait=5)
        started = time.monotonic()
        with pytest.raises(openai.RateLimitError) as caught:
            asyncio.run(chat(llm))
        assert time.monotonic() - started < 3  # not asleep until the date
    finally:
        server.stop()
    line = failure_line(llm, caught.value)
    assert line.startswith("HTTP 429 from 127.0.0.1")
    assert "judge.max_wait is 5s" in line and f'retry-after "{value}"' in line
    assert len(server.chat_requests()) == 1


@BACKENDS
@pytest.mark.parametrize("value", ["nan", "-1", "inf", "soon", "1_000"])
def test_a_retry_after_naming_no_time_is_a_short_backoff_and_the_request_succeeds(
        backend: str, value: str) -> None:
    server = FakeOpenAI()
    server.fail("generation", status=429, times=1, retry_after=value)
    server.start()
    try:
        llm = llm_on(backend, server.root_url)
        started = time.monotonic()
        assert asyncio.run(chat(llm))
        assert time.monotonic() - started < 3
    finally:
        server.stop()
    assert len(server.chat_requests()) == 2
