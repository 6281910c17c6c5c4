"""Form 0: a Prompty file (v1 or v2), its `base:` and `inputs: ${file:}` followed."""

from __future__ import annotations

import dataclasses
import posixpath
from typing import Any

from flipgate.errors import InputError, Problem
from flipgate.prompty.forms.spec import FileReader, FormSpec
from flipgate.prompty.frontmatter import Prompty, inherit, parse_prompty, with_inputs
from flipgate.prompty.references import load_file_reference


def with_bases(prompty: Prompty, read: FileReader, depth: int = 0) -> Prompty:
    """A v1 file with `base:` inherits that file's settings (from the same ref)."""
    if prompty.base is None:
        return prompty
    where = Problem(prompty.source, prompty.line_of("base"), "")
    path = posixpath.normpath(posixpath.join(posixpath.dirname(prompty.path), prompty.base))
    if depth > 4 or path.startswith("../") or path == "..":
        raise InputError(dataclasses.replace(where, message=f"base {prompty.base!r} is not a Prompty "
                                             "file of this repository (or bases nest too deeply)"))
    data = read(path)
    if data is None:
        raise InputError(dataclasses.replace(where, message=f"base {prompty.base!r} is not in this git ref"))
    base = with_bases(parse_prompty(data, path=path, source=path), read, depth + 1)
    return inherit(prompty, base)


def read_parsed(data: bytes, *, path: str, source: str, read: FileReader) -> tuple[Prompty, Prompty]:
    """(the file as written, the file with its bases and inputs file followed)."""
    parsed = parse_prompty(data, path=path, source=source)
    prompty = with_bases(parsed, read)
    if prompty.inputs_file is not None:
        loaded: Any = load_file_reference(prompty.inputs_file, prompty=prompty, read=read, what="inputs")
        prompty = with_inputs(prompty, loaded)
    return parsed, prompty


def read(data: bytes, *, path: str, source: str, spec: FormSpec, read: FileReader) -> Prompty:
    return read_parsed(data, path=path, source=source, read=read)[1]
