"""What one run shares across every model call: the limit, cache, budget, usage and progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from flipgate.cache import Cache
from flipgate.config import Config
from flipgate.llm import Budget, Limiter, Usage
from flipgate.progress import Progress, Silent


@dataclass
class Runtime:
    limiter: Limiter
    budget: Budget
    cache: Cache | None = None
    progress: Progress = field(default_factory=Silent)
    # Usage per purpose: "judge", "baseline", "candidate".
    usage: dict[str, Usage] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Config, *, cache_dir: str | Path | None,
                    progress: Progress | None = None) -> Runtime:
        return cls(
            limiter=Limiter(limit=config.concurrency),
            budget=Budget(max_requests=config.budget.max_requests,
                          max_tokens=config.budget.max_tokens),
            cache=Cache(cache_dir) if cache_dir is not None else None,
            progress=progress or Silent(),
        )

    def usage_for(self, purpose: str) -> Usage:
        return self.usage.setdefault(purpose, Usage())

    def usage_report(self) -> dict[str, dict[str, int]]:
        return {purpose: usage.as_dict() for purpose, usage in self.usage.items()}

    def cache_stats(self) -> dict[str, int] | None:
        return self.cache.stats() if self.cache is not None else None
