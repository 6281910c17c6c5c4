"""The one door to language models: chat completions and embeddings.

Every model call of every command (judging, generating) goes through `LLM`,
which adds what the openai client does not: one adaptive concurrency limit
shared by the whole run (pacing.py), the on-disk cache, single flight for
identical requests, the hard request/token budget (budget.py) and usage
totals. The openai client keeps auth, endpoints (Azure's deployment URLs)
and timeouts; retries are done here, so every wait happens outside the
concurrency slot: 429s until `judge.max_wait`, other transient failures a
counted number of times, anything else once. Bodies are sent prepared
through the client's low-level `post` and replies read as plain dicts.

The openai package is imported lazily, so `flipgate --help` never pays for it.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import importlib
import json
import math
import random
import struct
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar
from urllib.parse import urlsplit

from flipgate.config.schema import (
    AUTH_ENTRA,
    AUTH_KEY,
    DEFAULT_EMBEDDING_BATCH,
    DEFAULT_GITHUB_MODELS_URL,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_WAIT,
    DEFAULT_OPENAI_BASE_URL,
    DEFAULT_TIMEOUT_SECONDS,
)
from flipgate.errors import FlipgateError, IncompleteError, InputError
from flipgate.llm.budget import Budget, BudgetExceeded, chat_worst_case, embedding_worst_case
from flipgate.llm.cache import Cache, body_key, canonical_json
from flipgate.llm.entra import EntraSignIn
from flipgate.llm.pacing import LONGEST_PAUSE, Limiter, answered, retry_after
from flipgate.settings import Settings
from flipgate.text.inflate import ACCEPTED, Inflater

if TYPE_CHECKING:
    import openai
    from openai import AsyncOpenAI

# The probe: the smallest request that proves the key, the endpoint and the model.
PROBE_VERSION = 1
PROBE_TEXT = "flipgate probe"
PROBE_MESSAGES = ({"role": "system", "content": "flipgate probe: reply with the JSON object "
                                                '{"ok": true} and nothing else.'},
                  {"role": "user", "content": "ping"})
__all__ = ["FATAL_STATUSES", "LLM", "Budget", "BudgetExceeded", "Completion", "Endpoint",
           "LazyClient", "Limiter", "ProviderError", "RetryPolicy", "Usage", "attempts_note",
           "azure_endpoint", "describe_failure", "failure_of", "is_api_error", "make_client",
           "openai_endpoint"]

T = TypeVar("T")

# The most of a reply flipgate reads. A chat reply (at most a few thousand tokens) is far
# below the first; a batch of 2,048 base64 embeddings of 3,072 dimensions is about half
# the second. Past them the reply is cut off and the request fails, unretried.
MAX_CHAT_REPLY_BYTES = 32 * 1024 * 1024
MAX_EMBEDDINGS_REPLY_BYTES = 64 * 1024 * 1024
# Embedding batches in flight at once, whatever the concurrency: each reply (up to 2,048
# vectors, decoded into floats) is the largest thing a run holds, so memory follows this
# bound, not `concurrency`. A run sends few of them (2,048 inputs each) beside its many
# chat requests, so a small bound costs no wall time.
EMBEDDING_BATCHES_IN_FLIGHT = 4


class ReplyTooLarge(ValueError):
    """The provider sent more than flipgate reads of a reply."""


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


@dataclass(frozen=True)
class Completion:
    content: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    model: str | None = None               # the model (version) the provider says answered
    system_fingerprint: str | None = None  # the provider's backend configuration, if it says


# -- API failures, said once and plainly ------------------------------------------

# HTTP statuses no retry can fix: a wrong key, a missing permission, a model or
# deployment that does not exist, a request the provider refuses. The openai
# client sends these once; the run stops at the first one.
FATAL_STATUSES = frozenset({400, 401, 403, 404})
# What the openai client retries: timeouts, conflicts, rate limits, server errors.
_RETRIED_STATUSES = frozenset({408, 409, 429})


class ProviderError(IncompleteError):
    """A provider refused a request in a way no retry can fix: the run stops (exit 3)."""


def is_fatal(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.APIStatusError) and exc.status_code in FATAL_STATUSES


def attempts_note(exc: BaseException, retries: int) -> str:
    """How often the request really went out: as `LLM._post` noted on the error, else as
    the openai client retries."""
    import openai

    noted = getattr(exc, "flipgate_retries", None)
    if noted is not None:
        return noted or "sent once"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retried = status in _RETRIED_STATUSES or status >= 500
    else:
        retried = isinstance(exc, openai.APIConnectionError)  # timeouts included
    if not retried or not retries:
        return "sent once"
    return f"after {retries} retr{'y' if retries == 1 else 'ies'}"


def provider_message(exc: BaseException) -> str:
    """The provider's own words: `error.message` of its JSON body, else the client's."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = found if isinstance(found := body.get("error"), dict) else body
        message = inner.get("message")
        if isinstance(message, str) and message.strip():
            return message.strip()
    return str(getattr(exc, "message", None) or exc).strip()


def describe_failure(exc: BaseException, *, endpoint: Endpoint, model: str, role: str,
                     retries: int) -> str:
    """One line with everything needed to fix a failed request: the HTTP status, the
    host (the URL when nothing answered), the model or deployment and the provider's
    message, with how often it was really sent. `role`: "judge model", "embeddings
    model", "candidate model", ..."""
    import openai

    what = f"{role} {model}"
    attempts = attempts_note(exc, retries)
    if isinstance(exc, openai.APITimeoutError):
        return f"{what}: no answer from {endpoint.base_url} in time ({attempts})"
    if isinstance(exc, openai.APIConnectionError):
        return f"{what}: could not connect to {endpoint.base_url} ({attempts})"
    if isinstance(exc, openai.APIStatusError):
        host = urlsplit(endpoint.base_url).netloc or endpoint.base_url
        return (f"HTTP {exc.status_code} from {host} for the {what} ({attempts}): "
                f"{provider_message(exc)}")
    return f"{what}: {type(exc).__name__}: {exc}"


def failure_of(exc: BaseException, *, endpoint: Endpoint, model: str, role: str,
               retries: int) -> IncompleteError:
    """The error that stops a run for a failed request: a `ProviderError` when no retry
    could help, else a plain `IncompleteError`."""
    text = describe_failure(exc, endpoint=endpoint, model=model, role=role, retries=retries)
    return ProviderError(text) if is_fatal(exc) else IncompleteError(text)


@dataclass
class Usage:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_requests: int = 0
    # Chat requests not sent: an identical one was in flight (single flight) and its reply
    # served this caller too, e.g. a row whose candidate answer equals its baseline.
    shared_requests: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "embedding_requests": self.embedding_requests,
                "shared_requests": self.shared_requests}


@dataclass(frozen=True)
class RetryPolicy:
    """429s are retried until `max_wait` seconds have passed since the first try;
    other transient failures (5xx, timeouts, lost connections) `max_retries` times.
    Any other error (400, 401, 403, 404, ...) is sent once and raised."""

    max_retries: int = DEFAULT_MAX_RETRIES
    max_wait: float = DEFAULT_MAX_WAIT
    # Wall-clock seconds one attempt may take, body included: the HTTP library's timeouts
    # bound each read, so a body sent one byte at a time would never end without it.
    deadline: float = DEFAULT_TIMEOUT_SECONDS


class LLM:
    """Chat completions and embeddings against one endpoint, cached, paced and capped."""

    def __init__(self, client: AsyncOpenAI | LazyClient, endpoint: Endpoint, *, limiter: Limiter,
                 cache: Cache | None = None, budget: Budget | None = None,
                 usage: Usage | None = None, retry: RetryPolicy | None = None,
                 flights: dict[str, _Flight] | None = None,
                 embedding_batch: int = DEFAULT_EMBEDDING_BATCH):
        self.client = client
        self.endpoint = endpoint
        self.limiter = limiter
        self.cache = cache
        self.budget = budget or Budget()
        self.usage = usage if usage is not None else Usage()
        self.retry = retry or RetryPolicy()
        # Identical requests in flight at once share one call (pass one dict for the whole run).
        self.flights: dict[str, _Flight] = flights if flights is not None else {}
        self.embedding_batch = embedding_batch
        self._embedding_slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

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
        encoded = canonical_json(body)  # once, for the key and for the wire
        digest = body_key(encoded, endpoint=self.endpoint.identity(), tag=dict(cache_tag or {}))
        if self.cache is not None and (hit := self.cache.get_digest(digest)) is not None:
            if _accepts(validate, hit.get("content", "")):
                return Completion(**hit, cached=True)
        if digest in self.flights:
            self.usage.shared_requests += 1
        return await _single_flight(self.flights, digest, lambda: self._complete(
            body, encoded, digest=digest, validate=validate))

    async def _complete(self, body: dict[str, Any], encoded: str, *, digest: str,
                        validate: Callable[[str], object] | None) -> Completion:
        worst_case = chat_worst_case(body, completion_ceiling=self.budget.completion_ceiling)
        reply = await self._post("/chat/completions", body, worst_case=worst_case,
                                 spent=_chat_tokens, encoded=encoded)
        choices = reply.get("choices") or [{}]
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        usage = found if isinstance(found := reply.get("usage"), dict) else {}
        completion = Completion(
            content=reply_text(message),
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            model=reply.get("model") if isinstance(reply.get("model"), str) and reply.get("model") else None,
            system_fingerprint=(reply.get("system_fingerprint")
                                if isinstance(reply.get("system_fingerprint"), str)
                                and reply.get("system_fingerprint") else None),
        )
        self.usage.requests += 1
        self.usage.prompt_tokens += completion.prompt_tokens
        self.usage.completion_tokens += completion.completion_tokens
        if self.cache is not None and _accepts(validate, completion.content):
            self.cache.put_digest(digest, {"content": completion.content,
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
            async with self._embedding_slot():
                reply = await self._post("/embeddings", {"model": model, "input": batch,
                                                          "encoding_format": "base64"},
                                         worst_case=embedding_worst_case(batch),
                                         spent=_embedding_tokens)
                data = reply.pop("data", None)
                if not isinstance(data, list) or len(data) != len(batch):
                    got = len(data) if isinstance(data, list) else 0
                    raise ValueError(f"embeddings: asked for {len(batch)} vectors, got {got}")
                self.usage.embedding_requests += 1
                self.usage.prompt_tokens += _embedding_tokens(reply) or 0
                while data:  # each item dropped as soon as it is decoded
                    item = data.pop()
                    text = batch[item["index"]]
                    vectors[text] = _vector(item["embedding"])
                    if self.cache is not None:
                        self.cache.put(self._embedding_key(model, text), vectors[text])

        size = max(1, self.embedding_batch)
        await asyncio.gather(*(one_batch(missing[i:i + size]) for i in range(0, len(missing), size)))
        return [vectors[text] for text in texts]

    async def probe(self, *, model: str, params: Mapping[str, Any], role: str,
                    embedding_model: str | None = None) -> None:
        """One cheap request to `model` (and one to `embedding_model`, at the same time)
        before any real work, so a wrong key, model or deployment stops the run before money
        is spent. The chat probe's failure is the one reported when both fail. A success is
        cached like any reply, so a fully cached run still sends nothing."""
        retries = self.retry.max_retries
        asks: list[tuple[Awaitable[object], str, str]] = [
            (self.chat(model=model, messages=PROBE_MESSAGES, params=params,
                       cache_tag={"probe": PROBE_VERSION}), model, role)]
        if embedding_model is not None:
            asks.append((self.embed(model=embedding_model, texts=[PROBE_TEXT]), embedding_model,
                         "embeddings model"))
        outcomes = await asyncio.gather(*(ask for ask, _, _ in asks), return_exceptions=True)
        for outcome in outcomes:  # the run's own stops (a budget, a cancel) come first
            if isinstance(outcome, BaseException) and not _is_client_failure(outcome):
                raise outcome
        for outcome, (_, asked, what) in zip(outcomes, asks, strict=True):
            if isinstance(outcome, Exception):  # the client's errors, after its own retries
                raise failure_of(outcome, endpoint=self.endpoint, model=asked, role=what,
                                 retries=retries) from None

    def _embedding_slot(self) -> asyncio.Semaphore:
        """The run's bound on embedding batches in flight (one per event loop)."""
        loop = asyncio.get_running_loop()
        if self._embedding_slots is None or self._embedding_slots[0] is not loop:
            self._embedding_slots = (loop, asyncio.Semaphore(EMBEDDING_BATCHES_IN_FLIGHT))
        return self._embedding_slots[1]

    def _embedding_key(self, model: str, text: str) -> dict[str, Any]:
        return {"endpoint": self.endpoint.identity(), "embedding_model": model, "input": text}

    async def _post(self, path: str, body: dict[str, Any], *, worst_case: int,
                    spent: Callable[[dict[str, Any]], int | None],
                    encoded: str | None = None) -> dict[str, Any]:
        """Send one prepared body until it succeeds or the retry policy gives up. `encoded`:
        the body already as JSON, sent as it is (except to Azure, whose client reads the
        deployment from the body's `model`).

        Every wait (a 429's pause, a backoff) happens outside the concurrency
        slot: an own-rate 429 pauses every new send (in the limiter), a hiccup 429
        only this request (after its slot is released). The budget holds the request's worst case while it is in flight.
        """
        import openai

        client = self.client.get() if isinstance(self.client, LazyClient) else self.client
        payload: dict[str, Any] = {"body": body}
        whole_url = f"{client.base_url}{path.lstrip('/')}"
        url = path
        if not isinstance(client, openai.AsyncAzureOpenAI):
            # Azure's client builds the deployment's URL from the path and the body's model;
            # any other gets the body as the bytes already encoded, and the whole URL, which
            # the SDK would otherwise join to its base (a copy and a parse) on every request.
            url = whole_url
            if encoded is not None:
                payload = {"content": encoded.encode("utf-8")}
        first_try = self.limiter.clock()
        failures = hiccups = 0
        while True:
            sent_at = await self.limiter.acquire()
            backoff = 0.0
            try:
                self.budget.reserve(worst_case)
                try:
                    try:
                        async with asyncio.timeout(self.retry.deadline):
                            response: Any = await client.post(
                                url, **payload, cast_to=http_library(openai).Response,
                                options={"max_retries": 0})
                    except TimeoutError:
                        # No complete reply (headers and body) in time: the client's own
                        # timeout error, so it is retried and reported as one.
                        request = http_library(openai).Request("POST", whole_url)
                        raise openai.APITimeoutError(request=request) from None
                    reply = _json_object(response)
                except openai.RateLimitError as exc:
                    self.budget.cancel(worst_case)
                    throttle = self.limiter.throttled(sent_at=sent_at, headers=exc.response.headers,
                                                      attempt=hiccups)
                    pause = throttle.pause
                    waited = self.limiter.clock() - first_try
                    if waited + pause > self.retry.max_wait:
                        said = answered(exc.response.headers)
                        _explain(exc, f"still rate limited after waiting {waited:.0f}s "
                                      f"(judge.max_wait is {self.retry.max_wait:g}s"
                                      + (f"; it answered {said}" if said else "") + ")")
                        raise
                    if not throttle.shared:  # a hiccup: this request alone waits
                        hiccups += 1
                        backoff = pause
                    continue
                except openai.APIStatusError as exc:
                    self.budget.settle(worst_case, spent=0)
                    if not _transient(exc.status_code) or failures >= self.retry.max_retries:
                        _explain(exc, _after(failures))
                        raise
                    failures += 1
                    told = retry_after(exc.response.headers)
                    backoff = min(told, LONGEST_PAUSE) if told else _backoff(failures)
                    continue
                except (openai.APIConnectionError, ValueError) as exc:
                    # Sent, and maybe worked on: counted at its worst case.
                    self.budget.settle(worst_case, spent=None)
                    if isinstance(exc, ValueError) or failures >= self.retry.max_retries:
                        _explain(exc, _after(failures))
                        raise
                    failures += 1
                    backoff = _backoff(failures)
                    continue
                except BaseException:
                    self.budget.settle(worst_case, spent=None)  # cancelled mid-flight: spent
                    raise
                self.budget.settle(worst_case, spent=spent(reply))
                self.limiter.succeeded(response.headers)
                return reply
            finally:
                self.limiter.release()
                if backoff:
                    await asyncio.sleep(backoff)


@dataclass
class _Flight:
    task: asyncio.Future[Any]
    waiters: int = 0


async def _single_flight(flights: dict[str, _Flight], key: str,
                         call: Callable[[], Awaitable[T]]) -> T:
    """Run `call` once for every caller asking with the same key at the same time.

    The call is cancelled only when every caller waiting on it is.
    """
    flight = flights.get(key)
    if flight is None:
        flight = _Flight(asyncio.ensure_future(call()))
        flights[key] = flight

        def forget(task: asyncio.Future[Any]) -> None:
            if flights.get(key) is flight:
                del flights[key]
            if not task.cancelled():
                task.exception()  # retrieved here; every waiter still sees it

        flight.task.add_done_callback(forget)
    flight.waiters += 1
    try:
        return await asyncio.shield(flight.task)
    except asyncio.CancelledError:
        if flight.waiters == 1 and not flight.task.done():
            flight.task.cancel()
        raise
    finally:
        flight.waiters -= 1


def _is_client_failure(exc: BaseException) -> bool:
    """A request's own failure (the client's error, a bad reply), not one that stops the run."""
    return isinstance(exc, Exception) and not isinstance(exc, FlipgateError)


def _not_a_number(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _json_object(response: Any) -> dict[str, Any]:
    try:
        reply = json.loads(response.content, parse_constant=_not_a_number)
    except RecursionError:
        raise ValueError("the reply is not JSON: nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"the reply is not JSON: {str(exc)[:200]}") from None
    if not isinstance(reply, dict):
        raise ValueError("the reply is not a JSON object")
    return reply


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _chat_tokens(reply: dict[str, Any]) -> int | None:
    usage = reply.get("usage")
    if not isinstance(usage, dict) or "prompt_tokens" not in usage:
        return None  # unknown: the budget counts the worst case
    return _count(usage.get("prompt_tokens")) + _count(usage.get("completion_tokens"))


def _embedding_tokens(reply: dict[str, Any]) -> int | None:
    usage = reply.get("usage")
    if not isinstance(usage, dict) or "total_tokens" not in usage:
        return None
    return _count(usage.get("total_tokens"))


def _vector(value: Any) -> list[float]:
    """An embedding as floats, whether sent as a list or as base64 little-endian float32;
    a NaN or an infinity (no cosine can be taken of it) is a bad reply."""
    if isinstance(value, str):
        raw = base64.b64decode(value)
        vector = list(struct.unpack(f"<{len(raw) // 4}f", raw))
    else:
        vector = [float(x) for x in value]
    if not all(math.isfinite(x) for x in vector):
        raise ValueError("the embeddings reply holds a number that is not finite (NaN or infinity)")
    return vector


def _transient(status: int) -> bool:
    return status >= 500 or status in (408, 409)


def _backoff(failures: int) -> float:
    return min(0.5 * 2 ** (failures - 1), 8.0) * (0.75 + 0.25 * random.random())


def _after(failures: int) -> str:
    return f"after {failures} retr{'y' if failures == 1 else 'ies'}" if failures else ""


def _explain(exc: BaseException, how: str) -> None:
    """Say on the error how hard it was tried, for the one-line account (`describe_api_error`)."""
    exc.flipgate_retries = how  # type: ignore[attr-defined]


def reply_text(message: Mapping[str, Any] | None) -> str:
    """A reply (a plain-dict message) as text: its content, or, when the model answered with
    tool calls, each call as `name(arguments)` on its own line, so it can still be judged
    and diffed."""
    if not message:
        return ""
    content = message.get("content")
    if isinstance(content, str) and content:
        return content
    lines = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            lines.append(f"tool call: {function.get('name')}({function.get('arguments') or ''})")
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
    key = _api_key(endpoint, settings)
    if endpoint.kind == "azure":
        return openai.AsyncAzureOpenAI(azure_endpoint=endpoint.base_url, api_key=key,
                                       api_version=endpoint.api_version,
                                       timeout=timeout, max_retries=max_retries,
                                       http_client=http_client)
    return openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=key,
                              timeout=timeout, max_retries=max_retries, http_client=http_client)


def reply_cap(path: str) -> int:
    return MAX_EMBEDDINGS_REPLY_BYTES if path.rstrip("/").endswith("/embeddings") else MAX_CHAT_REPLY_BYTES


# The HTTP backends the SDK documents: its httpx client (`DefaultAsyncHttpxClient`) and
# its aiohttp one (`DefaultAioHttpClient`, the `openai[aiohttp]` extra). aiohttp is the
# default: on benchmarks/bench_client_cpu.py it spends less client CPU a request (see
# docs/performance.md); httpx stays for an SDK installed without the extra.
HTTPX, AIOHTTP = "httpx", "aiohttp"


def has_aiohttp(openai: Any) -> bool:
    """The SDK's aiohttp client is usable (aiohttp installed, the SDK new enough)."""
    try:
        importlib.import_module("aiohttp")
    except ImportError:
        return False
    return hasattr(openai, "DefaultAioHttpClient")


@functools.cache
def http_library(openai: Any) -> Any:
    """The HTTP library the SDK was built on (httpx, or its successor httpx2). Its
    `Response`, asked of `post` as the type to cast to, returns the reply undecoded
    (headers included), skipping the SDK's model parsing."""
    base = next(cls for cls in openai.DefaultAsyncHttpxClient.__mro__
                if not cls.__module__.startswith("openai"))
    return importlib.import_module(base.__module__.split(".")[0])


def capped_http_client(openai: Any, *, backend: str | None = None, limits: Any = None) -> Any:
    """The SDK's own HTTP client (its defaults kept) whose transport reads no more of a
    reply, success or error, than `reply_cap` allows: past it the read fails with
    `ReplyTooLarge`, and what was read is dropped. `backend`: HTTPX or AIOHTTP (default:
    aiohttp when installed); `limits`: the HTTP library's connection limits (default the
    SDK's)."""
    backend = backend or (AIOHTTP if has_aiohttp(openai) else HTTPX)
    http = http_library(openai)

    class CappedStream(http.AsyncByteStream):  # type: ignore[name-defined]
        """The body as the client will hold it: its content-encoding undone here, a piece
        at a time, so the cap counts the bytes after decompression (and those on the wire,
        which data trailing a compressed body could otherwise grow)."""

        def __init__(self, inner: Any, cap: int, inflater: Inflater):
            self.inner, self.cap, self.inflater = inner, cap, inflater

        async def __aiter__(self) -> Any:
            seen = held = 0
            try:
                async for chunk in self.inner:
                    seen += len(chunk)
                    if seen > self.cap:
                        raise ReplyTooLarge(f"the reply is larger than {self.cap:,} bytes")
                    for piece in self.inflater.feed(chunk):
                        held += len(piece)
                        if held > self.cap:
                            raise ReplyTooLarge(f"the reply inflates past {self.cap:,} bytes "
                                                f"({seen:,} compressed bytes read)")
                        yield piece
                self.inflater.finish()
            except http.TimeoutException as exc:
                raise _what_it_was(http, exc, request=None) from exc.__cause__

        async def aclose(self) -> None:
            await self.inner.aclose()

    class CappedTransport(http.AsyncBaseTransport):  # type: ignore[name-defined]
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            request.headers["Accept-Encoding"] = ACCEPTED  # only what CappedStream bounds
            try:
                response = await self.inner.handle_async_request(request)
            except http.TimeoutException as exc:
                raise _what_it_was(http, exc, request=request) from exc.__cause__
            cap = reply_cap(request.url.path)
            declared = response.headers.get("content-length", "")
            try:
                if declared.isdigit() and int(declared) > cap:
                    raise ReplyTooLarge(f"the reply is larger than {cap:,} bytes ({declared} declared)")
                inflater = Inflater(response.headers.get("content-encoding"))
            except ValueError:
                await response.aclose()
                raise
            headers = response.headers
            if not inflater.identity:  # decoded in CappedStream: the library must not again
                headers = [(name, value) for name, value in response.headers.raw
                           if name.lower() not in (b"content-encoding", b"content-length")]
            return http.Response(status_code=response.status_code, headers=headers,
                                 stream=CappedStream(response.stream, cap, inflater),
                                 extensions=response.extensions, request=request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    client_class = openai.DefaultAioHttpClient if backend == AIOHTTP else openai.DefaultAsyncHttpxClient

    class CappedClient(client_class):  # type: ignore[misc, valid-type]
        """The SDK's client on its own transport, wrapped. No proxy transport is built (the
        route of every request is the capped one, as when flipgate passed its transport in,
        which keeps the environment's proxies out too)."""

        def _init_transport(self, *args: Any, **kwargs: Any) -> Any:
            return CappedTransport(super()._init_transport(*args, **kwargs))

        def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> None:
            return None  # a mount without a transport: the capped one serves it

    return CappedClient(**({"limits": limits} if limits is not None else {}))


def _what_it_was(http: Any, exc: Any, *, request: Any) -> Any:
    """A timeout as the HTTP library reports it, unless it was none: the SDK's aiohttp
    transport reports every lost or refused connection as a connect timeout, which would
    say "no answer in time" for a server that is not there. Only a real timeout under it
    (or none, from httpx itself) stays one."""
    cause = exc.__cause__
    if cause is None or isinstance(cause, TimeoutError):
        return exc
    connector = getattr(sys.modules.get("aiohttp"), "ClientConnectorError", ())
    failure = http.ConnectError if isinstance(cause, connector) else http.ReadError
    return failure(str(exc) or type(cause).__name__, request=request)


def _api_key(endpoint: Endpoint, settings: Settings) -> str:
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
            _api_key(endpoint, settings)  # a missing key is bad input now, before any work
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


def is_api_error(exc: BaseException) -> TypeGuard[openai.OpenAIError]:
    """An error from the openai client (if the SDK was never imported, none can be)."""
    openai = sys.modules.get("openai")
    return openai is not None and isinstance(exc, openai.OpenAIError)
