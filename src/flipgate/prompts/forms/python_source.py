"""Text held by a name of Python source, read with the parser (never run)."""

from __future__ import annotations

from flipgate.prompts.forms.python_objects import parse_module, read_text


def constant(text: str, name: str, *, source: str, path: str = "") -> tuple[str, int]:
    """(the text `name` holds, the line it starts on): NAME, NAME["key"] or Class.NAME."""
    value, line, _ = named_text(text, name, source=source, path=path)
    return value, line


def named_text(text: str, name: str, *, source: str, path: str = "") -> tuple[str, int, str | None]:
    """(the text, its line, the format a prompt object fixes for it; None: the configured one)."""
    return read_text(parse_module(text, source=source, path=path or source), name)
