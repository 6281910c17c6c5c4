"""What a run takes from its environment, read once at the edge and passed down.

The commands (`commands/`) and the action's entrypoint (`github/action.py`)
build `Settings` from the process environment; nothing below them reads
the process environment. Keys are never shown by `repr`, so a crash log cannot leak one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

# Variables an application's model client reads (its key, endpoint, API version, tracing):
# when the application's code fails, those set here that `generator.env` did not pass are named.
APP_VARIABLE_PREFIXES = ("OPENAI_", "AZURE_OPENAI_", "AZURE_AI_", "ANTHROPIC_", "MISTRAL_",
                         "GEMINI_", "GOOGLE_API_KEY", "COHERE_", "GROQ_", "OLLAMA_", "HF_",
                         "HUGGINGFACE", "LANGCHAIN_", "LANGSMITH_", "LLAMA_CLOUD_")


# A caller's GIT_DIR & co. would silently point git at another repository.
_GIT_VARIABLES_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                          "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE")


# The runner's paths a confined command (the application's code, a retriever) must never
# reach: the workspace (its `.git/config` may hold the checkout's credential), the files
# the runner reads back after the step (outputs, summary, environment, path, state), the
# event, the runner's temporary directory and flipgate's HOME. `fence.closed_to_others`
# closes them while such a command runs.
_RUNNER_PATHS = ("GITHUB_WORKSPACE", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV",
                 "GITHUB_PATH", "GITHUB_STATE", "GITHUB_EVENT_PATH", "RUNNER_TEMP", "HOME")


def private_paths(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """The runner's paths the environment names (`_RUNNER_PATHS`), absolute ones only."""
    named = (environ.get(name, "") for name in _RUNNER_PATHS)
    return tuple(Path(value) for value in named if value.startswith("/"))


@dataclass(frozen=True)
class Settings:
    # A snapshot of the environment: the generator's `${env:NAME}` values and git's
    # environment come from it, and the named properties below.
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Settings:
        return cls(environ=MappingProxyType(dict(environ)))

    def withheld(self, passed: Sequence[str]) -> list[str]:
        """The names (never the values) of model-client variables set in this environment
        that are not in `passed` (`generator.env`): the application's code does not get them."""
        listed = {name.upper() for name in passed}
        return sorted(name for name in self.environ
                      if name.upper().startswith(APP_VARIABLE_PREFIXES) and name.upper() not in listed)

    def _get(self, name: str) -> str | None:
        return self.environ.get(name) or None

    @property
    def openai_api_key(self) -> str | None:
        return self._get("OPENAI_API_KEY")

    @property
    def azure_openai_api_key(self) -> str | None:
        return self._get("AZURE_OPENAI_API_KEY")

    @property
    def github_models_token(self) -> str | None:
        """GitHub Models' token: the action's `github-token` input, else GITHUB_TOKEN. Sent
        only to the `github` provider's endpoint (llm/endpoints.github_endpoint)."""
        return (self.environ.get("INPUT_GITHUB-TOKEN", "").strip()
                or self.environ.get("GITHUB_TOKEN", "").strip() or None)

    @property
    def openai_base_url(self) -> str | None:
        return self._get("OPENAI_BASE_URL")

    @property
    def azure_openai_endpoint(self) -> str | None:
        return self._get("AZURE_OPENAI_ENDPOINT")

    @property
    def openai_api_version(self) -> str | None:
        return self._get("OPENAI_API_VERSION")

    # Microsoft Entra ID (`auth: entra`, llm/entra.py). In GitHub Actions the runner offers
    # an OIDC token when the workflow grants `id-token: write`; the action's azure-client-id
    # and azure-tenant-id inputs arrive as AZURE_CLIENT_ID / AZURE_TENANT_ID.
    @property
    def github_oidc_request_url(self) -> str | None:
        return self._get("ACTIONS_ID_TOKEN_REQUEST_URL")

    @property
    def github_oidc_request_token(self) -> str | None:
        return self._get("ACTIONS_ID_TOKEN_REQUEST_TOKEN")

    @property
    def azure_client_id(self) -> str | None:
        return self._get("AZURE_CLIENT_ID")

    @property
    def azure_tenant_id(self) -> str | None:
        return self._get("AZURE_TENANT_ID")

    # The workflow run, for the comment's links (output/links.run_url); unset outside Actions.
    @property
    def github_server_url(self) -> str | None:
        return self._get("GITHUB_SERVER_URL")

    @property
    def github_repository(self) -> str | None:
        return self._get("GITHUB_REPOSITORY")

    @property
    def github_run_id(self) -> str | None:
        return self._get("GITHUB_RUN_ID")

    @property
    def github_actions(self) -> bool:
        """GITHUB_ACTIONS: running as a step of a GitHub Actions job."""
        return self._get("GITHUB_ACTIONS") == "true"

    @property
    def azure_client_secret_set(self) -> bool:
        """Whether azure-identity's own client secret or token file is configured (not the value)."""
        return bool(self._get("AZURE_CLIENT_SECRET") or self._get("AZURE_CLIENT_CERTIFICATE_PATH")
                    or self._get("AZURE_FEDERATED_TOKEN_FILE"))

    @property
    def azure_authority_host(self) -> str | None:
        """AZURE_AUTHORITY_HOST: another cloud's Entra authority (login.microsoftonline.com by default)."""
        return self._get("AZURE_AUTHORITY_HOST")

    @property
    def entra_retries(self) -> str | None:
        """FLIPGATE_ENTRA_RETRIES: how often azure-identity retries a sign-in request the
        authority did not answer (its own policy when unset); `llm/entra.py` reads the number."""
        return self._get("FLIPGATE_ENTRA_RETRIES")

    @property
    def cache_key(self) -> str | None:
        """FLIPGATE_CACHE_KEY: a secret (a repository secret, in CI) that signs the reply cache."""
        return self._get("FLIPGATE_CACHE_KEY")

    @property
    def cache_key_file(self) -> Path:
        """Where the generated cache key is kept when no secret is given: FLIPGATE_CACHE_KEY_FILE,
        else the user's cache directory (in the Docker action, the job's home, outside the
        workspace)."""
        if named := self._get("FLIPGATE_CACHE_KEY_FILE"):
            return Path(named)
        base = self._get("XDG_CACHE_HOME") or str(Path(self._get("HOME") or "~").expanduser()
                                                  / ".cache")
        return Path(base) / "flipgate" / "cache.key"

    @property
    def debug(self) -> bool:
        """FLIPGATE_DEBUG: let unexpected exceptions through with their traceback."""
        return bool(self._get("FLIPGATE_DEBUG"))

    def git_environment(self) -> dict[str, str]:
        """The environment git runs in: this one without the variables that redirect it,
        never prompting, never taking optional locks, messages in English."""
        env = {k: v for k, v in self.environ.items() if k not in _GIT_VARIABLES_DROPPED}
        env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
        return env
