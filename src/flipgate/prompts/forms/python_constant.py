"""Form 3: a prompt in a Python file (`FILE.py:NAME`), read with the parser, never run.

NAME (or `NAME["key"]`, `Class.NAME`) holds text, a `string.Template`, or a LangChain or
LlamaIndex prompt object (`python_objects.py` says which are read and what is refused).
Text is a template in `generator.format` (fstring by default; `string.Template` fixes
`$name`) whose role lines split it, as a template file's do. A prompt object is sent as
its library builds it: its messages in order, each in the object's own format, never split.
"""

from __future__ import annotations

from flipgate.errors import InputError, Problem
from flipgate.prompts.forms.python_objects import parse_module, read_target
from flipgate.prompts.forms.spec import FileReader, FormSpec
from flipgate.prompts.forms.templates import FORMATS, chat_outline, check, check_part, read_system
from flipgate.prompts.prompt import Prompt
from flipgate.text.parsing import decode_utf8


def read(data: bytes, *, path: str, source: str, spec: FormSpec, read: FileReader,
         max_bytes: int = 512 * 1024) -> Prompt:
    text = decode_utf8(data, source)
    assert spec.constant is not None
    found = read_target(parse_module(text, source=source, path=path), spec.constant)
    system, system_path = None, None
    if found.chat:
        for key, value in (("system", spec.system), ("format", spec.format)):
            if value is not None:
                raise InputError(Problem(source, found.parts[0].line if found.parts else None,
                                         f"{spec.constant} is a prompt object with its own messages and "
                                         f"format, so generator.{key} does not apply to it: drop it, or "
                                         "name the messages with generator.messages"))
        for part in found.parts:
            check_part(part)
        fmt = found.parts[0].format if found.parts else "fstring"
        return Prompt(path=path, source=source, text=text, configuration={}, parameters={},
                       template=chat_outline(found.parts), form="python", format=fmt,
                       chat=found.parts, key_lines={("template",): found.parts[0].line if found.parts else 1})
    assert found.text is not None
    fmt = found.format or FORMATS[spec.format or "fstring"]
    check(found.text, fmt, source=source, first_line=found.line)
    system, system_path = read_system(spec, fmt, read=read, source=source, max_bytes=max_bytes)
    return Prompt(path=path, source=source, text=text, configuration={}, parameters={},
                   template=found.text, form="python", format=fmt, system=system, system_path=system_path,
                   key_lines={("template",): found.line})
