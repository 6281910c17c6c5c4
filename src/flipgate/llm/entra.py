"""Microsoft Entra ID sign-in (`auth: entra`): bearer tokens from azure-identity.

Locally, DefaultAzureCredential finds the sign-in (`az login`, a managed identity, a
workload identity token file, the AZURE_CLIENT_* variables). In GitHub Actions a Docker
action cannot see the runner's `az login`; when the runner offers an OIDC token (the
workflow grants `id-token: write`) and the action has `azure-client-id` and
`azure-tenant-id`, that token is exchanged for an Entra token through the app
registration's federated credential (ClientAssertionCredential). Its assertion is
fetched fresh each time a new Entra token is needed, so a long run keeps signing in;
azure-core's bearer policy renews a token before it expires.

Tokens and assertions live only in memory, inside the credential: never logged, never
in the response cache (it keys on request bodies, which hold none), never in a report.
They go only to clients of endpoints the base named (the judge's, the base-locked
generator's, the GroundednessPro project).

A sign-in that fails, in any way azure-identity can fail (refused, no credential found, an
authority that is not an https:// URL, a host nobody answers on, a certificate nobody
trusts), is one line and exit 3 (`IncompleteError`): the authority, what was tried, and how
to fix it. azure-identity is imported only when a token is first needed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flipgate.errors import IncompleteError, InputError
from flipgate.settings import Settings

if TYPE_CHECKING:
    import httpx

COGNITIVE_SERVICES_SCOPE = "https://cognitiveservices.azure.com/.default"  # Azure OpenAI
AI_SERVICES_SCOPE = "https://ai.azure.com/.default"  # the Azure AI evaluation service
GITHUB_AUDIENCE = "api://AzureADTokenExchange"        # what Entra expects of a GitHub token
INSTALL_HINT = "pip install 'flipgate[azure]' (or build the action's image WITH_AZURE=true)"
HOW_TO_FIX = ("sign in with `az login`, or set AZURE_CLIENT_ID and AZURE_TENANT_ID with a "
              "workload identity or managed identity; in GitHub Actions pass azure-client-id and "
              "azure-tenant-id and grant `permissions: id-token: write`")
_MESSAGE_LIMIT = 300
DEFAULT_AUTHORITY = "login.microsoftonline.com"


class SignInError(IncompleteError):
    """No Entra ID token could be had: the run cannot finish (exit 3)."""


class EntraSignIn:
    """One run's Entra ID credential, built on first use and shared by every client."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._lock = threading.Lock()
        self._credential: _Translated | None = None

    @property
    def federated(self) -> bool:
        """GitHub's OIDC token, exchanged for the app registration named by the action."""
        s = self.settings
        return bool(s.github_oidc_request_url and s.github_oidc_request_token
                    and s.azure_client_id and s.azure_tenant_id)

    @property
    def method(self) -> str:
        if self.federated:
            return (f"a federated credential from GitHub's OIDC token (client "
                    f"{self.settings.azure_client_id}, tenant {self.settings.azure_tenant_id})")
        return "DefaultAzureCredential"

    @property
    def authority(self) -> str:
        """The Entra authority signed in at, as the environment names it."""
        return self.settings.azure_authority_host or f"{DEFAULT_AUTHORITY} (the default)"

    def credential(self) -> Any:
        """An azure-core TokenCredential whose failures are one-line `SignInError`s."""
        with self._lock:
            if self._credential is None:
                try:
                    inner = self._build()
                except (SignInError, InputError):
                    raise
                except Exception as exc:  # azure-identity refusing its own settings
                    raise SignInError(describe_unreachable(exc, self)) from None
                self._credential = _Translated(inner, self)
            return self._credential

    def token_provider(self, scope: str = COGNITIVE_SERVICES_SCOPE) -> Callable[[], str]:
        """A callable returning a current bearer token (the openai client's
        `azure_ad_token_provider`); renewed before it expires."""
        identity = _import_identity()
        return identity.get_bearer_token_provider(self.credential(), scope)

    def check(self, scope: str = COGNITIVE_SERVICES_SCOPE) -> None:
        """Get one token now, so a missing sign-in stops the run before any work."""
        self.credential().get_token(scope)

    def close(self) -> None:
        with self._lock:
            if self._credential is not None:
                self._credential.close()
                self._credential = None

    def _build(self) -> Any:
        identity = _import_identity()
        s = self.settings
        if s.github_actions and s.azure_client_id and s.azure_tenant_id and not self.federated \
                and not s.azure_client_secret_set:
            raise SignInError("auth entra: azure-client-id is set but the runner offers no OIDC "
                              "token: grant the job `permissions: id-token: write` (a pull "
                              "request from a fork gets none; see docs/azure.md)")
        retries = self._retries()
        if self.federated:
            options = {"authority": s.azure_authority_host} if s.azure_authority_host else {}
            return identity.ClientAssertionCredential(
                tenant_id=s.azure_tenant_id, client_id=s.azure_client_id,
                func=self._github_assertion, **options, **retries)
        return identity.DefaultAzureCredential(**retries)

    def _retries(self) -> dict[str, int]:
        """azure-core's retry bound for the sign-in's requests (`retry_total`), when the
        environment sets one: its default policy otherwise (three retries of a request
        nobody answered, about five seconds of backoff)."""
        text = self.settings.entra_retries
        if text is None:
            return {}
        if not text.strip().isdigit():
            raise InputError(f"FLIPGATE_ENTRA_RETRIES must be a whole number of retries, not {text[:40]!r}")
        return {"retry_total": int(text)}

    def _github_assertion(self) -> str:
        """A fresh OIDC token from the runner, for Entra's token exchange. Its text is
        never put in a message: a failure names only the status and GitHub's words."""
        import httpx

        s = self.settings
        assert s.github_oidc_request_url and s.github_oidc_request_token
        url = httpx.URL(s.github_oidc_request_url).copy_merge_params({"audience": GITHUB_AUDIENCE})
        headers = {"Authorization": f"Bearer {s.github_oidc_request_token}",
                   "Accept": "application/json"}
        try:
            with httpx.Client(timeout=30.0) as client:
                response = client.get(url, headers=headers)
        except httpx.HTTPError as exc:
            raise SignInError(f"auth entra: could not ask GitHub for an OIDC token "
                              f"({type(exc).__name__}); {HOW_TO_FIX}") from None
        value = None
        if response.status_code == 200:
            try:
                value = response.json().get("value")
            except (ValueError, AttributeError):
                value = None
        if not isinstance(value, str) or not value:
            said = _github_message(response)
            raise SignInError(f"auth entra: GitHub gave no OIDC token (HTTP {response.status_code}"
                              f"{': ' + said if said else ''}); grant the workflow "
                              "`permissions: id-token: write`")
        return value


class _Translated:
    """A TokenCredential that says a failed sign-in in one line (a `SignInError`)."""

    def __init__(self, inner: Any, sign_in: EntraSignIn):
        self._inner = inner
        self._sign_in = sign_in

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        return self._call("get_token", scopes, kwargs)

    def get_token_info(self, *scopes: str, options: Any = None) -> Any:
        if not hasattr(self._inner, "get_token_info"):
            return self._call("get_token", scopes, {})
        return self._call("get_token_info", scopes, {"options": options})

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    def _call(self, name: str, scopes: tuple[str, ...], kwargs: dict[str, Any]) -> Any:
        from azure.core.exceptions import AzureError, ClientAuthenticationError

        try:
            return getattr(self._inner, name)(*scopes, **kwargs)
        except SignInError:
            raise
        except ClientAuthenticationError as exc:
            raise SignInError(describe_failure(exc, self._inner, self._sign_in.method,
                                               authority=self._sign_in.authority)) from None
        except (AzureError, ValueError, OSError) as exc:
            raise SignInError(describe_unreachable(exc, self._sign_in)) from None


def describe_failure(exc: BaseException, credential: Any, method: str, *,
                     authority: str = DEFAULT_AUTHORITY) -> str:
    """One line: which credentials were tried at which authority, what went wrong, how to
    fix it."""
    text = _words(exc)
    # A chain lists each attempt as "\tName: what it said"; it stops early only at a
    # credential that was there but failed, whose words then say the most.
    attempts = [line.strip().split(": ", 1) for line in text.splitlines()
                if line.startswith("\t") and ": " in line]
    if attempts:
        tried = ", ".join(name for name, _ in attempts)
        chain = [type(one).__name__ for one in getattr(credential, "credentials", ())]
        stopped = bool(chain) and attempts[-1][0] != chain[-1]
        said = f": {attempts[-1][0]}: {_short(attempts[-1][1])}" if stopped else ""
        return (f"auth entra: no Microsoft Entra ID token from {authority} (tried {tried}){said}; "
                f"{HOW_TO_FIX}")
    first = _first_line(text)
    fix = "; check the app registration's federated credential (docs/azure.md)" \
        if "OIDC" in method else ""
    return (f"auth entra: Microsoft Entra ID at {authority} refused the sign-in through {method}: "
            f"{_short(first or type(exc).__name__)}{fix}")


def describe_unreachable(exc: BaseException, sign_in: EntraSignIn) -> str:
    """One line for a sign-in that never reached a verdict: the authority is no https:// URL,
    nobody answers there, or its certificate is not trusted."""
    said = _short(_first_line(_words(exc))).rstrip(".")
    return (f"auth entra: could not sign in at the authority {sign_in.authority} through "
            f"{sign_in.method}: {type(exc).__name__}{': ' + said if said else ''}; "
            "AZURE_AUTHORITY_HOST must be an https:// URL this machine reaches and whose "
            "certificate it trusts (REQUESTS_CA_BUNDLE), or unset for Azure's public cloud")


def _words(exc: BaseException) -> str:
    """What an azure-identity error says (its `message`, else its text)."""
    return str(getattr(exc, "message", None) or exc)


def _first_line(text: str) -> str:
    """The first line of `text` that says anything, stripped ("" when none does)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _short(line: str) -> str:
    return line if len(line) <= _MESSAGE_LIMIT else line[:_MESSAGE_LIMIT - 1] + "…"


def _github_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    message = body.get("message") if isinstance(body, dict) else None
    return _short(message.strip().splitlines()[0]) if isinstance(message, str) and message.strip() else ""


def _import_identity() -> Any:
    try:
        import azure.identity as identity
    except ImportError:
        raise SignInError(f"auth entra needs the azure-identity package, which is not installed: "
                          f"{INSTALL_HINT}") from None
    # Its warnings (a failed chain, many lines) would reach stderr through logging's last
    # resort; flipgate says a failed sign-in itself, in one line.
    logging.getLogger("azure.identity").setLevel(logging.CRITICAL)
    return identity
