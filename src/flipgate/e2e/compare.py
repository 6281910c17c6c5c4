"""Row by row: the frozen verdict beside the end-to-end one, and what retrieval changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flipgate.e2e.retrieval import LiveContext
from flipgate.model import Case, E2ERow, Row
from flipgate.verdict import gate
from flipgate.verdict.changes import unified


def compare(cases: Sequence[Case], *, frozen: Mapping[str, Row], live: Mapping[str, LiveContext],
            e2e: Mapping[str, Row], date: str, not_judged: str | None = None) -> list[E2ERow]:
    """One row per case of the frozen run. `not_judged` explains rows that have a live
    context but no end-to-end verdict (the run stopped)."""
    rows = []
    for case in cases:
        if case.id not in frozen:
            continue
        fetched = live.get(case.id, LiveContext(context=None, error="not fetched"))
        judged = e2e.get(case.id)
        verdict = judged.verdict if judged is not None else None
        error = fetched.error
        if error is None and judged is None:
            error = not_judged or "not judged"
        elif error is None and judged is not None and judged.errors:
            error = "; ".join(judged.errors)
        changed = fetched.context is not None and fetched.context != case.context
        rows.append(E2ERow(
            id=case.id, category=case.category, query=case.query,
            frozen_verdict=frozen[case.id].verdict, e2e_verdict=verdict,
            drift=gate.retrieval_drift(frozen[case.id].verdict, verdict),
            live_context=fetched.context, context_changed=changed,
            context_diff=unified(case.context, fetched.context, before_label="frozen context",
                                 after_label=f"live context ({date})") if changed else "",
            error=error))
    return rows
