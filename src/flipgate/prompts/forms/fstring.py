"""`format: fstring`: `{name}` as Python's `str.format` (and LangChain's PromptTemplate,
which calls it) reads it: `{{` and `}}` are braces, a conversion (`!r`) and a format spec
(`:>10`) work as there. Refused before any render, as LangChain refuses them: a field
without a name (`{}`, `{0}`), attribute or index access (`{a.b}`, `{a[0]}`), and a field
inside a format spec; a width above 10,000 is refused too (it would only allocate)."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flipgate.errors import InputError, Problem

MAX_WIDTH = 10_000
_FORMATTER = string.Formatter()
_NUMBERS = re.compile(r"\d+")


@dataclass(frozen=True)
class Field:
    literal: str
    name: str | None
    spec: str
    conversion: str | None
    line: int


class MissingName(KeyError):
    """A strict render met a name the values lack (the template's file and line)."""

    def __init__(self, name: str, path: str, line: int):
        super().__init__(name)
        self.name, self.path, self.line = name, path, line


def parse(text: str, *, source: str, first_line: int = 1) -> tuple[Field, ...]:
    """The template's literal runs and fields, each field's line counted from `first_line`."""
    try:
        pieces = list(_FORMATTER.parse(text))
    except ValueError as exc:
        raise InputError(Problem(source, first_line, f"fstring template: {exc} (a literal brace "
                                                     "is written {{ or }})")) from None
    fields = []
    line = first_line
    for literal, name, spec, conversion in pieces:
        line += literal.count("\n")
        if name is not None:
            _check_field(name, spec or "", source=source, line=line)
        fields.append(Field(literal, name, spec or "", conversion, line))
    return tuple(fields)


def _check_field(name: str, spec: str, *, source: str, line: int) -> None:
    if not name or name.isdigit():
        raise InputError(Problem(source, line, f"fstring template: the field {{{name}}} has no "
                                               "name; name it after a case field ({query})"))
    if "." in name or "[" in name:
        raise InputError(Problem(source, line, f"fstring template: {{{name}}} reads an attribute "
                                               "or an index; only plain names are read (as "
                                               "LangChain's PromptTemplate)"))
    if "{" in spec:
        raise InputError(Problem(source, line, f"fstring template: {{{name}:{spec}}} nests a "
                                               "field in its format spec"))
    if any(int(number) > MAX_WIDTH for number in _NUMBERS.findall(spec)):
        raise InputError(Problem(source, line, f"fstring template: {{{name}:{spec}}} asks for a "
                                               f"width above {MAX_WIDTH:,}"))


def names(fields: tuple[Field, ...]) -> frozenset[str]:
    return frozenset(f.name for f in fields if f.name is not None)


def render(fields: tuple[Field, ...], values: Mapping[str, Any], *, path: str, strict: bool,
           seen: set[str]) -> str:
    """The text `str.format(**values)` gives; a missing name is `MissingName` when strict,
    else empty (and noted in `seen`)."""
    out: list[str] = []
    for field in fields:
        out.append(field.literal)
        if field.name is None:
            continue
        if field.name not in values:
            if strict:
                raise MissingName(field.name, path, field.line)
            seen.add(field.name)
            continue
        value = values[field.name]
        if field.conversion:
            value = _FORMATTER.convert_field(value, field.conversion)
        out.append(format(value, field.spec))
    return "".join(out)
