"""What the child is told about a generator's form (from the base's `.flipgate.yml`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

FileReader = Callable[[str], "bytes | None"]  # a repository path at the same ref; None: absent


@dataclass(frozen=True)
class FormSpec:
    form: str = "prompty"         # prompty | github | template | python | messages
    format: str | None = None     # template, python, messages: jinja | fstring | mustache
    constant: str | None = None   # python: the constant's NAME
    system: str | None = None     # a repository path (python: PATH or PATH:NAME)
    # messages: (role, kind, value) in order; kind python (PATH:NAME), template (PATH) or text
    messages: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def from_json(cls, fields: Mapping[str, Any]) -> FormSpec:
        values = dict(fields)
        values["messages"] = tuple(tuple(m) for m in values.get("messages", ()))
        return cls(**values)
