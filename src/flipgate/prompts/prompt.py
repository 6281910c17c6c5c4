"""The one shape every form of the generator is read into: a `Prompt` (where it came from,
its template or messages, the model's configuration and parameters as written), and the
inputs a Prompty file declares (`InputSpec`). The forms (`forms/`) build it; `render.py`
renders it for each case; the endpoint lock and the change detection compare two of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flipgate.prompts.parts import ChatPart

# v2 input kinds whose value is not text but structure (a conversation, a media part).
RICH_KINDS = frozenset({"thread", "image", "file", "audio"})


@dataclass(frozen=True)
class InputSpec:
    """One declared input: its name, kind and the values a sample run uses."""

    name: str
    kind: str = "string"
    default: Any = None
    example: Any = None
    required: bool = False


@dataclass(frozen=True)
class Prompt:
    """A parsed generator; `configuration` and `parameters` are raw (unexpanded)."""

    path: str        # repository path
    source: str      # how messages name it, e.g. "prompts/answer.prompty@1a2b3c4d5e6f"
    text: str
    configuration: Mapping[str, Any]
    parameters: Mapping[str, Any]
    template: str    # the body, front matter blanked so line numbers are the file's
    key_lines: Mapping[tuple[str, ...], int] = field(default_factory=dict)
    version: int = 1
    format: str = "jinja2"
    api: str = "chat"
    inputs: tuple[InputSpec, ...] = ()
    sample: Any = None           # v1 `sample:` as written (a mapping, or "${file:...}")
    strict_roles: bool = False   # v2 `template.format.strict`: attributes on role lines dropped
    base: str | None = None      # v1 `base:`: a Prompty file whose settings this one inherits
    inputs_file: str | None = None   # v2 `inputs: ${file:schema.json}`, read from the same ref
    # Where a v2 spelling sits in the file, for messages that name v1's keys.
    aliases: Mapping[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    # The other forms (prompts/forms): which one, a GitHub Models file's messages (role,
    # content), a system message from its own file, and template names <- case fields.
    form: str = "prompty"
    messages: tuple[tuple[str, str], ...] = ()
    system: str | None = None
    system_path: str | None = None
    variables: Mapping[str, str] = field(default_factory=dict)
    # A chat prompt as the application builds it (a prompt object, `generator.messages`):
    # its messages in order, each rendered in its own format; and `generator.jinja`.
    chat: tuple[ChatPart, ...] = ()
    jinja: Mapping[str, bool] = field(default_factory=dict)

    @property
    def body(self) -> str:
        """The message templates alone, as a reviewer wants to diff them."""
        return self.template.lstrip("\n")

    @property
    def model(self) -> str | None:
        value = self.configuration.get("model") or self.configuration.get("azure_deployment")
        return value if isinstance(value, str) else None

    @property
    def model_key(self) -> str:
        """The configuration key that names the model (the Azure deployment, if given)."""
        return "azure_deployment" if "azure_deployment" in self.configuration else "model"

    @property
    def rich_inputs(self) -> dict[str, str]:
        return {spec.name: spec.kind for spec in self.inputs if spec.kind in RICH_KINDS}

    def line_of(self, *key: str) -> int | None:
        key = self.aliases.get(key, key)
        for length in range(len(key), 0, -1):
            if (line := self.key_lines.get(key[:length])) is not None:
                return line
        return None

    def sample_inputs(self) -> dict[str, Any]:
        """The inputs of a dry run (`replay --sample`), before `${file:}` in `sample`
        is resolved: v1's `sample`, v2's examples; declared defaults fill the gaps."""
        values: dict[str, Any] = {}
        if isinstance(self.sample, dict):
            values.update(self.sample)
        for spec in self.inputs:
            if spec.name not in values and spec.example is not None:
                values[spec.name] = spec.example
        return values

    def with_defaults(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """`values`, plus each declared v2 default it lacks (v1 applies none, as its runtime)."""
        filled = dict(values)
        for name, case_field in self.variables.items():
            if case_field in values:
                filled[name] = values[case_field]
            else:
                filled.pop(name, None)  # strict: named as missing, with the field it maps to
        if self.version == 2:
            for spec in self.inputs:
                if spec.name not in filled and spec.default is not None:
                    filled[spec.name] = spec.default
        return filled
