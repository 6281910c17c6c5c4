"""Two formats that substitute names without a template language, each as its library does:

- `dollar`: Python's `string.Template` (`$name`, `${name}`, `$$` for a dollar sign); a `$`
  that starts no placeholder is refused, as `substitute` refuses it;
- `llamaindex`: LlamaIndex's `PromptTemplate` / `ChatPromptTemplate` (`SafeFormatter`): every
  `{...}` without inner braces whose text is a value's name becomes that value; anything else
  (`{{literal}}` included, unless `literal` is a value's name) stays as written.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from flipgate.errors import InputError, Problem
from flipgate.prompts.forms.fstring import MissingName

_LLAMA_FIELD = re.compile(r"\{([^{}]+)\}")
_LLAMA_NAME = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*(?:\.[a-zA-Z_][a-zA-Z0-9_]*)*)\}")
_DOLLAR = re.compile(string.Template.pattern.pattern, re.VERBOSE | re.IGNORECASE)


def check_dollar(text: str, *, source: str, first_line: int = 1) -> None:
    for match in _DOLLAR.finditer(text):
        if match.group("invalid") is not None:
            line = first_line + text.count("\n", 0, match.start())
            raise InputError(Problem(source, line, "string.Template: a '$' that starts no "
                                     "placeholder (write $$ for a dollar sign, $name or ${name})"))


def dollar_names(text: str) -> frozenset[str]:
    return frozenset(m.group("named") or m.group("braced") for m in _DOLLAR.finditer(text)
                     if m.group("named") or m.group("braced"))


def _doubled(text: str, match: re.Match[str]) -> bool:
    """`{{name}}`: LlamaIndex's users write it for a literal brace (it is left as written)."""
    return text[match.start() - 1:match.start()] == "{" and text[match.end():match.end() + 1] == "}"


def llama_names(text: str) -> frozenset[str]:
    return frozenset(m.group(1) for m in _LLAMA_NAME.finditer(text) if not _doubled(text, m))


def _line(text: str, index: int, first_line: int) -> int:
    return first_line + text.count("\n", 0, index)


def render_dollar(text: str, values: Mapping[str, Any], *, path: str, first_line: int,
                  strict: bool, seen: set[str]) -> str:
    """`string.Template(text).substitute(values)`; a missing name is `MissingName` when
    strict, else empty (noted in `seen`)."""
    def replace(match: re.Match[str]) -> str:
        name = match.group("named") or match.group("braced")
        if name is None:
            return "$" if match.group("escaped") is not None else match.group(0)
        if name not in values:
            if strict:
                raise MissingName(name, path, _line(text, match.start(), first_line))
            seen.add(name)
            return ""
        return str(values[name])
    return _DOLLAR.sub(replace, text)


def render_llama(text: str, values: Mapping[str, Any], *, path: str, first_line: int,
                 strict: bool, seen: set[str]) -> str:
    """LlamaIndex's `format_string`; a name it reads (`llama_names`) that no value has is
    `MissingName` when strict, else left as written, as LlamaIndex leaves it (a doubled
    `{{name}}` is never missing)."""
    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in values:
            return str(values[key])
        if _LLAMA_NAME.fullmatch(match.group(0)) and not _doubled(text, match):
            if strict:
                raise MissingName(key, path, _line(text, match.start(), first_line))
            seen.add(key)
        return match.group(0)
    return _LLAMA_FIELD.sub(replace, text)
