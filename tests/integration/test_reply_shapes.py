"""Real-shaped judge replies on the wire, through both engines: the real openai client and
azure-ai-evaluation's evaluators against the loopback server. Both read a reply the same
way (flipgate.judges.replies), whatever the SDK would have made of it on its own."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from flipgate.config.schema import Config, JudgeConfig, RelevanceConfig
from flipgate.judges import make_judge
from flipgate.judges.base import Judge
from flipgate.llm.client import Budget, Limiter
from flipgate.llm.runtime import Runtime
from flipgate.model import Case, Score

from support.factories import settings_now
from support.openai_server import FakeOpenAI

JUDGE_MODEL = "gpt-4o-2024-08-06"
FEE = Case(id="fee-001", category="pricing", query="What does a card replacement cost?",
           context="A replacement card costs 5 dollars.\nPremium members pay nothing.")
ANSWER = "It costs 5 dollars; premium members pay nothing."
CORPUS = Path(__file__).parent.parent / "fixtures" / "judge-replies" / "replies.jsonl"
HAS_SDK = importlib.util.find_spec("azure.ai.evaluation") is not None
ENGINES = ["openai", pytest.param("azure-ai-evaluation", marks=[
    pytest.mark.azure, pytest.mark.skipif(not HAS_SDK, reason="azure-ai-evaluation not installed")])]

TAGGED = ("<S0>Let's think step by step: the response states the 5 dollar fee and the premium "
          "rule, both in the context.</S0>\n<S1>Fully grounded and complete.</S1>\n<S2>5</S2>")


def config_for(engine: str, **judge: Any) -> Config:
    settings = {"provider": "openai", "model": JUDGE_MODEL, "engine": engine, "timeout": 5.0,
                "max_retries": 1, **judge}
    return Config(cases="cases.jsonl", judge=JudgeConfig(**settings),
                  relevance=RelevanceConfig(embedding_model="embed-model"))


def with_judge(engine: str, use: Callable[[Judge], Awaitable[Any]], **judge: Any) -> Any:
    async def go() -> Any:
        made = make_judge(config_for(engine, **judge),
                          runtime=Runtime(limiter=Limiter(limit=4), budget=Budget()),
                          settings=settings_now())
        try:
            return await use(made)
        finally:
            await made.aclose()
    return asyncio.run(go())


def groundedness(engine: str) -> Score:
    return with_judge(engine, lambda judge: judge.groundedness(FEE, ANSWER))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("reply, expected", [
    ('```json\n{"reason": "Backed by the context.", "score": 5, "status": "completed"}\n```',
     Score(5, "Backed by the context.")),
    ('Here is my evaluation:\n{"reason": "Leaves out the premium rule.", "score": 4, '
     '"status": "completed"}', Score(4, "Leaves out the premium rule.")),
    ("4", Score(4, "")),
    (TAGGED, Score(5, "Fully grounded and complete.")),
    ('{"reason": "ok", "score": 4.0, "status": "completed"}', Score(4, "ok")),
])
def test_real_shapes_read_to_their_score(openai_server: FakeOpenAI, engine: str, reply: str,
                                         expected: Score) -> None:
    openai_server.on_groundedness(lambda *_: reply)
    assert groundedness(engine) == expected
    assert len(openai_server.chat_requests("groundedness")) == 1  # read at the first ask


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("reply, problem", [
    ('{"reason": "Adds a fee.", "score": 2, "status": "completed", "score": 5}',
     'the key "score" twice with different values'),
    ('{"reason": "r", "score": 4, "status": "skipped", "status": "completed"}', 'the key "status" twice'),
    ('{"reason": "r", "score": "2", "status": "completed"}', 'got string "2"'),
    ('{"reason": "r", "score": true, "status": "completed"}', "got boolean true"),
    ("<S0>Let's think step by step.</S0><S1>r</S1><S2>2</S2><S2>5</S2>", "two scores"),
    ('Score: 2\n{"reason": "r", "score": 5, "status": "completed"}', "two scores"),
    ("3.5", "whole number 1-5, got 3.5"),
    ("6", "score 6 is outside 1-5"),
])
def test_ambiguous_replies_are_judge_errors_in_both_engines(openai_server: FakeOpenAI, engine: str,
                                                           reply: str, problem: str) -> None:
    openai_server.on_groundedness(lambda *_: reply)
    score = groundedness(engine)
    assert score.value is None and problem in score.error
    assert f"(model {JUDGE_MODEL}; reply {json.dumps(reply)[:60]}" in score.error
    assert len(openai_server.chat_requests("groundedness")) == 2  # asked again once


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unreadable_reply_quotes_at_most_200_characters(openai_server: FakeOpenAI, engine: str) -> None:
    reply = "I cannot grade this. " * 30
    openai_server.on_groundedness(lambda *_: reply)
    score = groundedness(engine)
    assert score.value is None
    quoted = score.error.split("; reply ", 1)[1]
    assert quoted == json.dumps(reply[:200]) + " (cut))"


@pytest.mark.parametrize("engine", ENGINES)
def test_fluency_reads_the_same_shapes(openai_server: FakeOpenAI, engine: str) -> None:
    openai_server.on_fluency(lambda response, i: "<S0>Reads well.</S0><S1>Fluent.</S1><S2>4</S2>")
    assert with_judge(engine, lambda judge: judge.fluency(ANSWER)) == Score(4, "Fluent.")


def test_relevance_reads_a_fenced_reply_and_refuses_duplicate_keys(openai_server: FakeOpenAI) -> None:
    openai_server.on_relevance(lambda response, i: (
        '```json\n{"questions": ["What does a card replacement cost?"], "noncommittal": false}\n```'
        if response == ANSWER else
        '{"questions": ["q?"], "noncommittal": true, "noncommittal": false}'))
    good, bad = with_judge("openai", lambda judge: judge.relevance([(FEE, ANSWER), (FEE, "Maybe.")]))
    assert good.score is not None and good.error is None
    assert bad.score is None and 'the key "noncommittal" twice' in bad.error


@pytest.mark.azure
@pytest.mark.skipif(not HAS_SDK, reason="azure-ai-evaluation not installed")
def test_both_engines_read_every_distinct_real_reply_alike(openai_server: FakeOpenAI) -> None:
    """The corpus's distinct replies, each sent by the loopback server to both engines."""
    replies = list(dict.fromkeys(json.loads(line)["reply"] for line in
                                 CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()))
    readings: dict[str, list[Any]] = {"openai": [], "azure-ai-evaluation": []}
    for engine, seen in readings.items():
        async def each(judge: Judge) -> None:
            for reply in replies:
                openai_server.on_groundedness(lambda *_, reply=reply: reply)
                score = await judge.groundedness(FEE, ANSWER)
                seen.append(score.value if score.value is not None  # noqa: B023 - awaited in the loop
                            else score.error.split(" (model ")[0].split("twice: ")[-1])
        with_judge(engine, each)
    assert readings["openai"] == readings["azure-ai-evaluation"]
    assert sum(isinstance(value, int) for value in readings["openai"]) >= 10
