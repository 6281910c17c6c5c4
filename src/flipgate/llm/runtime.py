"""What one run shares across every model call: the limit, cache, budget, retry policy,
requests in flight (single flight), usage, progress and the Entra ID sign-in."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flipgate.config.schema import Config
from flipgate.llm.cache import Cache
from flipgate.llm.client import Budget, Limiter, RetryPolicy, Usage
from flipgate.llm.entra import EntraSignIn
from flipgate.output.progress import Progress, Silent
from flipgate.settings import Settings


@dataclass
class Runtime:
    limiter: Limiter
    budget: Budget
    cache: Cache | None = None
    progress: Progress = field(default_factory=Silent)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # Usage per purpose: "judge", "baseline", "candidate".
    usage: dict[str, Usage] = field(default_factory=dict)
    # Requests in flight by cache digest, shared by every LLM of the run (single flight).
    flights: dict[str, Any] = field(default_factory=dict)
    # One Entra ID credential for every `auth: entra` client of the run (built on first use).
    entra: EntraSignIn | None = None

    def __post_init__(self) -> None:
        show = getattr(self.progress, "show", None)  # older Progress implementations lack it
        if show is not None:
            show(self.limiter.describe)

    @classmethod
    def from_config(cls, config: Config, *, cache_dir: str | Path | None,
                    progress: Progress | None = None, cache_key: bytes | None = None) -> Runtime:
        """`cache_key` signs the cache's entries (cache_secret.py); None: this process's own."""
        runtime = cls(
            limiter=Limiter(limit=config.concurrency, max_pause=config.judge.max_wait),
            budget=Budget(max_requests=config.budget.max_requests,
                          max_tokens=config.budget.max_tokens,
                          completion_ceiling=config.budget.completion_ceiling),
            # Generation keeps the default count of retries; 429s are waited out as long as the judge's.
            retry=RetryPolicy(max_wait=config.judge.max_wait),
            cache=Cache(cache_dir, key=cache_key) if cache_dir is not None else None,
            progress=progress or Silent(),
        )
        runtime.watch_with(runtime.progress)
        return runtime

    def watch_with(self, progress: Progress) -> None:
        """Let `progress` show the requests and tokens this run has spent."""
        progress.watch(self.totals)

    def totals(self) -> tuple[int, int]:
        """(requests, tokens) the run has sent so far, every purpose together."""
        usages = list(self.usage.values())
        return (sum(u.requests + u.embedding_requests for u in usages),
                sum(u.prompt_tokens + u.completion_tokens for u in usages))

    def sign_in(self, settings: Settings) -> EntraSignIn:
        """The run's Entra ID sign-in, shared by the judge, the generator and the SDK engines."""
        if self.entra is None:
            self.entra = EntraSignIn(settings)
        return self.entra

    def usage_for(self, purpose: str) -> Usage:
        return self.usage.setdefault(purpose, Usage())

    def llm(self, client: Any, endpoint: Any, *, purpose: str, retry: RetryPolicy | None = None,
            embedding_batch: int | None = None) -> Any:
        """An `LLM` on this run's shared limit, cache, budget and flights. Without `retry`,
        transient failures are retried as often as the client was built to retry."""
        from flipgate.llm.client import DEFAULT_EMBEDDING_BATCH, LLM

        if retry is None:
            retry = RetryPolicy(max_retries=getattr(client, "max_retries", self.retry.max_retries),
                                max_wait=self.retry.max_wait,
                                deadline=getattr(client, "timeout", self.retry.deadline))
        return LLM(client, endpoint, limiter=self.limiter, cache=self.cache, budget=self.budget,
                   usage=self.usage_for(purpose), retry=retry, flights=self.flights,
                   embedding_batch=embedding_batch or DEFAULT_EMBEDDING_BATCH)

    def attach(self, progress: Progress) -> None:
        """Report progress there: the run's requests and tokens, the limit in force and the
        429s on each line."""
        self.progress = progress
        self.watch_with(progress)
        self.__post_init__()

    def fill_report(self, report: Any) -> None:
        """The budget and scheduling figures of a run that used a model, onto its Report."""
        if self.usage:
            report.budget = self.budget.stats()
            report.scheduling = self.limiter.stats()

    def usage_report(self) -> dict[str, dict[str, int]]:
        return {purpose: usage.as_dict() for purpose, usage in self.usage.items()}

    def cache_stats(self) -> dict[str, int] | None:
        return self.cache.stats() if self.cache is not None else None
