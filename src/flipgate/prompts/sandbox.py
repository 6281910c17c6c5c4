"""Jinja2's sandbox, hardened for templates from a pull request.

`ImmutableSandboxedEnvironment` already refuses unsafe attributes at run
time. On top of it:

- a static scan refuses, with file and line, any template that reaches for
  Python internals (attributes or items that start with `_`, the globals
  `lipsum` / `cycler` / `joiner`), before anything renders;
- those globals are removed;
- the operations that turn a small input into a huge output in one step
  (`*`, `**`, `%`, padding, replace, join, format) check their result size
  first;
- include paths resolve relative to the including file and may not leave
  the repository.

What this cannot bound (a loop that runs for ever, a string doubled in a
loop) is bounded by the child process `prompty.render_isolated` renders in.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flipgate.errors import InputError, Problem, SecurityError

# Globals of a default Jinja2 environment that a prompt never needs and an
# attacker likes (lipsum can render megabytes; the others expose callables).
_DROPPED_GLOBALS = ("lipsum", "cycler", "joiner")


@dataclass(frozen=True)
class Limits:
    """Resource caps for rendering untrusted templates."""

    max_output_chars: int = 1_000_000    # per case, all messages together
    # Parsing and compiling a tag-dense template takes up to ~10 s per MB here, so the
    # caps keep the worst case well inside `timeout_seconds` (benchmarks/template_limits.py).
    max_template_bytes: int = 512_000    # each template file (the generator too)
    max_total_template_bytes: int = 1_000_000  # all templates one generator loads, together
    max_built_chars: int = 1_000_000     # one string (or list) a template builds in one step
    max_power_bits: int = 4096           # `a ** b` on integers: result size
    max_files: int = 200                 # distinct templates one generator may load
    timeout_seconds: float = 30.0        # isolated rendering, wall clock, all cases
    memory_bytes: int = 1024 * 1024 * 1024  # isolated rendering, address space


class Refused(Exception):
    """Raised inside the sandbox's hooks; becomes a located SecurityError."""


_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
_BRACE_SPEC = re.compile(r"\{[^{}]*:([^{}]*)")
_NUMBER = re.compile(r"\d+")


def _check_format(spec_source: str, limits: Limits) -> None:
    """Refuse format strings whose widths or precisions would allocate without bound."""
    for match in _PERCENT_SPEC.finditer(spec_source):
        for part in match.groups():
            if part == "*" or (part and int(part) > limits.max_built_chars):
                raise Refused("a format width or precision that large is refused")
    for match in _BRACE_SPEC.finditer(spec_source):
        spec = match.group(1)
        if spec_source[match.end():match.end() + 1] == "{" or \
                any(int(n) > limits.max_built_chars for n in _NUMBER.findall(spec)):
            raise Refused("a format width or precision that large (or computed) is refused")


def _check_build(name: str, base: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                 limits: Limits) -> None:
    """Refuse string operations whose result would be larger than the limit.

    These are the operations that turn a small input into a huge output in one
    step (padding, replacing, joining, formatting); everything else grows by
    at most its inputs' size, which the output cap and the child's limits bound.
    """
    cap = limits.max_built_chars
    first = args[0] if args else None
    if name in ("center", "ljust", "rjust", "zfill", "indent"):
        width = kwargs.get("width", first)
        if isinstance(width, int) and width > cap:
            raise Refused(f"{name} to width {width} is refused (more than {cap} characters)")
    elif name == "expandtabs" and isinstance(base, str):
        size = kwargs.get("tabsize", first if first is not None else 8)
        if isinstance(size, int) and size * base.count("\t") > cap:
            raise Refused(f"expandtabs({size}) is refused (more than {cap} characters)")
    elif name == "replace" and isinstance(base, str) and len(args) >= 2:
        old, new = str(args[0]), str(args[1])
        hits = len(base) + 1 if not old else base.count(old)
        if len(base) + hits * max(len(new) - len(old), 0) > cap:
            raise Refused(f"replace would build more than {cap} characters")
    elif name == "join":  # base: the items (a list by now), first: the separator
        separator = len(str(kwargs.get("d", first if first is not None else "")))
        total = 0
        for item in base:
            total += separator + (len(item) if isinstance(item, str) else len(str(item)))
            if total > cap:
                raise Refused(f"join would build more than {cap} characters")
    elif name in ("format", "format_map", "%") and isinstance(base, str):
        _check_format(base, limits)


def make_environment(loader: Any, limits: Limits, *, undefined: type | None = None,
                     keep_trailing_newline: bool = True, trim_blocks: bool = False,
                     lstrip_blocks: bool = False) -> Any:
    """The hardened sandbox; `undefined` defaults to StrictUndefined; autoescape is off and the
    whitespace settings are the application's (`generator.jinja`)."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Sandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "%"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "*":
                for seq, times in ((left, right), (right, left)):
                    if isinstance(seq, (str, list, tuple)) and isinstance(times, int):
                        if len(seq) * max(times, 0) > limits.max_built_chars:
                            raise Refused(f"repeating a sequence {times} times is refused "
                                           f"(more than {limits.max_built_chars} items)")
            elif operator == "**" and isinstance(left, int) and isinstance(right, int):
                if right > 0 and abs(left) > 1 and right * abs(left).bit_length() > limits.max_power_bits:
                    raise Refused(f"{left} ** {right} is too large to compute in a template")
            elif operator == "%":
                _check_build("%", left, (right,), {}, limits)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            owner = getattr(__obj, "__self__", None)
            if isinstance(owner, str) and callable(__obj):
                name = getattr(__obj, "__name__", "")
                if name == "join" and args:  # separator.join(items): check the items
                    items = list(args[0])
                    _check_build("join", items, (owner,), {}, limits)
                    args = (items, *args[1:])
                else:
                    _check_build(name, owner, args, kwargs, limits)
            return super().call(__context, __obj, *args, **kwargs)

        def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
            wrapped = super().wrap_str_format(value)
            if wrapped is not None:  # `'...'.format`: check the format string first
                _check_format(value.__self__, limits)
            return wrapped

        def join_path(self, template: str, parent: str) -> str:
            if not isinstance(template, str):
                raise Refused("a template name must be a string")
            if template.startswith("/") or "\\" in template:
                raise Refused(f"template {template!r}: include paths are relative to the "
                               "including file")
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(parent), template))
            if joined == ".." or joined.startswith("../") or joined.startswith(".git/"):
                raise Refused(f"template {template!r} leaves the repository")
            return joined

    env = Sandbox(loader=loader, undefined=undefined or StrictUndefined, autoescape=False,
                  keep_trailing_newline=keep_trailing_newline, trim_blocks=trim_blocks,
                  lstrip_blocks=lstrip_blocks, auto_reload=False)
    for name in _DROPPED_GLOBALS:
        env.globals.pop(name, None)
    for name in ("center", "indent", "replace", "join", "format"):
        env.filters[name] = _guarded_filter(name, env.filters[name], limits)
    return env


def _guarded_filter(name: str, original: Callable[..., Any], limits: Limits) -> Callable[..., Any]:
    """A builtin filter that first checks its result cannot grow past the limit."""
    @functools.wraps(original)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        # Filters marked pass_eval_context take the evaluation context first.
        lead = 1 if args and type(args[0]).__name__ == "EvalContext" else 0
        values = list(args[lead:])
        if values:
            if name == "join" and not isinstance(values[0], str):
                values[0] = list(values[0])  # checked and joined: consume an iterator once
            _check_build(name, values[0], values[1:], kwargs, limits)
        return original(*args[:lead], *values, **kwargs)

    return guarded


def unsafe_constructs(ast: Any) -> Iterable[tuple[int, str]]:
    """(line, what) for every place a template reaches for Python internals."""
    from jinja2 import nodes

    for node in ast.find_all((nodes.Getattr, nodes.Getitem, nodes.Filter, nodes.Name)):
        if isinstance(node, nodes.Getattr) and node.attr.startswith("_"):
            yield node.lineno, f"attribute '{node.attr}'"
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) \
                and isinstance(node.arg.value, str) and node.arg.value.startswith("_"):
            yield node.lineno, f"item '{node.arg.value}'"
        elif isinstance(node, nodes.Filter) and node.name == "attr" and node.args \
                and isinstance(node.args[0], nodes.Const) and str(node.args[0].value).startswith("_"):
            yield node.lineno, f"attribute '{node.args[0].value}'"
        elif isinstance(node, nodes.Name) and node.ctx == "load" and node.name in _DROPPED_GLOBALS:
            yield node.lineno, f"global '{node.name}'"


def check_template(environment: Any, source: str, *, name: str) -> None:
    """Syntax errors (InputError) and reaches into internals (SecurityError), with lines."""
    from jinja2 import TemplateSyntaxError

    try:
        ast = environment.parse(source, name, name)
    except TemplateSyntaxError as exc:
        raise InputError(Problem(exc.filename or name, exc.lineno,
                                 f"template syntax error: {exc.message}")) from None
    found = [Problem(name, line, f"the template reaches for Python internals ({what}); "
                                 "refused by the sandbox") for line, what in unsafe_constructs(ast)]
    if found:
        raise SecurityError(found)
