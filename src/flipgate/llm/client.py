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
import json
import math
import struct
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from flipgate.config.schema import (
    DEFAULT_EMBEDDING_BATCH,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_WAIT,
    DEFAULT_TIMEOUT_SECONDS,
)
from flipgate.errors import FlipgateError
from flipgate.llm.budget import Budget, BudgetExceeded, chat_worst_case, embedding_worst_case
from flipgate.llm.cache import Cache, body_key, canonical_json
from flipgate.llm.endpoints import Endpoint, LazyClient
from flipgate.llm.failures import after_retries, backoff_seconds, explain, failure_of, is_transient
from flipgate.llm.pacing import LONGEST_PAUSE, Limiter, answered, retry_after
from flipgate.llm.transport import http_library

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# The probe: the smallest request that proves the key, the endpoint and the model.
PROBE_VERSION = 1
PROBE_TEXT = "flipgate probe"
PROBE_MESSAGES = ({"role": "system", "content": "flipgate probe: reply with the JSON object "
                                                '{"ok": true} and nothing else.'},
                  {"role": "user", "content": "ping"})
# Where requests go is endpoints.py's, which failures are retried failures.py's, the HTTP
# transport transport.py's; the budget and the limiter are named here too, the door's own.
__all__ = ["DEFAULT_EMBEDDING_BATCH", "LLM", "Budget", "BudgetExceeded", "Completion", "Limiter",
           "RetryPolicy", "Usage"]

T = TypeVar("T")

# Embedding batches in flight at once, whatever the concurrency: each reply (up to 2,048
# vectors, decoded into floats) is the largest thing a run holds, so memory follows this
# bound, not `concurrency`. A run sends few of them (2,048 inputs each) beside its many
# chat requests, so a small bound costs no wall time.
EMBEDDING_BATCHES_IN_FLIGHT = 4


@dataclass(frozen=True)
class Completion:
    content: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    model: str | None = None               # the model (version) the provider says answered
    system_fingerprint: str | None = None  # the provider's backend configuration, if it says


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
                        explain(exc, f"still rate limited after waiting {waited:.0f}s "
                                      f"(judge.max_wait is {self.retry.max_wait:g}s"
                                      + (f"; it answered {said}" if said else "") + ")")
                        raise
                    if not throttle.shared:  # a hiccup: this request alone waits
                        hiccups += 1
                        backoff = pause
                    continue
                except openai.APIStatusError as exc:
                    self.budget.settle(worst_case, spent=0)
                    if not is_transient(exc.status_code) or failures >= self.retry.max_retries:
                        explain(exc, after_retries(failures))
                        raise
                    failures += 1
                    told = retry_after(exc.response.headers)
                    backoff = min(told, LONGEST_PAUSE) if told else backoff_seconds(failures)
                    continue
                except (openai.APIConnectionError, ValueError) as exc:
                    # Sent, and maybe worked on: counted at its worst case.
                    self.budget.settle(worst_case, spent=None)
                    if isinstance(exc, ValueError) or failures >= self.retry.max_retries:
                        explain(exc, after_retries(failures))
                        raise
                    failures += 1
                    backoff = backoff_seconds(failures)
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


