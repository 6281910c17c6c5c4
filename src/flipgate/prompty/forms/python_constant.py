"""Form 3: a string constant in a Python file (`FILE.py:NAME`), read with the parser.

The file is parsed, never imported or run. NAME must be assigned at the
module level (the last such assignment counts, as at import) to a string
literal, adjacent literals, or an f-string without expressions. Anything
else needs the code to run to have a value, so it is refused in one line
saying what it is and where: an f-string with expressions, a call (such as
`textwrap.dedent(...)` or `PromptTemplate(...)`: name the string it is built
from), another name, strings joined with `+`. The format defaults to fstring.
"""

from __future__ import annotations

from flipgate.prompty.forms.python_source import constant
from flipgate.prompty.forms.spec import FileReader, FormSpec
from flipgate.prompty.forms.templates import FORMATS, check, read_system
from flipgate.prompty.frontmatter import Prompty
from flipgate.text.parsing import decode_utf8


def read(data: bytes, *, path: str, source: str, spec: FormSpec, read: FileReader,
         max_bytes: int = 512 * 1024) -> Prompty:
    text = decode_utf8(data, source)
    assert spec.constant is not None
    value, line = constant(text, spec.constant, source=source)
    fmt = FORMATS[spec.format or "fstring"]
    check(value, fmt, source=source, first_line=line)
    system, system_path = read_system(spec, fmt, read=read, source=source, max_bytes=max_bytes)
    return Prompty(path=path, source=source, text=text, configuration={}, parameters={},
                   template=value, form="python", format=fmt, system=system, system_path=system_path,
                   key_lines={("template",): line})
