"""GitHub Models' published facts flipgate plans by: how a model is named, and the free
plan's request limits (docs/rate-limits.md gives the source and the date they were read).

Pure data and arithmetic; the run (`run/quota.py`) says them before its first request.
"""

from __future__ import annotations

from dataclasses import dataclass

# GitHub Models names every model publisher/name (`openai/gpt-4.1-mini`) and sends it as written.
PUBLISHER_EXAMPLE = "openai"


@dataclass(frozen=True)
class Limits:
    """One rate-limit tier of the free plan (Copilot Free)."""

    tier: str
    per_minute: int
    per_day: int
    concurrent: int


# docs.github.com, "Prototyping with AI models", Rate limits, Copilot Free column.
LOW = Limits("low", per_minute=15, per_day=150, concurrent=5)
HIGH = Limits("high", per_minute=10, per_day=50, concurrent=2)
EMBEDDING = Limits("embedding", per_minute=15, per_day=150, concurrent=5)
# The tier of the models flipgate's docs and `init` name; any other: its page in the catalog.
TIERS: dict[str, Limits] = {
    "openai/gpt-4.1-mini": LOW, "openai/gpt-4.1-nano": LOW, "openai/gpt-4o-mini": LOW,
    "openai/gpt-4.1": HIGH, "openai/gpt-4o": HIGH,
    "openai/text-embedding-3-small": EMBEDDING, "openai/text-embedding-3-large": EMBEDDING,
}


def unprefixed(model: str) -> str | None:
    """The advice for a model GitHub Models would not know (no `publisher/`), else None."""
    if "/" in model:
        return None
    return (f"GitHub Models names a model publisher/name: {PUBLISHER_EXAMPLE}/{model}, "
            f"not {model}")


def limits_of(model: str) -> Limits | None:
    return TIERS.get(model.lower())
