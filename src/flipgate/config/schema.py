"""`.flipgate.yml`: parsed with PyYAML's safe loader, validated in one place.

Every problem is reported at once, each with the file and line it comes
from. Unknown keys are errors, so a typo never silently weakens the gate.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from flipgate.config import generator_keys
from flipgate.config.generator_keys import Message
from flipgate.config.review_setting import REVIEW_MODES, REVIEW_NONE
from flipgate.errors import InputError, Problem
from flipgate.text.parsing import decode_utf8, load_yaml_located

# Every default of flipgate lives here.
DEFAULT_CONFIG = ".flipgate.yml"
DEFAULT_OUT_DIR = "flipgate-out"        # report.json and comment.md
# The workflow's artifact of DEFAULT_OUT_DIR, the whole review: one name everywhere.
ARTIFACT_NAME = "flipgate-report"
DEFAULT_CACHE_DIR = ".flipgate-cache"   # model replies
DEFAULT_CONCURRENCY = 8                 # model calls in flight at once, for the whole run
DEFAULT_TIMEOUT_SECONDS = 60.0          # per model request (the openai client's own timeout)
DEFAULT_MAX_RETRIES = 3                 # retries of a 5xx, timeout or lost connection
DEFAULT_MAX_WAIT = 600.0                # seconds one request may spend waiting out 429s
DEFAULT_COMPLETION_CEILING = 4096       # budget: worst case of a request without max_tokens
DEFAULT_EMBEDDING_BATCH = 2048          # OpenAI's /embeddings takes at most 2048 inputs
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
# GitHub Models' OpenAI-compatible inference endpoint (docs.github.com/en/github-models/quickstart).
DEFAULT_GITHUB_MODELS_URL = "https://models.github.ai/inference"
DEFAULT_QUESTIONS = 3                   # questions the relevance judge invents per answer
OFFLINE_MODEL = "lexical-v1"            # the offline judge's name for itself
STEP_SUMMARY_LIMIT = 1024 * 1024        # GitHub's step summary holds at most 1 MiB
GITHUB_COMMENT_LIMIT = 65_536           # GitHub refuses a longer comment
DEFAULT_MIN_CASES_PER_CATEGORY = 50     # below it, one judge may not block a category alone

PROVIDER_GITHUB = "github"              # GitHub Models, on the workflow's GitHub token
PROVIDERS = ("openai", "azure", PROVIDER_GITHUB, "offline")
ENDPOINT_PROVIDERS = ("openai", "azure", PROVIDER_GITHUB)  # the generator's endpoint
OPENAI_ENGINE = "openai"
AZURE_ENGINE = "azure-ai-evaluation"    # the optional azure-ai-evaluation backend
ENGINES = (OPENAI_ENGINE, AZURE_ENGINE)


SECOND_OPINION_MODES = ("replace", "both")
# `judge.mode`: the groundedness rubric, the same for both sides (report.json judge.mode).
WITH_QUERY, WITHOUT_QUERY = "with_query", "without_query"
JUDGE_MODES = (WITH_QUERY, WITHOUT_QUERY)
# How flipgate signs in to an Azure endpoint: the key from the environment, or
# Microsoft Entra ID through azure-identity (llm/entra.py).
AUTH_KEY, AUTH_ENTRA = "key", "entra"
AUTHS = (AUTH_KEY, AUTH_ENTRA)
# A second opinion from the Azure AI evaluation service (GroundednessProEvaluator):
# a true/false verdict instead of a 1-5 score.
GROUNDEDNESS_PRO = "groundedness_pro"
SECOND_OPINION_ENGINES = (GROUNDEDNESS_PRO,)


@dataclass(frozen=True)
class SecondOpinionConfig:
    """A different judge that confirms flips: a model (Azure: deployment) on the judge's
    endpoint, or, with `provider`, its own provider section. Read from the base ref only."""

    model: str = ""
    mode: str = "replace"            # replace the same-judge re-score | both
    provider: str | None = None      # None: the judge's provider and endpoint
    base_url: str | None = None
    azure_endpoint: str | None = None
    api_version: str | None = None
    reasoning: bool | None = None    # None: as the judge
    timeout: float | None = None
    max_retries: int | None = None
    engine: str | None = None        # None: a chat model; groundedness_pro: the Azure AI service
    azure_ai_project: str | None = None  # groundedness_pro's project endpoint (a URL)


@dataclass(frozen=True)
class JudgeConfig:
    provider: str = "offline"
    model: str = OFFLINE_MODEL
    engine: str = OPENAI_ENGINE
    mode: str = WITH_QUERY           # with_query | without_query (JUDGE_MODES)
    base_url: str | None = None
    azure_endpoint: str | None = None
    api_version: str | None = None
    auth: str = AUTH_KEY             # key | entra (azure only)
    reasoning: bool = False
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = DEFAULT_MAX_RETRIES  # other transient failures (5xx, timeouts), per request
    max_wait: float = DEFAULT_MAX_WAIT  # seconds a request may spend waiting out 429s
    seed: int | None = None          # sent with every judge request when set
    second_opinion: SecondOpinionConfig | None = None


def second_judge(judge: JudgeConfig, provider: str | None = None) -> JudgeConfig | None:
    """The second-opinion judge as a judge of its own, or None when none is configured.

    `provider` is the first judge's effective provider (`--judge` may override the
    config's). Without its own `provider`, the second judge shares the first one's
    endpoint; a lexical (offline) first judge has none to share, so there is no
    second opinion then. `--judge offline` promises a run without requests, so it
    drops a second opinion that would send any.
    """
    second = judge.second_opinion
    if second is None:
        return None
    first = provider or judge.provider
    if first == "offline" and judge.provider != "offline" and second.provider != "offline":
        return None
    if second.engine == GROUNDEDNESS_PRO:
        # Not a chat model: the service's verdict, signed in through Entra ID.
        return JudgeConfig(provider="azure", model=GROUNDEDNESS_PRO, engine=GROUNDEDNESS_PRO,
                           auth=AUTH_ENTRA, timeout=second.timeout or judge.timeout,
                           max_retries=judge.max_retries if second.max_retries is None
                           else second.max_retries, max_wait=judge.max_wait)
    if second.provider is None:
        if first == "offline":
            return None
        return JudgeConfig(provider=first, model=second.model, mode=judge.mode, base_url=judge.base_url,
                           azure_endpoint=judge.azure_endpoint, api_version=judge.api_version,
                           auth=judge.auth,
                           reasoning=judge.reasoning if second.reasoning is None else second.reasoning,
                           timeout=second.timeout or judge.timeout,
                           max_retries=judge.max_retries if second.max_retries is None
                           else second.max_retries, max_wait=judge.max_wait, seed=judge.seed)
    return JudgeConfig(provider=second.provider, model=second.model or OFFLINE_MODEL,
                       mode=judge.mode, base_url=second.base_url, azure_endpoint=second.azure_endpoint,
                       api_version=second.api_version, reasoning=bool(second.reasoning),
                       timeout=second.timeout or judge.timeout,
                       max_retries=judge.max_retries if second.max_retries is None
                       else second.max_retries, max_wait=judge.max_wait, seed=judge.seed)


@dataclass(frozen=True)
class GateConfig:
    blocking_categories: tuple[str, ...] = ("policy", "pricing", "safety")
    # Below this many cases in a category, one flip is a large share of it and one
    # judge wobble could decide a release: a confirmed regression there blocks only
    # when a second-opinion judge confirmed it (or with `strict`).
    min_cases_per_category: int = DEFAULT_MIN_CASES_PER_CATEGORY
    strict: bool = False  # true: a same-judge re-score may block below the minimum
    review: str = REVIEW_NONE  # required: a held-back flip waits for a person (config/review_setting.py)
    # Where `blocking_categories` was written: (its key, e.g. "gate.blocking_categories" or
    # "suites.NAME.gate.blocking_categories", and its line); None: the default, unwritten.
    declared: tuple[str, int] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RelevanceConfig:
    threshold: float = 0.7
    embedding_model: str = "text-embedding-3-small"
    questions: int = DEFAULT_QUESTIONS
    embedding_batch: int = DEFAULT_EMBEDDING_BATCH


@dataclass(frozen=True)
class BudgetConfig:
    max_requests: int | None = None
    max_tokens: int | None = None
    # The worst case assumed for a request that sets no max_tokens / max_completion_tokens.
    completion_ceiling: int = DEFAULT_COMPLETION_CEILING


STATUS_SINGLE, STATUS_PER_SUITE = "single", "per-suite"
STATUS_MODES = (STATUS_SINGLE, STATUS_PER_SUITE)
SUITE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")  # also a commit status context part


@dataclass(frozen=True)
class EndpointConfig:
    """`generator.endpoint`: where a generator that names no endpoint sends its requests."""

    provider: str | None = None       # openai | azure | github
    base_url: str | None = None
    azure_endpoint: str | None = None
    api_version: str | None = None
    deployment: str | None = None     # the model (azure: the deployment) when the file names none
    model: str | None = None          # the same, spelled for openai
    auth: str = AUTH_KEY              # key | entra: how the generator's Azure endpoint is signed in to


# The generator's forms (see prompts/forms): where `generator:` finds the prompt.
FORM_PROMPTY, FORM_GITHUB, FORM_TEMPLATE, FORM_PYTHON = "prompty", "github", "template", "python"
FORM_MESSAGES = "messages"
FORMS_CONFIGURED = (FORM_TEMPLATE, FORM_PYTHON, FORM_MESSAGES)   # the model is .flipgate.yml's
TEMPLATE_FORMATS = ("jinja", "fstring", "mustache")
GITHUB_PROMPT_SUFFIXES = (".prompt.yml", ".prompt.yaml")
# The generator keys a pull request's own .flipgate.yml sets for the head (forms 2 and 3).
HEAD_GENERATOR_KEYS = ("model", "parameters", "format", "system", "variables", "messages", "jinja")


@dataclass(frozen=True)
class CommandConfig:
    """`generator.command`: the application's own code answers each case (base's file only)."""

    command: str                      # split like a shell, never run by one
    watch: tuple[str, ...]            # what counts as a change (required)
    setup: str | None = None          # once a ref, in its worktree, before the command
    env: tuple[str, ...] = ()         # the only variables it receives, with PATH, HOME, LANG
    timeout: float = 60.0             # seconds a case




@dataclass(frozen=True)
class GeneratorOptions:
    """The mapping form of `generator:` besides its path."""

    endpoint: EndpointConfig | None = None
    strict_undefined: bool = True     # a case lacking a variable the template uses is bad input
    form: str = FORM_PROMPTY          # prompty | github | template | python
    constant: str | None = None       # python: the constant's NAME in the file
    format: str | None = None         # template, python: jinja | fstring | mustache
    system: str | None = None         # a system message from its own file (python: FILE[:NAME])
    model: str | None = None          # template, python: the model under test
    parameters: dict[str, Any] = field(default_factory=dict)
    variables: tuple[tuple[str, str], ...] = ()   # template name <- case field
    command: CommandConfig | None = None   # the application's own code as the generator
    messages: tuple[Message, ...] = ()   # the messages around a template: (role, kind, value)
    jinja: tuple[tuple[str, bool], ...] = ()   # the app's Jinja2 settings (trim_blocks, ...)


@dataclass(frozen=True)
class E2EConfig:
    """The end-to-end run's live retrieval, trusted only from the base ref's configuration."""

    command: str | None = None     # query on stdin, context on stdout
    url: str | None = None         # or: POST {"query", "id", "category"} -> {"context"}
    headers: tuple[tuple[str, str], ...] = ()  # for `url`; ${env:NAME} of names in `env`
    timeout: float = 30.0
    env: tuple[str, ...] = ()      # the only variables (secrets) the retrieval receives
    enabled: bool = True           # false: only `flipgate run --e2e` runs it, never the action


@dataclass(frozen=True)
class Suite:
    """One generator with its own cases and gate; every field defaults from the top level.
    The judge, the budget and the concurrency are the run's, shared by every suite."""

    name: str
    cases: str
    generator: str | None = None
    generator_options: GeneratorOptions = field(default_factory=GeneratorOptions)
    watch: tuple[str, ...] = ()
    gate: GateConfig = field(default_factory=GateConfig)
    relevance: RelevanceConfig = field(default_factory=RelevanceConfig)


@dataclass(frozen=True)
class Config:
    source: str = DEFAULT_CONFIG  # how messages name the file
    # Paths as written, relative to the config's directory (POSIX, for git refs too).
    cases: str = ""
    generator: str | None = None
    watch: tuple[str, ...] = ()
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    relevance: RelevanceConfig = field(default_factory=RelevanceConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    e2e: E2EConfig | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    directory: str = "."  # the config's directory, relative to the repository or cwd
    generator_options: GeneratorOptions = field(default_factory=GeneratorOptions)
    suites: tuple[Suite, ...] = ()  # none: the top level is the one implicit suite
    status: str = STATUS_SINGLE     # single | per-suite (one commit status per suite)
    suite: str | None = None        # the suite this config is narrowed to (`for_suite`)
    # `gate.base_branches`: the bases a PR is judged against (fnmatch patterns); None: the
    # repository's default branch only. Read from the default branch's configuration.
    base_branches: tuple[str, ...] | None = None

    def for_suite(self, suite: Suite) -> Config:
        """This configuration as one suite sees it: the suite's generator, cases and gate."""
        return replace(self, cases=suite.cases, generator=suite.generator,
                       generator_options=suite.generator_options, watch=suite.watch,
                       gate=suite.gate, relevance=suite.relevance, suites=(), suite=suite.name)

    def suite_configs(self, selected: Sequence[str] = ()) -> list[Config]:
        """Each suite's configuration in the file's order (only `selected`, when given);
        without `suites:`, the top level alone. An unknown name is bad input."""
        if not self.suites:
            if selected:
                raise InputError(Problem(self.source, None, "--suite needs a 'suites:' section; "
                                         "this configuration has none"))
            return [self]
        names = [suite.name for suite in self.suites]
        unknown = [name for name in selected if name not in names]
        if unknown:
            raise InputError(Problem(self.source, None, f"no suite named {', '.join(unknown)} "
                                     f"(suites: {', '.join(names)})"))
        return [self.for_suite(suite) for suite in self.suites
                if not selected or suite.name in selected]

    def path_of(self, relative: str) -> str:
        """A config-relative path, joined to the config's directory (POSIX form)."""
        joined = PurePosixPath(self.directory) / relative
        return os.path.normpath(str(joined)).replace(os.sep, "/")


# --- validation helpers -------------------------------------------------------

_Check = Callable[[Any], str | None]


def _is_str(value: Any) -> str | None:
    return None if isinstance(value, str) and value.strip() else "must be a non-empty string"


def _api_versions_as_text(values: Any) -> None:
    """Every `api_version` that YAML read as a date (`api_version: 2024-10-21`, as
    Azure's docs write it) becomes its ISO text, wherever the key is accepted."""
    if isinstance(values, list):
        for item in values:
            _api_versions_as_text(item)
    elif isinstance(values, dict):
        for key, value in values.items():
            if key == "api_version" and isinstance(value, datetime.date):
                values[key] = value.isoformat()
            else:
                _api_versions_as_text(value)


def _is_bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _is_positive_int(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return None if ok else "must be a whole number above 0"


def _is_count(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return None if ok else "must be a whole number, 0 or more"


def _is_int(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool)
    return None if ok else "must be a whole number"


def _is_positive_number(value: Any) -> str | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return None if ok else "must be a number above 0"


def _is_unit_interval(value: Any) -> str | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1
    return None if ok else "must be a number from 0 to 1"


def _is_str_list(value: Any) -> str | None:
    ok = isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)
    return None if ok else "must be a list of non-empty strings"


def _one_of(choices: tuple[str, ...]) -> _Check:
    def check(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}"
    return check


# key -> check, for each section; None marks a nested section.
_SCHEMA: dict[str, Any] = {
    "version": lambda v: None if v == 1 else "must be 1",
    "cases": _is_str,
    "generator": {
        "path": _is_str,
        "template": _is_str,
        "python": generator_keys.check_python,
        "messages": None,  # checked by generator_keys.check_form
        "jinja": generator_keys.check_jinja,
        "format": _one_of(TEMPLATE_FORMATS),
        "system": _is_str,
        "model": _is_str,
        "parameters": lambda v: None if isinstance(v, dict) and all(isinstance(k, str) for k in v)
        else "must be a mapping of request body fields",
        "variables": lambda v: None if isinstance(v, dict) and all(
            isinstance(k, str) and isinstance(x, str) and k and x for k, x in v.items())
        else "must map template names to case fields (name: field)",
        "endpoint": {
            "provider": _one_of(ENDPOINT_PROVIDERS),
            "base_url": _is_str,
            "azure_endpoint": _is_str,
            "api_version": _is_str,
            "deployment": _is_str,
            "model": _is_str,
            "auth": _one_of(AUTHS),
        },
        "strict_undefined": _is_bool,
        "command": _is_str,
        "setup": _is_str,
        "env": _is_str_list,
        "timeout": _is_positive_number,
        "watch": _is_str_list,
    },
    "watch": _is_str_list,
    "concurrency": _is_positive_int,
    "judge": {
        "provider": _one_of(PROVIDERS),
        "model": _is_str,
        "engine": _one_of(ENGINES),
        "mode": _one_of(JUDGE_MODES),
        "base_url": _is_str,
        "azure_endpoint": _is_str,
        "api_version": _is_str,
        "auth": _one_of(AUTHS),
        "reasoning": _is_bool,
        "timeout": _is_positive_number,
        "max_retries": _is_count,
        "max_wait": _is_positive_number,
        "seed": _is_int,
        "second_opinion": {
            "model": _is_str,
            "deployment": _is_str,
            "mode": _one_of(SECOND_OPINION_MODES),
            "provider": _one_of(PROVIDERS),
            "base_url": _is_str,
            "azure_endpoint": _is_str,
            "api_version": _is_str,
            "reasoning": _is_bool,
            "timeout": _is_positive_number,
            "max_retries": _is_count,
            "engine": _one_of(SECOND_OPINION_ENGINES),
            "azure_ai_project": lambda v: None if isinstance(v, str) and v.startswith("https://")
            else "must be the project's https:// endpoint "
                 "(https://RESOURCE.services.ai.azure.com/api/projects/PROJECT)",
        },
    },
    "gate": {"blocking_categories": _is_str_list, "min_cases_per_category": _is_positive_int,
             "strict": _is_bool, "base_branches": _is_str_list, "review": _one_of(REVIEW_MODES)},
    "relevance": {
        "threshold": _is_unit_interval,
        "embedding_model": _is_str,
        "questions": _is_positive_int,
        "embedding_batch": _is_positive_int,
    },
    "budget": {"max_requests": _is_positive_int, "max_tokens": _is_positive_int,
               "completion_ceiling": _is_positive_int},
    "e2e": {
        "command": _is_str,
        "url": lambda v: None if isinstance(v, str) and v.startswith(("http://", "https://"))
        else "must be an http:// or https:// URL",
        "headers": lambda v: None if isinstance(v, dict) and all(
            isinstance(k, str) and isinstance(x, str) for k, x in v.items())
        else "must map header names to strings",
        "timeout": _is_positive_number,
        "env": _is_str_list,
        "enabled": _is_bool,
    },
    "status": _one_of(STATUS_MODES),
    "suites": None,  # checked by _suite_entries: a list of suites, or a mapping name -> suite
}

# What a suite may set; the rest (judge, budget, concurrency) is the run's.
_SUITE_SCHEMA: dict[str, Any] = {
    "generator": _SCHEMA["generator"],  # a path, or the mapping form
    "cases": _is_str,
    "watch": _is_str_list,
    # The trusted bases and the review are the run's, never a suite's.
    "gate": {key: check for key, check in _SCHEMA["gate"].items() if key not in ("base_branches", "review")},
    "relevance": {"threshold": _is_unit_interval},
}


def parse_config(text: str, *, source: str = DEFAULT_CONFIG, directory: str = ".") -> Config:
    """Validate the text of a `.flipgate.yml`; `source` names it in messages."""
    loaded, lines = load_yaml_located(text, source=source)
    problems: list[Problem] = []

    def problem(path: tuple[str, ...], message: str) -> None:
        line = lines.get(path)
        if line is None and len(path) > 1:
            line = lines.get(path[:-1])
        problems.append(Problem(source, line or (1 if not path else None), message))

    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise InputError(Problem(source, 1, "must be a mapping of settings (key: value)"))
    data: dict[str, Any] = loaded
    _api_versions_as_text(data)

    def check_section(values: dict[Any, Any], schema: dict[str, Any], path: tuple[str, ...]) -> None:
        for key, value in values.items():
            here = (*path, str(key))
            dotted = ".".join(here)
            if key not in schema:
                problem(here, f"unknown key '{dotted}' (known: {', '.join(schema)})")
                continue
            rule = schema[key]
            if rule is None:
                continue  # a section with its own check
            if key == "generator" and isinstance(value, str):
                rule = _is_str  # the short form: just the path (at the top or in a suite)
            if isinstance(rule, dict):
                if not isinstance(value, dict):
                    problem(here, f"'{dotted}' must be a mapping")
                else:
                    check_section(value, rule, here)
            elif (message := rule(value)) is not None:
                problem(here, f"'{dotted}' {message}")

    check_section(data, _SCHEMA, ())
    suites = _suite_entries(data.get("suites"), problem, lines) if "suites" in data else []
    for name, values, here in suites:
        check_section(values, _SUITE_SCHEMA, here)
        if "cases" not in values and "cases" not in data:
            problem(here, f"suite '{name}' has no 'cases' (set it here or at the top level)")
    if "cases" not in data and "suites" not in data:
        problems.append(Problem(source, 1, "missing required key 'cases'"))
    if data.get("status") == STATUS_PER_SUITE and "suites" not in data:
        problem(("status",), "'status' per-suite needs a 'suites:' section")

    judge_section = data.get("judge")
    judge_values: dict[str, Any] = judge_section if isinstance(judge_section, dict) else {}
    provider = judge_values.get("provider", "offline")
    if provider in ENDPOINT_PROVIDERS and "model" not in judge_values:
        problem(("judge",), f"'judge.model' is required for provider {provider} (pin the judge)")
    if judge_values.get("engine") == AZURE_ENGINE and provider not in ("openai", "azure"):
        problem(("judge", "engine"), "'judge.engine' azure-ai-evaluation needs provider openai or azure")
    if judge_values.get("auth") == AUTH_ENTRA and provider != "azure":
        problem(("judge", "auth"), "'judge.auth' entra signs in to Azure: it needs provider azure")
    generator_values = data.get("generator")
    endpoint_values = generator_values.get("endpoint") if isinstance(generator_values, dict) else None
    if isinstance(endpoint_values, dict) and endpoint_values.get("auth") == AUTH_ENTRA \
            and endpoint_values.get("provider", "azure") != "azure":
        problem(("generator", "endpoint", "auth"),
                "'generator.endpoint.auth' entra signs in to Azure: it needs provider azure")
    for where, form_values in [(("generator",), generator_values),
                               *(((*here, "generator"), v.get("generator")) for _, v, here in suites)]:
        if isinstance(form_values, dict):
            generator_keys.check_form(form_values, where, problem)
            generator_keys.check_command(form_values, where, problem)
    second_values = judge_values.get("second_opinion")
    if isinstance(second_values, dict):
        _check_second_opinion(second_values, judge_values, problem)
    e2e_values = data.get("e2e")
    if isinstance(e2e_values, dict) and ("command" in e2e_values) == ("url" in e2e_values):
        problem(("e2e",), "'e2e' needs exactly one of 'command' (query on stdin, context on "
                          "stdout) and 'url' (an HTTP retrieval endpoint)")
    if problems:
        raise InputError(problems)

    def section(name: str) -> dict[str, Any]:
        value = data.get(name)
        return dict(value) if isinstance(value, dict) else {}

    judge = section("judge")
    if judge.get("provider", "offline") == "offline":
        judge.setdefault("model", JudgeConfig.model)
    if isinstance(judge.get("second_opinion"), dict):
        second = dict(judge["second_opinion"])
        if "deployment" in second:
            second["model"] = second.pop("deployment")
        judge["second_opinion"] = SecondOpinionConfig(**second)
    gate = section("gate")
    base_branches = gate.pop("base_branches", None)
    if "blocking_categories" in gate:
        gate["blocking_categories"] = tuple(gate["blocking_categories"])
        gate["declared"] = ("gate.blocking_categories",
                            lines.get(("gate", "blocking_categories"), 1))
    relevance = section("relevance")
    if "threshold" in relevance:
        relevance["threshold"] = float(relevance["threshold"])
    generator, options = _generator_of(data.get("generator"))

    def suite_of(name: str, values: dict[str, Any], here: tuple[str, ...]) -> Suite:
        own_gate = {**gate, **(values.get("gate") or {})}
        if "blocking_categories" in (values.get("gate") or {}):
            own_gate["blocking_categories"] = tuple(own_gate["blocking_categories"])
            own_gate["declared"] = (f"suites.{name}.gate.blocking_categories",
                                    lines.get((*here, "gate", "blocking_categories"), 1))
        own_relevance = {**relevance, **(values.get("relevance") or {})}
        own_relevance["threshold"] = float(own_relevance.get("threshold", RelevanceConfig.threshold))
        own_generator, own_options = ((generator, options) if "generator" not in values
                                      else _generator_of(values["generator"]))
        return Suite(name=name, cases=values.get("cases", data.get("cases", "")),
                     generator=own_generator, generator_options=own_options,
                     watch=tuple(values.get("watch", data.get("watch") or ())),
                     gate=GateConfig(**own_gate), relevance=RelevanceConfig(**own_relevance))

    e2e = None
    if "e2e" in data:
        values = section("e2e")
        e2e = E2EConfig(command=values.get("command"), url=values.get("url"),
                        headers=tuple((values.get("headers") or {}).items()),
                        timeout=float(values.get("timeout", E2EConfig.timeout)),
                        env=tuple(values.get("env") or ()), enabled=values.get("enabled", True))
    return Config(
        source=source,
        cases=data.get("cases", ""),
        generator=generator,
        generator_options=options,
        watch=tuple(data.get("watch") or ()),
        judge=JudgeConfig(**judge),
        gate=GateConfig(**gate),
        relevance=RelevanceConfig(**relevance),
        budget=BudgetConfig(**section("budget")),
        e2e=e2e,
        concurrency=data.get("concurrency", DEFAULT_CONCURRENCY),
        directory=directory,
        suites=tuple(suite_of(name, values, here) for name, values, here in suites),
        status=data.get("status", STATUS_SINGLE),
        base_branches=tuple(base_branches) if base_branches is not None else None,
    )


def generator_form(path: str | None, options: GeneratorOptions) -> str:
    """The form a generator path is read in."""
    if options.form != FORM_PROMPTY:
        return options.form
    return FORM_GITHUB if path and path.endswith(GITHUB_PROMPT_SUFFIXES) else FORM_PROMPTY


def _generator_of(value: Any) -> tuple[str | None, GeneratorOptions]:
    """`generator:` as its path and options: a path alone, or the mapping form."""
    if not isinstance(value, dict):
        return value, GeneratorOptions(form=generator_form(value, GeneratorOptions()))
    endpoint = value.get("endpoint")
    command = None
    if "command" in value:
        command = CommandConfig(command=value["command"], watch=tuple(value.get("watch") or ()),
                                setup=value.get("setup"), env=tuple(value.get("env") or ()),
                                timeout=float(value.get("timeout", CommandConfig.timeout)))
    path, constant, form = value.get("path"), None, FORM_PROMPTY
    messages = generator_keys.messages_of(value.get("messages"))
    if "template" in value:
        path, form = value["template"], FORM_TEMPLATE
    elif "python" in value:
        path, constant = generator_keys.split_python(value["python"])
        form = FORM_PYTHON
    elif (first := generator_keys.first_file(messages)) is not None:
        path, form = first[1], FORM_MESSAGES
    options = GeneratorOptions(
        endpoint=EndpointConfig(**{k: str(v) for k, v in endpoint.items()}) if endpoint else None,
        strict_undefined=value.get("strict_undefined", True), form=form, constant=constant,
        format=value.get("format"), system=value.get("system"), model=value.get("model"),
        parameters=dict(value.get("parameters") or {}),
        variables=tuple((value.get("variables") or {}).items()), command=command,
        messages=messages, jinja=tuple((value.get("jinja") or {}).items()))
    return path, replace(options, form=generator_form(path, options))


_Entry = tuple[str, dict[Any, Any], tuple[str, ...]]  # name, settings, where in the file


def _suite_entries(value: Any, problem: Callable[[tuple[str, ...], str], None],
                   lines: dict[tuple[str, ...], int]) -> list[_Entry]:
    """The suites as (name, settings, path): from a list of mappings with a `name`, or a
    mapping name -> settings. Names must be unique and fit a commit status context.
    A listed suite's keys are located by its name too, so messages say `suites.NAME.key`."""
    here = ("suites",)
    entries: list[_Entry] = []
    if isinstance(value, list):
        for index, item in enumerate(value):
            where: tuple[str, ...] = (*here, str(index))
            if not isinstance(item, dict) or "name" not in item:
                problem(where, f"'suites' item {index + 1} must be a mapping with a 'name'")
                continue
            name = item["name"]
            if isinstance(name, str) and ("suites", name) not in lines:
                for path, line in list(lines.items()):
                    if path[:2] == where:
                        lines[("suites", name, *path[2:])] = line
                lines[("suites", name)] = lines.get(where, 1)
                where = ("suites", name)
            entries.append((name, {k: v for k, v in item.items() if k != "name"}, where))
    elif isinstance(value, dict):
        for name, item in value.items():
            where = (*here, str(name))
            if item is None:
                item = {}
            if not isinstance(item, dict):
                problem(where, f"'suites.{name}' must be a mapping")
                continue
            entries.append((name, item, where))
    else:
        problem(here, "'suites' must be a list of suites (each with a 'name') or a mapping "
                      "name -> suite")
        return []
    if not value:
        problem(here, "'suites' names no suite")
    seen: set[str] = set()
    valid: list[tuple[str, dict[Any, Any], tuple[str, ...]]] = []
    for name, item, where in entries:
        if not isinstance(name, str) or not SUITE_NAME.fullmatch(name):
            problem(where, f"suite name {name!r} must be letters, digits, '.', '_' or '-' "
                           "(at most 63, starting with a letter or digit)")
            continue
        if name in seen:
            problem(where, f"suite '{name}' is named twice")
            continue
        seen.add(name)
        valid.append((name, item, where))
    return valid


def _check_second_opinion(second: dict[Any, Any], judge: dict[Any, Any],
                          problem: Callable[[tuple[str, ...], str], None]) -> None:
    """A second opinion names its judge, and is a different judge from the first."""
    here = ("judge", "second_opinion")
    if second.get("engine") == GROUNDEDNESS_PRO or "azure_ai_project" in second:
        _check_groundedness_pro(second, judge, problem)
        return
    own_provider = second.get("provider")
    if "model" in second and "deployment" in second:
        problem(here, "'judge.second_opinion' takes model or deployment, not both")
    named = second.get("model", second.get("deployment"))
    if own_provider != "offline" and named is None:
        problem(here, "'judge.second_opinion' needs a model (azure: deployment) for the second judge")
    if own_provider is None and judge.get("provider", "offline") == "offline":
        problem(here, "'judge.second_opinion' without its own provider shares the judge's endpoint, "
                      "and the offline judge has none: give it a provider")
    if own_provider is None:
        for key in ("base_url", "azure_endpoint", "api_version"):
            if key in second:
                problem((*here, key), f"'judge.second_opinion.{key}' needs its own "
                                      "'judge.second_opinion.provider'")
    same_endpoint = own_provider is None or (
        own_provider == judge.get("provider", "offline")
        and all(second.get(k) == judge.get(k) for k in ("base_url", "azure_endpoint", "api_version")))
    if same_endpoint and named is not None and named == judge.get("model"):
        problem(here, "'judge.second_opinion' must be a different judge: it names the judge's own "
                      f"model {named!r} on the same endpoint")


def _check_groundedness_pro(second: dict[Any, Any], judge: dict[Any, Any],
                            problem: Callable[[tuple[str, ...], str], None]) -> None:
    """The Azure AI service's verdict: an Azure run, a project to ask, and no chat model."""
    here = ("judge", "second_opinion")
    if second.get("engine") != GROUNDEDNESS_PRO:
        problem((*here, "azure_ai_project"), "'judge.second_opinion.azure_ai_project' is for "
                                             f"'engine: {GROUNDEDNESS_PRO}'")
        return
    if judge.get("provider", "offline") != "azure" or second.get("provider", "azure") != "azure":
        where = (*here, "provider") if "provider" in second else (*here, "engine")
        problem(where, f"'judge.second_opinion.engine' {GROUNDEDNESS_PRO} is an Azure AI service: "
                       "it needs 'judge.provider: azure'")
    if "azure_ai_project" not in second:
        problem((*here, "engine"), f"'judge.second_opinion.engine' {GROUNDEDNESS_PRO} needs "
                                   "'azure_ai_project' (https://RESOURCE.services.ai.azure.com/"
                                   "api/projects/PROJECT)")
    for key in ("model", "deployment", "base_url", "azure_endpoint", "api_version", "reasoning"):
        if key in second:
            problem((*here, key), f"'judge.second_opinion.{key}' does not apply to "
                                  f"'engine: {GROUNDEDNESS_PRO}' (the service picks its own model)")


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a configuration file from the working tree."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise InputError(Problem(str(path), None, "configuration file not found")) from None
    except OSError as exc:
        raise InputError(Problem(str(path), None, f"cannot read: {exc.strerror}")) from None
    return parse_config(decode_utf8(raw, str(path)), source=str(path), directory=str(file.parent))
