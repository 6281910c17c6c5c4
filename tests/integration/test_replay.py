"""Generation against the loopback server with the real openai client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from flipgate.config.schema import BudgetConfig, Config
from flipgate.errors import IncompleteError
from flipgate.generator.endpoint_lock import lock
from flipgate.generator.replay import PreparedGenerator, replay, write_answers
from flipgate.llm.client import BudgetExceeded
from flipgate.llm.endpoints import make_client
from flipgate.llm.runtime import Runtime
from flipgate.model import Case
from flipgate.prompts import parse_prompty, render_cases

from support.factories import settings_now

PROMPT = """---
model:
  configuration:
    type: openai
    model: gen-model
  parameters:
    temperature: 0.3
    max_tokens: 64
---
system:
Answer only from the context.
user:
{{ query }}
Context: {{ context }}
"""
CASES = [Case(id=f"case-{i}", query=f"question {i}?", context=f"fact {i}") for i in range(12)]


class CountingProgress:
    def __init__(self) -> None:
        self.total = self.done = 0

    def add(self, total: int, phase: str = "judging") -> None:
        self.total += total

    def advance(self, n: int = 1, phase: str = "judging") -> None:
        self.done += n

    def watch(self, usage) -> None:
        pass

    def close(self) -> None:
        pass


def prepared(text: str = PROMPT, cases=CASES) -> PreparedGenerator:
    prompt = parse_prompty(text, path="p.prompty")
    generator = lock(prompt, prompt, settings=settings_now()).baseline
    return PreparedGenerator(generator=generator, rendered=render_cases(prompt, cases, read={}.get))


async def replay_side(generator: PreparedGenerator, runtime: Runtime, *, purpose: str = "baseline",
                      cases=CASES, max_retries: int = 0):
    client = make_client(generator.endpoint, settings=settings_now(), timeout=5, max_retries=max_retries)
    try:
        return await replay(cases, generator, client=client, runtime=runtime, purpose=purpose)
    finally:
        await client.close()


def run(generator: PreparedGenerator, runtime: Runtime, **kwargs):
    return asyncio.run(replay_side(generator, runtime, **kwargs))


def runtime_for(tmp_path: Path | None = None, *, concurrency: int = 4, **budget) -> Runtime:
    config = Config(cases="c.jsonl", concurrency=concurrency, budget=BudgetConfig(**budget))
    return Runtime.from_config(config, cache_dir=tmp_path, progress=CountingProgress())


def test_every_case_is_asked_with_its_messages_model_and_parameters(openai_server) -> None:
    openai_server.on_generation(lambda body: "answer to " + body["messages"][1]["content"].split("\n")[0])
    runtime = runtime_for()
    answers = run(prepared(), runtime)
    assert list(answers) == [c.id for c in CASES]
    assert answers["case-3"].response == "answer to question 3?"
    assert answers["case-3"].finish_reason == "stop"
    request = next(r for r in openai_server.chat_requests("generation")
                   if "question 3?" in r.text)
    assert request.body["model"] == "gen-model"
    assert request.body["temperature"] == 0.3 and request.body["max_tokens"] == 64
    assert request.body["messages"] == [
        {"role": "system", "content": "Answer only from the context."},
        {"role": "user", "content": "question 3?\nContext: fact 3"}]
    assert runtime.progress.total == runtime.progress.done == len(CASES)


def test_cases_run_concurrently_under_the_shared_limit(openai_server) -> None:
    openai_server.latency = 0.05
    runtime = runtime_for(concurrency=3)
    run(prepared(), runtime)
    assert openai_server.peak_concurrency == 3
    assert runtime.limiter.peak == 3


def test_usage_is_summed_per_side(openai_server) -> None:
    runtime = runtime_for()

    async def both():  # one run: both sides in one event loop, sharing the runtime
        await asyncio.gather(
            replay_side(prepared(), runtime, purpose="baseline"),
            replay_side(prepared(PROMPT.replace("gen-model", "other")), runtime,
                        purpose="candidate", cases=CASES[:5]))

    asyncio.run(both())
    usage = runtime.usage_report()
    assert usage["baseline"]["requests"] == 12 and usage["candidate"]["requests"] == 5
    assert usage["baseline"]["completion_tokens"] > usage["candidate"]["completion_tokens"] > 0


def test_a_truncated_answer_keeps_its_finish_reason(openai_server) -> None:
    openai_server.on_generation(lambda body: {"content": "cut o", "finish_reason": "length"})
    answers = run(prepared(), runtime_for(), cases=CASES[:1])
    assert answers["case-0"].finish_reason == "length"


def test_the_cache_answers_a_second_replay_and_is_keyed_by_the_request(openai_server, tmp_path: Path) -> None:
    first = run(prepared(), runtime_for(tmp_path))
    openai_server.clear()
    second_runtime = runtime_for(tmp_path)
    second = run(prepared(), second_runtime)
    assert second == first
    assert openai_server.requests == []
    assert second_runtime.usage_report()["baseline"]["requests"] == 0
    assert second_runtime.cache.stats() == {"hits": 12, "misses": 0, "rejected": 0}
    run(prepared(PROMPT.replace("0.3", "0.4")), runtime_for(tmp_path))  # a new parameter: new requests
    assert len(openai_server.chat_requests("generation")) == 12


def test_a_failure_after_retries_names_the_case(openai_server) -> None:
    openai_server.fail("generation", status=500, times=3)
    with pytest.raises(IncompleteError) as caught:
        run(prepared(), runtime_for(concurrency=1), cases=CASES[:1], max_retries=2)
    message = str(caught.value)
    assert message.startswith("HTTP 500 from 127.0.0.1:") and "baseline model" in message
    assert "(after 2 retries)" in message and "for case 'case-0'" in message
    assert len(openai_server.chat_requests("generation")) == 3  # the client's own retries


def test_the_clients_own_retries_recover(openai_server) -> None:
    openai_server.fail("generation", status=429, times=2)
    answers = run(prepared(), runtime_for(), cases=CASES[:1], max_retries=2)
    assert answers["case-0"].response


def test_the_budget_stops_before_spending_more_and_says_how_far_it_got(openai_server) -> None:
    runtime = runtime_for(concurrency=1, max_requests=5)
    with pytest.raises(BudgetExceeded) as caught:
        run(prepared(), runtime)
    assert len(openai_server.chat_requests("generation")) == 5
    message = str(caught.value)
    assert "budget.max_requests (5) reached after 5 requests" in message
    assert "(5 of 12 baseline answers were generated)" in message
    assert caught.value.exit_code == 3


def test_write_answers_writes_the_contracts_jsonl_in_case_order(tmp_path: Path) -> None:
    from flipgate.model import Answer

    answers = {"b": Answer("second", "length"), "a": Answer("first", "stop")}
    cases = [Case(id="a", query="", context=""), Case(id="b", query="", context="")]
    write_answers(tmp_path / "r.jsonl", answers, cases)
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert lines == [{"id": "a", "response": "first", "finish_reason": "stop"},
                     {"id": "b", "response": "second", "finish_reason": "length"}]
