"""The one door to language models: chat completions and embeddings.

Every model call of every command (judging, generating) goes through `LLM`,
which adds what the openai client does not: one concurrency limit shared by
the whole run, the on-disk cache, the request/token budget and usage totals.
Retries (honouring Retry-After) and timeouts are the openai client's own.

The openai package is imported lazily, so `flipgate --help` never pays for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from flipgate.cache import Cache
from flipgate.config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_EMBEDDING_BATCH,
    DEFAULT_MAX_RETRIES,
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_TIMEOUT_SECONDS,
)
from flipgate.errors import IncompleteError, InputError
from flipgate.settings import Settings

if TYPE_CHECKING:
    from openai import AsyncOpenAI


@dataclass(frozen=True)
class Endpoint:
    """Where requests go. Its identity is part of every cache key, so a reply
    recorded from one server is never served for another."""

    kind: str  # "openai" | "azure"
    base_url: str
    api_version: str | None = None
    deployment: str | None = None

    def identity(self) -> dict[str, str | None]:
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
        return identity


@dataclass(frozen=True)
class Completion:
    content: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    model: str | None = None               # the model (version) the provider says answered
    system_fingerprint: str | None = None  # the provider's backend configuration, if it says


class BudgetExceeded(IncompleteError):
    pass


@dataclass
class Budget:
    """Stops a run before it spends more than the configuration allows."""

    max_requests: int | None = None
    max_tokens: int | None = None
    requests: int = 0
    tokens: int = 0

    def reserve_request(self) -> None:
        if self.max_requests is not None and self.requests >= self.max_requests:
            raise BudgetExceeded(
                f"budget.max_requests ({self.max_requests}) reached after {self.requests} "
                f"requests and {self.tokens} tokens; stopped before spending more")
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"budget.max_tokens ({self.max_tokens}) reached after {self.requests} "
                f"requests and {self.tokens} tokens; stopped before spending more")
        self.requests += 1

    def spend_tokens(self, tokens: int) -> None:
        self.tokens += tokens


@dataclass
class Usage:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_requests: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "embedding_requests": self.embedding_requests}


@dataclass
class Limiter:
    """One concurrency limit for the whole run, with the peak it reached."""

    limit: int = DEFAULT_CONCURRENCY
    active: int = 0
    peak: int = 0
    _semaphore: asyncio.Semaphore | None = field(default=None, repr=False)

    async def __aenter__(self) -> None:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.limit)
        await self._semaphore.acquire()
        self.active += 1
        self.peak = max(self.peak, self.active)

    async def __aexit__(self, *exc: object) -> None:
        self.active -= 1
        assert self._semaphore is not None
        self._semaphore.release()


class LLM:
    """Chat completions and embeddings against one endpoint, cached and limited."""

    def __init__(self, client: AsyncOpenAI, endpoint: Endpoint, *, limiter: Limiter,
                 cache: Cache | None = None, budget: Budget | None = None,
                 usage: Usage | None = None,
                 embedding_batch: int = DEFAULT_EMBEDDING_BATCH):
        self.client = client
        self.endpoint = endpoint
        self.limiter = limiter
        self.cache = cache
        self.budget = budget or Budget()
        self.usage = usage if usage is not None else Usage()
        self.embedding_batch = embedding_batch

    async def chat(self, *, model: str, messages: Sequence[Mapping[str, str]],
                   params: Mapping[str, Any] | None = None,
                   cache_tag: Mapping[str, Any] | None = None,
                   validate: Callable[[str], object] | None = None) -> Completion:
        """One chat completion. `cache_tag` adds what else distinguishes the
        request for the cache (a rubric's version, the sample's index).

        With `validate`, only replies it accepts (returns without raising) are
        stored, and a stored reply it rejects is a miss: a judge's garbage is
        never replayed from the cache, so retrying really asks again.
        """
        body: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages],
                                **dict(params or {})}
        key = {"endpoint": self.endpoint.identity(), "body": body, "tag": dict(cache_tag or {})}
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            if _accepts(validate, hit.get("content", "")):
                return Completion(**hit, cached=True)

        async with self.limiter:
            self.budget.reserve_request()
            response = await self.client.chat.completions.create(**body)
        choice = response.choices[0] if response.choices else None
        usage = response.usage
        completion = Completion(
            content=reply_text(choice.message if choice else None),
            finish_reason=choice.finish_reason if choice else None,
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
            model=getattr(response, "model", None) or None,
            system_fingerprint=getattr(response, "system_fingerprint", None) or None,
        )
        self.usage.requests += 1
        self.usage.prompt_tokens += completion.prompt_tokens
        self.usage.completion_tokens += completion.completion_tokens
        self.budget.spend_tokens(completion.prompt_tokens + completion.completion_tokens)
        if self.cache is not None and _accepts(validate, completion.content):
            self.cache.put(key, {"content": completion.content,
                                 "finish_reason": completion.finish_reason,
                                 "prompt_tokens": completion.prompt_tokens,
                                 "completion_tokens": completion.completion_tokens,
                                 "model": completion.model,
                                 "system_fingerprint": completion.system_fingerprint})
        return completion

    async def embed(self, *, model: str, texts: Sequence[str]) -> list[list[float]]:
        """Embed many texts in as few requests as the provider's input limit allows.

        Texts already in the cache are not sent; the rest go out in batches of
        `embedding_batch`, concurrently under the shared limit.
        """
        vectors: dict[str, list[float]] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):  # unique, order kept
            key = self._embedding_key(model, text)
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                vectors[text] = hit
            else:
                missing.append(text)

        async def one_batch(batch: list[str]) -> None:
            async with self.limiter:
                self.budget.reserve_request()
                response = await self.client.embeddings.create(model=model, input=batch)
            if len(response.data) != len(batch):
                raise ValueError(f"embeddings: asked for {len(batch)} vectors, got {len(response.data)}")
            self.usage.embedding_requests += 1
            tokens = response.usage.total_tokens if response.usage else 0
            self.usage.prompt_tokens += tokens or 0
            self.budget.spend_tokens(tokens or 0)
            for item in sorted(response.data, key=lambda d: d.index):
                text = batch[item.index]
                vectors[text] = list(item.embedding)
                if self.cache is not None:
                    self.cache.put(self._embedding_key(model, text), vectors[text])

        size = max(1, self.embedding_batch)
        await asyncio.gather(*(one_batch(missing[i:i + size]) for i in range(0, len(missing), size)))
        return [vectors[text] for text in texts]

    def _embedding_key(self, model: str, text: str) -> dict[str, Any]:
        return {"endpoint": self.endpoint.identity(), "embedding_model": model, "input": text}


def reply_text(message: Any) -> str:
    """A reply as text: its content, or, when the model answered with tool calls, each call
    as `name(arguments)` on its own line, so it can still be judged and diffed."""
    if message is None:
        return ""
    if message.content:
        return message.content
    calls = getattr(message, "tool_calls", None) or []
    lines = []
    for call in calls:
        function = getattr(call, "function", None)
        if function is not None:
            lines.append(f"tool call: {function.name}({function.arguments or ''})")
    return "\n".join(lines)


def _accepts(validate: Callable[[str], object] | None, content: str) -> bool:
    if validate is None:
        return True
    try:
        validate(content)
    except Exception:  # noqa: BLE001 - any rejection means "do not trust this reply"
        return False
    return True


def openai_endpoint(base_url: str | None, *, settings: Settings) -> Endpoint:
    """The endpoint an OpenAI client would use: explicit, else OPENAI_BASE_URL, else api.openai.com."""
    url = base_url or settings.openai_base_url or DEFAULT_OPENAI_BASE_URL
    return Endpoint(kind="openai", base_url=url)


def azure_endpoint(azure_endpoint_url: str | None, api_version: str | None,
                   deployment: str | None = None, *, settings: Settings) -> Endpoint:
    url = azure_endpoint_url or settings.azure_openai_endpoint
    if not url:
        raise InputError("azure needs an endpoint: set azure_endpoint or AZURE_OPENAI_ENDPOINT")
    version = api_version or settings.openai_api_version
    if not version:
        raise InputError("azure needs an api_version: set api_version or OPENAI_API_VERSION")
    return Endpoint(kind="azure", base_url=url, api_version=version, deployment=deployment)


def make_client(endpoint: Endpoint, *, settings: Settings, timeout: float = DEFAULT_TIMEOUT_SECONDS,
                max_retries: int = DEFAULT_MAX_RETRIES) -> AsyncOpenAI:
    """Build the real openai client for an endpoint, with its own retries and timeout.

    The key comes only from the environment, never from a file the PR controls.
    """
    import openai  # lazy: keeps `flipgate --help` fast

    if endpoint.kind == "azure":
        key = settings.azure_openai_api_key
        if not key:
            raise InputError("azure needs AZURE_OPENAI_API_KEY in the environment")
        return openai.AsyncAzureOpenAI(azure_endpoint=endpoint.base_url, api_key=key,
                                       api_version=endpoint.api_version,
                                       timeout=timeout, max_retries=max_retries)
    key = settings.openai_api_key
    if not key:
        raise InputError("openai needs OPENAI_API_KEY in the environment "
                         "(any value works for a local OpenAI-compatible server)")
    return openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=key,
                              timeout=timeout, max_retries=max_retries)
