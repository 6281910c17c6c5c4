"""The key goes only where the base allows.

A pull request controls its generator's template, model name and parameters,
never where requests (and the API key) are sent:

- every `model.configuration` field of the head other than `model` /
  `azure_deployment` must equal the base's, compared raw (unexpanded);
- `${env:NAME}` is expanded only in the trusted (base) file; the head's
  values are never expanded, and a head that writes one is refused (its
  model name would otherwise carry a secret into the report);
- when the base has no generator yet (the pull request that adopts
  flipgate), the head's file is still untrusted: it may not name an
  endpoint (`base_url`, `azure_endpoint`) nor use `${env:...}`, so the
  environment (or the provider's default) decides where the key goes;
- `model.parameters` go only into the request body, and only names that are
  known chat-completion body fields: a name such as `base_url`, `api_key`,
  `extra_headers` or `extra_body` would be taken by the openai client as an
  instruction, not sent as data.

Everything here happens before any request; refusals are SecurityErrors
(exit 2) naming the head file and line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flipgate.config import Config
from flipgate.errors import InputError, Problem, SecurityError
from flipgate.llm import Endpoint, azure_endpoint, openai_endpoint
from flipgate.prompty import Prompty
from flipgate.settings import Settings
from flipgate.textinput import load_yaml_located

# What a generator may set in the chat-completion request body.
BODY_PARAMETERS = frozenset({
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "presence_penalty",
    "frequency_penalty", "stop", "seed", "logit_bias", "logprobs", "top_logprobs",
    "response_format", "reasoning_effort", "verbosity",
})
MODEL_KEYS = ("model", "azure_deployment")
# What a head that adds the generator may not set: the environment decides where requests go.
ADOPTION_REFUSED_KEYS = ("base_url", "azure_endpoint")
# The only key references flipgate accepts in a generator: the client's own variables.
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "azure_openai": "AZURE_OPENAI_API_KEY"}

# An Azure deployment name is a segment of the request's URL path: nothing that could
# leave it (`/`, `..`, `?`, `#`, `%`) or that a proxy might decode into something else.
_DEPLOYMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
_ENV_REFERENCE = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)(?::(.*))?", re.DOTALL)


@dataclass(frozen=True)
class Generator:
    """One side's generator, ready to call: what goes in the body, and where it goes."""

    side: str                        # "baseline" | "candidate"
    prompty: Prompty
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


def check_parameters(prompty: Prompty) -> None:
    """Only known body fields, with JSON values; a name the client would obey is a SecurityError."""
    refused = [Problem(prompty.source, prompty.line_of("model", "parameters", name),
                       f"model.parameters.{name} is not a chat-completion body field; "
                       f"parameters go only into the request body (allowed: "
                       f"{', '.join(sorted(BODY_PARAMETERS))})")
               for name in prompty.parameters if name not in BODY_PARAMETERS]
    if refused:
        raise SecurityError(refused)
    bad = []
    for name, value in prompty.parameters.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            bad.append(Problem(prompty.source, prompty.line_of("model", "parameters", name),
                               f"model.parameters.{name} must be plain JSON data"))
    if bad:
        raise InputError(bad)


def _mentions_reference(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(_mentions_reference(k) or _mentions_reference(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_mentions_reference(v) for v in value)
    return False


def _reference_problems(head: Prompty, keys: Iterable[str]) -> list[Problem]:
    """A `${...}` in the head's configuration `keys` or in any of its parameters."""
    problems = [Problem(head.source, head.line_of("model", "configuration", key),
                        f"model.configuration.{key} uses ${{...}}; references are "
                        "expanded only in the base's generator")
                for key in keys if _mentions_reference(head.configuration.get(key))]
    for name, value in head.parameters.items():
        if _mentions_reference(value):
            problems.append(Problem(head.source, head.line_of("model", "parameters", name),
                                    f"model.parameters.{name} uses ${{...}}; references are "
                                    "expanded only in the base's generator"))
    return problems


def _compare_configurations(base: Prompty, head: Prompty) -> None:
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
    problems += _reference_problems(head, MODEL_KEYS)
    if problems:
        raise SecurityError(problems)


def _check_adopted(head: Prompty) -> None:
    """The head adds the generator: it is no more trusted for that. It may not say
    where requests go, nor read the environment; the environment decides."""
    problems = [Problem(head.source, head.line_of("model", "configuration", key),
                        f"model.configuration.{key} is refused: the base has no generator "
                        "yet, and the pull request that adds one may not choose where "
                        "requests and the API key go; leave it out (the environment "
                        "decides) or add the generator in a trusted commit first")
                for key in ADOPTION_REFUSED_KEYS if key in head.configuration]
    problems += _reference_problems(
        head, [key for key in head.configuration if key != "api_key"])
    if problems:
        raise SecurityError(problems)


def check_adopted_config(config: Config, text: str) -> None:
    """The head adds `.flipgate.yml` (the base has none): its gate settings are used, but
    the judge's endpoint is not its to choose, or the key would follow it anywhere."""
    _, lines = load_yaml_located(text, source=config.source)
    problems = [Problem(config.source, lines.get(("judge", key)),
                        f"judge.{key} is refused: the base has no configuration yet, and the "
                        "pull request that adds it may not choose where requests and the API "
                        "key go; leave it out (the environment decides) or add the "
                        "configuration in a trusted commit first")
                for key in ADOPTION_REFUSED_KEYS if getattr(config.judge, key) is not None]
    if problems:
        raise SecurityError(problems)


def _expanded_configuration(trusted: Prompty, environ: Mapping[str, str]) -> dict[str, str | None]:
    return {key: expand(value, environ=environ, source=trusted.source,
                        line=trusted.line_of("model", "configuration", key))
            for key, value in trusted.configuration.items()}


def _expanded_parameters(trusted: Prompty, environ: Mapping[str, str]) -> dict[str, Any]:
    def walk(value: Any, name: str) -> Any:
        if isinstance(value, str):
            line = trusted.line_of("model", "parameters", name)
            expanded = expand(value, environ=environ, source=trusted.source, line=line)
            if expanded is None:
                raise InputError(Problem(trusted.source, line,
                                         f"model.parameters.{name} names an unset environment variable"))
            return expanded
        if isinstance(value, dict):
            return {k: walk(v, name) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, name) for v in value]
        return value

    return {name: walk(value, name) for name, value in trusted.parameters.items()}


def _check_key_reference(trusted: Prompty) -> None:
    raw = trusted.configuration.get("api_key")
    if raw is None:
        return
    variable = KEY_VARIABLES[trusted.configuration["type"]]
    if raw != f"${{env:{variable}}}":
        raise InputError(Problem(trusted.source, trusted.line_of("model", "configuration", "api_key"),
                                 f"flipgate reads the API key only from {variable}: write "
                                 f"'api_key: ${{env:{variable}}}' or leave api_key out "
                                 "(never put a key in a file)"))


def _endpoint(configuration: Mapping[str, Any], model: str, settings: Settings) -> Endpoint:
    if configuration["type"] == "azure_openai":
        return azure_endpoint(configuration.get("azure_endpoint"), configuration.get("api_version"),
                              deployment=model, settings=settings)
    return openai_endpoint(configuration.get("base_url"), settings=settings)


def lock(base: Prompty | None, head: Prompty, *, settings: Settings) -> LockedPair:
    """Both sides' request settings, with the head held to the base's endpoint.

    `base` is None when the base ref has no generator (the pull request that
    adopts flipgate): the head's configuration is then the trusted one, and a
    note says so.
    """
    environ = settings.environ
    for prompty in (base, head):
        if prompty is not None:
            check_parameters(prompty)
    notes: list[str] = []
    trusted = base if base is not None else head
    if base is None:
        notes.append(f"The base has no generator at {head.path}; the pull request's own "
                     "generator is replayed on its own (adopting flipgate).")
        _check_adopted(head)
    else:
        _compare_configurations(base, head)
    _check_key_reference(trusted)
    configuration = _expanded_configuration(trusted, environ)

    def side(name: str, prompty: Prompty, expanded_model: str | None,
             parameters: Mapping[str, Any]) -> Generator:
        key = "azure_deployment" if "azure_deployment" in prompty.configuration else "model"
        if not expanded_model:
            raise InputError(Problem(prompty.source, prompty.line_of("model", "configuration", key),
                                     f"model.configuration.{key} names an unset environment variable"))
        if configuration["type"] == "azure_openai" and not _DEPLOYMENT.fullmatch(expanded_model):
            raise SecurityError(Problem(
                prompty.source, prompty.line_of("model", "configuration", key),
                f"model.configuration.{key} {expanded_model!r} is not an Azure deployment name; "
                "it goes into the request's URL path, so only letters, digits, '.', '_' and "
                "'-' are accepted"))
        return Generator(side=name, prompty=prompty, model=expanded_model, parameters=parameters,
                         endpoint=_endpoint(configuration, expanded_model, settings))

    trusted_model = configuration.get("azure_deployment") or configuration.get("model")
    baseline = side("baseline", trusted, trusted_model, _expanded_parameters(trusted, environ))
    if base is None:
        candidate = Generator(side="candidate", prompty=head, model=baseline.model,
                              parameters=baseline.parameters, endpoint=baseline.endpoint)
    else:
        candidate = side("candidate", head, head.model, dict(head.parameters))
    return LockedPair(baseline=baseline, candidate=candidate, notes=notes, adopted=base is None)
