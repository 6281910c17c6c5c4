"""What a template file and a string constant share: their formats (Jinja2, f-string,
Mustache without logic), the names they read, and a system message from its own file."""

from __future__ import annotations

import re

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.prompts.forms import fstring, substitute
from flipgate.prompts.forms.python_source import constant
from flipgate.prompts.forms.spec import FileReader, FormSpec
from flipgate.prompts.parts import TEXT, ChatPart
from flipgate.prompts.prompt import Prompt
from flipgate.text.parsing import decode_utf8

# `.flipgate.yml` spells the formats for people; the renderer's names.
FORMATS = {"jinja": "jinja2", "fstring": "fstring", "mustache": "mustache"}
_MUSTACHE_TAG = re.compile(r"\{\{(\{?)\s*([#^/>=!&]?)\s*([^}]*?)\s*\}?\}\}")


def check(text: str, fmt: str, *, source: str, first_line: int = 1) -> None:
    """What the format refuses before any render (fstring fields, Mustache logic)."""
    if fmt == "fstring":
        fstring.parse(text, source=source, first_line=first_line)
    elif fmt == "dollar":
        substitute.check_dollar(text, source=source, first_line=first_line)
    elif fmt == "mustache":
        for match in _MUSTACHE_TAG.finditer(text):
            if match.group(2) in "#^/>=" and match.group(2):
                line = first_line + text.count("\n", 0, match.start())
                raise InputError(Problem(source, line, f"mustache template: {match.group(0)!r} is "
                                         "logic (a section, partial or delimiter change); a "
                                         "template here only reads names ({{name}})"))


def check_part(part: ChatPart) -> None:
    if part.placeholder is None and part.format != TEXT:
        check(part.text, part.format, source=part.source, first_line=part.line)


def chat_outline(parts: tuple[ChatPart, ...]) -> str:
    """A chat prompt's messages as one text a reviewer diffs (role lines, then each text)."""
    return "\n\n".join(f"{{{part.placeholder}}} (the history)" if part.placeholder is not None
                        else f"{part.role}:\n{part.text}" for part in parts)


def names(prompt: Prompt) -> frozenset[str] | None:
    """The names the template (and its system message, or each message of a chat) read;
    None when a Jinja2 template includes, imports or extends another (what that reads is not
    counted here)."""
    if prompt.chat:
        texts = [(p.text, p.format) for p in prompt.chat if p.placeholder is None]
        placeholders = {p.placeholder for p in prompt.chat if p.placeholder is not None}
    else:
        texts = [(t, prompt.format) for t in (prompt.template, prompt.system) if t is not None]
        placeholders = set()
    found: set[str] = set(placeholders)
    for text, fmt in texts:
        read = _names(text, fmt, prompt.source)
        if read is None:
            return None
        found |= read
    return frozenset(found)


def _names(text: str, fmt: str, source: str) -> set[str] | None:
    if fmt == "fstring":
        return set(fstring.names(fstring.parse(text, source=source)))
    if fmt == "mustache":
        return {m.group(3) for m in _MUSTACHE_TAG.finditer(text) if m.group(2) in ("", "&")}
    if fmt == "dollar":
        return set(substitute.dollar_names(text))
    if fmt == "llamaindex":
        return set(substitute.llama_names(text))
    if fmt == TEXT:
        return set()
    return _jinja_names(text)


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
        text, line = constant(decode_utf8(data, where), name, source=where, path=path)
    else:
        text, line = decode_utf8(data, where), 1
    check(text, fmt, source=where, first_line=line)
    return text, path
