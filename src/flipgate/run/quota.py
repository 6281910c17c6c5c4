"""GitHub Models' free quota, said before a run's first request: how many requests the plan
will send to each GitHub Models model, against that model's published daily limit.

The count is the plan's, before any cache: a case's two generations, its judge requests
(groundedness, relevance and fluency for each side: 6; a flip adds a second scoring and the
statements), one probe a judge model, and the embeddings (a probe and one request a batch).
docs/rate-limits.md counts them on the loopback server; `config/github_limits.py` holds the
limits. Pure: the run passes the figures in and prints the lines.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from flipgate.config.github_limits import limits_of
from flipgate.run.stopped import rate_limited

JUDGE_REQUESTS_A_CASE = 6      # groundedness 2, relevance 2, fluency 2 (docs/rate-limits.md)
FLIP_EXTRA = 2                 # a flip's second scoring and its statements
PROBES = 1                     # each model is probed once a run


@dataclass(frozen=True)
class Plan:
    """What one run will ask GitHub Models, by model."""

    generations: Mapping[str, int]        # model -> generation requests (both sides)
    judge_model: str | None               # None: the judge is not on GitHub Models
    judged_cases: int
    embedding_model: str | None
    embedding_texts: int = 0
    embedding_batch: int = 2048


def requests_by_model(plan: Plan) -> dict[str, int]:
    """Requests each model will receive, counting what every case costs when none flips."""
    counts: Counter[str] = Counter(plan.generations)
    if plan.judge_model is not None and plan.judged_cases:
        counts[plan.judge_model] += JUDGE_REQUESTS_A_CASE * plan.judged_cases + PROBES
    if plan.embedding_model is not None and plan.judged_cases:
        counts[plan.embedding_model] += PROBES + max(
            1, math.ceil(plan.embedding_texts / max(1, plan.embedding_batch)))
    return {model: count for model, count in counts.items() if count}


def quota_lines(plan: Plan) -> list[str]:
    """One line a GitHub Models model: the requests, and whether its free daily limit holds
    them (with what to do when it does not)."""
    lines = []
    for model, count in requests_by_model(plan).items():
        generation = plan.generations.get(model, 0)
        parts = [f"{generation} generations"] if generation else []
        if model == plan.judge_model:
            parts.append(f"{count - generation} judge requests, a probe included")
        elif model == plan.embedding_model:
            parts.append("embeddings")
        line = f"GitHub Models: this run sends about {count} requests to {model} ({', '.join(parts)})"
        limits = limits_of(model)
        if limits is None:
            lines.append(f"{line}; check its daily limit on its page in the GitHub Models "
                         "catalog (docs/rate-limits.md).")
            continue
        minutes = math.ceil(count / limits.per_minute)
        line += (f"; the free plan allows {limits.per_day} a day and {limits.per_minute} a "
                 f"minute ({limits.tier} tier, docs/rate-limits.md), so at least {minutes} min")
        if count > limits.per_day:
            line += (". That is over the free daily limit: the run may stop part way; a "
                     "re-run after the limit resets sends only what the cache lacks. A smaller "
                     "suite, shards over days, or an OpenAI or Azure key fits it")
        lines.append(line + ".")
    return lines


# A provider's word on when its limit lifts is repeated only up to this far ahead: further
# (a broken header, a date years away) and the advice says "once the limit resets".
LONGEST_SAID_WAIT = 2 * 24 * 3600.0


def _wait_in_words(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def rerun_advice(stopped: BaseException, *, cached: bool, lifts_at: float | None = None,
                 now: float | None = None) -> str:
    """For a run a rate limit stopped: when to run it again (`lifts_at`, seconds since the
    epoch, when the provider's last 429 said its limit lifts; `now`, the time), and what a
    re-run keeps."""
    if not rate_limited(stopped):
        return ""
    keeps = ("every reply this run received is in the cache, so a re-run asks only for the rest"
             if cached else "run with the cache on (--cache, the workflow's cache step) so a "
             "re-run keeps the replies this one received")
    when = "once the provider's limit resets"
    if lifts_at is not None and now is not None and 0 < lifts_at - now <= LONGEST_SAID_WAIT:
        at = datetime.fromtimestamp(math.ceil(lifts_at / 60) * 60, UTC)
        when = (f"after {at:%Y-%m-%d %H:%M} UTC, in about {_wait_in_words(lifts_at - now)}, "
                "when the provider's rate-limit headers (Retry-After, x-ratelimit-reset) say "
                "its limit lifts")
    return (f"Re-run {when} (GitHub Models' free limits are a day's: docs/rate-limits.md); "
            f"{keeps}.")
