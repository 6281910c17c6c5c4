"""report.json: the contract's schema, plus the evidence a reviewer needs."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from flipgate.config.schema import GROUNDEDNESS_PRO
from flipgate.errors import InputError, Problem
from flipgate.model import Change, Counts, E2EReport, JudgeInfo, Relevance, Report, Row, Score, Side
from flipgate.text.escaping import shorten
from flipgate.text.parsing import decode_utf8, json_refusal
from flipgate.verdict import gate

REPORT_VERSION = 1
# A judge's reason as stored: far above what the rubric's token limit lets a judge write,
# so only a provider sending megabytes is cut (with an ellipsis).
MAX_REASON_CHARS = 4000


def _reason(reason: str | None) -> str | None:
    return shorten(reason, MAX_REASON_CHARS) if reason else reason


def _score(score: Score | None) -> dict[str, Any] | None:
    if score is None:
        return None
    out: dict[str, Any] = {"score": score.value, "reason": _reason(score.reason)}
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
        "reason": _reason(side.groundedness.reason),
    }
    if side.groundedness.set_aside:
        out["not_judged"] = True  # set aside by the offline judge: `reason` says why
    if side.not_run:
        out["not_run"] = side.not_run  # the run stopped before this row was scored: why
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
    if side.statements is not None:
        statements = side.statements
        out["statements"] = [{"text": s.text, "label": s.label.value, "span": s.span}
                             for s in statements.items]
        out["statements_supported"] = statements.supported if not statements.error else None
        out["statements_total"] = statements.total if not statements.error else None
        if statements.error:
            out["statements_error"] = statements.error
    if side.manipulation:
        out["manipulation"] = list(side.manipulation)
    return out


def _candidate(side: Side, second_opinion: str | None) -> dict[str, Any]:
    out = _side(side)
    second = side.second_opinion
    if second is not None and second_opinion == GROUNDEDNESS_PRO:
        # A true/false instrument: its label (True: grounded) instead of a score.
        out["second_opinion"] = {"engine": GROUNDEDNESS_PRO, "label": second.label,
                                 "reason": second.reason}
        if second.error:
            out["second_opinion"]["error"] = second.error
    elif second is not None:
        out["second_opinion"] = {"model": second_opinion, **(_score(second) or {})}
    return out


def judge_dict(judge: JudgeInfo) -> dict[str, Any]:
    """The instrument: enough to trace any verdict to the judge, rubric and settings behind it."""
    out: dict[str, Any] = {"provider": judge.provider, "model": judge.model, "engine": judge.engine,
                           "mode": judge.mode, "sdk": dict(judge.sdk) if judge.sdk is not None else None}
    if judge.embedding_model:
        out["embedding_model"] = judge.embedding_model
    if judge.lexical:
        out["note"] = "offline lexical judge: word and figure overlap, not an LLM"
    out.update(rubric_version=judge.rubric_version, rubric_hash=dict(judge.rubric_hash),
               temperature=judge.temperature, seed=judge.seed, auth=judge.auth, rescore=judge.rescore,
               second_opinion=judge.second_opinion, returned_models=list(judge.returned_models),
               system_fingerprints=list(judge.system_fingerprints))
    return out


def row_to_dict(row: Row, *, second_opinion: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.id,
        "category": row.category,
        "baseline": _side(row.baseline),
        "candidate": _candidate(row.candidate, second_opinion),
        "verdict": row.verdict.value,
        "blocking": row.blocking,
        "relevance_drop": row.relevance_drop,
    }
    if row.confirmed_by is not None:
        out["confirmed_by"] = row.confirmed_by
    if row.review_reason is not None:
        out["review_reason"] = row.review_reason
    if row.errors:
        out["errors"] = list(row.errors)
    if row.evidence is not None:
        out["evidence"] = {"unsupported_figures": list(row.evidence.unsupported_figures),
                           "unsupported_statements": list(row.evidence.unsupported_statements)}
        if row.evidence.notes:  # e.g. where the candidate's evidence was cut
            out["candidate"]["notes"] = list(row.evidence.notes)
    return out


def e2e_to_dict(e2e: E2EReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        "date": e2e.date,
        "retrieval": e2e.retrieval,
        "counts": {"cases": len(e2e.rows), "drift": len(e2e.drift),
                   "changed_contexts": e2e.changed_contexts, "retrieval_errors": e2e.retrieval_errors},
        "rows": [{"id": row.id, "category": row.category, "query": row.query,
                  "frozen_verdict": row.frozen_verdict.value,
                  "e2e_verdict": row.e2e_verdict.value if row.e2e_verdict is not None else None,
                  "drift": row.drift, "live_context": row.live_context,
                  "context_changed": row.context_changed, "context_diff": row.context_diff,
                  **({"error": row.error} if row.error else {})}
                 for row in e2e.rows],
    }
    if e2e.stopped:
        out["stopped"] = e2e.stopped
    if e2e.notes:
        out["notes"] = list(e2e.notes)
    return out


def counts_dict(counts: Counts) -> dict[str, int]:
    """`cases`, then every kind's count (0 when none), in the kinds' order."""
    return {"cases": counts.cases, **{kind.count_field: counts[kind.count_field] for kind in gate.KINDS},
            gate.HELD_BACK: counts[gate.HELD_BACK]}


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


def suite_dict(report: Report, *, rows: bool = True) -> dict[str, Any]:
    """One suite's part of a several-suite report: its own conclusion, counts and rows."""
    out = to_dict(report, rows=rows)
    for name in ("version", "judge", "usage", "budget", "scheduling", "cache", "head_sha",
                 "merge_base"):
        out.pop(name, None)
    return out


def to_dict(report: Report, *, rows: bool = True) -> dict[str, Any]:
    """The contract's report.json as a dict (`rows=False`: an empty list in their place, in
    every suite too)."""
    out: dict[str, Any] = {
        "version": REPORT_VERSION,
        "conclusion": report.conclusion.value,
        "judge": judge_dict(report.judge),
        "counts": counts_dict(report.counts),
        "categories": {name: asdict(info) for name, info in report.categories.items()},
        "strict": report.strict,
        "rows": list(row_dicts(report)) if rows else [],
        "relevance_threshold": report.relevance_threshold,
    }
    if report.fluency is not None:
        out["fluency"] = asdict(report.fluency)
    if report.change is not None:
        out["change"] = change_dict(report.change)
    for name in ("usage", "budget", "scheduling", "cache", "head_sha", "merge_base"):
        value = getattr(report, name)
        if value is not None:
            out[name] = value
    if report.notes:
        out["notes"] = list(report.notes)
    if report.e2e is not None:
        out["e2e"] = e2e_to_dict(report.e2e)
    if report.suites:  # several suites: the top level is their aggregate
        out["suites"] = {part.name: {"evaluated": part.evaluated,
                                     **suite_dict(part.report, rows=rows)}
                         for part in report.suites}
        out["status"] = "per-suite" if report.per_suite_status else "single"
    return out


def row_dicts(report: Report) -> Iterator[dict[str, Any]]:
    """The top level's rows; with several suites, each names its suite."""
    second = report.judge.second_opinion
    if not report.suites:
        for row in report.rows:
            yield row_to_dict(row, second_opinion=second)
        return
    for part in report.suites:
        for row in part.report.rows:
            yield {**row_to_dict(row, second_opinion=second), "suite": part.name}


def write_json(report: Report, path: str | os.PathLike[str]) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            for chunk in _json_chunks(report):
                handle.write(chunk)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, target)


@dataclass(frozen=True)
class _Rows:
    """A JSON array written an element at a time: rows, never all in memory at once."""

    items: Callable[[], Iterator[dict[str, Any]]]


def _dumps(value: Any, depth: int) -> str:
    # No bare NaN or Infinity (not JSON): one reaching here is a bug, never written.
    return json.dumps(value, indent=2, ensure_ascii=False,
                      allow_nan=False).replace("\n", "\n" + "  " * depth)


def _streamed(value: Any) -> bool:
    return isinstance(value, _Rows) or (isinstance(value, dict) and any(map(_streamed,
                                                                             value.values())))


def _chunks(value: Any, depth: int) -> Iterator[str]:
    """`json.dumps(value, indent=2)` at `depth`, with each `_Rows` written a row at a time."""
    inner = "\n" + "  " * (depth + 1)
    if isinstance(value, _Rows):
        count = 0
        for count, row in enumerate(value.items(), start=1):
            yield ("[" if count == 1 else ",") + inner + _dumps(row, depth + 1)
        yield "\n" + "  " * depth + "]" if count else "[]"
    elif _streamed(value):
        for position, (key, item) in enumerate(value.items()):
            yield ("{" if position == 0 else ",") + inner + json.dumps(key) + ": "
            yield from _chunks(item, depth + 1)
        yield "\n" + "  " * depth + "}"
    else:
        yield _dumps(value, depth)


def _json_chunks(report: Report) -> Iterator[str]:
    """`json.dumps(to_dict(report), indent=2)` plus a newline, written a row at a time (each
    suite's rows too), so a 100,000-row report never exists twice in memory (as dicts and
    as one string)."""
    head = to_dict(report, rows=False)
    head["rows"] = _Rows(lambda: row_dicts(report))
    for part in report.suites:
        head["suites"][part.name]["rows"] = _Rows(functools.partial(row_dicts, part.report))
    yield from _chunks(head, 0)
    yield "\n"


def read_report_json(data: bytes | str, *, source: str) -> dict[str, Any]:
    """A report.json read back (by calibrate and record): a JSON object with a `rows` list."""
    try:
        report = json.loads(decode_utf8(data, source))
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # a second JSON value follows the first: a JSONL file
            raise InputError(Problem(source, exc.lineno, "not a flipgate report.json: it holds more "
                                     "than one JSON value (a JSONL file such as the cases?)")) from None
        raise InputError(Problem(source, exc.lineno, f"invalid JSON: {exc.msg}")) from None
    except (RecursionError, ValueError) as exc:  # nested too deeply, or a number too long
        raise InputError(Problem(source, 1, f"not a readable report.json: {json_refusal(exc)}")) from None
    if not isinstance(report, dict) or not isinstance(report.get("rows"), list):
        raise InputError(Problem(source, 1, "not a flipgate report.json: it has no 'rows' list"))
    return report
