"""The end-to-end comparison: the drift rule (gate.py) and the row-by-row table."""

from __future__ import annotations

import pytest

from flipgate.e2e.compare import compare
from flipgate.e2e.retrieval import LiveContext
from flipgate.model import Case, Row, Score, Side, Verdict
from flipgate.verdict import gate

V = Verdict


@pytest.mark.parametrize("frozen, live, drift", [
    (V.UNCHANGED, V.REGRESSION, True),
    (V.REGRESSION, V.UNCHANGED, True),
    (V.MOVED, V.NEW_NON_ANSWER, True),
    (V.UNCHANGED, V.UNCHANGED, False),
    (V.REGRESSION, V.REGRESSION, False),
    (V.UNCHANGED, V.ERROR, False),     # a judge error is an error, not drift
    (V.ERROR, V.UNCHANGED, False),
    (V.UNCHANGED, None, False),        # retrieval failed: nothing to compare
])
def test_retrieval_drift(frozen: Verdict, live: Verdict | None, drift: bool) -> None:
    assert gate.retrieval_drift(frozen, live) is drift


def row(case: Case, verdict: Verdict, errors: list[str] | None = None) -> Row:
    side = Side(response="a", groundedness=Score(5))
    return Row(case=case, baseline=side, candidate=side, verdict=verdict, errors=errors or [])


def test_compare_rows() -> None:
    cases = [Case(id=i, query=f"q{i}", context=f"ctx {i}\nline two", category="p") for i in "abcde"]
    frozen = {c.id: row(c, V.UNCHANGED) for c in cases}
    live = {"a": LiveContext("ctx a\nline two"), "b": LiveContext("ctx b\nline 2"),
            "c": LiveContext(None, error="live retrieval failed: HTTP 500"), "d": LiveContext("ctx d\nline two"),
            "e": LiveContext("ctx e\nline two")}
    e2e = {"a": row(cases[0], V.UNCHANGED), "b": row(cases[1], V.REGRESSION),
           "d": row(cases[3], V.ERROR, ["candidate: judge timed out"])}
    rows = {r.id: r for r in compare(cases, frozen=frozen, live=live, e2e=e2e, date="2026-01-01",
                                     not_judged="the end-to-end run stopped: budget")}
    assert [rows[i].drift for i in "abcde"] == [False, True, False, False, False]
    assert rows["b"].context_changed and "-line two\n+line 2" in rows["b"].context_diff
    assert "+++ live context (2026-01-01)" in rows["b"].context_diff
    assert not rows["a"].context_changed and rows["a"].context_diff == ""
    assert rows["c"].e2e_verdict is None and rows["c"].error == "live retrieval failed: HTTP 500"
    assert rows["d"].error == "candidate: judge timed out"
    assert rows["e"].e2e_verdict is None and rows["e"].error == "the end-to-end run stopped: budget"
