"""report.json: the contract's schema, plus the evidence a reviewer needs."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from flipgate import gate
from flipgate.model import Change, Counts, Relevance, Report, Row, Score, Side

REPORT_VERSION = 1


def _score(score: Score | None) -> dict[str, Any] | None:
    if score is None:
        return None
    out: dict[str, Any] = {"score": score.value, "reason": score.reason}
    if score.error:
        out["error"] = score.error
    return out


def _relevance(relevance: Relevance | None) -> float | None:
    return None if relevance is None or relevance.score is None else round(relevance.score, 4)


def _side(side: Side) -> dict[str, Any]:
    out: dict[str, Any] = {
        "groundedness": side.groundedness.value,
        "bucket": side.bucket.value if side.bucket else None,
        "relevance": _relevance(side.relevance),
        "reason": side.groundedness.reason,
    }
    if side.relevance is not None:
        out["relevance_detail"] = {"questions": list(side.relevance.questions),
                                   "noncommittal": side.relevance.noncommittal}
        if side.relevance.error:
            out["relevance_detail"]["error"] = side.relevance.error
    if side.rescore is not None:
        out["rescore"] = _score(side.rescore)
    if side.fluency is not None:
        out["fluency"] = _score(side.fluency)
    if side.finish_reason is not None:
        out["finish_reason"] = side.finish_reason
    return out


def row_to_dict(row: Row) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.id,
        "category": row.category,
        "baseline": _side(row.baseline),
        "candidate": _side(row.candidate),
        "verdict": row.verdict.value,
        "blocking": row.blocking,
        "relevance_drop": row.relevance_drop,
    }
    if row.errors:
        out["errors"] = list(row.errors)
    if row.evidence is not None:
        out["evidence"] = {"unsupported_figures": list(row.evidence.unsupported_figures),
                           "unsupported_statements": list(row.evidence.unsupported_statements)}
    return out


def counts_dict(counts: Counts) -> dict[str, int]:
    """`cases`, then every kind's count (0 when none), in the kinds' order."""
    return {"cases": counts.cases, **{kind.count_field: counts[kind.count_field] for kind in gate.KINDS}}


def change_dict(change: Change) -> dict[str, Any]:
    return {
        "generator": change.generator,
        "files": list(change.files),
        "model": {"old": change.model[0], "new": change.model[1]},
        "parameters": [{"name": p.name, "old": p.old, "new": p.new} for p in change.parameters],
        "template_diff": change.template_diff,
        "config_diff": change.config_diff,
        "cases_diff": change.cases_diff,
    }


def to_dict(report: Report, *, rows: bool = True) -> dict[str, Any]:
    """The contract's report.json as a dict (`rows=False`: an empty list in their place)."""
    judge: dict[str, Any] = {"provider": report.judge.provider, "model": report.judge.model,
                             "engine": report.judge.engine}
    if report.judge.embedding_model:
        judge["embedding_model"] = report.judge.embedding_model
    if report.judge.lexical:
        judge["note"] = "offline lexical judge: word and figure overlap, not an LLM"
    out: dict[str, Any] = {
        "version": REPORT_VERSION,
        "conclusion": report.conclusion.value,
        "judge": judge,
        "counts": counts_dict(report.counts),
        "rows": [row_to_dict(row) for row in report.rows] if rows else [],
        "relevance_threshold": report.relevance_threshold,
    }
    if report.fluency is not None:
        out["fluency"] = asdict(report.fluency)
    if report.change is not None:
        out["change"] = change_dict(report.change)
    for name in ("usage", "budget", "scheduling", "cache", "head_sha"):
        value = getattr(report, name)
        if value is not None:
            out[name] = value
    if report.notes:
        out["notes"] = list(report.notes)
    return out


def write_json(report: Report, path: str | os.PathLike[str]) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for chunk in _json_chunks(report):
            handle.write(chunk)
    os.replace(tmp, target)


def _json_chunks(report: Report):
    """`json.dumps(to_dict(report), indent=2)` plus a newline, written a row at a time, so
    a 100,000-row report never exists twice in memory (as dicts and as one string)."""
    def dumps(value: Any, depth: int) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)

    head = to_dict(report, rows=False)
    yield "{"
    for position, (key, value) in enumerate(head.items()):
        yield ("," if position else "") + f"\n  {json.dumps(key)}: "
        if key != "rows" or not report.rows:
            yield dumps(value, 1)
            continue
        yield "["
        for index, row in enumerate(report.rows):
            yield ("," if index else "") + "\n    " + dumps(row_to_dict(row), 2)
        yield "\n  ]"
    yield "\n}\n"
