"""Attacks on the spending cap through the request fields beside `messages` (issue 17, item 3).

A pull request's generator may set `tools`, `response_format`, `user`, `stop`, `logit_bias`
(the endpoint lock lets chat-completion body fields through). The provider bills the
schemas as prompt, so the cap must count them: one token per byte, keys included.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.llm.budget import chat_worst_case

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

MAX_TOKENS = 20_000
PAYLOAD = 300_000  # bytes each head request carries beside its messages
CONFIG = f"""version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
concurrency: 4
judge:
  provider: openai
  model: judge-pinned
budget:
  max_tokens: {MAX_TOKENS}
"""
PROMPT = """---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4o-mini
  parameters:
    max_tokens: 20
{extra}
---
system:
Answer briefly.
user:
{{{{ query }}}}
"""
CASES = [{"id": f"case-{i}", "query": f"Question {i}?", "context": f"Fact {i}.",
          "category": "general"} for i in range(4)]


def _schema_in_keys(size: int) -> dict[str, object]:
    """A JSON schema whose bulk sits in property *names*: a count of values alone misses it."""
    names = {f"p{i:06d}" + "k" * 40: {"type": "string"} for i in range(size // 60)}
    return {"type": "object", "properties": names}


def _tools(size: int) -> list[dict[str, object]]:
    return [{"type": "function", "function": {"name": "lookup", "description": "d" * (size // 2),
                                              "parameters": _schema_in_keys(size // 2)}}]


def _response_format(size: int) -> dict[str, object]:
    return {"type": "json_schema", "json_schema": {"name": "answer", "strict": True,
                                                   "schema": _schema_in_keys(size)}}


def _parameters_yaml(extra: dict[str, object]) -> str:
    # JSON is YAML: one flow line per parameter under `parameters:`.
    return "\n".join(f"    {name}: {json.dumps(value)}" for name, value in extra.items())


ATTACKS = {
    "tools": {"tools": _tools(PAYLOAD)},
    "response_format": {"response_format": _response_format(PAYLOAD)},
    "tools_and_response_format": {"tools": _tools(PAYLOAD // 2),
                                  "response_format": _response_format(PAYLOAD // 2)},
    "user": {"user": "u" * PAYLOAD},
    "stop_and_logit_bias": {"stop": ["s" * (PAYLOAD // 2)],
                            "logit_bias": {str(i): 1 for i in range(PAYLOAD // 10)}},
}


@pytest.mark.parametrize("field", sorted(ATTACKS))
def test_a_300kB_field_beside_the_messages_counts_against_the_worst_case(field: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 20,
            **ATTACKS[field]}
    billed = len(json.dumps(ATTACKS[field], ensure_ascii=False, separators=(",", ":")).encode())
    assert chat_worst_case(body) >= billed * 0.9


@pytest.mark.parametrize("field", sorted(ATTACKS))
def test_four_head_requests_of_300kB_in_extra_fields_never_go_out_under_a_20k_budget(
        field: str, openai_server: FakeOpenAI, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES),
                 "prompts/answer.prompty": PROMPT.format(extra="")}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.format(extra=_parameters_yaml(ATTACKS[field]))})

    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(tmp_path / "out"),
                                      "--no-cache"])

    assert result.exit_code == 3, result.output
    assert "budget.max_tokens (20000)" in result.stderr
    received = openai_server.chat_requests()
    sent_bytes = sum(len(json.dumps(r.body, ensure_ascii=False).encode()) for r in received)
    assert sent_bytes < MAX_TOKENS  # nothing near 300 kB went out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["budget"]["spent_tokens"] <= MAX_TOKENS
    assert report["budget"]["refused_tokens"] >= PAYLOAD * 0.9


def test_the_usage_that_comes_back_replaces_the_reservation_of_a_big_schema(
        openai_server: FakeOpenAI) -> None:
    """A 300 kB schema is reserved at its byte count; once the reply says what it cost, the
    budget holds that, so the room comes back for the requests that follow."""
    import asyncio

    from flipgate.llm.client import LLM, Budget, Limiter
    from flipgate.llm.endpoints import make_client, openai_endpoint

    from support.factories import settings_now

    endpoint = openai_endpoint(openai_server.base_url, settings=settings_now())
    client = make_client(endpoint, settings=settings_now(), timeout=5, max_retries=0)
    budget = Budget(max_tokens=400_000)
    llm = LLM(client, endpoint, limiter=Limiter(limit=1), budget=budget)

    async def once() -> int:
        completion = await llm.chat(model="gen-1", messages=[{"role": "user", "content": "hi"}],
                                    params={"max_tokens": 20, **ATTACKS["response_format"]})
        await client.close()
        return completion.prompt_tokens + completion.completion_tokens

    reported = asyncio.run(once())
    assert budget.reserved_tokens == 0 and budget.requests == 1
    assert budget.tokens == reported < PAYLOAD  # what the provider billed, not the reservation
