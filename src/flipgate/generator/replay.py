"""Generation: every case's rendered messages through one side's model.

A fixed pool of workers pulls the cases (workpool.py) under the run's shared
limit; the LLM door retries (429s until `judge.max_wait`, other transient
failures a counted number of times). Replies are cached by the full request,
so an unchanged side costs nothing on the next run. A case that still fails
after those retries stops the run (exit 3) naming
the case; the budget stops it before spending more, saying how far it got.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flipgate.errors import FlipgateError
from flipgate.generator.endpoint_lock import Generator
from flipgate.llm.client import BudgetExceeded
from flipgate.llm.endpoints import Endpoint
from flipgate.llm.failures import failure_of
from flipgate.llm.runtime import Runtime
from flipgate.llm.workpool import map_bounded, pool_size
from flipgate.model import Answer, Case
from flipgate.output.progress import GENERATION
from flipgate.prompts import Message, Rendered

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from flipgate.llm.endpoints import LazyClient

GENERATION_TAG = {"kind": "generation"}


@dataclass(frozen=True)
class PreparedGenerator:
    """One side, ready to replay: where and what to ask, and every case's messages."""

    generator: Generator
    rendered: Rendered

    @property
    def side(self) -> str:
        return self.generator.side

    @property
    def model(self) -> str:
        return self.generator.model

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self.generator.parameters

    @property
    def endpoint(self) -> Endpoint:
        return self.generator.endpoint

    def messages(self, case_id: str) -> tuple[Message, ...]:
        return self.rendered.messages[case_id]


async def first_failure_cancels(awaitables: Sequence[Awaitable[Any]]) -> list[Any]:
    """Run concurrently; on the first failure (or when cancelled) cancel the rest,
    wait for them to stop, and raise."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        unfinished = [t for t in tasks if not t.done()]
        for task in unfinished:
            task.cancel()
        # Every outcome is collected, so no failure is left unretrieved.
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return [t.result() for t in tasks]


async def replay(cases: Sequence[Case], generator: PreparedGenerator, *,
                 client: AsyncOpenAI | LazyClient, runtime: Runtime, purpose: str,
                 debug: bool = False) -> dict[str, Answer]:
    """Every case's answer from one side's generator, by case id.

    `purpose` ("baseline", "candidate") names the side in usage totals and
    messages. Requests go through `client` under this side's endpoint identity
    and usage, and the run's shared limit, cache and budget. `debug` lets the
    client's own exception through, with its traceback.
    """
    side_llm = runtime.llm(client, generator.endpoint, purpose=purpose)
    answers: dict[str, Answer] = {}
    runtime.progress.add(len(cases), GENERATION)

    async def one(case: Case) -> None:
        try:
            completion = await side_llm.chat(model=generator.model,
                                             messages=generator.messages(case.id),
                                             params=generator.parameters, cache_tag=GENERATION_TAG)
        except BudgetExceeded as exc:
            raise BudgetExceeded(f"{exc} ({len(answers)} of {len(cases)} {purpose} answers "
                                 "were generated)") from None
        except FlipgateError:
            raise
        except Exception as exc:  # noqa: BLE001 - the client's errors, after its own retries
            if debug:
                raise
            failure = failure_of(exc, endpoint=generator.endpoint, model=generator.model,
                                 role=f"{purpose} model",
                                 retries=getattr(client, "max_retries", 0))
            raise type(failure)(f"{failure} (generating the answer for case "
                                f"'{case.id}')") from None
        answers[case.id] = Answer(response=completion.content,
                                  finish_reason=completion.finish_reason)
        runtime.progress.advance(1, GENERATION)

    await map_bounded(one, cases, workers=pool_size(runtime.limiter.limit))
    return {case.id: answers[case.id] for case in cases}


def write_answers(path: str | os.PathLike[str], answers: Mapping[str, Answer],
                  cases: Sequence[Case]) -> None:
    """The contract's responses JSONL, in the cases' order."""
    from flipgate.config.cases import write_responses

    write_responses(path, answers, order=[case.id for case in cases])
