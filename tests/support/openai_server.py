"""An OpenAI-compatible server on loopback, for tests that use the real openai client.

Usage (the fixture is registered in tests/conftest.py)::

    def test_something(openai_server):
        # OPENAI_BASE_URL and OPENAI_API_KEY already point here (monkeypatched).
        openai_server.on_groundedness(lambda query, context, response, call_index: 5)
        ...run flipgate...
        assert len(openai_server.chat_requests("groundedness")) == 2

What it serves
--------------
- ``POST /v1/chat/completions`` and ``POST /v1/embeddings``;
- the Azure shapes ``POST /openai/deployments/{deployment}/chat/completions``
  and ``.../embeddings`` (``?api-version=`` required), so ``AsyncAzureOpenAI``
  works too: use ``openai_server.azure_endpoint`` or ``set_azure_env()``.
  Requests without an ``Authorization: Bearer`` or ``api-key`` header get 401.

How a chat request is classified (its ``kind``)
-----------------------------------------------
A chat completion that asks for ``response_format: {"type": "json_object"}``
and names a metric is a judge request: ``"groundedness"``, ``"fluency"``, or
``"relevance"`` (the invented-questions prompt: it says "noncommittal" /
"questions"). flipgate's probe (its system message starts "flipgate probe") is
``"probe"``. Anything else is ``"generation"``. Embedding requests have kind
``"embeddings"``. The judge's inputs are pulled out of its messages, from
flipgate's delimited sections (``<<<QUERY tag>>>`` ... ``<<<END QUERY tag>>>``) or from
azure-ai-evaluation's ``# Data`` block, and recorded on the request.

Scripting (plain callables; every one has a default)
----------------------------------------------------
- ``on_generation(fn)``: ``fn(body) -> str | dict``. A dict may carry
  ``content`` and ``finish_reason`` (e.g. ``"length"``), or ``tool_calls``
  (``[(name, arguments), ...]``: the reply calls those tools). Default: a
  deterministic text made from the model and the last user message.
- ``on_groundedness(fn)``: ``fn(query, context, response, call_index)``.
- ``on_relevance(fn)``: ``fn(response, call_index)``.
- ``on_fluency(fn)``: ``fn(response, call_index)``.
- ``on_statements(fn)``: ``fn(context, response, call_index)``; a ``list``
  of ``{"text", "label", "span"}`` dicts is sent as ``{"statements": [...]}``.
  Default: one statement per sentence of the answer, ``supported`` (with the
  context sentence that shares most words as its span) when most of its words
  are in the context, else ``unsupported``.
- ``on_groundedness(fn, model="judge-2")`` (and the other judge scripts)
  answer only requests for that model (the body's ``model``, or the Azure
  deployment), e.g. a second-opinion judge; ``call_index`` then counts that
  model's requests alone.
- ``system_fingerprint``: sent on every chat completion (``None`` leaves it out).

  A judge callable returns an ``int`` (a well-formed reply with that score),
  a ``list`` of questions (relevance), a ``dict`` (sent as JSON, so you can
  send ``{"score": 9}`` or ``{"status": "skipped"}``), or a ``str`` (sent
  as the raw reply content, e.g. garbage). ``call_index`` counts earlier
  requests of that kind for the same inputs (0 for the first), so a test
  can make a re-score or a retry answer differently.
  Defaults: groundedness is a crude lexical judge (an unsupported figure
  -> 2, most words in the context -> 5, some -> 4, few -> 2, empty -> 3);
  relevance invents questions from the answer's words; fluency is 4.

Faults and timing
-----------------
- ``fail(kind, status=500, times=1, retry_after=None, headers=None)``: the next
  ``times`` requests of ``kind`` (or ``"any"``) get that HTTP error. ``retry_after``
  (seconds) is sent as ``Retry-After``; without it the server sends
  ``retry-after-ms: 1`` so the client's own retries stay fast in tests.
  ``headers`` are sent with it too (e.g. ``x-ratelimit-remaining-requests: 0``).
- ``missing_models``: model (or Azure deployment) names answered with the
  provider's own 404 ("model_not_found" / "DeploymentNotFound").
- ``rate_limit(rate, burst, retry_after=True, headers=True)``: a token
  bucket in front of every route, like a provider's requests-per-second
  limit: ``burst`` requests at once, refilled at ``rate`` a second; a
  request that finds it empty gets 429 (counted in ``rate_limited``).
  With ``retry_after`` the 429 says when a token is back (``retry-after-ms``
  and a whole-second ``Retry-After``); with ``headers`` every reply carries
  ``x-ratelimit-limit/remaining/reset-requests`` as OpenAI sends them.
- ``hiccups(share, retry_after=1, headers=False, seed=0)``: a share of the
  requests the bucket admits (chosen at random, seeded) get 429 anyway, with
  ``Retry-After`` — a provider's load-independent refusals, not the client's
  rate (counted in ``rate_limited`` and ``hiccups_sent``). With ``headers``
  they carry ``x-ratelimit-*`` headers that show capacity left.
- ``latency``: seconds every request waits (after it is recorded) before answering (threads
  overlap, so concurrent requests really run concurrently).
- ``peak_concurrency``: most requests in flight at once, measured here.

What was received
-----------------
``requests`` lists every request in arrival order (``Recorded``: method,
path, query args, headers, parsed JSON body, kind, judge inputs, status
code sent). ``chat_requests(kind=None)``, ``embedding_requests()`` and
``clear()`` help. Embeddings are a normalised hashed bag of words (texts
sharing words have a high cosine); ``encoding_format: "base64"`` (what the
openai client asks for by default) is answered as base64 float32.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import re
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from werkzeug.wrappers import Request, Response

from support.loopback import LoopbackHTTP

JUDGE_KINDS = ("groundedness", "relevance", "fluency", "statements")
KINDS = (*JUDGE_KINDS, "generation", "embeddings", "probe")
EMBEDDING_DIMENSIONS = 64

# flipgate's judge prompts put each input between these markers (see
# flipgate/judges/prompts.py); kept literal here so a test catches a drift.
_SECTION = re.compile(r"<<<(QUERY|CONTEXT|RESPONSE)((?: [0-9a-f]+)?)>>>\n(.*?)\n<<<END \1\2>>>",
                      re.DOTALL)
# azure-ai-evaluation's prompty files end with a "# Data" block of "NAME: value" lines.
_SDK_DATA = re.compile(
    r"# Data\n(?:CONTEXT: (?P<context>.*?)\n)?(?:QUERY: (?P<query>.*?)\n)?"
    r"RESPONSE: (?P<response>.*?)\n\n\n# Tasks", re.DOTALL)
_WORD = re.compile(r"[a-z0-9]+")
_FIGURE = re.compile(r"\d+(?:[.,]\d+)?")
_STOPWORDS = frozenset(
    "a an the and or but of to in on at for with by from is are was were be been it its "
    "this that these those you your we our i can will do does did not no yes as if".split())


@dataclass(frozen=True)
class JudgeInputs:
    query: str | None = None
    context: str | None = None
    response: str | None = None


@dataclass
class Recorded:
    method: str
    path: str
    args: dict[str, str]
    headers: dict[str, str]
    body: Any
    kind: str
    inputs: JudgeInputs | None = None
    deployment: str | None = None
    status: int | None = None  # set when the reply is sent
    received_at: float = field(default_factory=time.monotonic)

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def text(self) -> str:
        """Every message's content, joined: handy for `in` checks."""
        return _messages_text(self.body)


@dataclass
class _Fault:
    status: int
    remaining: int
    retry_after: float | str | None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


@dataclass
class TokenBucket:
    """`burst` requests at once, refilled at `rate` a second (see ``rate_limit``)."""

    rate: float
    burst: int
    retry_after: bool = True
    headers: bool = True
    tokens: float = 0.0
    stamp: float = 0.0

    def __post_init__(self) -> None:
        self.tokens, self.stamp = float(self.burst), time.monotonic()

    def take(self) -> tuple[bool, dict[str, str]]:
        """(admitted, headers to send); call under the server's lock."""
        now = time.monotonic()
        self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        admitted = self.tokens >= 1.0
        if admitted:
            self.tokens -= 1.0
        headers: dict[str, str] = {}
        if self.headers:
            headers.update({"x-ratelimit-limit-requests": str(self.burst),
                            "x-ratelimit-remaining-requests": str(int(self.tokens)),
                            "x-ratelimit-reset-requests": f"{(self.burst - self.tokens) / self.rate:.3f}s"})
        if not admitted and self.retry_after:
            wait = (1.0 - self.tokens) / self.rate
            headers.update({"retry-after-ms": str(max(1, math.ceil(wait * 1000))),
                            "Retry-After": str(max(1, math.ceil(wait)))})
        return admitted, headers


def _messages_text(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if isinstance(content, str):
            parts.append(content)
    return "\n".join(parts)


def _system_text(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    return "\n".join(m.get("content", "") for m in messages or []
                     if isinstance(m, dict) and m.get("role") in ("system", "developer")
                     and isinstance(m.get("content"), str))


def classify_chat(body: Any) -> str:
    """A chat request's kind, from its content (see the module docstring)."""
    if not isinstance(body, dict):
        return "generation"
    response_format = body.get("response_format")
    if not (isinstance(response_format, dict) and response_format.get("type") == "json_object"):
        return "generation"
    system = _system_text(body).lower()
    if system.startswith("flipgate probe"):
        return "probe"
    if "atomic statements" in system:
        return "statements"
    # The rubric lives in the system message for flipgate's prompts: decide on it
    # first, so an answer that happens to say "fluency" cannot change the kind.
    for kind, word in (("groundedness", "groundedness"), ("fluency", "fluency"),
                       ("relevance", "noncommittal")):
        if word in system:
            return kind
    text = _messages_text(body).lower()
    for kind, word in (("groundedness", "groundedness"), ("fluency", "fluency"),
                       ("relevance", "questions")):
        if word in text:
            return kind
    return "generation"


def extract_inputs(body: Any) -> JudgeInputs:
    """The judge's inputs as they appear in its messages."""
    text = _messages_text(body)
    sections = {name.lower(): value for name, _tag, value in _SECTION.findall(text)}
    if sections:
        return JudgeInputs(**sections)
    match = _SDK_DATA.search(text)
    if match:
        return JudgeInputs(**match.groupdict())
    return JudgeInputs()


# --- deterministic stand-ins for a model -------------------------------------------

def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def default_groundedness(query: str | None, context: str | None, response: str | None,
                         call_index: int) -> int:
    """A crude lexical judge: good enough for end-to-end tests that don't script."""
    response = response or ""
    context = context or ""
    if not response.strip():
        return 3
    context_figures = set(_FIGURE.findall(context))
    if any(fig not in context_figures for fig in _FIGURE.findall(response)):
        return 2
    words = _content_words(response)
    if not words:
        return 3
    known = set(_content_words(context)) | set(_content_words(query or ""))
    covered = sum(w in known for w in words) / len(words)
    return 5 if covered >= 0.8 else 4 if covered >= 0.5 else 2


def default_relevance(response: str | None, call_index: int) -> list[str]:
    words = _content_words(response or "") or ["nothing"]
    return [f"What about {' '.join(words[i:i + 4])}?" for i in range(0, min(len(words), 12), 4)] \
        or ["What is this about?"]


def default_fluency(response: str | None, call_index: int) -> int:
    return 4


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def default_statements(context: str | None, response: str | None, call_index: int) -> list[dict]:
    """One statement per sentence, copied verbatim, labelled by word overlap with the context."""
    context = context or ""
    known = set(_content_words(context))
    sentences = [s.strip() for s in _SENTENCE_END.split(context) if s.strip()]
    out = []
    for text in (s.strip() for s in _SENTENCE_END.split(response or "")):
        if not text:
            continue
        words = _content_words(text)
        figures_ok = all(f in _FIGURE.findall(context) for f in _FIGURE.findall(text))
        covered = sum(w in known for w in words) / len(words) if words else 1.0
        if not words:
            out.append({"text": text, "label": "not_a_claim", "span": None})
        elif covered >= 0.6 and figures_ok:
            span = max(sentences, key=lambda s: len(set(_content_words(s)) & set(words)), default=None)
            out.append({"text": text, "label": "supported", "span": span})
        else:
            out.append({"text": text, "label": "unsupported", "span": None})
    return out


def default_generation(body: dict[str, Any]) -> str:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    user = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:8]
    return f"[{body.get('model')} {digest}] {str(user)[:200]}"


def embed_text(text: str) -> list[float]:
    """A normalised hashed bag of words: shared words mean a high cosine."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word, count in Counter(_content_words(text) or [text.lower()]).items():
        bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
        vector[bucket % EMBEDDING_DIMENSIONS] += float(count)
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


# --- the server ---------------------------------------------------------------------

class FakeOpenAI:
    """The server's state and scripting surface (see the module docstring)."""

    def __init__(self, *, keep_alive: bool = False) -> None:
        """`keep_alive`: serve persistent HTTP/1.1 connections, as providers do (the
        benchmarks); the default closes each connection after its response."""
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self.latency: float = 0.0
        self.peak_concurrency = 0
        self._active = 0
        self.bucket: TokenBucket | None = None
        self.rate_limited = 0
        self.hiccups_sent = 0
        self._hiccups: tuple[float, float, bool, random.Random] | None = None
        self._faults: dict[str, list[_Fault]] = {}
        self.missing_models: set[str] = set()
        self._calls: Counter[tuple[str, str | None, JudgeInputs]] = Counter()
        self.system_fingerprint: str | None = "fp_loopback"
        # When set, only these bearer tokens are accepted (an Entra ID sign-in under test).
        self.bearer_tokens: Collection[str] | None = None
        # kind -> model -> script, for judges scripted per model (a second opinion).
        self._per_model: dict[str, dict[str, Callable[..., Any]]] = {}
        self._generation: Callable[[dict[str, Any]], Any] = default_generation
        self._groundedness: Callable[..., Any] = default_groundedness
        self._relevance: Callable[..., Any] = default_relevance
        self._fluency: Callable[..., Any] = default_fluency
        self._statements: Callable[..., Any] = default_statements
        self._http = LoopbackHTTP(self._wsgi, keep_alive=keep_alive)
        self.root_url = ""

    # -- lifecycle
    def start(self) -> None:
        self.root_url = self._http.start()

    def stop(self) -> None:
        self._http.stop()

    @property
    def connections(self) -> int:
        """Connections the keep-alive server accepted (0 on the default server)."""
        return self._http.connections

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def azure_endpoint(self) -> str:
        return self.root_url

    def set_azure_env(self, monkeypatch: pytest.MonkeyPatch, *,
                      api_version: str = "2024-10-21") -> None:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", self.azure_endpoint)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "test-azure-key")
        monkeypatch.setenv("OPENAI_API_VERSION", api_version)

    # -- scripting
    def on_generation(self, fn: Callable[[dict[str, Any]], Any]) -> None:
        self._generation = fn

    def on_groundedness(self, fn: Callable[[str | None, str | None, str | None, int], Any], *,
                        model: str | None = None) -> None:
        self._script("groundedness", fn, model)

    def on_relevance(self, fn: Callable[[str | None, int], Any], *, model: str | None = None) -> None:
        self._script("relevance", fn, model)

    def on_fluency(self, fn: Callable[[str | None, int], Any], *, model: str | None = None) -> None:
        self._script("fluency", fn, model)

    def on_statements(self, fn: Callable[[str | None, str | None, int], Any], *,
                      model: str | None = None) -> None:
        self._script("statements", fn, model)

    def _script(self, kind: str, fn: Callable[..., Any], model: str | None) -> None:
        if model is None:
            setattr(self, f"_{kind}", fn)
        else:
            self._per_model.setdefault(kind, {})[model] = fn

    def fail(self, kind: str, *, status: int = 500, times: int = 1,
             retry_after: float | str | None = None,
             headers: dict[str, str] | None = None, body: bytes | None = None) -> None:
        """`retry_after` as a number of seconds, or any text, sent as it is (an HTTP date,
        `nan`, ...). `body`: these bytes as the reply, instead of an error's JSON (e.g. a
        gzip bomb, with `headers={"Content-Encoding": "gzip"}`)."""
        if kind not in (*KINDS, "any"):
            raise ValueError(f"unknown kind {kind!r}")
        with self._lock:
            self._faults.setdefault(kind, []).append(
                _Fault(status, times, retry_after, dict(headers or {}), body))

    def rate_limit(self, rate: float, burst: int, *, retry_after: bool = True,
                   headers: bool = True) -> None:
        with self._lock:
            self.bucket = TokenBucket(rate=rate, burst=burst, retry_after=retry_after,
                                      headers=headers)

    def hiccups(self, share: float, *, retry_after: float = 1, headers: bool = False,
                seed: int = 0) -> None:
        with self._lock:
            self._hiccups = (share, retry_after, headers, random.Random(seed))

    # -- inspection
    def chat_requests(self, kind: str | None = None) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.kind != "embeddings"
                    and r.kind != "other" and (kind is None or r.kind == kind)]

    def embedding_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.kind == "embeddings"]

    def clear(self) -> None:
        """Forget received requests and the per-input call counts (scripts stay)."""
        with self._lock:
            self.requests.clear()
            self._calls.clear()
            self.peak_concurrency = 0
            self.rate_limited = 0
            self.hiccups_sent = 0

    # -- handling
    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        request = Request(environ)
        with self._lock:
            self._active += 1
            self.peak_concurrency = max(self.peak_concurrency, self._active)
        try:
            response = self._handle(request)
        finally:
            with self._lock:
                self._active -= 1
        return response(environ, start_response)

    def _handle(self, request: Request) -> Response:
        path = request.path
        deployment = None
        route = None
        if path.startswith("/v1/"):
            route = path[len("/v1/"):]
        elif (match := re.fullmatch(r"/openai/deployments/([^/]+)/(.+)", path)):
            deployment, route = match.group(1), match.group(2)
        try:
            body = json.loads(request.get_data() or b"null")
        except ValueError:
            body = None
        kind = ("embeddings" if route == "embeddings"
                else classify_chat(body) if route == "chat/completions" else "other")
        record = Recorded(method=request.method, path=path, args=dict(request.args),
                          headers=dict(request.headers), body=body, kind=kind,
                          deployment=deployment,
                          inputs=extract_inputs(body) if kind in JUDGE_KINDS else None)
        with self._lock:
            self.requests.append(record)
            admitted, limit_headers = self.bucket.take() if self.bucket else (True, {})
            if admitted and self._hiccups is not None and kind != "other":
                share, wait, with_headers, chance = self._hiccups
                if chance.random() < share:
                    admitted = False
                    self.hiccups_sent += 1
                    limit_headers = {**limit_headers, "Retry-After": f"{wait:g}"}
                    if with_headers and not self.bucket:
                        limit_headers.update({"x-ratelimit-limit-requests": "10000",
                                              "x-ratelimit-remaining-requests": "9000",
                                              "x-ratelimit-reset-requests": "6s"})
            if not admitted:
                self.rate_limited += 1

        if self.latency:  # recorded on arrival, answered after the latency
            time.sleep(self.latency)
        if admitted:
            response = self._route(request, record, route)
        else:
            response = _error(429, "Rate limit reached for requests", "rate_limit_exceeded")
        response.headers.extend(limit_headers)
        record.status = response.status_code
        return response

    def _route(self, request: Request, record: Recorded, route: str | None) -> Response:
        if request.method != "POST" or route not in ("chat/completions", "embeddings"):
            return _error(404, f"no route for {request.method} {request.path}", "not_found")
        if record.deployment is not None and "api-version" not in request.args:
            return _error(404, "api-version query parameter is missing", "not_found")
        auth = request.headers.get("Authorization", "")
        if self.bearer_tokens is not None:
            # Entra ID: only a bearer token the loopback authority issued is let in.
            if not auth.startswith("Bearer ") or auth[7:] not in self.bearer_tokens:
                return _error(401, "Access denied due to invalid subscription key or wrong API "
                              "endpoint, or the bearer token is not valid.", "PermissionDenied")
        elif not (auth.startswith("Bearer ") and auth[7:].strip()) and not request.headers.get("api-key"):
            return _error(401, "missing API key", "invalid_api_key")
        if not isinstance(record.body, dict):
            return _error(400, "body must be a JSON object", "invalid_request_error")
        model = record.deployment or record.body.get("model")
        if model in self.missing_models:
            if record.deployment is not None:
                return _error(404, "The API deployment for this resource does not exist. If "
                              "you created the deployment within the last 5 minutes, please "
                              "wait a moment and try again.", "DeploymentNotFound")
            return _error(404, f"The model `{model}` does not exist or you do not have access "
                          "to it.", "model_not_found")
        if (fault := self._take_fault(record.kind)) is not None:
            headers = ({"Retry-After": str(fault.retry_after)} if fault.retry_after is not None
                       else {"retry-after-ms": "1"})
            headers.update(fault.headers)
            if fault.body is not None:
                return Response(fault.body, status=fault.status, headers=fault.headers,
                                content_type="application/json")
            return _error(fault.status, f"injected {fault.status}", "injected", headers=headers)
        if record.kind == "embeddings":
            return self._embeddings(record.body)
        return self._chat(record)

    def _take_fault(self, kind: str) -> _Fault | None:
        with self._lock:
            for key in (kind, "any"):
                queue = self._faults.get(key) or []
                while queue and queue[0].remaining <= 0:
                    queue.pop(0)
                if queue:
                    queue[0].remaining -= 1
                    return queue[0]
        return None

    def _chat(self, record: Recorded) -> Response:
        body = record.body
        if record.kind == "generation":
            reply = self._generation(body)
        elif record.kind == "probe":
            reply = {"ok": True}
        else:
            inputs = record.inputs or JudgeInputs()
            model = record.model or record.deployment
            script = self._per_model.get(record.kind, {}).get(model or "")
            counted_model = model if script is not None else None
            with self._lock:
                call_index = self._calls[(record.kind, counted_model, inputs)]
                self._calls[(record.kind, counted_model, inputs)] += 1
            script = script or getattr(self, f"_{record.kind}")
            if record.kind == "groundedness":
                reply = script(inputs.query, inputs.context, inputs.response, call_index)
            elif record.kind == "statements":
                reply = script(inputs.context, inputs.response, call_index)
            else:
                reply = script(inputs.response, call_index)
        message: dict[str, Any]
        if isinstance(reply, dict) and "tool_calls" in reply:  # a generation that calls tools
            calls = [{"id": f"call_{i}", "type": "function",
                      "function": {"name": name, "arguments": json.dumps(arguments)}}
                     for i, (name, arguments) in enumerate(reply["tool_calls"])]
            content, finish_reason = "", "tool_calls"
            message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": calls}
        else:
            content, finish_reason = _reply_content(record.kind, reply)
            message = {"role": "assistant", "content": content, "refusal": None}
        prompt_tokens = _tokens(_messages_text(body))
        completion_tokens = _tokens(content)
        extra = {"system_fingerprint": self.system_fingerprint} if self.system_fingerprint else {}
        return _json({
            **extra,
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or record.deployment or "unknown",
            "choices": [{"index": 0, "finish_reason": finish_reason, "logprobs": None,
                         "message": message}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    def _embeddings(self, body: dict[str, Any]) -> Response:
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return _error(400, "input must be a string or a non-empty list of strings",
                          "invalid_request_error")
        if any(not t for t in texts):
            return _error(400, "input cannot contain an empty string", "invalid_request_error")
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = embed_text(text)
            encoded: Any = (base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                            if as_base64 else vector)
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(_tokens(t) for t in texts)
        return _json({"object": "list", "data": data, "model": body.get("model"),
                      "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


def _reply_content(kind: str, reply: Any) -> tuple[str, str]:
    """Turn what a script returned into (content, finish_reason)."""
    if kind == "probe":
        return json.dumps(reply), "stop"
    if kind == "generation":
        if isinstance(reply, dict):
            return str(reply.get("content", "")), str(reply.get("finish_reason", "stop"))
        return str(reply), "stop"
    if isinstance(reply, str):
        return reply, "stop"
    if isinstance(reply, bool):
        raise TypeError("a judge script returned a bool; return an int, list, dict or str")
    if isinstance(reply, int):
        return json.dumps({"reason": f"scripted {kind} score {reply}", "score": reply,
                           "status": "completed"}), "stop"
    if isinstance(reply, (list, tuple)) and kind == "statements":
        return json.dumps({"statements": list(reply)}), "stop"
    if isinstance(reply, (list, tuple)):
        return json.dumps({"questions": list(reply), "noncommittal": False}), "stop"
    if isinstance(reply, dict):
        return json.dumps(reply), "stop"
    raise TypeError(f"a judge script returned {type(reply).__name__}")


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(payload), status=status, headers=headers,
                    content_type="application/json")


def _error(status: int, message: str, code: str, *, headers: dict[str, str] | None = None) -> Response:
    return _json({"error": {"message": message, "type": code, "param": None, "code": code}},
                 status=status, headers=headers)


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A running FakeOpenAI; OPENAI_BASE_URL / OPENAI_API_KEY point at it."""
    server = FakeOpenAI()
    server.start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    try:
        yield server
    finally:
        server.stop()
