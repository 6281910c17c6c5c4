"""The action's settings: what the runner hands over in the environment, validated once.

GitHub passes action inputs as `INPUT_<NAME>` with the name upper-cased and
its hyphens kept (`INPUT_GITHUB-TOKEN`); a POSIX shell cannot even see such
variables, so they are read here, from Python. An input left empty counts as
absent. Secrets are fields hidden from `repr`, so a crash log never shows one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from flipgate.config.schema import DEFAULT_CONFIG
from flipgate.errors import InputError, Problem
from flipgate.github.event import ForkPolicy
from flipgate.github.sticky import CommentMode
from flipgate.output.links import Links, artifact_page, run_url
from flipgate.text.escaping import safe_url

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"
DEFAULT_STATUS_CONTEXT = "flipgate"
E = TypeVar("E", bound=StrEnum)
# Input name -> the variable the openai client reads for the length of the run.
KEY_INPUTS = {"openai-api-key": "OPENAI_API_KEY", "azure-openai-api-key": "AZURE_OPENAI_API_KEY"}
# The Entra app registration whose federated credential trusts this repository's OIDC
# tokens (`auth: entra`): identifiers, not secrets, set where azure-identity looks too.
ENTRA_INPUTS = {"azure-client-id": "AZURE_CLIENT_ID", "azure-tenant-id": "AZURE_TENANT_ID"}


def input_value(environ: Mapping[str, str], name: str) -> str | None:
    """An action input as the runner passes it (`INPUT_` + upper-cased name), or None."""
    value = environ.get(f"INPUT_{name.upper()}", "").strip()
    return value or None


@dataclass(frozen=True)
class Settings:
    event_name: str
    event_path: Path
    repository: str                 # owner/name
    token: str = field(repr=False)
    api_url: str = DEFAULT_API_URL
    server_url: str = DEFAULT_SERVER_URL
    run_id: str | None = None
    workspace: Path = Path(".")
    config: str = DEFAULT_CONFIG
    status_context: str = DEFAULT_STATUS_CONTEXT
    fork_policy: ForkPolicy = ForkPolicy.REQUIRE_COMMAND
    comment_mode: CommentMode = CommentMode.ALWAYS
    pr_number: int | None = None     # which PR a `workflow_dispatch` run evaluates
    shard: str | None = None  # "i/n": evaluate one part and write a partial, post nothing
    merge: str | None = None  # a workspace folder of partials: merge them, then comment and status
    # Input name -> value, for the model keys passed as inputs (never printed).
    model_keys: Mapping[str, str] = field(default_factory=dict, repr=False)
    # Input name -> value: the Entra app registration and its tenant (both or neither).
    entra_app: Mapping[str, str] = field(default_factory=dict)
    report_url: str | None = None  # where the workflow serves report.html (input report-url)
    relink: str | None = None  # this run's artifact of report.html: only relink the comment to it

    @property
    def owner(self) -> str:
        return self.repository.split("/", 1)[0]

    @property
    def run_url(self) -> str | None:
        """The workflow run's page: the commit status's target URL."""
        return run_url(self.server_url, self.repository, self.run_id)

    @property
    def links(self) -> Links:
        """Where the comment links the run and report.html (its rows, with `report-url`)."""
        return Links(run=self.run_url, report=self.report_url)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Read and check every setting; all problems are reported together."""
        problems: list[Problem] = []

        def required(name: str) -> str:
            value = environ.get(name, "").strip()
            if not value:
                problems.append(Problem("environment", None,
                                        f"{name} is not set; is this running in GitHub Actions?"))
            return value

        event_name = required("GITHUB_EVENT_NAME")
        event_path = required("GITHUB_EVENT_PATH")
        repository = required("GITHUB_REPOSITORY")
        if repository and repository.count("/") != 1:
            problems.append(Problem("environment", None, "GITHUB_REPOSITORY should read "
                                    f"owner/name, not {repository!r}"))
        token = input_value(environ, "github-token") or environ.get("GITHUB_TOKEN", "").strip()
        if not token:
            problems.append(Problem("input github-token", None,
                                    "no token: pass `github-token` (default: the workflow's "
                                    "GITHUB_TOKEN)"))
        fork_policy = _choice(environ, "fork-policy", ForkPolicy, ForkPolicy.REQUIRE_COMMAND,
                              problems)
        comment_mode = _choice(environ, "comment", CommentMode, CommentMode.ALWAYS, problems)
        pr_text = input_value(environ, "pr-number")
        pr_number = None
        if pr_text is not None:
            digits = pr_text.lstrip("#")
            if digits.isascii() and digits.isdigit() and int(digits) > 0:
                pr_number = int(digits)
            else:
                problems.append(Problem("input pr-number", None,
                                        f"expected a pull request number, got {pr_text!r}"))
        shard, merge = input_value(environ, "shard"), input_value(environ, "merge")
        if shard is not None:
            from flipgate.run.shards import Shard

            try:
                Shard.parse(shard)
            except InputError as exc:
                first = exc.problems[0]
                problems.append(Problem("input shard", None, first.message if isinstance(first, Problem) else first))
        if shard is not None and merge is not None:
            problems.append(Problem("input merge", None, "a job either evaluates a shard or merges "
                                                         "the partials, not both"))
        entra_app = {name: value for name in ENTRA_INPUTS
                     if (value := input_value(environ, name)) is not None}
        if len(entra_app) == 1:
            given, = entra_app
            missing = next(name for name in ENTRA_INPUTS if name != given)
            problems.append(Problem(f"input {missing}", None,
                                    f"`{given}` is set without `{missing}`: Entra ID sign-in from "
                                    "GitHub's OIDC token needs both"))
        report_url = input_value(environ, "report-url")
        if report_url is not None and safe_url(report_url) is None:
            problems.append(Problem("input report-url", None, "expected the http(s) URL of "
                                    f"report.html, got {report_url!r}"))
        server_url = _url(environ, "GITHUB_SERVER_URL", DEFAULT_SERVER_URL)
        run_id = environ.get("GITHUB_RUN_ID", "").strip() or None
        relink = input_value(environ, "relink")
        if relink is not None and artifact_page(relink, run=run_url(server_url, repository, run_id)) is None:
            problems.append(Problem("input relink", None, "expected the artifact-url of this run's "
                                    f"upload of report.html ({server_url}/{repository}/actions/runs/"
                                    f"{run_id}/artifacts/ID), got {relink!r}"))
        if problems:
            raise InputError(problems)

        keys = {name: value for name in KEY_INPUTS
                if (value := input_value(environ, name)) is not None}
        return cls(
            event_name=event_name,
            event_path=Path(event_path),
            repository=repository,
            token=token,
            api_url=_url(environ, "GITHUB_API_URL", DEFAULT_API_URL),
            server_url=server_url,
            run_id=run_id,
            workspace=Path(environ.get("GITHUB_WORKSPACE", "").strip() or "."),
            config=input_value(environ, "config") or DEFAULT_CONFIG,
            status_context=input_value(environ, "status-context") or DEFAULT_STATUS_CONTEXT,
            fork_policy=fork_policy,
            comment_mode=comment_mode,
            pr_number=pr_number,
            shard=shard,
            merge=merge,
            model_keys=keys,
            entra_app=entra_app,
            report_url=report_url,
            relink=relink,
        )


def _choice(environ: Mapping[str, str], name: str, kind: type[E], default: E,
            problems: list[Problem]) -> E:
    """An input that must be one of an enum's values; a wrong one is a problem, not a guess."""
    text = input_value(environ, name) or default.value
    try:
        return kind(text)
    except ValueError:
        choices = " or ".join(f"`{member.value}`" for member in kind)
        problems.append(Problem(f"input {name}", None, f"expected {choices}, got {text!r}"))
        return default


def _url(environ: Mapping[str, str], name: str, default: str) -> str:
    return (environ.get(name, "").strip() or default).rstrip("/")


def export_model_keys(settings: Settings, environ: MutableMapping[str, str], *,
                      mask: Callable[[str], None]) -> list[str]:
    """Mask the keys passed as inputs, then export them where the openai client looks,
    and the Entra app registration's ids where the sign-in (llm/entra.py) looks.

    Returns the names of the variables set. The GitHub token is masked too:
    the runner already hides `secrets.*`, but a token passed some other way
    would not be.
    """
    mask(settings.token)
    exported = []
    for input_name, variable in KEY_INPUTS.items():
        value = settings.model_keys.get(input_name)
        if value is not None:
            mask(value)
            environ[variable] = value
            exported.append(variable)
    for input_name, variable in ENTRA_INPUTS.items():
        if (value := settings.entra_app.get(input_name)) is not None:
            environ[variable] = value
            exported.append(variable)
    return exported
