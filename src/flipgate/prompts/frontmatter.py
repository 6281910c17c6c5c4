"""A Prompty file's front matter, v1 or v2, read into one shape.

Both versions keep YAML front matter between `---` lines above a template
body. They differ in how they spell the rest:

- **v1** (the `prompty` 0.1.x runtime, azure-ai-evaluation's evaluators):
  `model: {api, configuration: {type, azure_deployment | model, ...},
  parameters: {...}}`, `inputs` as a mapping, `sample:` inline or
  `${file:...}`, `template: jinja2 | mustache`.
- **v2** (the 2.x runtime): `model` as a string or `{id, provider, apiType,
  connection, options}`, `inputs` / `outputs` as typed lists or mappings
  with defaults and examples, `tools`, `template: {format: {kind}, parser}`.

Whatever the version, the result is a `Prompt` whose `configuration` uses
v1's names (the endpoint lock compares them) and whose `parameters` are the
chat-completion body fields the reference runtime would send. Values stay
raw here: `${env:...}` and `${file:...}` are resolved later, and only where
the file is trusted (see endpoint_lock.py). The front matter comes from a
pull request, so it is read with PyYAML's safe loader and every problem
names the file and line.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Mapping
from typing import Any

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.prompts.prompt import InputSpec, Prompt
from flipgate.text.parsing import decode_utf8, load_yaml_located

FORMATS = ("jinja2", "mustache")
# v2 `model.options` names and the chat-completion field each becomes (the reference's own map).
V2_OPTIONS = {
    "frequencyPenalty": "frequency_penalty", "maxOutputTokens": "max_completion_tokens",
    "presencePenalty": "presence_penalty", "reasoningEffort": "reasoning_effort", "seed": "seed",
    "temperature": "temperature", "topK": "top_k", "topP": "top_p", "stopSequences": "stop",
    "allowMultipleToolCalls": "parallel_tool_calls",
}
# v2 providers, as the v1 configuration type flipgate's endpoint lock knows them.
V2_PROVIDERS = {"openai": "openai", "azure": "azure_openai", "foundry": "azure_openai",
                "azure_openai": "azure_openai"}
# What the reference drops for OpenAI reasoning models, and the one option only they take.
_REASONING_DROPPED = ("temperature", "top_p", "top_k", "frequency_penalty", "presence_penalty")


def _scalar_text(value: Any) -> Any:
    """YAML reads `api_version: 2024-10-21` as a date; configuration values are text."""
    if isinstance(value, (datetime.date, int, float)) and not isinstance(value, bool):
        return value.isoformat() if isinstance(value, datetime.date) else str(value)
    return value


def _stripped(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return {k: _stripped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value


def split_front_matter(text: str, source: str) -> tuple[str | None, int, int]:
    """(front matter text or None, its first line, the body's first line index)."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r").strip() != "---":
        return None, 0, 0  # a body-only file (v2 allows it)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r").strip() == "---"), None)
    if end is None:
        raise InputError(Problem(source, 1, "the front matter is never closed by a '---' line"))
    return "\n".join(lines[1:end]), 2, end + 1


def detect_version(front: Mapping[str, Any]) -> int:
    """2 when anything is spelled the v2 way, or when only the 2.x runtime can load the
    file: without `model:` (and no v1 `base:` to take it from) the 0.1.x runtime has no
    `model.api` to pick its parser by and renders nothing. Else 1."""
    model, template, inputs = front.get("model"), front.get("template"), front.get("inputs")
    v2_signs = (
        "model" not in front and "base" not in front,
        isinstance(model, str),
        isinstance(model, dict) and bool({"id", "provider", "connection", "options", "apiType"} & set(model)),
        isinstance(inputs, list) or isinstance(front.get("outputs"), list),
        isinstance(inputs, dict) and any(isinstance(v, dict) and "kind" in v for v in inputs.values()),
        isinstance(template, dict) and ("kind" in template or isinstance(template.get("format"), dict)
                                        or isinstance(template.get("parser"), dict)),
        "tools" in front or "kind" in front,
    )
    return 2 if any(v2_signs) else 1


class _Reader:
    """Collects located problems while reading one front matter."""

    def __init__(self, source: str, key_lines: Mapping[tuple[str, ...], int]):
        self.source, self.key_lines = source, key_lines
        self.problems: list[Problem] = []
        self.refusals: list[Problem] = []   # security refusals

    def line(self, key: tuple[str, ...]) -> int:
        return next((self.key_lines[key[:n]] for n in range(len(key), 0, -1) if key[:n] in self.key_lines), 1)

    def problem(self, key: tuple[str, ...], message: str) -> None:
        self.problems.append(Problem(self.source, self.line(key), message))

    def mapping(self, value: Any, key: tuple[str, ...]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(key, f"'{'.'.join(key)}' must be a mapping")
            return {}
        return {str(k): v for k, v in value.items()}


def _template_settings(front: Mapping[str, Any], reader: _Reader, version: int) -> tuple[str, bool]:
    """(format, strict roles) from v1's `template: NAME` or v2's `template: {format, parser}`."""
    template = front.get("template")
    strict = version == 2   # the v2 runtime's default: role lines are fixed before rendering
    if template is None:
        kind: Any = "jinja2"
    elif isinstance(template, str):
        kind = template
    elif isinstance(template, dict):
        fmt = template.get("format", template.get("type", "jinja2"))
        if isinstance(fmt, dict):
            strict = strict and fmt.get("strict") is not False
            fmt = fmt.get("kind", "jinja2")
        kind = fmt
        parser = template.get("parser", "prompty")
        parser = parser.get("kind", "prompty") if isinstance(parser, dict) else parser
        if parser not in ("prompty", "prompty.chat", "", "*"):
            reader.problem(("template", "parser"), f"template parser {parser!r} is not supported (use prompty)")
    else:
        reader.problem(("template",), "'template' must be a format name or a mapping")
        return "jinja2", False
    if kind in ("", "*"):
        kind = "jinja2"
    if kind not in FORMATS:
        reader.problem(("template",), f"template format {kind!r} is not supported "
                                      f"(known: {', '.join(FORMATS)})")
    return str(kind), strict


def _inputs(raw: Any, key: str, reader: _Reader) -> tuple[InputSpec, ...]:
    if raw is None or isinstance(raw, str) and raw.strip().startswith("${file:"):
        return ()  # a ${file:} reference: read from the same ref (see `inputs_file`)
    items: list[tuple[str, Any]]
    if isinstance(raw, dict):
        items = [(str(k), v if isinstance(v, dict) else {"example": v}) for k, v in raw.items()]
    elif isinstance(raw, list):
        items = []
        for index, entry in enumerate(raw):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                reader.problem((key,), f"'{key}' item {index + 1} must be a mapping with a 'name'")
                continue
            items.append((entry["name"], entry))
    else:
        reader.problem((key,), f"'{key}' must be a mapping or a list")
        return ()
    return tuple(InputSpec(name=name, kind=str(spec.get("kind", spec.get("type", "string"))),
                           default=spec.get("default"), example=spec.get("example", spec.get("sample")),
                           required=spec.get("required") is True)
                 for name, spec in items)


def _v1_model(model: dict[str, Any], reader: _Reader) -> tuple[str, dict[str, Any], dict[str, Any]]:
    api = model.get("api", "chat")
    configuration = {k: _scalar_text(v) for k, v in
                     reader.mapping(model.get("configuration"), ("model", "configuration")).items()}
    for key, value in configuration.items():
        if not isinstance(value, str):
            reader.problem(("model", "configuration", key), f"'model.configuration.{key}' must be text")
    parameters = reader.mapping(model.get("parameters"), ("model", "parameters"))
    return str(api), configuration, parameters


def _is_reasoning_model(model: str) -> bool:
    """The reference's guess from the name (o1, o3-mini, gpt-5...): such models take
    `reasoning_effort` and no sampling options; others the other way round."""
    name = model.lower().lstrip("./")
    return re.match(r"o[1-9]", name) is not None or name.startswith("gpt-5")


def _json_schema(spec: Mapping[str, Any], *, optional: bool = False, strict: bool = False) -> dict[str, Any]:
    """A v2 property as the JSON schema the reference sends (tools and structured output)."""
    types = {"string": "string", "integer": "integer", "float": "number", "number": "number",
             "boolean": "boolean", "array": "array", "object": "object"}
    kind = spec.get("kind", "")
    schema: dict[str, Any] = {"type": types[kind]} if kind in types else {}
    if spec.get("description"):
        schema["description"] = spec["description"]
    if spec.get("enumValues"):
        schema["enum"] = list(spec["enumValues"])
    if kind == "array":
        items = spec.get("items")
        schema["items"] = _json_schema(items, strict=strict) if isinstance(items, dict) else {"type": "string"}
    if kind == "object":
        properties = _property_list(spec.get("properties"))
        schema["properties"] = {p["name"]: _json_schema(p, optional=strict and not p.get("required"),
                                                         strict=strict) for p in properties}
        required = [p["name"] for p in properties if strict or p.get("required")]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
    if spec.get("nullable") or optional:
        if isinstance(schema.get("type"), str):
            schema["type"] = [schema["type"], "null"]
        elif schema:
            schema = {"anyOf": [dict(schema), {"type": "null"}]}
        if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
            schema["enum"].append(None)
    return schema


def _property_list(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, dict):
        return [{"name": str(k), **v} if isinstance(v, dict) else {"name": str(k), "example": v}
                for k, v in raw.items()]
    if isinstance(raw, list):
        return [dict(p) for p in raw if isinstance(p, dict) and isinstance(p.get("name"), str)]
    return []


def _v2_tools(raw: Any) -> list[dict[str, Any]]:
    """`kind: function` tools in the chat-completion shape (other kinds run inside the
    reference's own agent loop and are not part of the request)."""
    tools = []
    for tool in _property_list(raw):
        if tool.get("kind") != "function":
            continue
        function: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            function["description"] = tool["description"]
        bindings = tool.get("bindings") or []
        bound = set(bindings) if isinstance(bindings, dict) else \
            {b.get("name") for b in bindings if isinstance(b, dict)}
        parameters = [p for p in _property_list(tool.get("parameters")) if p["name"] not in bound]
        strict = bool(tool.get("strict"))
        if parameters:
            function["parameters"] = {
                "type": "object",
                "properties": {p["name"]: _json_schema(p, optional=strict and not p.get("required"),
                                                       strict=strict) for p in parameters}}
            required = [p["name"] for p in parameters if strict or p.get("required")]
            if required:
                function["parameters"]["required"] = required
        if strict:
            function["strict"] = True
            if "parameters" in function:
                function["parameters"]["additionalProperties"] = False
        tools.append({"type": "function", "function": function})
    return tools


def _v2_response_format(raw: Any) -> dict[str, Any] | None:
    outputs = _property_list(raw)
    if not outputs:
        return None
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p["name"]: _json_schema(p, optional=not p.get("required"), strict=True)
                       for p in outputs},
        "additionalProperties": False,
        "required": [p["name"] for p in outputs],
    }
    return {"type": "json_schema", "json_schema": {"name": "structured_output", "strict": True,
                                                   "schema": schema}}


def _v2_model(front: Mapping[str, Any], reader: _Reader
              ) -> tuple[str, dict[str, Any], dict[str, Any], dict[tuple[str, ...], tuple[str, ...]]]:
    """(api, configuration in v1's names, body parameters, where each v1 name sits)."""
    model = front.get("model")
    aliases: dict[tuple[str, ...], tuple[str, ...]] = {}
    if isinstance(model, str):
        model = {"id": model}
    model = reader.mapping(model, ("model",))
    configuration: dict[str, Any] = {}
    if model.get("id") is not None:
        configuration["model"] = _scalar_text(model["id"])
        aliases[("model", "configuration", "model")] = ("model", "id")
    provider = model.get("provider")
    if isinstance(model.get("connection"), str) and model["connection"].strip().startswith("${"):
        reader.refusals.append(Problem(reader.source, reader.line(("model", "connection")),
                                       "model.connection from a reference is refused: where requests "
                                       "and the key go must be written in the generator itself, where "
                                       "the endpoint lock compares it with the base's"))
        model = {k: v for k, v in model.items() if k != "connection"}
    connection = reader.mapping(model.get("connection"), ("model", "connection"))
    if provider is not None:
        if provider not in V2_PROVIDERS:
            reader.problem(("model", "provider"), f"model.provider {provider!r} is not supported "
                                                  f"(known: {', '.join(sorted(V2_PROVIDERS))})")
        else:
            configuration["type"] = V2_PROVIDERS[provider]
            aliases[("model", "configuration", "type")] = ("model", "provider")
    for name, value in connection.items():
        # The endpoint and the key are where requests go; everything else about
        # the connection (kind, a named connection) belongs to the app, not the request.
        if name == "endpoint":
            target = "azure_endpoint" if configuration.get("type") == "azure_openai" else "base_url"
        elif name == "apiKey":
            target = "api_key"
        elif name == "apiVersion":
            target = "api_version"
        else:
            continue
        configuration[target] = _scalar_text(value)
        aliases[("model", "configuration", target)] = ("model", "connection", name)
    if "model" in configuration and configuration.get("type") == "azure_openai":
        configuration["azure_deployment"] = configuration.pop("model")
        aliases[("model", "configuration", "azure_deployment")] = ("model", "id")
    options = reader.mapping(model.get("options"), ("model", "options"))
    parameters: dict[str, Any] = {}
    for name, value in options.items():
        if name in V2_OPTIONS and value is not None:
            parameters[V2_OPTIONS[name]] = value
            aliases[("model", "parameters", V2_OPTIONS[name])] = ("model", "options", name)
    if not options.get("stopSequences"):
        parameters.pop("stop", None)
    extra = reader.mapping(options.get("additionalProperties"), ("model", "options", "additionalProperties"))
    for name, value in extra.items():
        if name not in parameters:
            parameters[name] = value
            aliases[("model", "parameters", name)] = ("model", "options", "additionalProperties", name)
    if _is_reasoning_model(str(configuration.get("model") or configuration.get("azure_deployment") or "")):
        for name in _REASONING_DROPPED:
            parameters.pop(name, None)
    else:
        parameters.pop("reasoning_effort", None)
    if tools := _v2_tools(front.get("tools")):
        parameters["tools"] = tools
        aliases[("model", "parameters", "tools")] = ("tools",)
    if response_format := _v2_response_format(front.get("outputs")):
        parameters["response_format"] = response_format
        aliases[("model", "parameters", "response_format")] = ("outputs",)
    return str(model.get("apiType", "chat")), configuration, parameters, aliases


def parse_prompty(data: bytes | str, *, path: str, source: str | None = None) -> Prompt:
    """Parse a Prompty file (v1 or v2); every problem names the file and line."""
    source = source or path
    text = decode_utf8(data, source)
    front_text, first_line, body_start = split_front_matter(text, source)
    if front_text is None:
        front: Any = {}
        key_lines: dict[tuple[str, ...], int] = {}
    else:
        front, key_lines = load_yaml_located(front_text, source=source, first_line=first_line,
                                             what="YAML front matter")
    if front is None:
        front = {}
    if not isinstance(front, dict):
        raise InputError(Problem(source, 2, "the front matter must be a mapping (key: value)"))
    reader = _Reader(source, key_lines)
    version = 2 if front_text is None else detect_version(front)
    if version == 1:
        front = _stripped(front)  # v1's runtime strips every text value of the front matter
    template_format, strict_roles = _template_settings(front, reader, version)
    aliases: dict[tuple[str, ...], tuple[str, ...]] = {}
    if version == 1:
        model = front.get("model", {})
        if not isinstance(model, dict):
            reader.problem(("model",), "'model' must be a mapping (api, configuration, parameters)")
            model = {}
        api, configuration, parameters = _v1_model(model, reader)
    else:
        api, configuration, parameters, aliases = _v2_model(front, reader)
    inputs = _inputs(front.get("inputs"), "inputs", reader)
    sample = front.get("sample")
    if sample is not None and not isinstance(sample, (dict, str)):
        reader.problem(("sample",), "'sample' must be a mapping or a ${file:...} reference")
    base = front.get("base") if version == 1 else None
    if base is not None and not isinstance(base, str):
        reader.problem(("base",), "'base' must be the path of another Prompty file")
    if reader.refusals:
        raise SecurityError(reader.refusals)
    if reader.problems:
        raise InputError(reader.problems)
    lines = text.split("\n")
    blanked = "\n" * body_start + "\n".join(lines[body_start:])
    return Prompt(path=path, source=source, text=text, configuration=configuration,
                   parameters=parameters, template=blanked, key_lines=key_lines, version=version,
                   format=template_format, api=api, inputs=inputs, sample=sample,
                   strict_roles=strict_roles, aliases=aliases, base=base,
                   inputs_file=front["inputs"] if isinstance(front.get("inputs"), str) else None)


def with_inputs(prompt: Prompt, loaded: Any) -> Prompt:
    """The inputs an `inputs: ${file:...}` reference names, once read."""
    reader = _Reader(prompt.source, prompt.key_lines)
    inputs = _inputs(loaded, "inputs", reader)
    if reader.problems:
        raise InputError(reader.problems)
    return dataclasses.replace(prompt, inputs=inputs, inputs_file=None)


_FILE_REFERENCE = re.compile(r"^\s*\$\{file:([^}]+)\}\s*$")
_MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s\"]+)")


def data_files(prompt: Prompt) -> set[str]:
    """Files of the same ref the generator reads besides templates (`base:`, `${file:...}`
    in its settings, local markdown images), as repository paths: a change to any of them
    is a prompt change."""
    import posixpath

    directory = posixpath.dirname(prompt.path)
    found: list[str] = [prompt.base] if prompt.base else []

    def walk(value: Any) -> None:
        if isinstance(value, str) and (match := _FILE_REFERENCE.match(value)):
            found.append(match.group(1).strip())
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk([dict(prompt.parameters), prompt.sample, prompt.inputs_file])
    if prompt.version == 1:
        found += [url for url in _MARKDOWN_IMAGE.findall(prompt.template)
                  if not url.startswith(("http", "data"))]
    paths = {posixpath.normpath(posixpath.join(directory, name)) for name in found}
    return {p for p in paths if not p.startswith("..") and not p.startswith("/")}


def inherit(top: Prompt, base: Prompt) -> Prompt:
    """v1 `base:`: the base's configuration, parameters and sample fill what `top` lacks."""
    def under(mine: Any, theirs: Any) -> Any:
        if isinstance(mine, dict) and isinstance(theirs, dict):
            return {**theirs, **mine}
        return mine if mine is not None else theirs

    return dataclasses.replace(
        top, configuration=under(dict(top.configuration), dict(base.configuration)),
        parameters=under(dict(top.parameters), dict(base.parameters)),
        sample=under(top.sample, base.sample), base=None)
