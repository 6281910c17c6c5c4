"""Reading untrusted text: UTF-8 decoding and YAML with key lines, errors located.

Shared by every reader of user files (config, cases, Prompty), so each
reports a bad byte or bad YAML the same way: file, line, what is wrong.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
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


# Characters that render as nothing: zero-width space and joiners, direction marks and
# embeddings, word joiner and invisible operators, the BOM, soft hyphen, Mongolian vowel
# separator, combining grapheme joiner.
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad"
                       "\u180e\u034f]")


def fold(text: str, *, invisible: str = "") -> str:
    """Text as a reader sees it: NFKC (full-width and compatibility forms as their plain
    letters, NBSP as a space) with each invisible character replaced by `invisible`: removed
    (the joined reading, `ig\u200bnore` as `ignore`) or a space (read as a word break,
    `the\u200bgrader` as `the grader`)."""
    return unicodedata.normalize("NFKC", INVISIBLE.sub(invisible, text))


def json_refusal(exc: BaseException) -> str:
    """Why `json.loads` refused a text, in words: bad syntax, nesting deeper than the
    parser's recursion limit, or a number longer than int() converts."""
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} (column {exc.colno})"
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return f"a number with more than {sys.get_int_max_str_digits():,} digits"


def load_json(text: str) -> Any:
    """`json.loads`, every refusal a ValueError saying why (`json_refusal`)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(json_refusal(exc)) from None


# How many values a YAML document may hold once its aliases are expanded. Far
# above any configuration, far below a "billion laughs" document (a few lines of
# nested aliases that expand to billions of values, which every walk over the
# data would then visit).
MAX_YAML_VALUES = 100_000


def _expanded_size(node: yaml.Node, limit: int) -> int:
    """How many values `node` stands for with its aliases expanded, up to `limit`.
    Shared nodes are counted once per use, but computed once (memoised)."""
    sizes: dict[int, int] = {}

    def size(current: yaml.Node, open_nodes: set[int]) -> int:
        key = id(current)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise ValueError("an alias refers to a value that contains it")
        open_nodes.add(key)
        total = 1
        if isinstance(current, yaml.SequenceNode):
            children: list[yaml.Node] = list(current.value)
        elif isinstance(current, yaml.MappingNode):
            children = [part for pair in current.value for part in pair]
        else:
            children = []
        for child in children:
            total += size(child, open_nodes)
            if total > limit:
                break
        open_nodes.discard(key)
        sizes[key] = total = min(total, limit + 1)
        return total

    return size(node, set())


def _refuse_duplicate_keys(root: yaml.Node, *, source: str, first_line: int, what: str) -> None:
    """A key given twice in one mapping is an error at its second line: YAML's loaders
    would silently keep the last one, and the first would look like it counts."""
    problems: list[Problem] = []
    seen_nodes: set[int] = set()
    stack = [root]
    while stack:
        current = stack.pop()
        if id(current) in seen_nodes:
            continue  # an alias: checked where it was defined
        seen_nodes.add(id(current))
        if isinstance(current, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in current.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    line = key_node.start_mark.line + first_line
                    if key_node.value in seen:
                        problems.append(Problem(source, line, f"invalid {what}: duplicate key "
                                                f"{key_node.value!r} (first given on line "
                                                f"{seen[key_node.value]})"))
                    else:
                        seen[key_node.value] = line
                stack.append(value_node)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
    if problems:
        raise InputError(sorted(problems, key=lambda problem: problem.line or 0))


# What PyYAML says it was reading when an opening was never closed, and that opening's name.
_UNCLOSED = {"while parsing a flow sequence": "'['", "while parsing a flow mapping": "'{'",
             "while scanning a quoted scalar": "quote"}


def yaml_problem(exc: yaml.MarkedYAMLError, *, source: str, first_line: int = 1,
                 what: str = "YAML") -> Problem:
    """A YAML error at the line where the problem starts: an unclosed bracket, brace or quote
    at its own line (PyYAML reports the line where it gave up, often the next key's)."""
    opened = _UNCLOSED.get(exc.context or "")
    if opened is not None and exc.context_mark is not None:
        line = exc.context_mark.line + first_line
        found = (f": {exc.problem} on line {exc.problem_mark.line + first_line}"
                 if exc.problem and exc.problem_mark is not None else "")
        return Problem(source, line, f"invalid {what}: the {opened} opened on this line is "
                                     f"never closed{found}")
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + first_line if mark else first_line
    return Problem(source, line, f"invalid {what}: {exc.problem or exc}")


def load_yaml_located(text: str, *, source: str, first_line: int = 1,
                      what: str = "YAML") -> tuple[Any, dict[tuple[str, ...], int]]:
    """The value of a YAML document (safe loader only) and the file line of every
    mapping key by its path, e.g. ("judge", "model") -> 7. `first_line` is the
    file line the text starts on (front matter starts after a `---`)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_size(node, MAX_YAML_VALUES) > MAX_YAML_VALUES:
            raise InputError(Problem(source, first_line, f"invalid {what}: more than "
                                     f"{MAX_YAML_VALUES:,} values once its aliases are expanded"))
        if node is not None:
            _refuse_duplicate_keys(node, source=source, first_line=first_line, what=what)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        raise InputError(yaml_problem(exc, source=source, first_line=first_line, what=what)) from None
    except yaml.YAMLError as exc:
        raise InputError(Problem(source, first_line, f"invalid {what}: {exc}")) from None
    except ValueError as exc:
        raise InputError(Problem(source, first_line, f"invalid {what}: {exc}")) from None
    except RecursionError:
        raise InputError(Problem(source, first_line, f"invalid {what}: nested too deeply")) from None
    finally:
        loader.dispose()

    lines: dict[tuple[str, ...], int] = {}

    def walk(current: yaml.Node, path: tuple[str, ...]) -> None:
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                key = (*path, str(key_node.value))
                lines[key] = key_node.start_mark.line + first_line
                walk(value_node, key)
        elif isinstance(current, yaml.SequenceNode):  # items by index: ("suites", "0")
            for index, item_node in enumerate(current.value):
                key = (*path, str(index))
                lines[key] = item_node.start_mark.line + first_line
                walk(item_node, key)

    if node is not None:
        walk(node, ())
    return data, lines
