"""The HTTP transport under the openai client: the SDK's own HTTP client (its aiohttp one,
else its httpx one) whose transport reads no more of a reply than a cap, undoing its
content-encoding here (`text/inflate.py`) so the cap counts what the client would hold, and
whose lost connections are not reported as timeouts.

The openai package is passed in (imported lazily by the callers), so importing this
module costs nothing.
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

from flipgate.text.inflate import ACCEPTED, Inflater

# The most of a reply flipgate reads. A chat reply (at most a few thousand tokens) is far
# below the first; a batch of 2,048 base64 embeddings of 3,072 dimensions is about half
# the second. Past them the reply is cut off and the request fails, unretried.
MAX_CHAT_REPLY_BYTES = 32 * 1024 * 1024
MAX_EMBEDDINGS_REPLY_BYTES = 64 * 1024 * 1024


class ReplyTooLarge(ValueError):
    """The provider sent more than flipgate reads of a reply."""


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
