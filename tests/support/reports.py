"""Comparing report.json files: a merged run against the unsharded one."""

from __future__ import annotations

from typing import Any

# What each job measures of itself: requests and tokens, cache hits, budget spending,
# concurrency reached. A merged run sums or spans them; they are not the run's verdicts.
PER_JOB = ("usage", "cache", "budget", "scheduling")
MERGED_NOTE = "Merged from {n} shards."


def comparable(report: dict[str, Any], *, shards: int | None = None) -> dict[str, Any]:
    """Every field but the per-job ones; with `shards`, the merge's own note must be there
    and is left out too."""
    out = {key: value for key, value in report.items() if key not in PER_JOB}
    if shards is not None:
        notes = list(out.get("notes", []))
        assert MERGED_NOTE.format(n=shards) in notes
        notes.remove(MERGED_NOTE.format(n=shards))
        out["notes"] = notes
        if not notes:
            del out["notes"]
    return out
