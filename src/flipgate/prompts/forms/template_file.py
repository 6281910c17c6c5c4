"""Form 2: a template file (Jinja2, f-string or Mustache); the model lives in `.flipgate.yml`.

Lines `system:` / `user:` / `assistant:` split the rendered text into messages;
without them the whole text is one user message. `system:` in `.flipgate.yml`
names a file (same format) whose text becomes the first, system, message.
Mustache here has no logic: sections, inverted sections, partials and
delimiter changes are refused; `{{name}}`, `{{{name}}}` and `{{&name}}` are read.
"""

from __future__ import annotations

from flipgate.prompts.forms.spec import FileReader, FormSpec
from flipgate.prompts.forms.templates import FORMATS, check, read_system
from flipgate.prompts.prompt import Prompt
from flipgate.text.parsing import decode_utf8


def read(data: bytes, *, path: str, source: str, spec: FormSpec, read: FileReader,
         max_bytes: int = 512 * 1024) -> Prompt:
    text = decode_utf8(data, source)
    fmt = FORMATS[spec.format or "jinja"]
    check(text, fmt, source=source)
    system, system_path = read_system(spec, fmt, read=read, source=source, max_bytes=max_bytes)
    return Prompt(path=path, source=source, text=text, configuration={}, parameters={},
                   template=text, form="template", format=fmt, system=system,
                   system_path=system_path)
