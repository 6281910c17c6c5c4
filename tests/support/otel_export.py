"""OpenTelemetry GenAI exports for tests, in the OTLP/JSON shape a collector writes.

Each trace is a RAG request: a `retrieval` span (query text, retrieved documents
with their content) and a `chat` span (the messages sent to the model), both
carrying the app's own `app.category` attribute.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


def value(v: Any) -> dict[str, Any]:
    """A Python value as an OTLP/JSON AnyValue."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, Mapping):
        return {"kvlistValue": {"values": attributes(v)}}
    raise TypeError(type(v))


def attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": value(v)} for k, v in values.items()]


@dataclass
class Trace:
    query: str
    documents: list[str]
    category: str | None
    start_ns: int
    user_message: str | None = None          # default: a prompt holding query and documents
    structured: bool = True                  # messages as structure, else as a JSON string
    extra_attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def trace_id(self) -> str:
        key = f"{self.query}|{self.documents}|{self.start_ns}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]


def spans_of(trace: Trace) -> list[dict[str, Any]]:
    common = {"app.category": trace.category} if trace.category else {}
    common.update(trace.extra_attributes)
    docs = [{"id": f"doc-{i}", "score": 0.9 - i / 10, "content": d} for i, d in enumerate(trace.documents)]
    retrieval = {
        "traceId": trace.trace_id, "spanId": trace.trace_id[:16], "name": "retrieval faq-index",
        "kind": 3, "startTimeUnixNano": str(trace.start_ns), "endTimeUnixNano": str(trace.start_ns + 10**7),
        "attributes": attributes({"gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "faq-index",
                                  "gen_ai.retrieval.query.text": trace.query,
                                  "gen_ai.retrieval.documents": docs if trace.structured else json.dumps(docs),
                                  **common}),
    }
    prompt = trace.user_message or f"{trace.query}\n\nContext:\n" + "\n\n".join(trace.documents)
    messages = [{"role": "system", "parts": [{"type": "text", "content": "Answer from the context."}]},
                {"role": "user", "parts": [{"type": "text", "content": prompt}]}]
    chat = {
        "traceId": trace.trace_id, "spanId": trace.trace_id[16:], "parentSpanId": "",
        "name": "chat gpt-4o-mini", "kind": 3,
        "startTimeUnixNano": str(trace.start_ns + 2 * 10**7), "endTimeUnixNano": str(trace.start_ns + 9 * 10**8),
        "attributes": attributes({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                  "gen_ai.request.model": "gpt-4o-mini",
                                  "gen_ai.input.messages": messages if trace.structured else json.dumps(messages),
                                  **common}),
    }
    return [retrieval, chat]


def export(traces: Iterable[Trace], *, service: str = "faq-bot") -> dict[str, Any]:
    """One OTLP/JSON ExportTraceServiceRequest holding every span of `traces`."""
    spans = [span for trace in traces for span in spans_of(trace)]
    return {"resourceSpans": [{
        "resource": {"attributes": attributes({"service.name": service})},
        "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"}, "spans": spans}],
    }]}
