"""A value `generator.variables` hands a Jinja2 template, that says so when looped over.

`documents: context` maps a template's name to a case field; when that field is text
and the template loops over it (`{% for doc in documents %}`), Jinja2 goes through it one
character at a time: the prompt goes out one character a line and still "works". The
text is handed in as `MappedText`, which renders as the text it is but refuses to be
iterated, so the render names the mapping instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class LoopsOverText(Exception):
    """A template iterated a text value that a `generator.variables` mapping handed it."""

    def __init__(self, name: str, field: str) -> None:
        super().__init__(
            f"loops over '{name}', which generator.variables maps to the case field {field!r} "
            f"(generator.variables: {name} <- {field}), a string: the loop would go one "
            f"character at a time. Map {name} to a field that holds a list, or use "
            f"{{{{ {name} }}}} without a loop")


class MappedText(str):
    """Text from a mapped case field: itself everywhere but in a loop."""

    __slots__ = ("name", "field")
    name: str
    field: str

    def __new__(cls, text: str, *, name: str, field: str) -> MappedText:
        made = super().__new__(cls, text)
        made.name, made.field = name, field
        return made

    def __iter__(self) -> Iterator[str]:
        raise LoopsOverText(self.name, self.field)


def wrap_mapped(variables: dict[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    """`variables` with each mapped text value (`mapping`: template name -> case field)
    as `MappedText`."""
    for name, field in mapping.items():
        value = variables.get(name)
        if isinstance(value, str) and not isinstance(value, MappedText):
            variables[name] = MappedText(value, name=name, field=field)
    return variables
