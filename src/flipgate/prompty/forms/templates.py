"""What a template file and a string constant share: their formats (Jinja2, f-string,
Mustache without logic), the names they read, and a system message from its own file."""

from __future__ import annotations

import re

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.prompty.forms import fstring
from flipgate.prompty.forms.python_source import constant
from flipgate.prompty.forms.spec import FileReader, FormSpec
from flipgate.prompty.frontmatter import Prompty
from flipgate.text.parsing import decode_utf8

# `.flipgate.yml` spells the formats for people; the renderer's names.
FORMATS = {"jinja": "jinja2", "fstring": "fstring", "mustache": "mustache"}
_MUSTACHE_TAG = re.compile(r"\{\{(\{?)\s*([#^/>=!&]?)\s*([^}]*?)\s*\}?\}\}")


def check(text: str, fmt: str, *, source: str, first_line: int = 1) -> None:
    """What the format refuses before any render (fstring fields, Mustache logic)."""
    if fmt == "fstring":
        fstring.parse(text, source=source, first_line=first_line)
    elif fmt == "mustache":
        for match in _MUSTACHE_TAG.finditer(text):
            if match.group(2) in "#^/>=" and match.group(2):
                line = first_line + text.count("\n", 0, match.start())
                raise InputError(Problem(source, line, f"mustache template: {match.group(0)!r} is "
                                         "logic (a section, partial or delimiter change); a "
                                         "template here only reads names ({{name}})"))


def names(prompty: Prompty) -> frozenset[str] | None:
    """The names the template (and its system message) read; None when a Jinja2 template
    includes, imports or extends another (what that reads is not counted here)."""
    texts = [prompty.template, *([prompty.system] if prompty.system is not None else [])]
    found: set[str] = set()
    for text in texts:
        if prompty.format == "fstring":
            found |= fstring.names(fstring.parse(text, source=prompty.source))
        elif prompty.format == "mustache":
            found |= {m.group(3) for m in _MUSTACHE_TAG.finditer(text) if m.group(2) in ("", "&")}
        else:
            jinja = _jinja_names(text)
            if jinja is None:
                return None
            found |= jinja
    return frozenset(found)


def _jinja_names(text: str) -> set[str] | None:
    from jinja2 import meta
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    try:
        tree = ImmutableSandboxedEnvironment().parse(text)
    except Exception:  # noqa: BLE001 - a syntax error is reported, located, by the render
        return None
    if any(True for _ in meta.find_referenced_templates(tree)):
        return None
    return set(meta.find_undeclared_variables(tree))


def read_system(spec: FormSpec, fmt: str, *, read: FileReader, source: str,
                max_bytes: int) -> tuple[str | None, str | None]:
    """(the system message's template text, its path): a file, or `FILE.py:NAME`."""
    if spec.system is None:
        return None, None
    path, name = spec.system, ""
    if ".py:" in spec.system:
        path, _, name = spec.system.rpartition(":")
    data = read(path)
    if data is None:
        raise InputError(Problem(source, None, f"the system message's file {path!r} is not in this git ref"))
    if len(data) > max_bytes:
        raise SecurityError(Problem(path, None, f"is {len(data):,} bytes; a system message's file "
                                                f"may be at most {max_bytes:,} bytes"))
    where = f"{path}@{source.rpartition('@')[2]}" if "@" in source else path
    if name:
        text, line = constant(decode_utf8(data, where), name, source=where)
    else:
        text, line = decode_utf8(data, where), 1
    check(text, fmt, source=where, first_line=line)
    return text, path
