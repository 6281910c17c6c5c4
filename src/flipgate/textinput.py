"""Reading untrusted text: UTF-8 decoding and YAML with key lines, errors located.

Shared by every reader of user files (config, cases, Prompty), so each
reports a bad byte or bad YAML the same way: file, line, what is wrong.
"""

from __future__ import annotations

from typing import Any

import yaml

from flipgate.errors import InputError, Problem


def decode_utf8(data: bytes | str, source: str) -> str:
    """Text of `data`; a byte-order mark is dropped, since editors add one."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(Problem(source, line, "not valid UTF-8")) from None


def load_yaml_located(text: str, *, source: str, first_line: int = 1,
                      what: str = "YAML") -> tuple[Any, dict[tuple[str, ...], int]]:
    """The value of a YAML document (safe loader only) and the file line of every
    mapping key by its path, e.g. ("judge", "model") -> 7. `first_line` is the
    file line the text starts on (front matter starts after a `---`)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + first_line if mark else first_line
        raise InputError(Problem(source, line, f"invalid {what}: {exc.problem or exc}")) from None
    except yaml.YAMLError as exc:
        raise InputError(Problem(source, first_line, f"invalid {what}: {exc}")) from None
    finally:
        loader.dispose()

    lines: dict[tuple[str, ...], int] = {}

    def walk(current: yaml.Node, path: tuple[str, ...]) -> None:
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                key = (*path, str(key_node.value))
                lines[key] = key_node.start_mark.line + first_line
                walk(value_node, key)

    if node is not None:
        walk(node, ())
    return data, lines
