"""The azure-ai-evaluation engine against the same loopback server as the openai engine."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import importlib.util
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from flipgate.config.schema import Config, JudgeConfig, RelevanceConfig
from flipgate.judges import make_judge
from flipgate.judges.azure_eval import read_result
from flipgate.judges.base import Judge
from flipgate.llm.client import Budget, BudgetExceeded, Limiter
from flipgate.llm.runtime import Runtime
from flipgate.model import Case, Score

from support.factories import settings_now
from support.openai_server import FakeOpenAI

# find_spec, not import: the SDK is imported only by the engine, after
# PF_LOGGING_LEVEL is set (tests/conftest.py, as cli.main does for the process).
pytestmark = [
    pytest.mark.azure,
    pytest.mark.skipif(importlib.util.find_spec("azure.ai.evaluation") is None,
                       reason="the optional azure-ai-evaluation package is not installed"),
]

JUDGE_MODEL = "judge-model-pinned"
FEE = Case(id="fee-001", category="pricing", query="What does a card replacement cost?",
           context="A replacement card costs 5 dollars.\nPremium members pay nothing.")
ANSWER = "It costs 5 dollars | premium: free."


def make_config(**judge: Any) -> Config:
    settings = {"provider": "openai", "model": JUDGE_MODEL, "engine": "azure-ai-evaluation",
                "timeout": 5.0, "max_retries": 1, **judge}
    return Config(cases="cases.jsonl", judge=JudgeConfig(**settings),
                  relevance=RelevanceConfig(embedding_model="embed-model"))


def with_judge(use: Callable[[Judge], Awaitable[Any]], *, config: Config | None = None,
               runtime: Runtime | None = None) -> Any:
    async def go() -> Any:
        judge = make_judge(config or make_config(),
                           runtime=runtime or Runtime(limiter=Limiter(limit=4), budget=Budget()),
                           settings=settings_now())
        try:
            return await use(judge)
        finally:
            await judge.aclose()
    return asyncio.run(go())


def groundedness(**kwargs: Any) -> Score:
    return with_judge(lambda judge: judge.groundedness(FEE, ANSWER), **kwargs)


def sdk_result(reply: str | None, **fields: Any) -> dict[str, Any]:
    """An evaluator's result as 1.18 returns it: its own parse, and the reply in sample_output."""
    sample = json.dumps([{"role": "assistant", "content": reply}]) if reply is not None else ""
    return {"groundedness": 5.0, "groundedness_status": "completed",
            "groundedness_properties": {"sample_output": sample}, **fields}


@pytest.mark.parametrize("reply, expected", [
    ('{"reason": " ok ", "score": 4, "status": "completed"}', Score(4, "ok")),
    ("1", Score(1, "")),
    ("<S0>t</S0><S1>because</S1><S2>3</S2>", Score(3, "because")),
])
def test_the_reply_inside_the_result_is_read_by_the_shared_reader(reply: str, expected: Score) -> None:
    # The SDK's own parse (5.0 here) is never what counts.
    assert read_result(sdk_result(reply), "groundedness") == expected


@pytest.mark.parametrize("result, problem", [
    (sdk_result('{"score": 2, "score": 5}'), 'the key "score" twice'),   # the SDK kept the 5
    (sdk_result('{"score": "2", "status": "completed"}'), 'got string "2"'),  # the SDK read 2
    (sdk_result('{"score": 9}'), "score 9 is outside 1-5"),
    (sdk_result('{"score": 4.5}'), "whole number"),
    (sdk_result('{"score": null, "status": "skipped", "reason": "empty"}'),
     "judge skipped the evaluation: empty"),
    (sdk_result(None, groundedness_status="skipped", groundedness_reason="Not applicable: x"),
     "carries no judge reply (status skipped: Not applicable: x)"),
    ({"groundedness": 4.0}, "carries no judge reply"),
])
def test_results_without_a_readable_reply_are_judge_errors(result: dict, problem: str) -> None:
    from flipgate.judges.azure_eval import _BadReply

    with pytest.raises(_BadReply, match=re.escape(problem)):
        read_result(result, "groundedness")


def test_groundedness_goes_through_base_url_with_the_query_prompt(openai_server: FakeOpenAI) -> None:
    openai_server.on_groundedness(lambda query, context, response, i: 5 if "5 dollars" in response else 2)
    scores = with_judge(lambda judge: asyncio.gather(judge.groundedness(FEE, ANSWER),
                                                     judge.groundedness(FEE, "It costs 12 dollars.")))
    assert [s.value for s in scores] == [5, 2]
    assert scores[0].reason == "scripted groundedness score 5"
    requests = openai_server.chat_requests("groundedness")
    assert len(requests) == 2
    for request in requests:
        assert request.path == "/v1/chat/completions" and request.model == JUDGE_MODEL
        assert request.body["response_format"] == {"type": "json_object"}
        assert request.inputs.query == FEE.query and request.inputs.context == FEE.context
    assert {r.inputs.response for r in requests} == {ANSWER, "It costs 12 dollars."}


def test_fluency_uses_the_sdk_evaluator(openai_server: FakeOpenAI) -> None:
    openai_server.on_fluency(lambda response, i: 3)
    score = with_judge(lambda judge: judge.fluency(ANSWER))
    assert score == Score(3, "scripted fluency score 3")
    (request,) = openai_server.chat_requests("fluency")
    assert request.inputs.response == ANSWER and request.model == JUDGE_MODEL


def test_relevance_reuses_the_openai_engine(openai_server: FakeOpenAI) -> None:
    openai_server.on_relevance(lambda response, i: [FEE.query])
    (relevance,) = with_judge(lambda judge: judge.relevance([(FEE, ANSWER)]))
    assert relevance.score == pytest.approx(1.0)
    assert len(openai_server.embedding_requests()) == 1


@pytest.mark.parametrize("reply, problem", [
    ("this is not json", 'reply is not valid JSON (model judge-model-pinned; reply "this is not json")'),
    ({"reason": "great", "score": 9, "status": "completed"}, "score 9 is outside 1-5"),
    ({"reason": "n/a", "score": None, "status": "skipped"}, "judge skipped the evaluation"),
    ({"reason": "between", "score": 3.5}, "whole number 1-5, got 3.5"),
])
def test_bad_replies_are_asked_again_once_then_a_judge_error(openai_server: FakeOpenAI, reply: Any,
                                                             problem: str, capfd) -> None:
    openai_server.on_groundedness(lambda *_: reply)
    score = groundedness()
    assert score.value is None
    assert score.error.startswith("groundedness judge (azure-ai-evaluation) answered nonsense twice")
    assert problem in score.error
    assert len(openai_server.chat_requests("groundedness")) == 2
    assert "Traceback" not in capfd.readouterr().out


def test_a_bad_reply_then_a_good_one_scores(openai_server: FakeOpenAI) -> None:
    openai_server.on_groundedness(lambda q, c, r, i: "{oops" if i == 0 else 4)
    assert groundedness().value == 4


def test_api_failures_after_the_sdk_retries_are_a_judge_error(openai_server: FakeOpenAI, capfd) -> None:
    openai_server.fail("groundedness", status=500, times=100, retry_after=0.001)
    score = groundedness()
    assert score.value is None
    assert score.error == ("groundedness judge (azure-ai-evaluation): HTTP 500: injected 500 "
                           "(after the evaluator's own retries)")
    assert len(openai_server.chat_requests("groundedness")) > 1  # the SDK retried on its own
    assert "Traceback" not in capfd.readouterr().out


def test_a_slow_judge_times_out_via_wait_for(openai_server: FakeOpenAI) -> None:
    openai_server.latency = 0.6
    score = groundedness(config=make_config(timeout=0.1, max_retries=0))
    assert score == Score.failed("groundedness judge (azure-ai-evaluation): no answer within 0.1s")


def test_the_budget_still_applies(openai_server: FakeOpenAI) -> None:
    runtime = Runtime(limiter=Limiter(limit=2), budget=Budget(max_requests=1))

    async def two(judge: Judge) -> None:
        await judge.groundedness(FEE, ANSWER)
        await judge.fluency(ANSWER)

    with pytest.raises(BudgetExceeded):
        with_judge(two, runtime=runtime)
    assert len(openai_server.requests) == 1
    assert runtime.usage_for("judge").requests == 1 and runtime.usage_for("judge").prompt_tokens > 0


def test_empty_answers_never_reach_the_sdk(openai_server: FakeOpenAI) -> None:
    score = with_judge(lambda judge: judge.groundedness(FEE, " \n"))
    assert score.value == 3 and openai_server.requests == []


def test_azure_provider_reaches_the_deployment(openai_server: FakeOpenAI,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    openai_server.set_azure_env(monkeypatch)
    openai_server.on_groundedness(lambda *_: 4)
    scores = with_judge(lambda judge: asyncio.gather(judge.groundedness(FEE, ANSWER)),
                        config=make_config(provider="azure", model="judge-deployment"))
    assert [s.value for s in scores] == [4]
    (request,) = openai_server.requests
    assert request.path == "/openai/deployments/judge-deployment/chat/completions"
    assert request.args["api-version"] == "2024-10-21"


def test_the_engine_is_named_in_the_judge_info(openai_server: FakeOpenAI) -> None:
    async def info(judge: Judge) -> Any:
        return judge.info

    judge_info = with_judge(info)
    assert (judge_info.provider, judge_info.engine, judge_info.model) == (
        "openai", "azure-ai-evaluation", JUDGE_MODEL)


def _sdk_prompty(name: str) -> str:
    import azure.ai.evaluation as sdk  # the engine imported it already (PF_LOGGING_LEVEL is set)

    return (Path(sdk.__file__).parent / "_evaluators" / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("mode, prompt, other", [
    ("with_query", "_groundedness/groundedness_with_query.prompty",
     "_groundedness/groundedness_without_query.prompty"),
    ("without_query", "_groundedness/groundedness_without_query.prompty",
     "_groundedness/groundedness_with_query.prompty"),
])
def test_the_mode_picks_the_sdk_prompty_and_the_report_pins_its_text(
        openai_server: FakeOpenAI, mode: str, prompt: str, other: str) -> None:
    openai_server.on_groundedness(lambda *_: 4)

    async def score_and_describe(judge: Judge) -> Any:
        return await judge.groundedness(FEE, ANSWER), judge.info

    score, info = with_judge(score_and_describe, config=make_config(mode=mode))
    assert score.value == 4
    (request,) = openai_server.chat_requests("groundedness")
    sent = "\n".join(m["content"] for m in request.body["messages"])
    assert ("QUERY: " + FEE.query in sent) == (mode == "with_query")
    text = _sdk_prompty(prompt)
    # What was sent is that file's text: its system turn, word for word.
    system = request.body["messages"][0]["content"].strip()
    assert system in text and system not in _sdk_prompty(other)
    assert info.mode == mode
    assert info.rubric_hash["groundedness"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert info.rubric_hash["fluency"] == hashlib.sha256(
        _sdk_prompty("_fluency/fluency.prompty").encode("utf-8")).hexdigest()
    assert info.sdk == {"name": "azure-ai-evaluation",
                        "version": importlib.metadata.version("azure-ai-evaluation")}


def test_without_query_the_sdk_never_sees_the_query(openai_server: FakeOpenAI) -> None:
    openai_server.on_groundedness(lambda *_: 3)
    with_judge(lambda judge: judge.groundedness(FEE, ANSWER), config=make_config(mode="without_query"))
    (request,) = openai_server.chat_requests("groundedness")
    assert FEE.query not in json.dumps(request.body)
    assert "Accurate but Vague" in json.dumps(request.body)


def test_the_sdk_and_the_mode_are_part_of_the_relevance_cache_key(openai_server: FakeOpenAI,
                                                                  tmp_path: Path) -> None:
    """Relevance goes through the cached LLM door: another mode or SDK is another key."""
    from flipgate.llm.cache import Cache

    openai_server.on_relevance(lambda response, i: [FEE.query])

    def relevance(**judge: Any) -> None:
        with_judge(lambda j: j.relevance([(FEE, ANSWER)]), config=make_config(**judge),
                   runtime=Runtime(limiter=Limiter(limit=4), budget=Budget(), cache=Cache(tmp_path)))

    relevance()
    relevance()
    assert len(openai_server.chat_requests("relevance")) == 1  # the second run hit the cache
    relevance(mode="without_query")
    assert len(openai_server.chat_requests("relevance")) == 2
    relevance(engine="openai")  # the native engine: no SDK in its key
    assert len(openai_server.chat_requests("relevance")) == 3
