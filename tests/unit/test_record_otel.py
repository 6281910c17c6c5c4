"""Reading OpenTelemetry GenAI spans: OTLP/JSON values, every convention for the query,
the retrieved context, and bad input located by file and line."""

from __future__ import annotations

import json

import pytest

from flipgate.errors import InputError
from flipgate.recording.otel import any_value, parse_spans, read_otel

from support.otel_export import Trace, attributes, export, spans_of

T0 = 1_767_225_600 * 10**9


def as_bytes(doc, *, indent=None) -> bytes:
    return json.dumps(doc, indent=indent, ensure_ascii=False).encode()


@pytest.mark.parametrize("raw, expected", [
    ({"stringValue": "x"}, "x"),
    ({"intValue": "42"}, 42),
    ({"intValue": 7}, 7),
    ({"doubleValue": 0.5}, 0.5),
    ({"boolValue": True}, True),
    ({"bytesValue": "aGk="}, b"hi"),
    ({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}]}}, ["a", 1]),
    ({"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}, {"k": "v"}),
    ({"arrayValue": {}}, []),
])
def test_any_value(raw, expected) -> None:
    assert any_value(raw) == expected


def test_query_and_exact_context_from_retrieval_span() -> None:
    docs = ["First doc.\n  keeps  its spacing ", "Zweites Dokument: 12 €."]
    reading = read_otel(as_bytes(export([Trace("How much?", docs, "pricing", T0)])), source="t.json")
    (obs,) = reading.observations
    assert obs.query == "How much?"
    assert obs.context == "First doc.\n  keeps  its spacing \n\nZweites Dokument: 12 €."
    assert obs.timestamp.year == 2026 and obs.extra["trace_id"]


def test_documents_recorded_as_a_json_string_read_the_same() -> None:
    structured = read_otel(as_bytes(export([Trace("q", ["a", "b"], None, T0)])), source="s")
    stringly = read_otel(as_bytes(export([Trace("q", ["a", "b"], None, T0, structured=False)])), source="s")
    assert structured.observations[0].context == stringly.observations[0].context == "a\n\nb"


def test_pretty_printed_export_locates_the_span_line() -> None:
    text = as_bytes(export([Trace("q1", ["c1"], None, T0), Trace("q2", ["c2"], None, T0 + 1)]), indent=2)
    reading = read_otel(text, source="t.json")
    lines = text.decode().split("\n")
    for obs in reading.observations:
        line = int(obs.source.rsplit(":", 1)[1])
        assert '"spanId"' in lines[line - 1]


def chat_only(messages_attr: dict, events: list | None = None) -> bytes:
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "chat m", "startTimeUnixNano": str(T0),
            "attributes": attributes({"gen_ai.operation.name": "chat", **messages_attr}),
            "events": events or []}
    return as_bytes(span)  # one span a line: a JSONL of spans


TOOL_MESSAGES = [
    {"role": "user", "parts": [{"type": "text", "content": "Old question"}]},
    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "search", "arguments": {}}]},
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "result": "Doc from a tool."}]},
    {"role": "user", "parts": [{"type": "text", "content": "Latest "}, {"type": "text", "content": "question"}]},
]


def test_without_a_retrieval_span_the_query_is_the_last_user_message_and_context_the_tool_results() -> None:
    reading = read_otel(chat_only({"gen_ai.input.messages": json.dumps(TOOL_MESSAGES)}), source="s.jsonl")
    (obs,) = reading.observations
    assert (obs.query, obs.context) == ("Latest question", "Doc from a tool.")
    assert obs.source == "s.jsonl:1"


def test_legacy_prompt_event_and_flattened_attributes_give_the_query() -> None:
    event = {"name": "gen_ai.content.prompt",
             "attributes": attributes({"gen_ai.prompt": json.dumps([{"role": "user", "content": "Via event"}])})}
    data = chat_only({"app.context": "ctx"}, [event])
    reading = read_otel(data, source="s", fields={"context": "app.context"})
    assert reading.observations[0].query == "Via event"
    flat = chat_only({"gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "sys",
                      "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Flattened", "app.context": "c"})
    assert read_otel(flat, source="s", fields={"context": "app.context"}).observations[0].query == "Flattened"
    user_event = {"name": "gen_ai.user.message", "attributes": attributes({"content": "From user event"})}
    data = chat_only({"app.context": "c"}, [user_event])
    assert read_otel(data, source="s", fields={"context": "app.context"}).observations[0].query == "From user event"


def test_fields_name_attributes_on_any_span_or_the_resource() -> None:
    trace = Trace("q", ["d"], None, T0, extra_attributes={"app.ctx": "Verbatim context", "app.case": "c-1"})
    doc = export([trace], service="svc")
    doc["resourceSpans"][0]["resource"]["attributes"] += attributes({"deployment.tier": "premium"})
    reading = read_otel(as_bytes(doc), source="s", fields={"context": "app.ctx", "category": "deployment.tier",
                                                            "id": "app.case"})
    (obs,) = reading.observations
    assert (obs.context, obs.category, obs.id) == ("Verbatim context", "premium", "c-1")


def test_traces_without_content_are_passed_over_with_the_reason() -> None:
    no_content = Trace("q", ["d"], None, T0)
    doc = export([no_content, Trace("q2", ["d2"], None, T0 + 5)])
    retrieval = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    retrieval["attributes"] = attributes({"gen_ai.operation.name": "retrieval",
                                          "gen_ai.retrieval.query.text": "q",
                                          "gen_ai.retrieval.documents": [{"id": "d1", "score": 0.3}]})
    http = {"traceId": "ee" * 16, "spanId": "ff" * 8, "name": "GET /", "attributes": []}
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append(http)
    truncated = spans_of(Trace("q3", ["d3"], None, T0, structured=False))  # [3]: the documents
    truncated[0]["attributes"][3]["value"] = {"stringValue": '[{"id": "d", "cont'}
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].extend(truncated)
    reading = read_otel(as_bytes(doc), source="s")
    assert [o.query for o in reading.observations] == ["q2"]
    assert reading.skipped == {
        "traces whose gen_ai.retrieval.documents holds a document without its content "
        "(only ids and scores were recorded)": 1,
        "traces without a GenAI retrieval or inference span": 1,
        "traces whose gen_ai.retrieval.documents is not JSON (truncated by an attribute length limit?)": 1,
    }


@pytest.mark.parametrize("content, message", [
    (b'{"traceId": "a", "attributes": []}\nnot json\n', "s.jsonl:2: invalid JSON"),
    (b'{"traceId": "a", "attributes": []}\n[1, 2]\n', "s.jsonl:2: each line must be a JSON object"),
    (b'{"hello": "world"}\n', "s.jsonl:1: neither a span"),
    (b'{"traceId": "a", "attributes": [{"value": 1}]}\n', "s.jsonl:1: an attribute must be an object"),
    (b"\n\n", "s.jsonl: holds no spans"),
])
def test_bad_input_is_located(content: bytes, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_spans(content, source="s.jsonl")
    assert any(str(p).startswith(message) for p in exc.value.problems), exc.value.problems


def test_bad_span_in_a_pretty_printed_export_names_its_line() -> None:
    doc = export([Trace("q", ["d"], None, T0)])
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"] = "oops"
    text = as_bytes(doc, indent=2)
    with pytest.raises(InputError) as exc:
        parse_spans(text, source="t.json")
    (problem,) = exc.value.problems
    assert problem.line and '"spanId"' in text.decode().split("\n")[problem.line - 1]
    assert "spans[1]: attributes must be a list" in problem.message
