"""Form 1: a GitHub Models prompt file (`*.prompt.yml`), read as GitHub Models reads it.

Its loader (github/gh-models `pkg/prompt`) decodes the YAML into a struct:
`model` (text), `modelParameters` (`maxTokens`, `temperature`, `topP`),
`messages` (`role`, `content`), `responseFormat` (`text` | `json_object` |
`json_schema`, the last needing `jsonSchema`: a JSON string with `name` and
`schema`). Keys it has no field for are ignored, as there; `testData` and
`evaluators` are not read. flipgate also takes `max_tokens` for `maxTokens`.
A value of the wrong type, an unknown role or a bad response format is
refused in one line naming the key and its line.

Each message's `{{name}}` is replaced by the case's value as GitHub Models
does: the exact text `{{name}}` (no spaces inside), a value that is not text
written as Go's `%v` writes it, a name no case field has left as written.
One difference: flipgate replaces in one pass over the message, so a value
that itself holds `{{other}}` is never expanded again (GitHub Models replaces
name by name in Go's random map order, so its result there is not fixed).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from flipgate.errors import InputError, Problem
from flipgate.prompts.forms.spec import FileReader, FormSpec
from flipgate.prompts.prompt import Prompt
from flipgate.text.parsing import decode_utf8, load_yaml_located

ROLES = ("system", "user", "assistant")
RESPONSE_FORMATS = ("text", "json_object", "json_schema")
_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)


def _text(value: Any) -> str | None:
    """A YAML scalar as Go's yaml.v3 decodes it into a string field; None: not a scalar."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def read(data: bytes, *, path: str, source: str, spec: FormSpec, read: FileReader) -> Prompt:
    text = decode_utf8(data, source)
    loaded, lines = load_yaml_located(text, source=source)
    if not isinstance(loaded, dict):
        raise InputError(Problem(source, 1, "a GitHub Models prompt file must be a mapping "
                                            "(model, modelParameters, messages)"))
    problems: list[Problem] = []

    def bad(key: tuple[str, ...], message: str) -> None:
        line = lines.get(key) or lines.get(key[:1]) or 1
        problems.append(Problem(source, line, message))

    model = _text(loaded.get("model"))
    if model is None:
        bad(("model",), "'model' must be a model name (text)")
    parameters = _parameters(loaded.get("modelParameters"), bad)
    response = _response_format(loaded, bad)
    if response is not None:
        parameters["response_format"] = response
    messages = _messages(loaded.get("messages"), bad)
    if problems:
        raise InputError(problems)
    key_lines = {("model", "configuration", "model"): lines.get(("model",), 1),
                 ("model",): lines.get(("model",), 1),
                 ("model", "parameters"): lines.get(("modelParameters",), 1)}
    return Prompt(path=path, source=source, text=text, configuration={"model": model} if model else {},
                   parameters=parameters, template=text, key_lines=key_lines, form="github",
                   format="github", messages=tuple(messages))


def _parameters(value: Any, bad: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        bad(("modelParameters",), "'modelParameters' must be a mapping (maxTokens, temperature, topP)")
        return {}
    out: dict[str, Any] = {}
    spelled = [key for key in ("maxTokens", "max_tokens") if key in value]
    if len(spelled) > 1:
        bad(("modelParameters", "max_tokens"), "'modelParameters' has both maxTokens and max_tokens: keep one")
    for key in spelled:
        tokens = value[key]
        if tokens is None:
            continue
        if not isinstance(tokens, int) or isinstance(tokens, bool):
            bad(("modelParameters", key), f"'modelParameters.{key}' must be a whole number")
        else:
            out["max_tokens"] = tokens
    for key, field in (("temperature", "temperature"), ("topP", "top_p")):
        number = value.get(key)
        if number is None:
            continue
        if not isinstance(number, (int, float)) or isinstance(number, bool):
            bad(("modelParameters", key), f"'modelParameters.{key}' must be a number")
        else:
            out[field] = float(number)
    return out


def _response_format(loaded: Mapping[str, Any], bad: Any) -> dict[str, Any] | None:
    kind, schema_text = loaded.get("responseFormat"), loaded.get("jsonSchema")
    schema = None
    if schema_text is not None:
        if not isinstance(schema_text, str):
            bad(("jsonSchema",), "'jsonSchema' must be a JSON string (GitHub Models reads no YAML "
                                 "mapping here)")
            return None
        try:
            schema = json.loads(schema_text)
        except ValueError as exc:
            bad(("jsonSchema",), f"'jsonSchema' is not valid JSON: {exc}")
            return None
        if not isinstance(schema, dict):
            bad(("jsonSchema",), "'jsonSchema' must be a JSON object")
            return None
    if kind is None:
        return None
    if kind not in RESPONSE_FORMATS:
        bad(("responseFormat",), f"'responseFormat' {kind!r} must be one of {', '.join(RESPONSE_FORMATS)}")
        return None
    if kind == "json_schema":
        if schema is None:
            bad(("responseFormat",), "'responseFormat' json_schema needs 'jsonSchema'")
            return None
        for needed in ("name", "schema"):
            if needed not in schema:
                bad(("jsonSchema",), f"'jsonSchema' must contain {needed!r}")
                return None
    return {"type": kind, **({"json_schema": schema} if schema is not None else {})}


def _messages(value: Any, bad: Any) -> list[tuple[str, str]]:
    if value is None:
        bad(("messages",), "'messages' is missing: a prompt file needs at least one message")
        return []
    if not isinstance(value, list):
        bad(("messages",), "'messages' must be a list of {role, content}")
        return []
    messages = []
    for index, item in enumerate(value):
        here = ("messages", str(index))
        if not isinstance(item, dict):
            bad(here, f"'messages[{index}]' must be a mapping with role and content")
            continue
        role, content = _text(item.get("role")), _text(item.get("content"))
        if role is None or role.lower() not in ROLES:
            bad((*here, "role"), f"'messages[{index}].role' {item.get('role')!r} must be one of "
                                 f"{', '.join(ROLES)}")
            continue
        if content is None:
            bad((*here, "content"), f"'messages[{index}].content' must be text")
            continue
        messages.append((role.lower(), content))
    if not messages and not isinstance(value, list):
        bad(("messages",), "'messages' is empty")
    return messages


def placeholders(prompt: Prompt) -> frozenset[str]:
    """Every `{{name}}` the messages hold (exact text between the braces)."""
    return frozenset(match.group(1) for _, content in prompt.messages
                     for match in _PLACEHOLDER.finditer(content))


def spaced_placeholder_warnings(prompt: Prompt) -> list[str]:
    """A warning, naming the file and line, for each placeholder with spaces inside its
    braces (`{{ question }}`): GitHub Models replaces only the exact `{{question}}`, so
    it goes to the model as written, in every row, and nothing else would say so."""
    warnings = []
    for name in sorted(placeholders(prompt)):
        if not name.strip() or name == name.strip():
            continue
        written = "{{" + name + "}}"
        at = prompt.text.find(written)
        where = (f"{prompt.source}:{prompt.text.count(chr(10), 0, at) + 1}" if at >= 0
                 else prompt.source)
        warnings.append(f"Warning: {where}: {written} is sent to the model as written: GitHub "
                        f"Models replaces only {{{{{name.strip()}}}}}, without spaces inside "
                        "the braces; write it that way")
    return warnings


def go_value(value: Any) -> str:
    """A value as Go's `fmt.Sprintf("%v")` writes what encoding/json or yaml decoded."""
    if isinstance(value, str):
        return value
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _go_float(value: float) -> str:
    """Go's `%v` of a float64 (strconv's 'g', shortest digits): an exponent when the
    number's decimal exponent is below -4 or 6 and above, e.g. 0.5, 123456, 1e+06."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    digits = Decimal(repr(value))
    sign, numerals, exponent = digits.as_tuple()
    text = "".join(map(str, numerals)).rstrip("0") or "0"
    point = len(numerals) + int(exponent)   # the decimal point's place after the first digit
    scientific = point - 1 < -4 or point - 1 >= 6
    if scientific:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        power = point - 1
        out = f"{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    elif point <= 0:
        out = "0." + "0" * -point + text
    elif point >= len(text):
        out = text + "0" * (point - len(text))
    else:
        out = text[:point] + "." + text[point:]
    return ("-" if sign else "") + out


def render_message(content: str, values: Mapping[str, Any]) -> str:
    """`{{name}}` replaced by the value of `name`; an unknown name left as written."""
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        return go_value(values[name]) if name in values else match.group(0)
    return _PLACEHOLDER.sub(replace, content)
