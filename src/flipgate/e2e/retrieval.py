"""Live retrieval for the end-to-end run: a command or an HTTP endpoint, cached per day.

Only the base ref's configuration names a retriever, and a command runs in an
export of the base commit's files: nothing of the pull request is executed.
The command is split like a shell would split it but never run by a shell; it
gets the query on stdin and prints the context on stdout (one trailing newline
is dropped). Its environment holds PATH, locale, HOME (its own directory),
FLIPGATE_CASE_ID and FLIPGATE_CATEGORY, and only the variables `e2e.env` lists.
An endpoint gets `POST {"query", "id", "category"}` and answers
`{"context": "..."}` or the context as plain text.

A context is cached per (query, retriever, UTC date): a rerun the same day asks
the retriever nothing. Failures are never cached.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from flipgate.config.schema import E2EConfig
from flipgate.confine import account_variables, chunks, kill_group, reap, start
from flipgate.errors import InputError, Problem
from flipgate.llm.cache import Cache
from flipgate.model import Case
from flipgate.output.progress import Progress, Silent
from flipgate.text.inflate import ACCEPTED, EncodingRefused, Inflater

if TYPE_CHECKING:
    import httpx

MAX_CONTEXT_BYTES = 1024 * 1024   # a live context, as printed or answered
STDERR_TAIL_BYTES = 4096          # what is kept of a command's stderr, for its error
_BASIC_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")
_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


class RetrievalError(Exception):
    """The retriever failed for one case (exit status, timeout, bad reply)."""


class Retriever(Protocol):
    description: str   # for the report and the comment
    identity: str      # what the cache key holds of the retriever

    async def fetch(self, case: Case) -> str: ...


def command_environment(environ: Mapping[str, str], listed: Sequence[str], *, home: Path) -> dict[str, str]:
    """What the retrieval command may see: basics, and the listed variables only."""
    env = {name: environ[name] for name in (*_BASIC_ENV, *listed) if name in environ}
    env["HOME"] = str(home)
    return env


@dataclass
class CommandRetriever:
    argv: list[str]
    cwd: Path
    env: Mapping[str, str]
    timeout: float
    description: str = ""
    identity: str = ""
    run_as: int | None = None   # the uid (and gid) it runs as; None: this process's

    async def fetch(self, case: Case) -> str:
        env = {**self.env, "FLIPGATE_CASE_ID": case.id, "FLIPGATE_CATEGORY": case.category}
        try:
            process = await start(self.argv, cwd=self.cwd, env=env, run_as=self.run_as)
        except OSError as exc:
            raise RetrievalError(f"cannot start {self.argv[0]!r}: {exc.strerror}") from None
        try:
            async with asyncio.timeout(self.timeout):
                out, err = await _communicate(process, case.query.encode("utf-8"))
        except TimeoutError:
            raise RetrievalError(f"timed out after {self.timeout:g} s") from None
        finally:
            kill_group(process)  # also what it left running behind it
            await reap(process)
        if process.returncode != 0:
            last = err.decode("utf-8", "replace").strip().splitlines()
            raise RetrievalError(f"exited with status {process.returncode}"
                                 + (f": {last[-1][:300]}" if last else ""))
        return valid_text(_text(_drop_final_newline_bytes(out), what="printed"))


async def _communicate(process: asyncio.subprocess.Process, query: bytes) -> tuple[bytes, bytes]:
    """Write the query, read stdout up to the cap (more is an error, at once) and keep only
    the tail of stderr, however much either prints."""
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    assert stdin is not None and stdout is not None and stderr is not None

    async def feed() -> None:
        try:
            stdin.write(query)
            await stdin.drain()
            stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # it did not read its query: its output still counts

    async def output() -> bytes:
        return await _capped(chunks(stdout), what="printed")

    async def tail() -> bytes:
        kept = b""
        async for chunk in chunks(stderr):
            kept = (kept + chunk)[-STDERR_TAIL_BYTES:]
        return kept

    feeding, reading, tailing = (asyncio.ensure_future(feed()), asyncio.ensure_future(output()),
                                 asyncio.ensure_future(tail()))
    tasks = (feeding, reading, tailing)
    try:
        await asyncio.gather(*tasks)
        out, err = reading.result(), tailing.result()
    finally:
        # One failed (output over the cap) or the run timed out: stop the others before
        # anyone else reads the pipes.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    await process.wait()
    return out, err


async def _capped(parts: AsyncIterator[bytes], *, what: str) -> bytes:
    """A command's output or an HTTP body, refused the moment it passes the cap."""
    kept, size = [], 0
    async for chunk in parts:
        size += len(chunk)
        if size > MAX_CONTEXT_BYTES:
            raise RetrievalError(f"{what} more than {MAX_CONTEXT_BYTES:,} bytes")
        kept.append(chunk)
    return b"".join(kept)


def _drop_final_newline_bytes(data: bytes) -> bytes:
    if data.endswith(b"\r\n"):
        return data[:-2]
    return data[:-1] if data.endswith(b"\n") else data


def _text(data: bytes, *, what: str, encoding: str = "utf-8") -> str:
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        raise RetrievalError(f"{what} text that is not {encoding.upper()}") from None


@dataclass
class HttpRetriever:
    url: str
    headers: Mapping[str, str]
    timeout: float
    client: httpx.AsyncClient | None   # passed in; None only to check the configuration
    description: str = ""
    identity: str = ""

    async def fetch(self, case: Case) -> str:
        """POST the case; the whole exchange (connect, headers, body) within `timeout`,
        the body read as a stream and refused past the cap."""
        import httpx

        if self.client is None:
            raise RetrievalError("no HTTP client was given")
        try:
            async with asyncio.timeout(self.timeout):
                async with self.client.stream(
                        "POST", self.url, json={"query": case.query, "id": case.id,
                                                "category": case.category},
                        headers={**{k: v for k, v in self.headers.items()
                                    if k.lower() != "accept-encoding"},
                                 "Accept-Encoding": ACCEPTED},
                        timeout=self.timeout) as response:
                    if response.status_code >= 300:
                        raise RetrievalError(f"HTTP {response.status_code}")
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > MAX_CONTEXT_BYTES:
                        raise RetrievalError(f"answered more than {MAX_CONTEXT_BYTES:,} bytes")
                    content = await _capped(_inflated(response), what="answered")
        except (TimeoutError, httpx.TimeoutException):
            raise RetrievalError(f"timed out after {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise RetrievalError(f"request failed: {type(exc).__name__}") from None
        if response.headers.get("content-type", "").startswith("application/json"):
            return _json_context(content)
        return valid_text(_text(content, what="answered",
                                encoding=response.charset_encoding or "utf-8"))


async def _inflated(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body as undone here, a bounded piece at a time (httpx would inflate each chunk
    whole, and a chunk of a bomb to many megabytes): the cap counts what it inflates to."""
    try:
        inflater = Inflater(response.headers.get("content-encoding"))
        async for chunk in response.aiter_raw():
            for piece in inflater.feed(chunk):
                yield piece
        inflater.finish()
    except EncodingRefused as exc:
        raise RetrievalError(str(exc)) from None


def _json_context(content: bytes) -> str:
    """`{"context": "..."}`, refused when deep, overlong, non-finite or not text."""
    def refuse(value: str) -> None:
        raise ValueError(f"{value} is not a JSON number")

    try:
        body = json.loads(content, parse_constant=refuse)
    except RecursionError:
        raise RetrievalError("answered JSON nested too deeply") from None
    except ValueError:  # invalid JSON or UTF-8, a number too long, NaN
        raise RetrievalError("answered invalid JSON") from None
    context = body.get("context") if isinstance(body, dict) else None
    if not isinstance(context, str):
        raise RetrievalError("answered JSON without a string 'context'")
    return valid_text(context)


def valid_text(context: str) -> str:
    """A context as text every output can hold: JSON can spell a lone surrogate
    (`"\\ud800"`), which no UTF-8 file can."""
    try:
        context.encode("utf-8")
    except UnicodeEncodeError:
        raise RetrievalError("answered text with a lone surrogate (not valid Unicode)") from None
    return context


def _expand_headers(headers: Sequence[tuple[str, str]], environ: Mapping[str, str],
                    listed: Sequence[str], source: str) -> dict[str, str]:
    """Header values with ${env:NAME} expanded, for names `e2e.env` lists only."""
    out = {}
    for name, value in headers:
        unlisted = [v for v in _ENV_REF.findall(value) if v not in listed]
        if unlisted:
            raise InputError(Problem(source, None, f"e2e.headers.{name} uses ${{env:{unlisted[0]}}}, "
                                                   "which is not listed in e2e.env"))
        out[name] = _ENV_REF.sub(lambda m: environ.get(m.group(1), ""), value)
    return out


def make_retriever(config: E2EConfig, *, source: str, workdir: Path | None,
                   environ: Mapping[str, str], http_client: httpx.AsyncClient | None = None,
                   run_as: int | None = None) -> Retriever:
    """The retriever the (base) configuration names. `workdir`: the base commit's files."""
    if config.command is not None:
        try:
            argv = shlex.split(config.command)
        except ValueError as exc:
            raise InputError(Problem(source, None, f"e2e.command cannot be split: {exc}")) from None
        if not argv or workdir is None:
            raise InputError(Problem(source, None, "e2e.command is empty"))
        return CommandRetriever(argv=argv, cwd=workdir, timeout=config.timeout, run_as=run_as,
                                env={**command_environment(environ, config.env, home=workdir),
                                     **account_variables(run_as)},
                                description=f"command `{config.command}`",
                                identity=f"command:{config.command}")
    assert config.url is not None
    headers = _expand_headers(config.headers, environ, config.env, source)
    return HttpRetriever(url=config.url, headers=headers, timeout=config.timeout, client=http_client,
                         description=f"POST {config.url}", identity=f"url:{config.url}")


def check_retriever(config: E2EConfig, *, source: str, environ: Mapping[str, str]) -> None:
    """Raise the problems make_retriever would, before the run spends anything."""
    make_retriever(config, source=source, workdir=Path("."), environ=environ)


@dataclass(frozen=True)
class LiveContext:
    context: str | None
    error: str | None = None
    cached: bool = False


def retriever_hash(retriever: Retriever) -> str:
    return hashlib.sha256(retriever.identity.encode("utf-8")).hexdigest()


async def fetch_all(cases: Sequence[Case], retriever: Retriever, *, cache: Cache | None, date: str,
                    limit: int, progress: Progress | None = None) -> dict[str, LiveContext]:
    """Every case's live context (or its error), at most `limit` retrievals at once."""
    semaphore = asyncio.Semaphore(limit)
    digest = retriever_hash(retriever)
    progress = progress or Silent()
    progress.add(len(cases))

    async def one(case: Case) -> LiveContext:
        try:
            return await fetch_one(case)
        finally:
            progress.advance()

    async def fetch_one(case: Case) -> LiveContext:
        key = {"kind": "live-context", "retriever": digest, "query": case.query, "date": date}
        if cache is not None:
            hit = cache.get(key)
            if isinstance(hit, str):
                return LiveContext(context=hit, cached=True)
        async with semaphore:
            try:
                context = await retriever.fetch(case)
            except RetrievalError as exc:
                return LiveContext(context=None, error=f"live retrieval failed: {exc}")
            except Exception as exc:  # noqa: BLE001 - whatever the retriever does, it is this row's error
                return LiveContext(context=None, error=f"live retrieval failed: {type(exc).__name__}")
        if cache is not None:
            cache.put(key, context)
        return LiveContext(context=context)

    results = await asyncio.gather(*(one(case) for case in cases))
    return {case.id: result for case, result in zip(cases, results, strict=True)}
