"""Live retrieval: the command's environment, an HTTP endpoint on loopback, the per-day cache."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
import pytest
from werkzeug.wrappers import Request, Response

from flipgate.config.schema import E2EConfig, parse_config
from flipgate.e2e.retrieval import (
    CommandRetriever,
    LiveContext,
    RetrievalError,
    command_environment,
    fetch_all,
    make_retriever,
)
from flipgate.errors import InputError
from flipgate.llm.cache import Cache
from flipgate.model import Case

from support.loopback import LoopbackHTTP

CASE = Case(id="c1", query="Wie hoch ist die Gebühr?\n", context="frozen", category="pricing")


def test_the_command_environment_holds_only_basics_and_listed_names(tmp_path: Path) -> None:
    environ = {"PATH": "/bin", "LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-secret", "SEARCH_KEY": "s",
               "GITHUB_TOKEN": "ghs"}
    env = command_environment(environ, ["SEARCH_KEY", "ABSENT"], home=tmp_path)
    assert env == {"PATH": "/bin", "LANG": "C.UTF-8", "SEARCH_KEY": "s", "HOME": str(tmp_path)}


def test_a_command_gets_the_query_on_stdin_and_its_output_is_the_context(tmp_path: Path) -> None:
    script = "import sys, os; q = sys.stdin.read(); print(f'{os.environ[\"FLIPGATE_CATEGORY\"]}: {q!r}  ')"
    retriever = CommandRetriever(argv=[sys.executable, "-c", script], cwd=tmp_path, env={}, timeout=10)
    context = asyncio.run(retriever.fetch(CASE))
    assert context == "pricing: 'Wie hoch ist die Gebühr?\\n'  "   # one final newline dropped, nothing else


@pytest.mark.parametrize("script, timeout, message", [
    ("import sys; sys.stderr.write('boom\\n'); sys.exit(3)", 30, "exited with status 3: boom"),
    ("import sys; sys.stdout.buffer.write(b'\\xff')", 30, "not UTF-8"),
    ("import time; time.sleep(60)", 0.5, "timed out after 0.5 s"),
])
def test_command_failures_are_retrieval_errors(tmp_path: Path, script: str, timeout: float, message: str) -> None:
    retriever = CommandRetriever(argv=[sys.executable, "-c", script], cwd=tmp_path, env={}, timeout=timeout)
    with pytest.raises(RetrievalError, match=message):
        asyncio.run(retriever.fetch(CASE))


def test_a_missing_program_is_a_retrieval_error(tmp_path: Path) -> None:
    retriever = CommandRetriever(argv=["no-such-program-here"], cwd=tmp_path, env={"PATH": "/nonexistent"},
                                 timeout=5)
    with pytest.raises(RetrievalError, match="cannot start 'no-such-program-here'"):
        asyncio.run(retriever.fetch(CASE))


@pytest.fixture
def endpoint():
    received: list[dict] = []

    def app(environ, start_response):
        request = Request(environ)
        body = json.loads(request.get_data())
        received.append({"body": body, "auth": request.headers.get("Authorization")})
        if "fail" in body["query"]:
            return Response("no", status=503)(environ, start_response)
        if "text" in body["query"]:
            return Response("plain context\n", content_type="text/plain")(environ, start_response)
        return Response(json.dumps({"context": f"live for {body['id']}"}),
                        content_type="application/json")(environ, start_response)

    server = LoopbackHTTP(app)
    url = server.start()
    yield url, received
    server.stop()


def test_an_http_endpoint_answers_json_or_text_and_gets_its_listed_secret(endpoint) -> None:
    url, received = endpoint
    config = E2EConfig(url=f"{url}/retrieve", headers=(("Authorization", "Bearer ${env:SEARCH_KEY}"),),
                       env=("SEARCH_KEY",), timeout=5)

    async def go():
        async with httpx.AsyncClient() as client:
            retriever = make_retriever(config, source=".flipgate.yml", workdir=None,
                                       environ={"SEARCH_KEY": "k-1", "OPENAI_API_KEY": "sk"}, http_client=client)
            cases = [CASE, Case(id="c2", query="as text", context="x"), Case(id="c3", query="fail", context="x")]
            return await fetch_all(cases, retriever, cache=None, date="2026-01-01", limit=2)

    live = asyncio.run(go())
    assert live["c1"] == LiveContext(context="live for c1")
    assert live["c2"] == LiveContext(context="plain context\n")
    assert live["c3"].context is None and live["c3"].error == "live retrieval failed: HTTP 503"
    assert {r["auth"] for r in received} == {"Bearer k-1"}
    bodies = {r["body"]["id"]: r["body"] for r in received}    # concurrent: in any order
    assert bodies["c1"] == {"query": CASE.query, "id": "c1", "category": "pricing"}


def test_a_header_may_only_use_listed_variables() -> None:
    config = E2EConfig(url="https://search.example/r", headers=(("X-Key", "${env:OPENAI_API_KEY}"),))
    with pytest.raises(InputError, match=r"e2e.headers.X-Key uses \$\{env:OPENAI_API_KEY\}, which is not listed"):
        make_retriever(config, source=".flipgate.yml", workdir=None, environ={"OPENAI_API_KEY": "sk"})


class Counting:
    description = "counting"
    identity = "counting v1"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def fetch(self, case: Case) -> str:
        self.calls.append(case.id)
        if case.id == "bad":
            raise RetrievalError("down")
        return f"live {case.query}"


def test_live_contexts_are_cached_per_query_retriever_and_day_and_failures_are_not(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    retriever = Counting()
    cases = [Case(id="a", query="q1", context="x"), Case(id="bad", query="q2", context="x")]
    first = asyncio.run(fetch_all(cases, retriever, cache=cache, date="2026-01-01", limit=4))
    again = asyncio.run(fetch_all(cases, retriever, cache=cache, date="2026-01-01", limit=4))
    assert retriever.calls == ["a", "bad", "bad"]          # the failure is asked again, the success is not
    assert again["a"] == LiveContext(context="live q1", cached=True) and not first["a"].cached
    asyncio.run(fetch_all(cases[:1], retriever, cache=cache, date="2026-01-02", limit=4))
    other = Counting()
    other.identity = "counting v2"
    asyncio.run(fetch_all(cases[:1], other, cache=cache, date="2026-01-01", limit=4))
    assert retriever.calls[-1] == "a" and other.calls == ["a"]   # a new day, a new retriever: asked again


@pytest.mark.parametrize("text, message", [
    ("cases: c\ne2e:\n  command: r\n  url: https://x\n", "needs exactly one of 'command'"),
    ("cases: c\ne2e:\n  url: ftp://x\n", "'e2e.url' must be an http"),
    ("cases: c\ne2e:\n  command: r\n  env: SEARCH\n", "'e2e.env' must be a list"),
    ("cases: c\ne2e:\n  command: r\n  retries: 3\n", "unknown key 'e2e.retries'"),
])
def test_e2e_configuration_problems(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_config(text)


def test_e2e_configuration() -> None:
    config = parse_config("cases: c\ne2e:\n  url: https://s.example/r\n  headers: {X-Key: '${env:K}'}\n"
                          "  env: [K]\n  timeout: 5\n  enabled: false\n")
    assert config.e2e == E2EConfig(url="https://s.example/r", headers=(("X-Key", "${env:K}"),), env=("K",),
                                   timeout=5.0, enabled=False)
    assert parse_config("cases: c\n").e2e is None
