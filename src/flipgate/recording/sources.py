"""Observations from logs: plain JSONL with mappable field names, and a previous report.json.

An `Observation` is one query with the exact context the generator saw, as
some log recorded it, plus whatever else the log knew (category, id, time).
Every reader takes bytes and a `source` label and reports bad input as
problems naming the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from flipgate.config.cases import json_lines
from flipgate.errors import InputError, Problem
from flipgate.output.report import read_report_json

FIELDS = ("query", "context", "category", "id", "timestamp")
DEFAULT_FIELDS: dict[str, str] = {name: name for name in FIELDS}


@dataclass(frozen=True)
class Observation:
    query: str
    context: str
    source: str                      # "logs.jsonl:12", for messages
    category: str | None = None
    id: str | None = None
    timestamp: datetime | None = None
    extra: Mapping[str, str] = field(default_factory=dict)  # kept in the case (e.g. trace_id)


@dataclass
class Reading:
    """What one input gave: observations, and records it had to pass over (reason -> count)."""

    observations: list[Observation] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def extend(self, other: Reading) -> None:
        self.observations.extend(other.observations)
        for reason, n in other.skipped.items():
            self.skipped[reason] = self.skipped.get(reason, 0) + n


def parse_field_options(options: Sequence[str], *, source: str = "--field") -> dict[str, str]:
    """`--field query=input.question` options as {field: path}; unknown fields are errors."""
    mapping: dict[str, str] = {}
    problems = []
    for option in options:
        name, sep, path = option.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not path:
            problems.append(Problem(source, None, f"'{option}' must read NAME=PATH, e.g. query=input.question"))
        elif name not in FIELDS:
            problems.append(Problem(source, None, f"'{name}' is not a field of a case "
                                                  f"(one of {', '.join(FIELDS)})"))
        else:
            mapping[name] = path
    if problems:
        raise InputError(problems)
    return mapping


_MISSING = object()


def lookup(value: Any, path: str) -> Any:
    """The value at a dotted path (`input.question`, `messages.0.content`).

    A key that itself holds dots (`gen_ai.prompt`) is found too: the longest
    key that matches wins at each step. Absent: a sentinel, never an error."""
    if path == "":
        return value
    first, _, rest = path.partition(".")
    if first == "*" and not (isinstance(value, Mapping) and "*" in value):
        return _every(value, rest)
    if isinstance(value, Mapping):
        if path in value:
            return value[path]
        parts = path.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            head = ".".join(parts[:cut])
            if head in value:
                found = lookup(value[head], ".".join(parts[cut:]))
                if found is not _MISSING:
                    return found
        return _MISSING
    if isinstance(value, list):
        first, _, rest = path.partition(".")
        if first.isdigit() and int(first) < len(value):
            return lookup(value[int(first)], rest)
    return _MISSING


def _every(value: Any, rest: str) -> Any:
    """`*`: the value at `rest` in every item of a list (or every value of a mapping), in
    order, as one flat list; items without it are left out. Neither: absent."""
    if isinstance(value, Mapping):
        items = list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return _MISSING
    out: list[Any] = []
    for item in items:
        one = lookup(item, rest)
        if one is _MISSING:
            continue
        out.extend(one if isinstance(one, list) and "*" in rest else [one])
    return out


CHUNK_SEPARATOR = "\n\n"  # retrieved chunks (a list at the context's path) joined by a blank line


def found(value: Any) -> bool:
    return value is not _MISSING


_NUMERIC = re.compile(r"^\d+(\.\d+)?$")


def parse_timestamp(value: Any) -> datetime | None:
    """ISO 8601 text, or a Unix time in seconds, milliseconds or nanoseconds. None: unreadable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str) and _NUMERIC.match(value.strip()):
        value = float(value)
    if isinstance(value, (int, float)):
        seconds = float(value)
        if seconds > 1e17:
            seconds /= 1e9       # nanoseconds (OTLP)
        elif seconds > 1e14:
            seconds /= 1e6       # microseconds
        elif seconds > 1e11:
            seconds /= 1e3       # milliseconds
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _text(value: Any, name: str) -> str | None | Exception:
    if not found(value) or value is None:
        return None
    if isinstance(value, str):
        return value
    if name == "context" and isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            return CHUNK_SEPARATOR.join(value)
        return ValueError("field 'context' must be a string or a list of strings (chunks)")
    if name in ("id", "category") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return ValueError(f"field '{name}' must be a string, not {type(value).__name__}")


def read_jsonl(data: bytes, *, source: str, fields: Mapping[str, str] | None = None) -> Reading:
    """A JSONL of logged requests: `query` and `context` required, `category`, `id`,
    `timestamp` optional; each name may be mapped to a dotted path with `fields`."""
    paths = {**DEFAULT_FIELDS, **(fields or {})}
    problems: list[Problem] = []
    reading = Reading()
    for number, obj in json_lines(data, source, problems):
        if not isinstance(obj, dict):
            problems.append(Problem(source, number, "each line must be a JSON object"))
            continue
        values: dict[str, Any] = {}
        bad = False
        for name in ("query", "context", "category", "id"):
            value = _text(lookup(obj, paths[name]), name)
            if isinstance(value, Exception):
                problems.append(Problem(source, number, f"{value} (path '{paths[name]}')"))
                bad = True
            values[name] = value
        if bad:
            continue
        missing = [name for name in ("query", "context") if values[name] is None]
        if missing:
            problems.append(Problem(source, number, " and ".join(
                f"missing field '{name}' (path '{paths[name]}')" for name in missing)))
            continue
        raw_time = lookup(obj, paths["timestamp"])
        timestamp = parse_timestamp(raw_time) if found(raw_time) else None
        if found(raw_time) and raw_time is not None and timestamp is None:
            # The value itself is never echoed: a mis-mapped field may hold personal data.
            problems.append(Problem(source, number, f"field 'timestamp' is not a time (a "
                                                    f"{type(raw_time).__name__} at path "
                                                    f"'{paths['timestamp']}'; not shown)"))
            continue
        reading.observations.append(Observation(
            query=values["query"], context=values["context"], source=f"{source}:{number}",
            category=(values["category"] or "").strip() or None, id=values["id"],
            timestamp=timestamp))
    if problems:
        raise InputError(problems)
    if not reading.observations:
        raise InputError(Problem(source, None, "holds no records: expected one JSON object per line"))
    return reading


def read_report(data: bytes, *, source: str) -> Reading:
    """A previous report.json: the live contexts of its end-to-end run (and any row that
    carries its `query` and `context`) become observations."""
    report = read_report_json(data, source=source)
    reading = Reading()
    e2e_part = report.get("e2e")
    e2e: dict[str, Any] = e2e_part if isinstance(e2e_part, dict) else {}
    when = parse_timestamp(e2e.get("date")) if e2e else None
    for index, row in enumerate(e2e.get("rows") or []):
        if not isinstance(row, dict):
            continue
        query, context = row.get("query"), row.get("live_context")
        if isinstance(query, str) and isinstance(context, str):
            category = row.get("category")
            reading.observations.append(Observation(
                query=query, context=context, source=f"{source}: e2e.rows[{index}]",
                category=category if isinstance(category, str) else None, timestamp=when,
                extra={"recorded_from": f"live retrieval for {row.get('id')}"}))
        else:
            reading.skip("end-to-end rows without a query and a live context")
    for row in report["rows"]:
        if not isinstance(row, dict):
            continue
        query, context = row.get("query"), row.get("context")
        if isinstance(query, str) and isinstance(context, str):
            category = row.get("category")
            reading.observations.append(Observation(
                query=query, context=context, source=f"{source}: row {row.get('id')}",
                category=category if isinstance(category, str) else None))
        else:
            reading.skip("report rows without their query and context")
    return reading
