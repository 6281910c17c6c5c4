"""Form 4: `generator.messages`, the messages around a template for an application that
builds its chat in code flipgate cannot read: each message a role and a Python name
(`FILE.py:NAME`), a template file, or inline text, rendered in `generator.format` (unset:
fstring for a name and for text, jinja for a template file; a prompt object's own format for
a name that holds one) and sent in order, never split."""

from __future__ import annotations

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.prompts.forms.python_source import named_text
from flipgate.prompts.forms.spec import FileReader, FormSpec
from flipgate.prompts.forms.templates import FORMATS, chat_outline, check_part
from flipgate.prompts.parts import ChatPart
from flipgate.prompts.prompt import Prompt
from flipgate.text.parsing import decode_utf8

_DEFAULT_FORMAT = {"python": "fstring", "text": "fstring", "template": "jinja"}


def file_of(kind: str, value: str) -> str | None:
    """The repository file a message reads (None: inline text)."""
    if kind == "python":
        return value.partition(".py:")[0] + ".py"
    return value if kind == "template" else None


def read(data: bytes, *, path: str, source: str, spec: FormSpec, read: FileReader,
         max_bytes: int = 512 * 1024) -> Prompt:
    label = source.rpartition("@")[2] if "@" in source else ""
    parts: list[ChatPart] = []
    for index, (role, kind, value) in enumerate(spec.messages):
        fmt = FORMATS[spec.format or _DEFAULT_FORMAT[kind]]
        file = file_of(kind, value)
        if file is None:
            part = ChatPart(role=role, text=value, format=fmt, source=f"generator.messages[{index}]")
        else:
            where = f"{file}@{label}" if label else file
            raw = data if file == path else read(file)
            if raw is None:
                raise InputError(Problem(source, None, f"generator.messages reads {file!r}, which is "
                                                       "not in this git ref"))
            if len(raw) > max_bytes:
                raise SecurityError(Problem(where, None, f"is {len(raw):,} bytes; a message's file may "
                                                         f"be at most {max_bytes:,} bytes"))
            text = decode_utf8(raw, where)
            line, own = 1, None
            if kind == "python":
                text, line, own = named_text(text, value.partition(".py:")[2], source=where, path=file)
            fmt = own or fmt
            part = ChatPart(role=role, text=text, format=fmt, path=file, source=where, line=line)
        check_part(part)
        parts.append(part)
    main = decode_utf8(data, source)
    return Prompt(path=path, source=source, text=main, configuration={}, parameters={},
                   template=chat_outline(tuple(parts)), form="messages", format=parts[0].format,
                   chat=tuple(parts))
