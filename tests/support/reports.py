"""Comparing report.json and comment.md files: a merged run against the unsharded one."""

from __future__ import annotations

import re
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


_USAGE_COUNTS = re.compile(r"\| \w[\w ]* (\| [\d,]+ )+\|")


def comment_without_per_job(comment: str, *, shards: int) -> str:
    """comment.md without what docs/labelling.md lets a merged one differ in: the merge
    note (which must be there when `shards` > 1) and the Usage table's counts."""
    note = f"- {MERGED_NOTE.format(n=shards)}"
    lines = comment.splitlines()
    if shards > 1:
        assert note in lines
    kept, in_usage = [], False
    for line in lines:
        if line.startswith("#"):
            in_usage = line == "### Usage"
        if line != note and not (in_usage and _USAGE_COUNTS.fullmatch(line)):
            kept.append(line)
    return "\n".join(kept)
