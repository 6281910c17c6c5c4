"""A second opinion from another instrument: `judge.second_opinion.engine: groundedness_pro`.

azure-ai-evaluation's GroundednessProEvaluator asks the Azure AI evaluation service (not
a chat model of ours) whether an answer is grounded in its context, and answers true or
false. It confirms a flip when it says "not grounded"; "grounded" makes the row unstable
(`gate.reads_ungrounded` holds the rule). It is asked only for candidates that newly fell
to ungrounded, like any second opinion.

With a project endpoint (https://RESOURCE.services.ai.azure.com/api/projects/PROJECT) the
SDK 1.18 posts one `sync_evals:run` request per answer to the project, signed in with the
run's Entra ID credential (scope https://ai.azure.com/.default). The service's verdict is
its 1-5 groundedness score against the SDK's threshold of 5; a reply without a score in
1-5 (the SDK reads a missing one as 0, an unreadable one as NaN, and both as "not
grounded") is a judge error here, never a verdict. So are the service's refusals (an
unsupported region, a missing role), with the service's own message.

Like the azure-ai-evaluation engine, the evaluator is synchronous and builds its own
HTTP client: each call runs in a daemon thread under the shared concurrency limit and
the budget's request count, and is never cached.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from flipgate.config.schema import GROUNDEDNESS_PRO
from flipgate.errors import FlipgateError
from flipgate.judges.azure_eval import _import_sdk, _in_daemon_thread
from flipgate.llm.client import Budget, Limiter, Usage
from flipgate.llm.entra import AI_SERVICES_SCOPE, EntraSignIn
from flipgate.model import Case, JudgeInfo, Relevance, Score, Statements

_PREFIX = f"{GROUNDEDNESS_PRO} service"
_SERVICE_SCALE = (1, 5)   # the service's groundedness score; its label is score >= 5
_MESSAGE_LIMIT = 300


def read_verdict(result: Mapping[str, Any]) -> Score:
    """The evaluator's result as a labelled Score, or a judge error when it holds no verdict."""
    label = result.get(f"{GROUNDEDNESS_PRO}_label")
    score = result.get(f"{GROUNDEDNESS_PRO}_score")
    reason = result.get(f"{GROUNDEDNESS_PRO}_reason")
    low, high = _SERVICE_SCALE
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) \
            or not low <= score <= high or not isinstance(label, bool):
        return Score.failed(f"{_PREFIX}: the service's reply holds no verdict "
                            f"(score {score!r}, label {label!r})")
    return Score(value=None, label=label, reason=reason.strip() if isinstance(reason, str) else "")


def service_message(exc: BaseException) -> str:
    """The service's own words for a failed call, on one line."""
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    text = " ".join(lines[:2]) if lines else type(exc).__name__
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT - 1] + "…"


def _run_stopper(exc: BaseException) -> FlipgateError | None:
    """A sign-in failure the SDK wrapped in its own exception: it still stops the run."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, FlipgateError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class GroundednessProJudge:
    """The `Judge` protocol's groundedness, from the Azure AI evaluation service; the rest
    of the protocol is never asked of a second opinion."""

    def __init__(self, *, project: str, sign_in: EntraSignIn, info: JudgeInfo, limiter: Limiter,
                 budget: Budget, timeout: float, usage: Usage | None = None,
                 with_query: bool = True):
        sdk = _import_sdk()
        # "This is an experimental class": true, and said here (docs/azure.md), not on stderr.
        logging.getLogger("azure.ai.evaluation._common._experimental").setLevel(logging.ERROR)
        self.info = info
        self.sign_in = sign_in
        self.limiter = limiter
        self.budget = budget
        self.timeout = timeout
        self.usage = usage if usage is not None else Usage()
        # evaluate_query: the service sees the case's question, as the judge does with
        # `judge.mode: with_query` (without it the SDK sends a placeholder).
        self._evaluator = sdk.GroundednessProEvaluator(credential=sign_in.credential(),
                                                       azure_ai_project=project,
                                                       evaluate_query=with_query)

    async def groundedness(self, case: Case, response: str, *, sample: int = 0) -> Score:
        if not response.strip():
            return Score.failed(f"{_PREFIX}: empty answer, nothing to ask the service")
        try:
            async with self.limiter:
                self.budget.reserve_request()
                result = await asyncio.wait_for(_in_daemon_thread(lambda: self._evaluator(
                    query=case.query, context=case.context, response=response)),
                    timeout=self.timeout)
        except TimeoutError:
            return Score.failed(f"{_PREFIX}: no answer within {self.timeout:g}s")
        except FlipgateError:
            raise  # the budget ran out, or the sign-in failed: the run stops
        except Exception as exc:  # noqa: BLE001 - the SDK and azure-core raise many types
            if (stop := _run_stopper(exc)) is not None:
                raise stop from None
            return Score.failed(f"{_PREFIX}: {service_message(exc)}")
        self.usage.requests += 1
        return read_verdict(result)

    async def probe(self) -> None:
        """A token for the service now: a missing sign-in stops the run before any work."""
        await asyncio.to_thread(self.sign_in.check, AI_SERVICES_SCOPE)

    async def statements(self, case: Case, response: str) -> Statements:
        return Statements(error=f"{_PREFIX} lists no statements")

    async def fluency(self, response: str) -> Score:
        return Score.failed(f"{_PREFIX} rates no fluency")

    async def relevance(self, items: Sequence[tuple[Case, str]]) -> list[Relevance]:
        return [Relevance(score=None, error=f"{_PREFIX} rates no relevance") for _ in items]

    async def aclose(self) -> None:
        pass
