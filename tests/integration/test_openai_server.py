"""The loopback OpenAI-compatible server behaves like the API, for the real openai client."""

from __future__ import annotations

import asyncio
import json
import math

import httpx2
import openai
import pytest

from support.openai_server import FakeOpenAI, classify_chat, extract_inputs

JSON = {"type": "json_object"}


def client(server: FakeOpenAI, **kwargs: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=2, **kwargs)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


@pytest.mark.parametrize("body, kind", [
    ({"messages": [{"role": "user", "content": "hi"}]}, "generation"),
    ({"messages": [{"role": "system", "content": "Rate groundedness"}]}, "generation"),  # no JSON mode
    ({"response_format": JSON, "messages": [{"role": "system", "content": "Rate groundedness"}]},
     "groundedness"),
    ({"response_format": JSON, "messages": [{"role": "system", "content": "Rate fluency"}]}, "fluency"),
    ({"response_format": JSON, "messages": [{"role": "system", "content": "Invent questions; "
                                             "say if noncommittal"}]}, "relevance"),
    # The system message decides, whatever the answer under judgement says.
    ({"response_format": JSON, "messages": [
        {"role": "system", "content": "Invent questions; say if noncommittal"},
        {"role": "user", "content": "<<<RESPONSE>>>\nMy groundedness and fluency\n<<<END RESPONSE>>>"}]},
     "relevance"),
    # azure-ai-evaluation names its metric in the user message.
    ({"response_format": JSON, "messages": [
        {"role": "system", "content": "answer the questions below"},
        {"role": "user", "content": "**Groundedness** refers to ..."}]}, "groundedness"),
    ({"response_format": JSON, "messages": [{"role": "user", "content": "make JSON"}]}, "generation"),
])
def test_chat_requests_are_classified_by_content(body: dict, kind: str) -> None:
    assert classify_chat(body) == kind


@pytest.mark.parametrize("text, expected", [
    ("<<<QUERY>>>\nq?\n<<<END QUERY>>>\n\n<<<CONTEXT>>>\nc\nline 2\n<<<END CONTEXT>>>\n\n"
     "<<<RESPONSE>>>\nr\n<<<END RESPONSE>>>", ("q?", "c\nline 2", "r")),
    ("<<<RESPONSE>>>\nonly the answer\n<<<END RESPONSE>>>", (None, None, "only the answer")),
    ("# Data\nCONTEXT: the ctx\nQUERY: the q\nRESPONSE: the r\n\n\n# Tasks\n", ("the q", "the ctx", "the r")),
    ("# Data\nRESPONSE: fluent text\n\n\n# Tasks\n", (None, None, "fluent text")),
])
def test_judge_inputs_are_recovered_from_either_prompt_shape(text: str, expected: tuple) -> None:
    inputs = extract_inputs({"messages": [{"role": "user", "content": text}]})
    assert (inputs.query, inputs.context, inputs.response) == expected


def test_generation_reply_has_usage_and_can_be_truncated(openai_server: FakeOpenAI) -> None:
    openai_server.on_generation(lambda body: {"content": "cut sho", "finish_reason": "length"}
                                if body["model"] == "short" else "full answer")
    api = client(openai_server)
    full = api.chat.completions.create(model="long", messages=[{"role": "user", "content": "a b c"}])
    cut = api.chat.completions.create(model="short", messages=[{"role": "user", "content": "a"}])
    assert (full.choices[0].message.content, full.choices[0].finish_reason) == ("full answer", "stop")
    assert (cut.choices[0].message.content, cut.choices[0].finish_reason) == ("cut sho", "length")
    assert full.usage.prompt_tokens == 3 and full.usage.completion_tokens == 2
    assert [r.model for r in openai_server.chat_requests("generation")] == ["long", "short"]


def test_default_generation_is_deterministic(openai_server: FakeOpenAI) -> None:
    api = client(openai_server)
    messages = [{"role": "user", "content": "What is the fee?"}]
    first, second = (api.chat.completions.create(model="m", messages=messages) for _ in range(2))
    assert first.choices[0].message.content == second.choices[0].message.content
    assert "What is the fee?" in first.choices[0].message.content


def test_judge_scripts_see_inputs_and_call_index(openai_server: FakeOpenAI) -> None:
    seen = []

    def script(query, context, response, call_index):
        seen.append((query, context, response, call_index))
        return "not json" if call_index == 0 else 4

    openai_server.on_groundedness(script)
    api = client(openai_server)
    messages = [{"role": "system", "content": "groundedness rubric"},
                {"role": "user", "content": "<<<QUERY>>>\nq\n<<<END QUERY>>>\n\n<<<CONTEXT>>>\nc\n"
                 "<<<END CONTEXT>>>\n\n<<<RESPONSE>>>\nr\n<<<END RESPONSE>>>"}]
    replies = [api.chat.completions.create(model="judge", messages=messages, response_format=JSON)
               .choices[0].message.content for _ in range(2)]
    assert replies[0] == "not json"
    assert json.loads(replies[1]) == {"reason": "scripted groundedness score 4", "score": 4,
                                      "status": "completed"}
    assert seen == [("q", "c", "r", 0), ("q", "c", "r", 1)]


def test_embeddings_default_base64_decode_to_normalised_similar_vectors(openai_server: FakeOpenAI) -> None:
    api = client(openai_server)
    texts = ["annual card fee", "what is the annual card fee", "weather in paris"]
    result = api.embeddings.create(model="emb", input=texts)  # client asks for base64
    assert openai_server.embedding_requests()[0].body["encoding_format"] == "base64"
    vectors = [item.embedding for item in result.data]
    assert all(math.isclose(math.hypot(*v), 1.0, rel_tol=1e-5) for v in vectors)
    assert cosine(vectors[0], vectors[1]) > 0.8 > cosine(vectors[0], vectors[2])
    assert result.usage.total_tokens == 3 + 6 + 3
    floats = api.embeddings.create(model="emb", input=texts, encoding_format="float")
    for item, vector in zip(floats.data, vectors, strict=True):
        assert item.embedding == pytest.approx(vector, rel=1e-6, abs=1e-7)


def test_rate_limit_with_retry_after_is_retried_by_the_client(openai_server: FakeOpenAI) -> None:
    openai_server.fail("generation", status=429, times=1, retry_after=0.01)
    reply = client(openai_server).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content
    assert [r.status for r in openai_server.requests] == [429, 200]
    assert openai_server.requests[0].kind == "generation"


def test_server_errors_until_retries_run_out(openai_server: FakeOpenAI) -> None:
    openai_server.fail("any", status=500, times=5)
    with pytest.raises(openai.InternalServerError):
        client(openai_server).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert [r.status for r in openai_server.requests] == [500, 500, 500]  # first try + 2 retries


def test_missing_key_is_refused(openai_server: FakeOpenAI) -> None:
    reply = httpx2.post(f"{openai_server.base_url}/chat/completions",
                        json={"model": "m", "messages": []})
    assert reply.status_code == 401


def test_azure_client_reaches_the_deployment_routes(openai_server: FakeOpenAI,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    openai_server.set_azure_env(monkeypatch)
    api = openai.AzureOpenAI(max_retries=0)
    chat = api.chat.completions.create(model="judge-deploy", messages=[{"role": "user", "content": "hi"}])
    api.embeddings.create(model="emb-deploy", input=["x y"])
    assert chat.choices[0].message.content
    first, second = openai_server.requests
    assert (first.path, first.deployment, first.args["api-version"]) == (
        "/openai/deployments/judge-deploy/chat/completions", "judge-deploy", "2024-10-21")
    assert (second.kind, second.deployment) == ("embeddings", "emb-deploy")
    assert first.headers["Api-Key"] == "test-azure-key"


def test_latency_overlaps_and_peak_concurrency_is_measured(openai_server: FakeOpenAI) -> None:
    openai_server.latency = 0.1

    async def many() -> None:
        async with openai.AsyncOpenAI(base_url=openai_server.base_url, api_key="k") as api:
            await asyncio.gather(*(api.chat.completions.create(
                model="m", messages=[{"role": "user", "content": str(i)}]) for i in range(4)))

    asyncio.run(many())
    assert len(openai_server.requests) == 4
    assert openai_server.peak_concurrency >= 2
