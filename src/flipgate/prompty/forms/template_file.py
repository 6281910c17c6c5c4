"""Form 2: a template file (Jinja2, f-string or Mustache); the model lives in `.flipgate.yml`.

Lines `system:` / `user:` / `assistant:` split the rendered text into messages;
without them the whole text is one user message. `system:` in `.flipgate.yml`
names a file (same format) whose text becomes the first, system, message.
Mustache here has no logic: sections, inverted sections, partials and
delimiter changes are refused; `{{name}}`, `{{{name}}}` and `{{&name}}` are read.
"""

from __future__ import annotations

import re

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.prompty.forms import fstring
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


def names(prompty: Prompty) -> frozenset[str]:
    """The names the template (and its system message) read."""
    texts = [prompty.template, *([prompty.system] if prompty.system is not None else [])]
    found: set[str] = set()
    for text in texts:
        if prompty.format == "fstring":
            found |= fstring.names(fstring.parse(text, source=prompty.source))
        elif prompty.format == "mustache":
            found |= {m.group(3) for m in _MUSTACHE_TAG.finditer(text) if m.group(2) in ("", "&")}
        else:
            found |= _jinja_names(text)
    return frozenset(found)


def _jinja_names(text: str) -> set[str]:
    from jinja2 import meta
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    try:
        return set(meta.find_undeclared_variables(ImmutableSandboxedEnvironment().parse(text)))
    except Exception:  # noqa: BLE001 - a syntax error is reported, located, by the render
        return {"?"}


def read_system(spec: FormSpec, fmt: str, *, read: FileReader, source: str,
                max_bytes: int) -> tuple[str | None, str | None]:
    """(the system message's template text, its path): a file, or `FILE.py:NAME`."""
    if spec.system is None:
        return None, None
    from flipgate.prompty.forms import python_constant

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
        text, line = python_constant.constant(decode_utf8(data, where), name, source=where)
    else:
        text, line = decode_utf8(data, where), 1
    check(text, fmt, source=where, first_line=line)
    return text, path


def read(data: bytes, *, path: str, source: str, spec: FormSpec, read: FileReader,
         max_bytes: int = 512 * 1024) -> Prompty:
    text = decode_utf8(data, source)
    fmt = FORMATS[spec.format or "jinja"]
    check(text, fmt, source=source)
    system, system_path = read_system(spec, fmt, read=read, source=source, max_bytes=max_bytes)
    return Prompty(path=path, source=source, text=text, configuration={}, parameters={},
                   template=text, form="template", format=fmt, system=system,
                   system_path=system_path)
