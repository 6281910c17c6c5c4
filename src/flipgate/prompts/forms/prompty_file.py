"""Form 0: a Prompty file (v1 or v2), its `base:` and `inputs: ${file:}` followed."""

from __future__ import annotations

import dataclasses
import posixpath
from typing import Any

from flipgate.errors import InputError, Problem
from flipgate.prompts.forms.spec import FileReader, FormSpec
from flipgate.prompts.frontmatter import inherit, parse_prompty, with_inputs
from flipgate.prompts.prompt import Prompt
from flipgate.prompts.references import load_file_reference


def with_bases(prompt: Prompt, read: FileReader, depth: int = 0) -> Prompt:
    """A v1 file with `base:` inherits that file's settings (from the same ref)."""
    if prompt.base is None:
        return prompt
    where = Problem(prompt.source, prompt.line_of("base"), "")
    path = posixpath.normpath(posixpath.join(posixpath.dirname(prompt.path), prompt.base))
    if depth > 4 or path.startswith("../") or path == "..":
        raise InputError(dataclasses.replace(where, message=f"base {prompt.base!r} is not a Prompty "
                                             "file of this repository (or bases nest too deeply)"))
    data = read(path)
    if data is None:
        raise InputError(dataclasses.replace(where, message=f"base {prompt.base!r} is not in this git ref"))
    base = with_bases(parse_prompty(data, path=path, source=path), read, depth + 1)
    return inherit(prompt, base)


def read_parsed(data: bytes, *, path: str, source: str, read: FileReader) -> tuple[Prompt, Prompt]:
    """(the file as written, the file with its bases and inputs file followed)."""
    parsed = parse_prompty(data, path=path, source=source)
    prompt = with_bases(parsed, read)
    if prompt.inputs_file is not None:
        loaded: Any = load_file_reference(prompt.inputs_file, prompt=prompt, read=read, what="inputs")
        prompt = with_inputs(prompt, loaded)
    return parsed, prompt


def read(data: bytes, *, path: str, source: str, spec: FormSpec, read: FileReader) -> Prompt:
    return read_parsed(data, path=path, source=source, read=read)[1]
