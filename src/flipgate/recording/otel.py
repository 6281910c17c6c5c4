"""Observations from OpenTelemetry GenAI spans, exported as OTLP JSON or JSONL.

Accepted shapes:
- an OTLP/JSON export: `{"resourceSpans": [{"resource", "scopeSpans": [{"spans": [...]}]}]}`,
  as one document or one per line (the collector's file exporter);
- a JSONL of spans, each an OTLP span (`traceId`, `spanId`, `attributes` as
  `[{"key", "value": {"stringValue": ...}}]`) or the SDK console exporter's
  shape (`context.trace_id`, `attributes` as a plain mapping).

One trace gives at most one case. Following the GenAI semantic conventions:
- the **query** is the retrieval span's `gen_ai.retrieval.query.text`, else the
  last user message the model was sent (`gen_ai.input.messages`, or the older
  `gen_ai.prompt` / `gen_ai.user.message` events and `gen_ai.prompt.N.*`
  attributes);
- the **context** is the `content` of every document in `gen_ai.retrieval.documents`
  of the trace's retrieval spans, in recorded order, joined by a blank line;
  else the tool results the model was sent (`tool_call_response` parts).
An app that records its context verbatim under its own attribute names it with
`--field context=app.context` (likewise query, category, id, timestamp); a
named attribute is looked up on the trace's spans, then their resource.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from flipgate.config.cases import json_lines
from flipgate.errors import InputError, Problem
from flipgate.recording.sources import Observation, Reading, parse_timestamp
from flipgate.text.parsing import decode_utf8

OPERATION = "gen_ai.operation.name"
INPUT_MESSAGES = "gen_ai.input.messages"
RETRIEVAL_QUERY = "gen_ai.retrieval.query.text"
RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
_INFERENCE_OPERATIONS = {"chat", "text_completion", "generate_content"}
_LEGACY_PROMPT = re.compile(r"^gen_ai\.prompt\.(\d+)\.(role|content)$")
DOCUMENT_SEPARATOR = "\n\n"


class _Unreadable(ValueError):
    """A GenAI attribute that is there but cannot be read (often truncated by a length limit)."""


@dataclass
class Span:
    trace_id: str
    span_id: str
    name: str
    start: Any                   # as exported; parse_timestamp reads it
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    resource: dict[str, Any]
    line: int | None             # where it stood in the file, when known

    @property
    def operation(self) -> str | None:
        value = self.attributes.get(OPERATION)
        return value if isinstance(value, str) else None

    @property
    def is_retrieval(self) -> bool:
        return self.operation == "retrieval" or RETRIEVAL_DOCUMENTS in self.attributes

    @property
    def is_inference(self) -> bool:
        return (self.operation in _INFERENCE_OPERATIONS or INPUT_MESSAGES in self.attributes
                or any(_LEGACY_PROMPT.match(key) for key in self.attributes)
                or any(name in ("gen_ai.content.prompt", "gen_ai.user.message",
                                "gen_ai.client.inference.operation.details")
                       for name, _ in self.events))


# --- OTLP JSON values ------------------------------------------------------------

def any_value(value: Any) -> Any:
    """An OTLP/JSON AnyValue (`{"stringValue": ...}`, `{"arrayValue": {"values": [...]}}`, ...)
    as a plain Python value. A value that is already plain is returned as it is."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    if "stringValue" in value:   # by far the most common: the fast path
        return value["stringValue"]
    kind, inner = next(iter(value.items()))
    if kind == "boolValue":
        return bool(inner)
    if kind == "intValue":
        return int(inner)
    if kind == "doubleValue":
        return float(inner)
    if kind == "bytesValue":
        return base64.b64decode(inner)
    if kind == "arrayValue":
        return [any_value(v) for v in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return key_values((inner or {}).get("values", []))
    return value


def key_values(entries: Any) -> dict[str, Any]:
    """OTLP attributes (`[{"key", "value"}]`) or a plain mapping, as a dict."""
    if isinstance(entries, Mapping):
        return dict(entries)
    if not isinstance(entries, list):
        raise ValueError("attributes must be a list of {key, value} or a mapping")
    out: dict[str, Any] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
            raise ValueError("an attribute must be an object with a string 'key'")
        out[entry["key"]] = any_value(entry.get("value"))
    return out


def _span(obj: dict[str, Any], resource: dict[str, Any], line: int | None) -> Span:
    context = found if isinstance(found := obj.get("context"), dict) else {}
    trace_id = obj.get("traceId") or context.get("trace_id") or ""
    span_id = obj.get("spanId") or context.get("span_id") or ""
    events = []
    for event in obj.get("events") or []:
        if not isinstance(event, dict):
            raise ValueError("an event must be an object")
        events.append((str(event.get("name", "")), key_values(event.get("attributes") or [])))
    return Span(trace_id=str(trace_id), span_id=str(span_id), name=str(obj.get("name", "")),
                start=obj.get("startTimeUnixNano", obj.get("start_time")),
                attributes=key_values(obj.get("attributes") or []), events=events,
                resource=resource, line=line)


def _line_of_span(text: str, span_id: str, start: int = 0) -> int | None:
    """The line of a pretty-printed document on which a span's id appears."""
    if not span_id:
        return None
    at = text.find(f'"{span_id}"', start)
    return None if at < 0 else text.count("\n", 0, at) + 1


def _spans_of_export(doc: dict[str, Any], *, source: str, line: int | None,
                     text: str | None) -> Iterator[Span]:
    for r_index, resource_spans in enumerate(doc.get("resourceSpans") or []):
        if not isinstance(resource_spans, dict):
            raise InputError(Problem(source, line, f"resourceSpans[{r_index}] must be an object"))
        resource_obj = resource_spans.get("resource") or {}
        try:
            resource = key_values(resource_obj.get("attributes") or [])
        except (ValueError, AttributeError) as exc:
            raise InputError(Problem(source, line, f"resourceSpans[{r_index}].resource: {exc}")) from None
        for s_index, scope_spans in enumerate(resource_spans.get("scopeSpans")
                                              or resource_spans.get("instrumentationLibrarySpans") or []):
            for index, obj in enumerate((scope_spans or {}).get("spans") or []):
                where = f"resourceSpans[{r_index}].scopeSpans[{s_index}].spans[{index}]"
                if not isinstance(obj, dict):
                    raise InputError(Problem(source, line, f"{where} must be an object"))
                at = line if text is None else _line_of_span(text, str(obj.get("spanId", "")))
                try:
                    yield _span(obj, resource, at)
                except (ValueError, TypeError) as exc:
                    raise InputError(Problem(source, at, f"{where}: {exc}")) from None


def parse_spans(data: bytes, *, source: str) -> list[Span]:
    """Every span of an OTLP/JSON document or a JSONL of exports or spans."""
    text = decode_utf8(data, source)
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # more than one document: JSONL
        except (RecursionError, ValueError):
            whole = None  # read line by line, where the line is named
        if isinstance(whole, dict) and "resourceSpans" in whole:
            return list(_spans_of_export(whole, source=source, line=None, text=text))
    problems: list[Problem] = []
    spans: list[Span] = []
    for number, obj in json_lines(data, source, problems):
        if not isinstance(obj, dict):
            problems.append(Problem(source, number, "each line must be a JSON object (a span or an "
                                                    "OTLP export)"))
        elif "resourceSpans" in obj:
            try:
                spans.extend(_spans_of_export(obj, source=source, line=number, text=None))
            except InputError as exc:
                problems.extend(p for p in exc.problems if isinstance(p, Problem))
        elif any(key in obj for key in ("traceId", "spanId", "context", "attributes")):
            try:
                spans.append(_span(obj, {}, number))
            except (ValueError, TypeError) as exc:
                problems.append(Problem(source, number, str(exc)))
        else:
            problems.append(Problem(source, number, "neither a span (traceId, spanId, attributes) "
                                                    "nor an OTLP export (resourceSpans)"))
    if problems:
        raise InputError(problems)
    if not spans:
        raise InputError(Problem(source, None, "holds no spans: expected an OTLP/JSON export or a "
                                               "JSONL of spans"))
    return spans


# --- GenAI content ----------------------------------------------------------------

def _structured(value: Any, name: str) -> Any:
    """A structured attribute, recorded as structure or as a JSON string (both allowed)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise _Unreadable(f"{name} is not JSON (truncated by an attribute length limit?)") from None
        except (RecursionError, ValueError):
            raise _Unreadable(f"{name} is JSON nested too deeply or with a number too long") from None
    return value


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type", "text") == "text":
        text = part.get("content", part.get("text"))
        return text if isinstance(text, str) else None
    return None


def _message_text(message: Mapping[str, Any]) -> str | None:
    """The text of a message: its `text` parts (current conventions) or its `content`."""
    if isinstance(message.get("parts"), list):
        texts = [t for t in map(_part_text, message["parts"]) if t is not None]
        return "".join(texts) if texts else None
    content = message.get("content")
    if isinstance(content, list):
        texts = [t for t in map(_part_text, content) if t is not None]
        return "".join(texts) if texts else None
    return content if isinstance(content, str) else None


def _messages(span: Span) -> list[dict[str, Any]]:
    """The messages sent to the model, from whichever convention the span follows."""
    if INPUT_MESSAGES in span.attributes:
        value = _structured(span.attributes[INPUT_MESSAGES], INPUT_MESSAGES)
        if not isinstance(value, list):
            raise _Unreadable(f"{INPUT_MESSAGES} is not a list of messages")
        return [m for m in value if isinstance(m, dict)]
    for name, attributes in span.events:
        if name == "gen_ai.client.inference.operation.details" and INPUT_MESSAGES in attributes:
            value = _structured(attributes[INPUT_MESSAGES], INPUT_MESSAGES)
            return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []
        if name == "gen_ai.content.prompt" and "gen_ai.prompt" in attributes:
            value = _structured(attributes["gen_ai.prompt"], "gen_ai.prompt")
            return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []
    user_events = [attributes for name, attributes in span.events if name == "gen_ai.user.message"]
    if user_events:
        out = []
        for attributes in user_events:
            content = attributes.get("content")
            if content is None and "gen_ai.event.content" in attributes:
                body = _structured(attributes["gen_ai.event.content"], "gen_ai.event.content")
                content = body.get("content") if isinstance(body, dict) else None
            out.append({"role": "user", "content": content})
        return out
    flattened: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        if match := _LEGACY_PROMPT.match(key):
            flattened.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [flattened[i] for i in sorted(flattened)]


def _last_user_text(span: Span) -> str | None:
    users = [m for m in _messages(span) if m.get("role") == "user"]
    return _message_text(users[-1]) if users else None


def _tool_results(span: Span) -> list[str]:
    results = []
    for message in _messages(span):
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call_response":
                result = part.get("result", part.get("response"))
                if isinstance(result, str):
                    results.append(result)
                elif result is not None:
                    results.append(json.dumps(result, ensure_ascii=False))
    return results


def _documents(span: Span) -> list[str]:
    value = _structured(span.attributes.get(RETRIEVAL_DOCUMENTS), RETRIEVAL_DOCUMENTS)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Unreadable(f"{RETRIEVAL_DOCUMENTS} is not a list of documents")
    texts = []
    for document in value:
        text = document.get("content", document.get("text")) if isinstance(document, dict) else document
        if not isinstance(text, str):
            raise _Unreadable(f"{RETRIEVAL_DOCUMENTS} holds a document without its content "
                              "(only ids and scores were recorded)")
        texts.append(text)
    return texts


# --- one trace, one observation ---------------------------------------------------

def _attribute(spans: list[Span], name: str) -> Any:
    for span in spans:
        if name in span.attributes:
            return span.attributes[name]
    for span in spans:
        if name in span.resource:
            return span.resource[name]
    return None


def _string(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


_EPOCH = datetime.fromtimestamp(0, tz=UTC)


def _start_key(span: Span) -> tuple[bool, datetime]:
    started = parse_timestamp(span.start)
    return started is None, started or _EPOCH


def _observe(trace_id: str, spans: list[Span], *, source: str, fields: Mapping[str, str],
             reading: Reading) -> None:
    spans = sorted(spans, key=_start_key)
    retrievals = [s for s in spans if s.is_retrieval]
    inferences = [s for s in spans if s.is_inference]
    if not retrievals and not inferences and not (fields.keys() & {"query", "context"}):
        reading.skip("traces without a GenAI retrieval or inference span")
        return
    try:
        if "query" in fields:
            query = _string(_attribute(spans, fields["query"]))
        else:
            query = next((q for s in retrievals if isinstance(q := s.attributes.get(RETRIEVAL_QUERY), str)),
                         None)
            if query is None and inferences:
                query = _last_user_text(inferences[0])
        if "context" in fields:
            context = _string(_attribute(spans, fields["context"]))
        else:
            documents = [text for s in retrievals for text in _documents(s)]
            if not documents and inferences:
                documents = _tool_results(inferences[0])
            context = DOCUMENT_SEPARATOR.join(documents) if documents else None
    except _Unreadable as exc:
        reading.skip(f"traces whose {exc}")
        return
    if query is None:
        reading.skip("traces without a query (no retrieval query text or user message)")
        return
    if context is None:
        reading.skip("traces without a context (no retrieved document content or tool result)")
        return
    anchor = (retrievals or inferences or spans)[0]
    raw_time = _attribute(spans, fields["timestamp"]) if "timestamp" in fields else anchor.start
    category = _string(_attribute(spans, fields["category"])) if "category" in fields else None
    case_id = _string(_attribute(spans, fields["id"])) if "id" in fields else None
    where = f"{source}:{anchor.line}" if anchor.line else f"{source} (trace {trace_id})"
    reading.observations.append(Observation(
        query=query, context=context, source=where, category=(category or "").strip() or None,
        id=case_id, timestamp=parse_timestamp(raw_time),
        extra={"trace_id": trace_id} if trace_id else {}))


def read_otel(data: bytes, *, source: str, fields: Mapping[str, str] | None = None) -> Reading:
    """One observation per trace that recorded a query and its retrieved context."""
    spans = parse_spans(data, source=source)
    traces: dict[str, list[Span]] = {}
    for index, span in enumerate(spans):
        # A span without a trace id stands alone.
        traces.setdefault(span.trace_id or f"#{index}", []).append(span)
    reading = Reading()
    for trace_id, members in traces.items():
        _observe(trace_id if not trace_id.startswith("#") else "", members, source=source,
                 fields=fields or {}, reading=reading)
    return reading
