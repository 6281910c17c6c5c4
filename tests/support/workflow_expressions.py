"""GitHub Actions expressions, evaluated as the runner does, for the workflows' `if:` and
concurrency groups: literals, property paths, `!`, `==`, `!=`, `&&`, `||` (which return
an operand, not a boolean), and the functions `contains`, `startsWith`, `endsWith`,
`fromJSON` and `format`. String comparisons ignore case, as GitHub's do.
See docs.github.com/actions/reference/evaluate-expressions-in-workflows-and-actions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_TOKEN = re.compile(r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<number>-?\d+(?:\.\d+)?)"
                    r"|(?P<op>\|\||&&|==|!=|!|\(|\)|,|\.)|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))")


def truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and value == value  # NaN is falsy


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold()
    return bool(left == right)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value)


def _contains(search: Any, item: Any) -> bool:
    if isinstance(search, list):
        return any(_equal(element, item) for element in search)
    return _text(item).casefold() in _text(search).casefold()


FUNCTIONS = {
    "contains": _contains,
    "startswith": lambda text, prefix: _text(text).casefold().startswith(_text(prefix).casefold()),
    "endswith": lambda text, suffix: _text(text).casefold().endswith(_text(suffix).casefold()),
    "fromjson": lambda text: json.loads(text),
    "format": lambda template, *args: re.sub(r"\{(\d+)\}", lambda m: _text(args[int(m[1])]),
                                             template),
}


class _Parser:
    def __init__(self, text: str, context: Mapping[str, Any]):
        self.tokens = self._tokens(text)
        self.at = 0
        self.context = context

    @staticmethod
    def _tokens(text: str) -> list[tuple[str, str]]:
        tokens, position = [], 0
        while text[position:].strip():
            found = _TOKEN.match(text, position)
            if not found:
                raise ValueError(f"cannot read {text[position:]!r}")
            kind = found.lastgroup
            assert kind is not None
            tokens.append((kind, found[kind]))
            position = found.end()
        return tokens

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        token = self.tokens[self.at]
        if expected is not None and token[1] != expected:
            raise ValueError(f"expected {expected!r}, found {token[1]!r}")
        self.at += 1
        return token

    def expression(self) -> Any:
        value = self.conjunction()
        while self.peek() == "||":
            self.take()
            right = self.conjunction()
            value = value if truthy(value) else right
        return value

    def conjunction(self) -> Any:
        value = self.comparison()
        while self.peek() == "&&":
            self.take()
            right = self.comparison()
            value = right if truthy(value) else value
        return value

    def comparison(self) -> Any:
        value = self.unary()
        if self.peek() in ("==", "!="):
            op = self.take()[1]
            right = self.unary()
            return _equal(value, right) == (op == "==")
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.primary()

    def primary(self) -> Any:
        kind, text = self.take()
        if text == "(":
            value = self.expression()
            self.take(")")
            return value
        if kind == "string":
            return text[1:-1].replace("''", "'")
        if kind == "number":
            return float(text)
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        if self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.expression())
                if self.peek() == ",":
                    self.take()
            self.take(")")
            return FUNCTIONS[text.lower()](*args)
        value: Any = self.context.get(text)
        while self.peek() == ".":
            self.take()
            name = self.take()[1]
            value = value.get(name) if isinstance(value, Mapping) else None
        return value


def evaluate(expression: str, context: Mapping[str, Any]) -> Any:
    """The value of one expression (an `if:` without `${{ }}`, or the inside of one)."""
    parser = _Parser(expression.strip(), context)
    value = parser.expression()
    if parser.peek() is not None:
        raise ValueError(f"unread: {parser.tokens[parser.at:]}")
    return value


def interpolate(template: str, context: Mapping[str, Any]) -> str:
    """A string with `${{ ... }}` parts, as the runner renders it."""
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _text(evaluate(m[1], context)), template)


def job_runs(condition: str, context: Mapping[str, Any]) -> bool:
    inner = condition.strip()
    if inner.startswith("${{") and inner.endswith("}}"):
        inner = inner[3:-2]
    return truthy(evaluate(inner, context))
