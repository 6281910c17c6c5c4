"""What a Prompty file loads from its own ref: `${file:x.json}` references and its sample.

Used by the isolated child and by the parent alike; it reads through the `read`
callable it is given and imports nothing above the Prompty package.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from typing import Any

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.prompts.prompt import Prompt

MAX_FILE_REFERENCE_BYTES = 1_000_000
FILE_REFERENCE = re.compile(r"\s*\$\{file:([^}]+)\}\s*")

Reader = Callable[[str], "bytes | None"]


def load_file_reference(value: str, *, prompt: Prompt, read: Reader, what: str) -> Any:
    """`${file:x.json}`: JSON from the same ref, relative to the Prompty file, inside the repository."""
    reference = FILE_REFERENCE.fullmatch(value).group(1).strip()  # type: ignore[union-attr]
    line = prompt.line_of(*what.split("."))
    directory = posixpath.dirname(prompt.path)
    joined = posixpath.normpath(posixpath.join(directory, reference))
    if reference.startswith("/") or "\\" in reference or joined == ".." or joined.startswith("../") \
            or joined == ".git" or joined.startswith(".git/"):
        raise SecurityError(Problem(prompt.source, line, f"{what} reads {reference!r}, which is "
                                                          "outside the repository"))
    if not joined.endswith(".json"):
        raise InputError(Problem(prompt.source, line, f"{what}: ${{file:}} loads JSON files only "
                                                       f"({reference!r})"))
    data = read(joined)
    if data is None:
        raise InputError(Problem(prompt.source, line, f"{what} reads {reference!r}, which is not "
                                                       "in this git ref"))
    if len(data) > MAX_FILE_REFERENCE_BYTES:
        raise InputError(Problem(prompt.source, line, f"{what} reads {reference!r}: more than "
                                                       f"{MAX_FILE_REFERENCE_BYTES:,} bytes"))
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(Problem(prompt.source, line, f"{what} reads {reference!r}, which is not "
                                                       f"valid JSON ({exc})")) from None


# How deep `${file:}` references may nest inside a v1 sample (a file naming itself must end).
MAX_SAMPLE_NESTING = 8


def has_sample(prompt: Prompt) -> bool:
    """Whether the file gives a dry run anything to fill its inputs with: a `sample:`, or a
    v2 input's example or default."""
    return prompt.sample is not None or any(
        spec.example is not None or spec.default is not None for spec in prompt.inputs)


def sample_values(prompt: Prompt, *, read: Reader) -> dict[str, Any]:
    """The generator's own sample inputs."""
    values = prompt.sample_inputs()
    if isinstance(prompt.sample, str):
        loaded = load_file_reference(prompt.sample, prompt=prompt, read=read, what="sample")
        if not isinstance(loaded, dict):
            raise InputError(Problem(prompt.source, prompt.line_of("sample"),
                                     "'sample' must load a JSON object"))
        values = {**loaded, **values}
    if prompt.version == 1:
        values = {name: _v1_value(value, prompt=prompt, read=read, what=f"sample.{name}", depth=0)
                  for name, value in values.items()}
    return prompt.with_defaults(values)


def _v1_value(value: Any, *, prompt: Prompt, read: Reader, what: str, depth: int) -> Any:
    """A sample value as the 0.1.x runtime reads it: every string stripped, and a
    `${file:x.json}` anywhere in it (inline or inside a file it loaded) replaced by that
    file's JSON, relative to the Prompty file."""
    if isinstance(value, str):
        value = value.strip()
        if FILE_REFERENCE.fullmatch(value) is None:
            return value
        if depth >= MAX_SAMPLE_NESTING:
            raise InputError(Problem(prompt.source, prompt.line_of(*what.split(".")[:2]),
                                     f"{what}: ${{file:}} references nest more than "
                                     f"{MAX_SAMPLE_NESTING} deep"))
        loaded = load_file_reference(value, prompt=prompt, read=read, what=what)
        if not isinstance(loaded, (dict, list)):
            return loaded  # the runtime keeps a loaded scalar as it is
        return _v1_value(loaded, prompt=prompt, read=read, what=what, depth=depth + 1)
    if isinstance(value, list):
        return [_v1_value(item, prompt=prompt, read=read, what=what, depth=depth) for item in value]
    if isinstance(value, dict):
        return {key: _v1_value(item, prompt=prompt, read=read, what=what, depth=depth)
                for key, item in value.items()}
    return value
