"""The generator's forms, one reader a form behind one small interface.

Each reader turns a file's bytes into a `Prompt` (the one shape the rest of
flipgate renders, locks and compares): `prompty_file` (a Prompty file),
`github_models` (a GitHub Models `.prompt.yml`), `template_file` (a Jinja2,
f-string or Mustache template), `python_constant` (a prompt in a Python file, read
with the parser: text or a LangChain / LlamaIndex prompt object) and `messages_form`
(`generator.messages`: the messages around a template). Readers run only in the sandboxed child
(`child.py`); `names_read` says which names a generator's templates read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flipgate.prompts.forms import (
    github_models,
    messages_form,
    prompty_file,
    python_constant,
    template_file,
    templates,
)
from flipgate.prompts.forms.spec import FileReader, FormSpec
from flipgate.prompts.prompt import Prompt

Read = Callable[..., Prompt]

READERS: dict[str, Read] = {
    "prompty": prompty_file.read,
    "github": github_models.read,
    "template": template_file.read,
    "python": python_constant.read,
    "messages": messages_form.read,
}


def read_generator(data: bytes, *, path: str, source: str, spec: FormSpec, read: FileReader) -> Prompt:
    """The generator in `data`, read as its form says (`read`: files of the same ref)."""
    return READERS[spec.form](data, path=path, source=source, spec=spec, read=read)


@dataclass(frozen=True)
class NamesRead:
    """The names a generator's templates read; `known` False when they cannot all be told
    (a Prompty file: includes, macros)."""

    names: frozenset[str]
    known: bool = True


def names_read(prompt: Prompt) -> NamesRead:
    if prompt.form == "github":
        return NamesRead(github_models.placeholders(prompt))
    if prompt.form in ("template", "python", "messages"):
        names = templates.names(prompt)
        return NamesRead(frozenset(), known=False) if names is None else NamesRead(names)
    return NamesRead(frozenset(), known=False)


__all__ = ["FileReader", "FormSpec", "NamesRead", "READERS", "names_read", "read_generator"]
