"""Typed reads from a webhook payload (or a REST answer of the same shape).

Every field flipgate reads goes through one of these readers, addressed by
its dotted path (`pull_request.head.sha`). A field that is missing, null
when it may not be, or of the wrong type is bad input: one line naming the
field and what was expected, exit 2, never a KeyError or a traceback.
`nullable` fields may be null (GitHub sends null there), never missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from flipgate.errors import InputError, Problem

_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_MISSING = object()


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


class Fields:
    """A payload and where it came from (`GITHUB_EVENT_PATH`, or an API call)."""

    def __init__(self, data: Mapping[str, Any], source: str):
        self.data = data
        self.source = source

    def _problem(self, path: str, message: str) -> InputError:
        return InputError(Problem(self.source, None, f"`{path}` {message}"))

    def _get(self, path: str) -> Any:
        """The value at `path`, or `_MISSING`; a parent that is missing or not an object
        is an error naming that parent."""
        value: Any = self.data
        names = path.split(".")
        for depth, name in enumerate(names):
            if depth and not isinstance(value, Mapping):
                parent = ".".join(names[:depth])
                raise self._problem(parent, f"is {_kind(value)}; expected an object")
            if name not in value:
                if depth < len(names) - 1:
                    raise self._problem(".".join(names[:depth + 1]),
                                        "is missing; expected an object")
                return _MISSING
            value = value[name]
        return value

    def _typed(self, path: str, wanted: type, expected: str, *, nullable: bool) -> Any:
        value = self._get(path)
        if value is None and nullable:
            return None
        if value is _MISSING or value is None:
            raise self._problem(path, f"is {'missing' if value is _MISSING else 'null'}; "
                                      f"expected {expected}")
        if not isinstance(value, wanted) or isinstance(value, bool):
            raise self._problem(path, f"is {_kind(value)}; expected {expected}")
        return value

    def has(self, path: str) -> bool:
        return self._get(path) is not _MISSING

    def object(self, path: str, *, nullable: bool = False) -> Mapping[str, Any] | None:
        return self._typed(path, Mapping, "an object", nullable=nullable)

    def string(self, path: str, *, nullable: bool = False) -> str | None:
        return self._typed(path, str, "a string", nullable=nullable)

    def text(self, path: str) -> str:
        """A required, non-blank string."""
        value = self._typed(path, str, "a non-empty string", nullable=False)
        if not value.strip():
            raise self._problem(path, "is empty; expected a non-empty string")
        return value

    def number(self, path: str) -> int:
        """A required positive integer (an id or a PR number)."""
        value = self._typed(path, int, "a positive integer", nullable=False)
        if value <= 0:
            raise self._problem(path, f"is {value}; expected a positive integer")
        return value

    def sha(self, path: str) -> str:
        value = self._typed(path, str, "a commit SHA", nullable=False)
        if not _SHA.fullmatch(value):
            raise self._problem(path, f"is {value[:80]!r}; expected a commit SHA "
                                      "(40 or 64 lowercase hex digits)")
        return value

    def timestamp(self, path: str) -> datetime:
        """An ISO 8601 time with its zone, as GitHub writes them (`2024-05-01T12:00:00Z`)."""
        value = self._typed(path, str, "an ISO 8601 timestamp", nullable=False)
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            when = None
        if when is None or when.tzinfo is None:
            raise self._problem(path, f"is {value[:40]!r}; expected an ISO 8601 timestamp "
                                      "with a time zone")
        return when
