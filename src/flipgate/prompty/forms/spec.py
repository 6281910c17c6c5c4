"""What the child is told about a generator's form (from the base's `.flipgate.yml`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

FileReader = Callable[[str], "bytes | None"]  # a repository path at the same ref; None: absent


@dataclass(frozen=True)
class FormSpec:
    form: str = "prompty"         # prompty | github | template | python
    format: str | None = None     # template, python: jinja | fstring | mustache
    constant: str | None = None   # python: the constant's NAME
    system: str | None = None     # a repository path (python: PATH or PATH:NAME)
