"""Attacks from a hostile (or broken) model provider: replies that never end, replies of
100 MB, error bodies of 100 MB, NaN where a number belongs, and rate-limit headers on
200 OK replies that would pace the run past its job. The real openai client against
loopback servers; every bound must hold without trusting the provider."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import resource
import struct
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import openai  # imported before any clock starts
import pytest
from click.testing import CliRunner

import flipgate.llm.transport as transport_module
from flipgate.cli import cli
from flipgate.llm.client import LLM, Limiter, RetryPolicy
from flipgate.llm.endpoints import Endpoint, LazyClient
from flipgate.llm.pacing import PauseTooLong
from flipgate.llm.transport import AIOHTTP, HTTPX, MAX_CHAT_REPLY_BYTES, ReplyTooLarge, capped_http_client
from flipgate.output.report import write_json
from flipgate.settings import Settings

import support.openai_server as fake_server
from support.bombs import WBITS, MiB, bomb, header_for, traced_peak
from support.factories import make_report, make_row
from support.gitrepo import GitRepo
from support.hostile_http import HostileHTTP, Request, Send, drip, flood, head, reply
from support.openai_server import FakeOpenAI
from support.prompts import ANSWER_FROM_CONTEXT

CHAT_OK = {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 1, "completion_tokens": 1}}


def llm_for(url: str, *, deadline: float = 30, retries: int = 0) -> LLM:
    endpoint = Endpoint(kind="openai", base_url=url + "/v1")
    client = LazyClient(endpoint, settings=Settings.from_environ({"OPENAI_API_KEY": "sk-test"}),
                        timeout=deadline, max_retries=retries)
    return LLM(client, endpoint, limiter=Limiter(limit=4),
               retry=RetryPolicy(max_retries=retries, deadline=deadline))


async def chat(llm: LLM) -> str:
    try:
        completion = await llm.chat(model="m", messages=[{"role": "user", "content": "hi"}])
        return completion.content
    finally:
        await llm.client.close()


async def embed(llm: LLM) -> list[list[float]]:
    try:
        return await llm.embed(model="e", texts=["a", "b"])
    finally:
        await llm.client.close()


# -- wall-clock: the body that never ends -----------------------------------------------------

def test_a_reply_sent_one_byte_at_a_time_ends_at_the_deadline() -> None:
    body = json.dumps(CHAT_OK).encode()

    def handler(request: Request, send: Send) -> None:
        send(head(200, length=len(body)))
        drip(send, body, every=0.3)      # every read well inside the per-read timeout

    with HostileHTTP(handler) as server:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            asyncio.run(chat(llm_for(server.url, deadline=1.5)))
        assert time.monotonic() - started < 4


def test_a_drip_is_retried_no_more_than_max_retries_and_each_try_is_bounded() -> None:
    def handler(request: Request, send: Send) -> None:
        send(head(200, length=100))
        drip(send, b" " * 100, every=0.3)

    with HostileHTTP(handler) as server:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            asyncio.run(chat(llm_for(server.url, deadline=1, retries=2)))
        assert len(server.requests) == 3
        assert time.monotonic() - started < 3 * 1 + 2 * 8 + 3


def test_headers_dripped_forever_end_at_the_deadline() -> None:
    def handler(request: Request, send: Send) -> None:
        send(b"HTTP/1.1 200 OK\r\n")
        drip(send, b"x-pad: " + b"a" * 200 + b"\r\n", every=0.3)

    with HostileHTTP(handler) as server:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            asyncio.run(chat(llm_for(server.url, deadline=1)))
        assert time.monotonic() - started < 4


# -- size: the 100 MB reply -------------------------------------------------------------------

HUNDRED_MB = 100 * 1024 * 1024


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "no-length"])
def test_a_100_mb_chat_reply_is_cut_at_the_cap_without_being_read(declared: bool) -> None:
    prefix = b'{"choices": [{"message": {"role": "assistant", "content": "'

    def handler(request: Request, send: Send) -> None:
        send(head(200, length=HUNDRED_MB if declared else None) + prefix)
        flood(send, HUNDRED_MB - len(prefix))

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with HostileHTTP(handler) as server:
        with pytest.raises(ReplyTooLarge, match=f"larger than {MAX_CHAT_REPLY_BYTES:,} bytes"):
            asyncio.run(chat(llm_for(server.url)))
        time.sleep(0.2)
        assert server.sent_bytes[0] < 2 * MAX_CHAT_REPLY_BYTES   # cut, not drained
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 200 * 1024                 # far from the 1 GB the attack reached


def test_a_100_mb_error_body_is_cut_too() -> None:
    def handler(request: Request, send: Send) -> None:
        send(head(500, length=None) + b'{"error": {"message": "')
        flood(send, HUNDRED_MB)

    with HostileHTTP(handler) as server:
        with pytest.raises(ReplyTooLarge):
            asyncio.run(chat(llm_for(server.url, retries=2)))
        assert len(server.requests) == 1   # a reply too large is not asked for again
        time.sleep(0.2)
        assert server.sent_bytes[0] < 2 * MAX_CHAT_REPLY_BYTES


def test_a_reply_just_under_the_cap_is_read() -> None:
    content = "a" * (MAX_CHAT_REPLY_BYTES - 1000)
    body = json.dumps({**CHAT_OK, "choices": [{"message": {"content": content}}]}).encode()

    with HostileHTTP(lambda r, send: send(reply(200, body))) as server:
        assert asyncio.run(chat(llm_for(server.url))) == content


# -- size after decompression: the gzip or deflate bomb (issue 28) -------------------------

SMALL_CAP = 4 * MiB  # the same code path as the real cap, at a size a test can afford


def llm_on(backend: str, url: str) -> LLM:
    endpoint = Endpoint(kind="openai", base_url=url + "/v1")
    client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key="sk-test", timeout=30,
                                max_retries=0,
                                http_client=capped_http_client(openai, backend=backend))
    return LLM(client, endpoint, limiter=Limiter(limit=4), retry=RetryPolicy(max_retries=0))


def serve_encoded(body: bytes, encoding: str, status: int = 200) -> Callable[[Request, Send], None]:
    return lambda request, send: send(reply(status, body, extra={"content-encoding": encoding}))


@pytest.mark.parametrize("backend", [AIOHTTP, HTTPX])
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_a_reply_that_inflates_past_the_cap_is_refused_in_bounded_memory(
        backend: str, encoding: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport_module, "MAX_CHAT_REPLY_BYTES", SMALL_CAP)
    body = bomb(encoding, 16 * SMALL_CAP)  # 64 MiB from a few hundred KB on the wire

    with HostileHTTP(serve_encoded(body, header_for(encoding))) as server, \
            traced_peak() as traced:
        with pytest.raises(ReplyTooLarge, match=f"inflates past {SMALL_CAP:,} bytes"):
            asyncio.run(chat(llm_on(backend, server.url)))
    assert len(server.requests) == 1  # not asked again
    assert traced["peak"] < 3 * SMALL_CAP  # the cap and a few pieces, not the 64 MiB


def test_a_bomb_at_the_real_cap_on_the_default_client_is_refused_in_bounded_memory() -> None:
    body = bomb("gzip", 3 * MAX_CHAT_REPLY_BYTES)

    with HostileHTTP(serve_encoded(body, "gzip")) as server, traced_peak() as traced:
        with pytest.raises(ReplyTooLarge, match=f"inflates past {MAX_CHAT_REPLY_BYTES:,} bytes"):
            asyncio.run(chat(llm_for(server.url)))
    assert traced["peak"] < 2 * MAX_CHAT_REPLY_BYTES


@pytest.mark.parametrize("backend", [AIOHTTP, HTTPX])
def test_a_bomb_encoded_twice_over_is_refused_in_bounded_memory(
        backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport_module, "MAX_CHAT_REPLY_BYTES", SMALL_CAP)
    twice = zlib.compress(bomb("gzip", 16 * SMALL_CAP), 9, wbits=zlib.MAX_WBITS | 16)

    with HostileHTTP(serve_encoded(twice, "gzip, gzip")) as server, traced_peak() as traced:
        with pytest.raises(ReplyTooLarge, match="inflates past"):
            asyncio.run(chat(llm_on(backend, server.url)))
    assert traced["peak"] < 3 * SMALL_CAP


@pytest.mark.parametrize("backend", [AIOHTTP, HTTPX])
def test_an_error_body_that_inflates_past_the_cap_is_refused_too(
        backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport_module, "MAX_CHAT_REPLY_BYTES", SMALL_CAP)
    body = bomb("gzip", 16 * SMALL_CAP)

    with HostileHTTP(serve_encoded(body, "gzip", status=500)) as server, traced_peak() as traced:
        with pytest.raises(ReplyTooLarge, match="inflates past"):
            asyncio.run(chat(llm_on(backend, server.url)))
    assert traced["peak"] < 3 * SMALL_CAP


@pytest.mark.parametrize("backend", [AIOHTTP, HTTPX])
@pytest.mark.parametrize("encoding", ["br", "zstd", "compress"])
def test_an_encoding_flipgate_cannot_bound_is_neither_asked_for_nor_read(
        backend: str, encoding: str) -> None:
    with HostileHTTP(serve_encoded(b"\x1b\x00\x00" * 100, encoding)) as server:
        with pytest.raises(ValueError, match=f"content-encoding '{encoding}' is not one flipgate reads"):
            asyncio.run(chat(llm_on(backend, server.url)))
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"


@pytest.mark.parametrize("backend", [AIOHTTP, HTTPX])
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_control_a_compressed_reply_under_the_cap_is_read(backend: str, encoding: str) -> None:
    packer = zlib.compressobj(6, zlib.DEFLATED, WBITS[encoding])
    body = packer.compress(json.dumps(CHAT_OK).encode()) + packer.flush()

    with HostileHTTP(serve_encoded(body, header_for(encoding))) as server:
        assert asyncio.run(chat(llm_on(backend, server.url))) == "ok"


# -- non-finite numbers -----------------------------------------------------------------------

def nan_vectors(as_base64: bool) -> bytes:
    vector = [0.5, math.nan, 0.25]
    encoded = (base64.b64encode(struct.pack("<3f", *vector)).decode() if as_base64
               else "[0.5, NaN, 0.25]")
    items = [f'{{"index": {i}, "embedding": {json.dumps(encoded) if as_base64 else encoded}}}'
             for i in range(2)]
    return f'{{"data": [{", ".join(items)}], "usage": {{"total_tokens": 2}}}}'.encode()


@pytest.mark.parametrize("as_base64", [True, False], ids=["base64-float32", "json-literal"])
def test_nan_embeddings_are_a_bad_reply_not_a_vector(as_base64: bool) -> None:
    with HostileHTTP(lambda r, send: send(reply(200, nan_vectors(as_base64)))) as server:
        with pytest.raises(ValueError, match="not|NaN"):
            asyncio.run(embed(llm_for(server.url)))


@pytest.mark.parametrize("body", [
    b'{"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": Infinity}}',
    b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
], ids=["infinity", "nested"])
def test_a_chat_reply_with_non_finite_or_deep_json_is_a_bad_reply(body: bytes) -> None:
    with HostileHTTP(lambda r, send: send(reply(200, body))) as server:
        with pytest.raises(ValueError, match="not JSON"):
            asyncio.run(chat(llm_for(server.url)))


def test_report_json_never_holds_a_bare_nan(tmp_path: Path) -> None:
    report = make_report([make_row()], budget={"spent_tokens": math.nan})
    with pytest.raises(ValueError):
        write_json(report, tmp_path / "report.json")
    assert not (tmp_path / "report.json").exists()


# -- NaN embeddings through `flipgate run`: a judge error on the row ---------------------------

CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
  max_retries: 1          # one lost loopback connection on a loaded machine is no finding
  timeout: 10
"""
PROMPT = ANSWER_FROM_CONTEXT
CASES = "".join(json.dumps({"id": f"c{i}", "query": f"What is the fee for item {i}?",
                            "context": f"The fee for item {i} is ${i}.", "category": "pricing"}) + "\n"
                for i in range(3))


def test_nan_embeddings_from_the_provider_become_judge_errors_and_report_json_is_strict(
        openai_server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = fake_server.embed_text
    monkeypatch.setattr(fake_server, "embed_text",
                        lambda text: [math.nan, *real(text)[1:]] if "item 1" in text else real(text))
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES, "prompts/answer.prompty": PROMPT})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("gpt-4o-mini", "gpt-4.1")})

    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                      "--out", str(tmp_path / "out"), "--no-cache"])

    assert result.exit_code == 3, result.output    # judge errors: the run could not finish
    text = (tmp_path / "out" / "report.json").read_text()
    report = json.loads(text, parse_constant=lambda name: pytest.fail(f"report.json holds {name}"))
    rows = {row["id"]: row for row in report["rows"]}
    assert rows["c1"]["candidate"]["relevance"] is None
    assert "not finite" in rows["c1"]["candidate"]["relevance_detail"]["error"]


def test_a_judge_reply_that_inflates_past_the_cap_is_a_judge_error_row_never_a_score(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    openai_server.fail("groundedness", status=200, times=1, headers={"Content-Encoding": "gzip"},
                       body=bomb("gzip", MAX_CHAT_REPLY_BYTES + 4 * MiB))
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES, "prompts/answer.prompty": PROMPT})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("gpt-4o-mini", "gpt-4.1")})

    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                      "--out", str(tmp_path / "out"), "--no-cache"])

    assert result.exit_code == 3, result.output    # a judge error: the run could not finish
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["counts"]["errors"] == 1
    assert f"inflates past {MAX_CHAT_REPLY_BYTES:,} bytes" in json.dumps(report["rows"])


# -- pacing from 200 OK headers is bounded by judge.max_wait -----------------------------------

async def paced_requests(limiter: Limiter, headers: dict[str, str], count: int) -> list[str]:
    async def one(_: int) -> str:
        try:
            await limiter.acquire()
        except PauseTooLong as exc:
            return f"stopped: {exc}"
        limiter.release()
        limiter.succeeded(headers)
        return "sent"

    return await asyncio.gather(*(one(i) for i in range(count)))


def test_a_200_saying_no_requests_left_for_two_minutes_stops_the_run_at_max_wait() -> None:
    limiter = Limiter(limit=4, max_pause=1.0)
    limiter.succeeded({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "120s"})

    started = time.monotonic()
    outcome = asyncio.run(paced_requests(limiter, {}, 1))

    assert outcome[0].startswith("stopped: ")
    assert "judge.max_wait (1 s)" in outcome[0]
    assert time.monotonic() - started < 0.5        # refused at once, not after waiting


def test_spacing_from_200_headers_cannot_add_up_past_max_wait() -> None:
    """Each gap is under max_wait, but a request waiting behind others adds the gaps up."""
    headers = {"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "1",
               "x-ratelimit-reset-requests": "100s"}   # refill ~1/s: sends ~1.1 s apart
    limiter = Limiter(limit=4, max_pause=2.5)
    limiter.succeeded(headers)

    started = time.monotonic()
    outcome = asyncio.run(paced_requests(limiter, headers, 8))

    assert outcome.count("sent") >= 2
    assert any(o.startswith("stopped: ") for o in outcome)
    assert time.monotonic() - started < 6


def test_gentle_pacing_inside_max_wait_still_sends_everything() -> None:
    headers = {"x-ratelimit-limit-requests": "1000", "x-ratelimit-remaining-requests": "1",
               "x-ratelimit-reset-requests": "10s"}    # ~0.011 s apart
    limiter = Limiter(limit=4, max_pause=5)
    limiter.succeeded(headers)
    assert asyncio.run(paced_requests(limiter, headers, 8)) == ["sent"] * 8


def test_a_run_paced_past_max_wait_by_200_headers_exits_3_and_says_so(
        openai_server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = fake_server._json

    def paced(payload, status=200, headers=None):
        headers = {**(headers or {}), "x-ratelimit-remaining-requests": "0",
                   "x-ratelimit-reset-requests": "120s"}
        return original(payload, status, headers)

    monkeypatch.setattr(fake_server, "_json", paced)
    repo = GitRepo.create(tmp_path / "repo")
    config = CONFIG + "  max_wait: 2\n"
    repo.commit({".flipgate.yml": config, "eval/cases.jsonl": CASES, "prompts/answer.prompty": PROMPT})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("gpt-4o-mini", "gpt-4.1")})

    started = time.monotonic()
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                      "--out", str(tmp_path / "out"), "--no-cache"])

    assert result.exit_code == 3, result.output
    assert "judge.max_wait (2 s)" in result.output
    assert time.monotonic() - started < 60


def test_a_judges_huge_reason_is_stored_once_and_cut_in_report_json(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    marker = "BIGREASON"
    openai_server.on_groundedness(lambda q, c, r, i: {"score": 4, "reason": marker * 300_000})
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES, "prompts/answer.prompty": PROMPT})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("gpt-4o-mini", "gpt-4.1")})

    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                      "--out", str(tmp_path / "out"), "--no-cache"])

    assert result.exit_code in (0, 1, 3), result.output
    size = (tmp_path / "out" / "report.json").stat().st_size
    assert size < 200_000, size                 # 3 rows x 2 sides x a bounded reason
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    reasons = [row[side]["reason"] for row in report["rows"] for side in ("baseline", "candidate")]
    assert all(r.startswith(marker) and len(r) <= 4000 for r in reasons)
