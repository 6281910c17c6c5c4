"""The judge as an instrument: statement lists on the wire, and what the report pins about it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from flipgate.config.schema import Config, JudgeConfig, RelevanceConfig
from flipgate.judges import describe, make_judge, prompts
from flipgate.judges.base import RUBRIC_VERSION, Judge
from flipgate.llm.cache import Cache
from flipgate.llm.client import Budget, Limiter
from flipgate.llm.runtime import Runtime
from flipgate.model import Case, StatementLabel

from support.factories import settings_now
from support.openai_server import FakeOpenAI

JUDGE_MODEL = "judge-pinned"
CASE = Case(id="r1", category="policy", query="How long do refunds take?",
            context="Refunds are issued within 30 days of the request. No fee applies.")
ANSWER = "Refunds are issued within 30 days. A $12 fee applies."


def config(**judge: Any) -> Config:
    return Config(cases="cases.jsonl", judge=JudgeConfig(provider="openai", model=JUDGE_MODEL,
                                                         timeout=5.0, max_retries=0, **judge),
                  relevance=RelevanceConfig(embedding_model="embed"))


def use(fn: Callable[[Judge], Awaitable[Any]], *, cache_dir: Path | None = None, **judge: Any) -> Any:
    async def go() -> Any:
        runtime = Runtime(limiter=Limiter(limit=2), budget=Budget(),
                          cache=Cache(cache_dir) if cache_dir else None)
        judge_ = make_judge(config(**judge), runtime=runtime, settings=settings_now())
        try:
            return await fn(judge_)
        finally:
            await judge_.aclose()
    return asyncio.run(go())


def test_statements_are_one_json_mode_request_holding_context_and_answer(openai_server: FakeOpenAI) -> None:
    result = use(lambda judge: judge.statements(CASE, ANSWER))
    (request,) = openai_server.chat_requests("statements")
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.model == JUDGE_MODEL and "statements" in request.text
    assert request.inputs.context == CASE.context and request.inputs.response == ANSWER
    assert result.error is None
    assert [(s.text, s.label) for s in result.items] == [
        ("Refunds are issued within 30 days.", StatementLabel.SUPPORTED),
        ("A $12 fee applies.", StatementLabel.UNSUPPORTED)]
    assert (result.supported, result.total) == (1, 2)


def test_a_paraphrasing_judge_is_a_judge_error_asked_twice_and_never_cached(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    openai_server.on_statements(lambda context, response, i: [
        {"text": "Refunds come within a month.", "label": "supported", "span": None}])
    first = use(lambda judge: judge.statements(CASE, ANSWER), cache_dir=tmp_path)
    assert first.items == () and "not in the answer (paraphrased or invented)" in first.error
    assert len(openai_server.chat_requests("statements")) == 2
    use(lambda judge: judge.statements(CASE, ANSWER), cache_dir=tmp_path)
    assert len(openai_server.chat_requests("statements")) == 4  # the bad reply was not cached


def test_the_info_pins_what_the_provider_returned_and_the_seed(openai_server: FakeOpenAI) -> None:
    async def score_then_info(judge: Judge) -> Any:
        await judge.groundedness(CASE, ANSWER)
        return judge.info

    info = use(score_then_info, seed=7)
    assert info.returned_models == (JUDGE_MODEL,) and info.system_fingerprints == ("fp_loopback",)
    assert info.seed == 7 and info.temperature == 0
    (request,) = openai_server.chat_requests("groundedness")
    assert request.body["seed"] == 7 and request.body["temperature"] == 0


def test_another_rubric_text_is_another_hash_and_never_reuses_a_cached_verdict(
        openai_server: FakeOpenAI, tmp_path: Path, monkeypatch) -> None:
    before = describe(config())
    use(lambda judge: judge.groundedness(CASE, ANSWER), cache_dir=tmp_path)
    use(lambda judge: judge.groundedness(CASE, ANSWER), cache_dir=tmp_path)
    assert len(openai_server.chat_requests("groundedness")) == 1  # the same rubric: cached

    monkeypatch.setattr(prompts, "GROUNDEDNESS_SYSTEM", prompts.GROUNDEDNESS_SYSTEM + "\nBe strict.")
    after = describe(config())
    assert after.rubric_hash["groundedness"] != before.rubric_hash["groundedness"]
    assert after.rubric_hash["fluency"] == before.rubric_hash["fluency"]
    assert after.rubric_version != before.rubric_version
    assert after.rubric_version.startswith(RUBRIC_VERSION + "+")
    use(lambda judge: judge.groundedness(CASE, ANSWER), cache_dir=tmp_path)
    assert len(openai_server.chat_requests("groundedness")) == 2
