"""The key goes only where the base allows.

A pull request controls its generator's template, model name and parameters,
never where requests (and the API key) are sent:

- every `model.configuration` field of the head other than `model` /
  `azure_deployment` must equal the base's, compared raw (unexpanded);
- a generator that names no endpoint (most real Prompty files: the app, a
  `prompty.json` or a v2 `connection` supplies it) gets the one in the base's
  `.flipgate.yml` (`generator.endpoint`), else the provider's environment
  variables: the environment decides, never the head;
- `${env:NAME}` is expanded in the trusted (base) file; in the head's file
  only where its raw text equals the base's for that field (so the head can
  keep `${env:AZURE_OPENAI_DEPLOYMENT}`, but never point a field at another
  variable: its model name would carry a secret into the report);
- when the base has no generator yet (the pull request that adopts
  flipgate), the head's file is still untrusted: it may not name an
  endpoint (`base_url`, `azure_endpoint`) nor use `${env:...}`;
- `model.parameters` go only into the request body, and only names that are
  chat-completion body fields: a name such as `base_url`, `api_key`,
  `extra_headers` or `extra_body` would be taken by the openai client as an
  instruction, not sent as data. `${file:x.json}` loads JSON from the same
  ref (inside the repository only).

Everything here happens before any request; refusals are SecurityErrors
(exit 2) naming the file, line and field, and why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flipgate.config.github_limits import unprefixed
from flipgate.config.schema import (
    AUTH_ENTRA,
    AUTH_KEY,
    FORM_GITHUB,
    FORM_PYTHON,
    FORM_TEMPLATE,
    PROVIDER_GITHUB,
    Config,
    EndpointConfig,
)
from flipgate.errors import InputError, Problem, SecurityError
from flipgate.llm.endpoints import Endpoint, azure_endpoint, github_endpoint, openai_endpoint
from flipgate.prompts import Prompt
from flipgate.prompts.references import FILE_REFERENCE, load_file_reference
from flipgate.settings import Settings
from flipgate.text.parsing import load_yaml_located

# What a generator may set in the chat-completion request body.
BODY_PARAMETERS = frozenset({
    "temperature", "top_p", "top_k", "max_tokens", "max_completion_tokens", "presence_penalty",
    "frequency_penalty", "stop", "seed", "logit_bias", "logprobs", "top_logprobs",
    "response_format", "reasoning_effort", "verbosity", "tools", "tool_choice",
    "parallel_tool_calls", "user",
})
# What each body field must hold, checked before any request so a bad value is exit 2
# naming the field, not an HTTP 400 from the provider: (description, accepts).
_NUMBER = (int, float)


def _number(low: float, high: float) -> tuple[str, Any]:
    return (f"a number from {low:g} to {high:g}",
            lambda v: isinstance(v, _NUMBER) and not isinstance(v, bool) and low <= v <= high)


def _integer(low: int, high: int | None = None) -> tuple[str, Any]:
    upper = f" to {high}" if high is not None else " or more"
    return (f"a whole number from {low}{upper}" if high is not None else
            f"a whole number, {low}{upper}",
            lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low
            and (high is None or v <= high))


PARAMETER_TYPES: dict[str, tuple[str, Any]] = {
    "temperature": _number(0, 2),
    "top_p": _number(0, 1),
    "presence_penalty": _number(-2, 2),
    "frequency_penalty": _number(-2, 2),
    "max_tokens": _integer(1),
    "max_completion_tokens": _integer(1),
    "seed": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "top_logprobs": _integer(0, 20),
    "logprobs": ("true or false", lambda v: isinstance(v, bool)),
    "stop": ("a string or a list of up to 4 strings",
             lambda v: isinstance(v, str) or (isinstance(v, list) and len(v) <= 4
                                              and all(isinstance(x, str) for x in v))),
    "logit_bias": ("a mapping of token ids to numbers from -100 to 100",
                   lambda v: isinstance(v, dict) and all(
                       isinstance(x, _NUMBER) and not isinstance(x, bool) and -100 <= x <= 100
                       for x in v.values())),
    "response_format": ("a mapping with a 'type'",
                        lambda v: isinstance(v, dict) and isinstance(v.get("type"), str)),
    "reasoning_effort": ("a string such as low, medium or high", lambda v: isinstance(v, str)),
    "verbosity": ("a string such as low, medium or high", lambda v: isinstance(v, str)),
}
# Names the openai client (or flipgate) would take as an instruction, and why each is refused.
_CLIENT_SIDE = {
    "base_url": "where requests and the API key go is the base's choice",
    "azure_endpoint": "where requests and the API key go is the base's choice",
    "api_key": "the key comes only from the environment",
    "api_version": "the API version is part of the endpoint, the base's choice",
    "organization": "a client setting that names the account billed",
    "extra_headers": "the openai client sends them as HTTP headers, outside the checked body",
    "default_headers": "the openai client sends them as HTTP headers, outside the checked body",
    "extra_query": "the openai client adds them to the URL, outside the checked body",
    "extra_body": "the openai client merges it into the body unchecked",
    "timeout": "a client option (how long to wait), not request data",
    "stream": "flipgate needs each answer whole in one reply",
    "stream_options": "flipgate needs each answer whole in one reply",
    "n": "it asks for several answers per request (and bills them); the gate judges one",
}
MODEL_KEYS = ("model", "azure_deployment")
# Configuration keys flipgate knows; any other is an error (a typo must not pass silently).
CONFIGURATION_KEYS = ("type", "model", "azure_deployment", "base_url", "azure_endpoint",
                      "api_version", "api_key")
ENDPOINT_KEYS = ("base_url", "azure_endpoint")
CONFIGURATION_TYPES = {"openai": "openai", "azure_openai": "azure_openai", "azure": "azure_openai"}
# What a head that adds the generator may not set: the environment decides where requests go.
ADOPTION_REFUSED_KEYS = ENDPOINT_KEYS
# The only key references flipgate accepts in a generator: the client's own variables.
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "azure_openai": "AZURE_OPENAI_API_KEY",
                 "github": "GITHUB_TOKEN"}

# An Azure deployment name is a segment of the request's URL path: nothing that could
# leave it (`/`, `..`, `?`, `#`, `%`) or that a proxy might decode into something else.
_DEPLOYMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_ENV_REFERENCE = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)(?::(.*))?", re.DOTALL)

Reader = Callable[[str], "bytes | None"]


@dataclass(frozen=True)
class Generator:
    """One side's generator, ready to call: what goes in the body, and where it goes."""

    side: str                        # "baseline" | "candidate"
    prompt: Prompt
    model: str
    parameters: Mapping[str, Any]
    endpoint: Endpoint


@dataclass(frozen=True)
class LockedPair:
    baseline: Generator
    candidate: Generator
    notes: list[str] = field(default_factory=list)
    adopted: bool = False            # the base had no generator: the head's is trusted


def expand(value: str, *, environ: Mapping[str, str], source: str, line: int | None) -> str | None:
    """`${env:NAME}` / `${env:NAME:default}` in a trusted value. An unset variable
    without a default makes the whole value absent (None)."""
    missing = False

    def substitute(match: re.Match[str]) -> str:
        nonlocal missing
        reference = _ENV_REFERENCE.fullmatch(match.group(1))
        if reference is None:
            raise InputError(Problem(source, line, f"unsupported reference '${{{match.group(1)}}}' "
                                                   "(only ${env:NAME} is expanded)"))
        name, default = reference.group(1), reference.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        missing = True
        return ""

    expanded = _REFERENCE.sub(substitute, value)
    return None if missing else expanded


# --- parameters ------------------------------------------------------------------------

def _parameter_problem(prompt: Prompt, name: str) -> Problem | None:
    line = prompt.line_of("model", "parameters", name)
    if name in _CLIENT_SIDE:
        return Problem(prompt.source, line, f"model.parameters.{name} is not a chat-completion "
                                             f"body field flipgate sends: {_CLIENT_SIDE[name]}")
    if name not in BODY_PARAMETERS:
        return Problem(prompt.source, line,
                       f"model.parameters.{name} is not a chat-completion body field; "
                       f"parameters go only into the request body (allowed: "
                       f"{', '.join(sorted(BODY_PARAMETERS))})")
    value = prompt.parameters[name]
    if name == "tools" and not (_is_file_reference(value) or isinstance(value, list) and all(
            isinstance(t, dict) and t.get("type") == "function" for t in value)):
        return Problem(prompt.source, line, "model.parameters.tools is not a chat-completion body "
                                             "field in this form: a list of {type: function, "
                                             "function: {...}} tools, or ${file:tools.json}")
    return None


def check_parameters(prompt: Prompt) -> None:
    """Only body fields, with JSON values; a name the client would obey is a SecurityError."""
    refused = [problem for name in prompt.parameters
               if (problem := _parameter_problem(prompt, name)) is not None]
    if refused:
        raise SecurityError(refused)
    bad = []
    for name, value in prompt.parameters.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            bad.append(Problem(prompt.source, prompt.line_of("model", "parameters", name),
                               f"model.parameters.{name} must be plain JSON data"))
    if bad:
        raise InputError(bad)


def check_parameter_types(prompt: Prompt, parameters: Mapping[str, Any]) -> None:
    """Each body field holds the kind of value the API documents (exit 2 naming the field)."""
    problems = []
    for name, value in parameters.items():
        description, accepts = PARAMETER_TYPES.get(name, ("", None))
        if accepts is not None and not accepts(value):
            problems.append(Problem(prompt.source, prompt.line_of("model", "parameters", name),
                                    f"model.parameters.{name} must be {description}, "
                                    f"not {json.dumps(value)}"))
    if problems:
        raise InputError(problems)


def _is_file_reference(value: Any) -> bool:
    return isinstance(value, str) and FILE_REFERENCE.fullmatch(value) is not None


def _mentions_reference(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(_mentions_reference(k) or _mentions_reference(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_mentions_reference(v) for v in value)
    return False


def _resolved_parameters(prompt: Prompt, environ: Mapping[str, str], read: Reader) -> dict[str, Any]:
    """Parameters with `${file:}` loaded and `${env:}` expanded (for a trusted value)."""
    def walk(value: Any, name: str) -> Any:
        if _is_file_reference(value):
            return load_file_reference(value, prompt=prompt, read=read, what=f"model.parameters.{name}")
        if isinstance(value, str):
            line = prompt.line_of("model", "parameters", name)
            expanded = expand(value, environ=environ, source=prompt.source, line=line)
            if expanded is None:
                raise InputError(Problem(prompt.source, line,
                                         f"model.parameters.{name} names an unset environment variable"))
            return expanded
        if isinstance(value, dict):
            return {k: walk(v, name) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, name) for v in value]
        return value

    return {name: walk(value, name) for name, value in prompt.parameters.items()}


# --- what the head may reference ----------------------------------------------------------

def _reference_problems(head: Prompt, base: Prompt | None, keys: Iterable[str]) -> list[Problem]:
    """A `${...}` in the head's configuration `keys` or parameters whose raw text is not
    the base's own for that field."""
    why = ("references are expanded only in the base's generator" if base is None else
           "references are expanded only in the base's generator, and in the head's only where "
           "its raw text equals the base's")
    problems = []
    for key in keys:
        value = head.configuration.get(key)
        if _mentions_reference(value) and (base is None or base.configuration.get(key) != value):
            problems.append(Problem(head.source, head.line_of("model", "configuration", key),
                                    f"model.configuration.{key} uses ${{...}}; {why}"))
    for name, value in head.parameters.items():
        if _mentions_reference(value) and (base is None or base.parameters.get(name) != value):
            if _is_file_reference(value):
                continue  # ${file:} reads the head's own ref: data, not the environment
            problems.append(Problem(head.source, head.line_of("model", "parameters", name),
                                    f"model.parameters.{name} uses ${{...}}; {why}"))
    return problems


def _compare_configurations(base: Prompt, head: Prompt) -> None:
    problems = []
    for key in sorted((set(base.configuration) | set(head.configuration)) - set(MODEL_KEYS)):
        before, after = base.configuration.get(key), head.configuration.get(key)
        if before != after:
            problems.append(Problem(
                head.source, head.line_of("model", "configuration", key),
                f"the pull request changes model.configuration.{key} "
                f"({'absent' if before is None else repr(before)} -> "
                f"{'absent' if after is None else repr(after)}); only model / azure_deployment "
                "may change: where requests and the API key go is the base's choice"))
    problems += _reference_problems(head, base, MODEL_KEYS)
    if problems:
        raise SecurityError(problems)


def _check_adopted(head: Prompt) -> None:
    """The head adds the generator: it is no more trusted for that. It may not say
    where requests go, nor read the environment; the environment decides."""
    problems = [Problem(head.source, head.line_of("model", "configuration", key),
                        f"model.configuration.{key} is refused: the base has no generator "
                        "yet, and the pull request that adds one may not choose where "
                        "requests and the API key go; leave it out (the environment "
                        "decides) or add the generator in a trusted commit first")
                for key in ADOPTION_REFUSED_KEYS if key in head.configuration]
    problems += _reference_problems(head, None, [key for key in head.configuration if key != "api_key"])
    if problems:
        raise SecurityError(problems)


def check_adopted_config(config: Config, text: str) -> None:
    """The head adds `.flipgate.yml` (the base has none): its gate settings are used, but
    neither the judge's nor the generator's endpoint is its to choose, or the key would
    follow it anywhere."""
    _, lines = load_yaml_located(text, source=config.source)
    problems = [Problem(config.source, lines.get(("judge", key)),
                        f"judge.{key} is refused: the base has no configuration yet, and the "
                        "pull request that adds it may not choose where requests and the API "
                        "key go; leave it out (the environment decides) or add the "
                        "configuration in a trusted commit first")
                for key in ADOPTION_REFUSED_KEYS if getattr(config.judge, key) is not None]
    chosen = [(("judge", "second_opinion"), config.judge.second_opinion),
              (("generator", "endpoint"), config.generator_options.endpoint)]
    problems += [Problem(config.source, lines.get((*where, key)),
                         f"{'.'.join(where)}.{key} is refused: the base has no configuration "
                         "yet, and the pull request that adds it may not choose where requests "
                         "and the API key go; leave it out (the environment decides)")
                 for where, settings in chosen if settings is not None
                 for key in ADOPTION_REFUSED_KEYS if getattr(settings, key) is not None]
    if problems:
        raise SecurityError(problems)


# --- the endpoint -------------------------------------------------------------------------

def _check_configuration(trusted: Prompt) -> None:
    problems = []
    for key, value in trusted.configuration.items():
        where = trusted.line_of("model", "configuration", key)
        if key not in CONFIGURATION_KEYS:
            problems.append(Problem(trusted.source, where, f"unsupported key 'model.configuration.{key}' "
                                                           f"(known: {', '.join(CONFIGURATION_KEYS)})"))
        elif not isinstance(value, str) or not value.strip():
            problems.append(Problem(trusted.source, where, f"'model.configuration.{key}' must be a "
                                                           "non-empty string"))
    kind = trusted.configuration.get("type")
    if kind is not None and kind not in CONFIGURATION_TYPES:
        problems.append(Problem(trusted.source, trusted.line_of("model", "configuration", "type"),
                                f"model.configuration.type {kind!r} is not a provider flipgate calls "
                                f"(known: {', '.join(CONFIGURATION_TYPES)})"))
    if trusted.api != "chat":
        problems.append(Problem(trusted.source, trusted.line_of("model", "api") or trusted.line_of("model"),
                                f"a '{trusted.api}' generator is not a chat completion; flipgate "
                                "gates chat answers only"))
    if problems:
        raise InputError(problems)


def _check_key_reference(trusted: Prompt, kind: str) -> None:
    raw = trusted.configuration.get("api_key")
    if raw is None:
        return
    variable = KEY_VARIABLES[kind]
    if raw != f"${{env:{variable}}}":
        raise InputError(Problem(trusted.source, trusted.line_of("model", "configuration", "api_key"),
                                 f"flipgate reads the API key only from {variable}: write "
                                 f"'api_key: ${{env:{variable}}}' or leave api_key out "
                                 "(never put a key in a file)"))


def _expanded(value: str | None, environ: Mapping[str, str], source: str, line: int | None) -> str | None:
    return None if value is None else expand(value, environ=environ, source=source, line=line)


@dataclass(frozen=True)
class _Target:
    """Where requests go, before the model is known: the kind and its settings."""

    kind: str                        # "openai" | "azure_openai" | "github"
    url: str | None
    api_version: str | None
    deployment: str | None           # from generator.endpoint, when the file names no model
    auth: str = AUTH_KEY             # generator.endpoint.auth (the base's configuration)


def _target(trusted: Prompt, configuration: Mapping[str, str | None], settings: EndpointConfig | None,
            environ: Mapping[str, str], config_source: str) -> _Target:
    """The file's own endpoint, else `generator.endpoint`, else the environment's."""
    kind = configuration.get("type")
    names_endpoint = any(configuration.get(key) for key in ENDPOINT_KEYS)
    use_settings = settings is not None and not names_endpoint

    def setting(name: str) -> str | None:
        value = getattr(settings, name) if use_settings else None
        return _expanded(value, environ, config_source, None)

    if kind in (None, "openai") and use_settings and settings.provider == PROVIDER_GITHUB:  # type: ignore[union-attr]
        # GitHub Models (OpenAI-compatible, so a file's `type: openai` fits): the base's
        # base_url or GitHub's own, never the environment's.
        return _Target(kind=PROVIDER_GITHUB, url=setting("base_url"), api_version=None,
                       deployment=setting("deployment") or setting("model"), auth=AUTH_KEY)
    if kind is None:
        if use_settings and settings.provider is not None:  # type: ignore[union-attr]
            kind = "azure_openai" if settings.provider == "azure" else "openai"  # type: ignore[union-attr]
        elif configuration.get("azure_endpoint") or configuration.get("azure_deployment"):
            kind = "azure_openai"
        else:
            kind = "azure_openai" if environ.get("AZURE_OPENAI_ENDPOINT") and not \
                environ.get("OPENAI_BASE_URL") else "openai"
    kind = CONFIGURATION_TYPES[kind]
    if kind == "azure_openai":
        url = configuration.get("azure_endpoint") or setting("azure_endpoint") or environ.get("AZURE_OPENAI_ENDPOINT")
        version = configuration.get("api_version") or setting("api_version") or environ.get("OPENAI_API_VERSION")
    else:
        url = configuration.get("base_url") or setting("base_url") or environ.get("OPENAI_BASE_URL")
        version = None
    auth = settings.auth if settings is not None else AUTH_KEY
    if auth == AUTH_ENTRA and kind != "azure_openai":
        raise InputError(Problem(config_source, None, "generator.endpoint.auth entra signs in to "
                                 f"Azure, but the generator's endpoint is {kind} ({trusted.source})"))
    return _Target(kind=kind, url=url, api_version=version,
                   deployment=setting("deployment") or setting("model"), auth=auth)


def _endpoint(target: _Target, model: str, settings: Settings) -> Endpoint:
    """The endpoint; what neither the file, generator.endpoint nor the environment says
    is the openai client's own default (llm.py)."""
    if target.kind == "azure_openai":
        return azure_endpoint(target.url, target.api_version, deployment=model, settings=settings,
                              auth=target.auth)
    if target.kind == PROVIDER_GITHUB:
        return github_endpoint(target.url)
    return openai_endpoint(target.url, settings=settings)


def _no_model(prompt: Prompt, target: _Target, config_source: str) -> Problem:
    """"Names no model", with the key that gives one in the generator's own form."""
    if prompt.form in (FORM_TEMPLATE, FORM_PYTHON):
        return Problem(config_source, None, f"the generator ({prompt.path}) names no model: "
                                            "set generator.model")
    setting = "deployment" if target.kind == "azure_openai" else "model"
    in_file = "model:" if prompt.form == FORM_GITHUB else (
        "model.configuration.azure_deployment" if target.kind == "azure_openai"
        else "model.configuration.model")
    return Problem(prompt.source, prompt.line_of("model"),
                   f"the generator names no model: add {in_file} to the file, or set "
                   f"generator.endpoint.{setting} in {config_source}")


def lock(base: Prompt | None, head: Prompt, *, settings: Settings,
         endpoint: EndpointConfig | None = None, config_source: str = ".flipgate.yml",
         read_base: Reader | None = None, read_head: Reader | None = None) -> LockedPair:
    """Both sides' request settings, with the head held to the base's endpoint.

    `base` is None when the base ref has no generator (the pull request that
    adopts flipgate): the head's configuration is then the trusted one, and a
    note says so. `endpoint` is the base configuration's `generator.endpoint`,
    used when the trusted file names no endpoint. `read_base` / `read_head`
    read each ref's files (for `${file:...}` in parameters).
    """
    environ = settings.environ
    no_files: Reader = lambda path: None  # noqa: E731
    read_base, read_head = read_base or no_files, read_head or no_files
    for prompt in (base, head):
        if prompt is not None:
            check_parameters(prompt)
    notes: list[str] = []
    trusted = base if base is not None else head
    _check_configuration(head)  # a key flipgate does not know is named before any comparison
    if base is None:
        notes.append(f"The base has no generator at {head.path}; the pull request's own "
                     "generator is replayed on its own (adopting flipgate).")
        _check_adopted(head)
    else:
        _compare_configurations(base, head)
    _check_configuration(trusted)
    configuration = {key: _expanded(value, environ, trusted.source,
                                    trusted.line_of("model", "configuration", key))
                     for key, value in trusted.configuration.items()}
    target = _target(trusted, configuration, endpoint, environ, config_source)
    _check_key_reference(trusted, target.kind)

    def side(name: str, prompt: Prompt, expanded_model: str | None,
             parameters: Mapping[str, Any]) -> Generator:
        key = prompt.model_key
        if not expanded_model:
            if prompt.configuration.get(key) is not None:
                raise InputError(Problem(prompt.source, prompt.line_of("model", "configuration", key),
                                         f"model.configuration.{key} names an unset environment variable"))
            raise InputError(_no_model(prompt, target, config_source))
        if target.kind == PROVIDER_GITHUB and target.url is None and \
                (advice := unprefixed(expanded_model)) is not None:
            source, line = ((config_source, None) if prompt.form in (FORM_TEMPLATE, FORM_PYTHON)
                            else (prompt.source, prompt.line_of("model", "configuration", key)))
            raise InputError(Problem(source, line, f"model {expanded_model!r}: {advice}"))
        if target.kind == "azure_openai" and not _DEPLOYMENT.fullmatch(expanded_model):
            raise SecurityError(Problem(
                prompt.source, prompt.line_of("model", "configuration", key),
                f"model.configuration.{key} {expanded_model!r} is not an Azure deployment name; "
                "it goes into the request's URL path, so only letters, digits, '.', '_' and "
                "'-' are accepted"))
        check_parameter_types(prompt, parameters)
        return Generator(side=name, prompt=prompt, model=expanded_model, parameters=parameters,
                         endpoint=_endpoint(target, expanded_model, settings))

    trusted_model = configuration.get("azure_deployment") or configuration.get("model") or (
        None if trusted.model else target.deployment)
    baseline = side("baseline", trusted, trusted_model,
                    _resolved_parameters(trusted, environ, read_base if base is not None else read_head))
    if base is None:
        candidate = Generator(side="candidate", prompt=head, model=baseline.model,
                              parameters=baseline.parameters, endpoint=baseline.endpoint)
    else:
        head_model = head.model
        if head_model is not None and head_model == base.model:
            head_model = baseline.model      # the same raw text: expanded as the base's
        elif head_model is None:
            head_model = target.deployment if base.model is None else None
        candidate = side("candidate", head, head_model, _resolved_parameters(head, environ, read_head))
    return LockedPair(baseline=baseline, candidate=candidate, notes=notes, adopted=base is None)


def trusted_request(prompt: Prompt, *, environ: Mapping[str, str], endpoint: EndpointConfig | None,
                    read: Reader) -> tuple[str | None, dict[str, Any]]:
    """(model, body parameters) of a file trusted on its own (a dry run of one ref): the
    parameter rules hold, references expand; no endpoint is needed since nothing is sent."""
    _check_configuration(prompt)
    check_parameters(prompt)
    line = prompt.line_of("model", "configuration", prompt.model_key)
    model = _expanded(prompt.model, environ, prompt.source, line) if prompt.model else None
    if model is None and endpoint is not None:
        model = _expanded(endpoint.deployment or endpoint.model, environ, prompt.source, None)
    return model, _resolved_parameters(prompt, environ, read)
