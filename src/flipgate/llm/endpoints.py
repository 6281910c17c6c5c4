"""Where requests go and with which credential: the `Endpoint` (part of every cache key),
the rule for each provider's URL (the GitHub token goes only to GitHub Models or the
base's `base_url`), and the openai client built for it (`make_client`, or `LazyClient`,
which builds it only when a request is really sent).

Keys come from `Settings` (the environment, read at the edge), never from a file the pull
request controls; `auth: entra` gets `EntraSignIn`'s token provider instead of a key.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from flipgate.config.schema import (
    AUTH_ENTRA,
    AUTH_KEY,
    DEFAULT_GITHUB_MODELS_URL,
    DEFAULT_MAX_RETRIES,
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_TIMEOUT_SECONDS,
)
from flipgate.errors import InputError
from flipgate.llm.entra import EntraSignIn
from flipgate.llm.transport import capped_http_client
from flipgate.settings import Settings

if TYPE_CHECKING:
    from openai import AsyncOpenAI


@dataclass(frozen=True)
class Endpoint:
    """Where requests go. Its identity is part of every cache key, so a reply
    recorded from one server is never served for another."""

    kind: str  # "openai" | "azure" | "github" (GitHub Models, its token the GitHub one)
    base_url: str
    api_version: str | None = None
    deployment: str | None = None
    auth: str = AUTH_KEY  # key | entra (a name, never a secret: it is part of the identity)

    def identity(self) -> dict[str, str | None]:
        return dict(self._identity)

    @functools.cached_property
    def _identity(self) -> dict[str, str | None]:  # every request's key reads it: parsed once
        parts = urlsplit(self.base_url)
        identity: dict[str, str | None] = {
            "kind": self.kind,
            "scheme": parts.scheme,
            "host": (parts.hostname or "").lower(),
            "port": str(parts.port or (443 if parts.scheme == "https" else 80)),
            "path": parts.path.rstrip("/"),
        }
        if self.kind == "azure":
            identity.update(api_version=self.api_version, deployment=self.deployment)
        if self.auth != AUTH_KEY:
            identity["auth"] = self.auth  # absent for keys: earlier caches stay valid
        return identity


def openai_endpoint(base_url: str | None, *, settings: Settings) -> Endpoint:
    """The endpoint an OpenAI client would use: explicit, else OPENAI_BASE_URL, else api.openai.com."""
    url = base_url or settings.openai_base_url or DEFAULT_OPENAI_BASE_URL
    return Endpoint(kind="openai", base_url=url)


def github_endpoint(base_url: str | None) -> Endpoint:
    """GitHub Models' inference endpoint, or the `base_url` the base's configuration names.
    Never OPENAI_BASE_URL: the GitHub token goes only where the base chose."""
    return Endpoint(kind="github", base_url=base_url or DEFAULT_GITHUB_MODELS_URL)


def azure_endpoint(azure_endpoint_url: str | None, api_version: str | None,
                   deployment: str | None = None, *, settings: Settings,
                   auth: str = AUTH_KEY) -> Endpoint:
    url = azure_endpoint_url or settings.azure_openai_endpoint
    if not url:
        raise InputError("azure needs an endpoint: set azure_endpoint or AZURE_OPENAI_ENDPOINT")
    version = api_version or settings.openai_api_version
    if not version:
        raise InputError("azure needs an api_version: set api_version or OPENAI_API_VERSION")
    return Endpoint(kind="azure", base_url=url, api_version=version, deployment=deployment, auth=auth)


def make_client(endpoint: Endpoint, *, settings: Settings, timeout: float = DEFAULT_TIMEOUT_SECONDS,
                max_retries: int = DEFAULT_MAX_RETRIES,
                sign_in: EntraSignIn | None = None) -> AsyncOpenAI:
    """Build the real openai client for an endpoint, with its own retries and timeout.

    The key comes only from the environment, never from a file the PR controls. With
    `auth: entra` the client gets `sign_in`'s bearer token provider instead of a key;
    the endpoint is one the base named (the judge's, or the generator's, held to the
    base by endpoint_lock), so the token never goes where a pull request chose.
    """
    import openai  # lazy: keeps `flipgate --help` fast

    http_client = capped_http_client(openai)
    if endpoint.auth == AUTH_ENTRA:
        if sign_in is None or endpoint.kind != "azure":
            raise InputError("auth entra needs an Azure endpoint and a sign-in")
        return openai.AsyncAzureOpenAI(azure_endpoint=endpoint.base_url,
                                       azure_ad_token_provider=sign_in.token_provider(),
                                       api_version=endpoint.api_version,
                                       timeout=timeout, max_retries=max_retries,
                                       http_client=http_client)
    key = api_key(endpoint, settings)
    if endpoint.kind == "azure":
        return openai.AsyncAzureOpenAI(azure_endpoint=endpoint.base_url, api_key=key,
                                       api_version=endpoint.api_version,
                                       timeout=timeout, max_retries=max_retries,
                                       http_client=http_client)
    return openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=key,
                              timeout=timeout, max_retries=max_retries, http_client=http_client)


def api_key(endpoint: Endpoint, settings: Settings) -> str:
    if endpoint.kind == "azure":
        key = settings.azure_openai_api_key
        if not key:
            raise InputError("azure needs AZURE_OPENAI_API_KEY in the environment")
        return key
    if endpoint.kind == "github":
        token = settings.github_models_token
        if not token:
            raise InputError("github needs a token: the action's github-token (a workflow with "
                             "`permissions: models: read`), or GITHUB_TOKEN in the environment")
        return token
    key = settings.openai_api_key
    if not key:
        raise InputError("openai needs OPENAI_API_KEY in the environment "
                         "(any value works for a local OpenAI-compatible server)")
    return key


class LazyClient:
    """An openai client built (and the SDK imported) only when a request is really sent,
    so a run whose every reply is cached never loads the SDK."""

    def __init__(self, endpoint: Endpoint, *, settings: Settings,
                 timeout: float = DEFAULT_TIMEOUT_SECONDS, max_retries: int = DEFAULT_MAX_RETRIES,
                 sign_in: EntraSignIn | None = None):
        if endpoint.auth == AUTH_ENTRA:
            if sign_in is None or endpoint.kind != "azure":
                raise InputError("auth entra signs in to Azure: the endpoint must be an Azure one")
        else:
            api_key(endpoint, settings)  # a missing key is bad input now, before any work
        self.endpoint, self.settings, self.sign_in = endpoint, settings, sign_in
        self.timeout, self.max_retries = timeout, max_retries
        self._client: AsyncOpenAI | None = None

    def get(self) -> AsyncOpenAI:
        if self._client is None:
            self._client = make_client(self.endpoint, settings=self.settings, timeout=self.timeout,
                                       max_retries=self.max_retries, sign_in=self.sign_in)
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    def is_closed(self) -> bool:
        """True when no connection is open: never built, or built and closed."""
        return self._client is None or self._client.is_closed()
