"""The optional second engine: `judge.engine: azure-ai-evaluation`.

Groundedness (with the query) and fluency come from that package's own
evaluators, which ask for the same reply shape as flipgate's rubrics, so the
verdicts mean the same. Relevance has no invented-questions metric there and
reuses the openai engine's (`OpenAIJudge.relevance`, through `LLM`).

What this engine does differently, and why:
- The SDK builds its own openai client for every call, so its requests
  bypass `LLM`: no on-disk cache (every run asks again), and its own retry
  loop (up to 10 tries, honouring Retry-After) instead of the client's.
  They still count against the shared concurrency limit and the budget.
- The evaluators are synchronous and have no timeout control: each call runs
  in its own daemon thread under `asyncio.wait_for`. A call that times out is
  abandoned; its thread may finish in the background but never keeps the
  process from exiting.
- The SDK's own reading of a reply is not used: it keeps the last of two
  duplicate keys and takes the string "2" as 2. The reply text it got (the
  result's `sample_output`, or the `JSONDecodeError` it raised on a fenced or
  bare reply) goes through `flipgate.judges.replies`, the reader the openai
  engine uses, so both engines read every reply the same way.
- Known traps of 1.18.10, handled here: the model config needs
  `"type": "openai"` and a `base_url`; `PF_LOGGING_LEVEL` must be set before
  the SDK is imported or tracebacks go to stdout (cli.main sets it); an evaluator used
  once with a query keeps the query prompt, so each instance serves one mode
  only (`judge.mode` picks the prompty: with_query always passes the query,
  without_query never does).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from flipgate.config.schema import AUTH_ENTRA, AZURE_ENGINE, WITH_QUERY, WITHOUT_QUERY
from flipgate.errors import FlipgateError, InputError
from flipgate.judges.base import EMPTY_ANSWER
from flipgate.judges.openai_judge import OpenAIJudge, describe_api_error
from flipgate.judges.replies import JudgeReplyError, describe_bad_reply, read_score
from flipgate.llm.client import Budget, Limiter, Usage
from flipgate.llm.endpoints import Endpoint
from flipgate.model import Case, JudgeInfo, Relevance, Score, Statements
from flipgate.settings import Settings

if TYPE_CHECKING:
    import openai

T = TypeVar("T")

INSTALL_HINT = "pip install 'flipgate[azure]'"
SDK_NAME = "azure-ai-evaluation"
# The prompty file behind each metric the SDK scores, under azure/ai/evaluation/_evaluators/.
_PROMPTY_FILES = {
    ("groundedness", WITH_QUERY): "_groundedness/groundedness_with_query.prompty",
    ("groundedness", WITHOUT_QUERY): "_groundedness/groundedness_without_query.prompty",
    ("fluency", WITH_QUERY): "_fluency/fluency.prompty",
    ("fluency", WITHOUT_QUERY): "_fluency/fluency.prompty",
}


class _BadReply(Exception):
    """The evaluator gave no reply that reads as a score; `reply` is its text, if known."""

    def __init__(self, problem: str, reply: str | None = None):
        super().__init__(problem)
        self.reply = reply


def _sdk_root() -> Path | None:
    """The installed SDK's package folder, found without importing it (None: not installed)."""
    spec = importlib.util.find_spec("azure.ai.evaluation") if importlib.util.find_spec("azure") else None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def sdk_pin() -> dict[str, str | None]:
    """The SDK as report.json's `judge.sdk` names it."""
    try:
        version: str | None = importlib.metadata.version(SDK_NAME)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"name": SDK_NAME, "version": version}


def sdk_prompty_texts(mode: str) -> dict[str, str]:
    """The text of each prompty file the SDK sends for `mode`, by metric, read from the
    installed package: what `rubric_hash` pins for this engine. Without the package there is
    nothing to pin (and `make_judge` refuses to build this engine)."""
    root = _sdk_root()
    if root is None:
        return {}
    return {metric: (root / "_evaluators" / name).read_text(encoding="utf-8")
            for (metric, file_mode), name in _PROMPTY_FILES.items() if file_mode == mode}


def model_config_for(endpoint: Endpoint, *, model: str, settings: Settings) -> dict[str, Any]:
    """The SDK's model configuration for an endpoint. The key comes from the
    environment only (through `settings`), as for the openai engine; with `auth: entra`
    there is none, and the evaluators sign in with the run's credential instead."""
    if endpoint.kind == "azure" and endpoint.auth == AUTH_ENTRA:
        return {"type": "azure_openai", "azure_endpoint": endpoint.base_url,
                "azure_deployment": model, "api_version": endpoint.api_version}
    if endpoint.kind == "azure":
        key = settings.azure_openai_api_key
        if not key:
            raise InputError("azure needs AZURE_OPENAI_API_KEY in the environment")
        return {"type": "azure_openai", "azure_endpoint": endpoint.base_url,
                "azure_deployment": model, "api_version": endpoint.api_version, "api_key": key}
    key = settings.openai_api_key
    if not key:
        raise InputError("openai needs OPENAI_API_KEY in the environment "
                         "(any value works for a local OpenAI-compatible server)")
    # 1.18.10 treats a config without "type" as Azure, and without base_url
    # falls back to whatever OPENAI_BASE_URL says: state both.
    return {"type": "openai", "model": model, "base_url": endpoint.base_url, "api_key": key}


def reply_of(result: Mapping[str, Any], metric: str) -> str:
    """The judge's reply text inside an evaluator's result (`sample_output`, the
    assistant turn the SDK got), or _BadReply when the result holds none."""
    properties = result.get(f"{metric}_properties")
    sample = properties.get("sample_output") if isinstance(properties, Mapping) else None
    try:
        turns = json.loads(sample) if isinstance(sample, str) and sample else []
    except ValueError:
        turns = []
    replies = [turn.get("content") for turn in turns if isinstance(turn, dict)
               and turn.get("role") == "assistant" and isinstance(turn.get("content"), str)]
    if len(replies) != 1:
        status = result.get(f"{metric}_status")
        why = f" (status {status}: {result.get(f'{metric}_reason')})" if status else ""
        raise _BadReply(f"the evaluator's result carries no judge reply{why}")
    return str(replies[0])


def read_result(result: Mapping[str, Any], metric: str) -> Score:
    """An evaluator's result as a Score, read from the judge's own reply by the shared
    reader (never from the SDK's own parse); raises _BadReply when it holds none."""
    reply = reply_of(result, metric)
    try:
        return read_score(reply)
    except JudgeReplyError as exc:
        raise _BadReply(str(exc), reply) from None


def _reply_in(exc: BaseException) -> str | None:
    """The reply text behind an SDK exception: it raises the `JSONDecodeError` of its own
    `json.loads` on a reply that is not bare JSON (a fence, prose, a bare integer, tags)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, json.JSONDecodeError) and isinstance(current.doc, str):
            return current.doc
        current = current.__cause__ or current.__context__
    return None


def _api_failure(exc: BaseException) -> openai.OpenAIError | None:
    """The openai error behind an SDK exception, if any: the SDK wraps those after
    its own retries, and they are not bad replies to ask again."""
    import openai

    for candidate in (exc, exc.__cause__):
        if isinstance(candidate, openai.OpenAIError):
            return candidate
    return None


def _import_sdk() -> Any:
    # PF_LOGGING_LEVEL must be set before the SDK creates its loggers, or they print
    # tracebacks to stdout: the process's entry point (cli.main) sets it.
    try:
        import azure.ai.evaluation as sdk
    except ImportError as exc:
        raise InputError(f"judge.engine {AZURE_ENGINE} needs the optional package: {INSTALL_HINT} "
                         f"({exc})") from None
    return sdk


class AzureEvalJudge:
    """The `Judge` protocol on azure-ai-evaluation's evaluators."""

    def __init__(self, *, model_config: Mapping[str, Any], info: JudgeInfo,
                 relevance_judge: OpenAIJudge, limiter: Limiter, budget: Budget,
                 timeout: float, reasoning: bool = False, usage: Usage | None = None,
                 credential: Any = None):
        sdk = _import_sdk()
        self.info = info
        self.relevance_judge = relevance_judge
        self.limiter = limiter
        self.budget = budget
        self.timeout = timeout
        self.usage = usage if usage is not None else Usage()
        # One instance, one mode: with_query always passes the query (the SDK then loads
        # groundedness_with_query.prompty), without_query never does. `credential`
        # (auth: entra): the SDK asks it for Cognitive Services tokens itself.
        self._groundedness = sdk.GroundednessEvaluator(dict(model_config), is_reasoning_model=reasoning,
                                                       credential=credential)
        self._fluency = sdk.FluencyEvaluator(dict(model_config), is_reasoning_model=reasoning,
                                             credential=credential)

    async def groundedness(self, case: Case, response: str, *, sample: int = 0) -> Score:
        # `sample` needs no cache tag here: this engine never caches, every call asks.
        if not response.strip():
            return EMPTY_ANSWER
        if self.info.mode == WITHOUT_QUERY:
            return await self._score("groundedness", lambda: self._groundedness(
                context=case.context, response=response))
        return await self._score("groundedness", lambda: self._groundedness(
            query=case.query, context=case.context, response=response))

    async def fluency(self, response: str) -> Score:
        if not response.strip():
            return Score.failed("fluency: empty answer, nothing to rate (no judge was asked)")
        return await self._score("fluency", lambda: self._fluency(response=response))

    async def relevance(self, items: Sequence[tuple[Case, str]]) -> list[Relevance]:
        return await self.relevance_judge.relevance(items)

    async def probe(self) -> None:
        """The same endpoint and deployment serve the SDK: the OpenAI judge's probe covers it."""
        await self.relevance_judge.probe()
    async def statements(self, case: Case, response: str) -> Statements:
        # The SDK has no statement-level metric: the openai engine's, through `LLM`.
        return await self.relevance_judge.statements(case, response)

    async def aclose(self) -> None:
        await self.relevance_judge.aclose()

    async def _score(self, metric: str, call: Callable[[], Mapping[str, Any]]) -> Score:
        """Run an evaluator; a bad reply is asked again once, like the openai engine."""
        prefix = f"{metric} judge ({AZURE_ENGINE})"
        problem, reply = "", None
        for _attempt in range(2):
            try:
                result = await self._run(call)
                self._account(result, metric)
                return read_result(result, metric)
            except TimeoutError:
                return Score.failed(f"{prefix}: no answer within {self.timeout:g}s")
            except _BadReply as exc:
                problem, reply = str(exc), exc.reply
            except FlipgateError:
                raise  # the budget ran out: the run stops
            except Exception as exc:  # noqa: BLE001 - the SDK raises many unrelated types
                if (api_error := _api_failure(exc)) is not None:
                    return Score.failed(f"{prefix}: {describe_api_error(api_error, retries=None)} "
                                        "(after the evaluator's own retries)")
                reply = _reply_in(exc)
                if reply is None:
                    problem = f"the evaluator failed: {type(exc).__name__}: {exc}"
                    continue
                # The SDK could not read it; the shared reader may (a fence, tags, "4").
                self.usage.requests += 1
                try:
                    return read_score(reply)
                except JudgeReplyError as bad:
                    problem = str(bad)
        return Score.failed(f"{prefix} answered nonsense twice: "
                            f"{describe_bad_reply(problem, reply, model=self.info.model)}")

    def _account(self, result: Mapping[str, Any], metric: str) -> None:
        """Token usage as the SDK reports it (its own retries are not visible here)."""
        properties = result.get(f"{metric}_properties")
        tokens = properties if isinstance(properties, Mapping) else {}

        def count(name: str) -> int:
            value = tokens.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        self.usage.requests += 1
        self.usage.prompt_tokens += count("prompt_tokens")
        self.usage.completion_tokens += count("completion_tokens")
        self.budget.spend_tokens(count("prompt_tokens") + count("completion_tokens"))

    async def _run(self, call: Callable[[], Mapping[str, Any]]) -> Mapping[str, Any]:
        async with self.limiter:
            self.budget.reserve_request()
            return await asyncio.wait_for(_in_daemon_thread(call), timeout=self.timeout)


def _in_daemon_thread(call: Callable[[], T]) -> asyncio.Future[T]:
    """Run a blocking call in a daemon thread: unlike an executor's worker, an
    abandoned one cannot hold up the process at exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():  # it may have been cancelled by wait_for
            outcome()

    def hand_over(outcome: Callable[[], None]) -> None:
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:
            pass  # the loop is gone: nobody is waiting for an abandoned call

    def work() -> None:
        try:
            result = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            error = exc
            hand_over(lambda: future.set_exception(error))
        else:
            hand_over(lambda: future.set_result(result))

    threading.Thread(target=work, name="flipgate-azure-eval", daemon=True).start()
    return future
