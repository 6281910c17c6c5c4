"""Bounded work in flight: a fixed pool of workers pulling items, for runs of any size.

Creating one coroutine per case up front costs memory in proportion to the
run (100,000 cases, several requests each); a pool of workers pulling from
an iterator holds only what is in flight. The pool is sized above the
request limit so the LLM door's limiter, not the pool, decides how many
requests are out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def pool_size(request_limit: int) -> int:
    """Workers for a request limit: rows wait on one another's requests, so keep spares."""
    return max(4, 2 * request_limit)


async def map_bounded(work: Callable[[T], Awaitable[R]], items: Iterable[T], *,
                      workers: int) -> list[R]:
    """`[await work(item) for item in items]`, at most `workers` at a time, results in order.

    The first failure cancels the other workers, waits for them, and is raised.
    """
    source = enumerate(items)
    results: dict[int, R] = {}

    async def worker() -> None:
        for index, item in source:  # a shared iterator: each item goes to one worker
            results[index] = await work(item)

    tasks = [asyncio.ensure_future(worker()) for _ in range(max(1, workers))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return [results[i] for i in range(len(results))]
