"""Spreading one gate over several jobs: `--shard i/n` and `flipgate merge`.

A shard evaluates a stable part of the cases (by a hash of the case id, so
the parts never depend on the order or the runner) and writes a partial:
its rows in full, where each stood among all the cases, and a fingerprint of
what it judged (configuration, cases, judge, and the refs or answer files).
`merge` checks that the partials are the n parts of one run, puts the rows
back in the cases' order and builds the report every renderer reads, so the
comment, the counts and the exit code are those of one unsharded run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flipgate.verdict import gate
from flipgate.errors import InputError, Problem
from flipgate.model import (
    Bucket,
    Case,
    Change,
    Conclusion,
    Evidence,
    JudgeInfo,
    ParameterChange,
    Relevance,
    Report,
    Row,
    Score,
    Side,
    SuiteReport,
    Verdict,
)
from flipgate.run.scoring import build_suites_report

PARTIAL_FILE = "partial.json"
PARTIAL_VERSION = 1
_SHARD = re.compile(r"([1-9][0-9]*)/([1-9][0-9]*)")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SHARD.fullmatch(text.strip())
        if not match or int(match.group(1)) > int(match.group(2)):
            raise InputError(f"--shard must be i/n with 1 <= i <= n (e.g. 2/4), not {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    def holds(self, case_id: str) -> bool:
        digest = hashlib.sha256(case_id.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def select(self, cases: Sequence[Case]) -> tuple[list[Case], list[int]]:
        """This shard's cases, and where each stood among all of them."""
        positions = [i for i, case in enumerate(cases) if self.holds(case.id)]
        return [cases[i] for i in positions], positions

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def digest(data: bytes | str | None) -> str | None:
    if data is None:
        return None
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


# --- writing a partial ----------------------------------------------------------------

@dataclass(frozen=True)
class SuitePart:
    """One suite's part in a shard of a several-suite run."""

    name: str
    report: Report
    total: int                 # the suite's cases, before the shard took its part
    positions: Sequence[int]   # where the part's cases stood among them


def _report_state(report: Report) -> dict[str, Any]:
    return {
        "conclusion": report.conclusion.value,
        "judge": dataclasses.asdict(report.judge),
        "relevance_threshold": report.relevance_threshold,
        "notes": list(report.notes),
        "change": dataclasses.asdict(report.change) if report.change is not None else None,
        **{name: getattr(report, name) for name in
           ("usage", "budget", "scheduling", "cache", "head_sha")},
    }


def write_partial(report: Report, out_dir: str | os.PathLike[str], *, shard: Shard,
                  positions: Sequence[int], total: int, fingerprint: Mapping[str, Any],
                  stopped: bool = False, suites: Sequence[SuitePart] = ()) -> Path:
    """`stopped`: the part could not finish (budget, API), so the merged run cannot either.
    With `suites`, each suite's part is kept apart (its rows, positions and report)."""
    state: dict[str, Any] = {
        "flipgate_partial": PARTIAL_VERSION,
        "stopped": stopped,
        # The contract's one-string form of what the shards must share, beside the fields.
        "shard": {"index": shard.index, "count": shard.count,
                  "fingerprint": digest(json.dumps(fingerprint, sort_keys=True, default=str))},
        "fingerprint": dict(fingerprint),
        "cases": total,
        "positions": list(positions) if report.rows and not suites else [],
        "report": _report_state(report),
        "rows": [] if suites else [dataclasses.asdict(row) for row in report.rows],
    }
    if suites:
        state["suites"] = [{"name": part.name, "cases": part.total,
                            "stopped": part.report.conclusion is Conclusion.ERROR
                            and not part.report.rows,
                            "positions": list(part.positions) if part.report.rows else [],
                            "report": _report_state(part.report),
                            "rows": [dataclasses.asdict(row) for row in part.report.rows]}
                           for part in suites]
        state["layout"] = {"strict": report.strict, "per_suite_status": report.per_suite_status}
    target = Path(out_dir) / PARTIAL_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, target)
    return target


# --- merging partials -----------------------------------------------------------------

def _change(data: Mapping[str, Any] | None) -> Change | None:
    if data is None:
        return None
    return Change(generator=data["generator"], files=tuple(data["files"]),
                  model=(data["model"][0], data["model"][1]),
                  parameters=tuple(ParameterChange(**p) for p in data["parameters"]),
                  template_diff=data["template_diff"], config_diff=data["config_diff"],
                  cases_diff=data["cases_diff"])


def _score(data: Mapping[str, Any] | None) -> Score | None:
    return None if data is None else Score(value=data["value"], reason=data["reason"],
                                           error=data["error"], label=data.get("label"))


def _side(data: Mapping[str, Any]) -> Side:
    relevance = data["relevance"]
    return Side(
        response=data["response"], groundedness=_score(data["groundedness"]),  # type: ignore[arg-type]
        bucket=Bucket(data["bucket"]) if data["bucket"] else None,
        relevance=None if relevance is None else Relevance(
            score=relevance["score"], questions=tuple(relevance["questions"]),
            noncommittal=relevance["noncommittal"], error=relevance["error"]),
        rescore=_score(data["rescore"]), fluency=_score(data["fluency"]),
        finish_reason=data["finish_reason"], second_opinion=_score(data.get("second_opinion")))


def _row(data: Mapping[str, Any]) -> Row:
    case = data["case"]
    evidence = data["evidence"]
    return Row(
        case=Case(**{**case, "extra": dict(case["extra"])}),
        baseline=_side(data["baseline"]), candidate=_side(data["candidate"]),
        verdict=Verdict(data["verdict"]), blocking=data["blocking"],
        relevance_drop=data["relevance_drop"], errors=list(data["errors"]),
        evidence=None if evidence is None else Evidence(
            unsupported_figures=tuple(evidence["unsupported_figures"]),
            unsupported_statements=tuple(evidence["unsupported_statements"])))


def read_partial(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        state = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(Problem(str(path), None, f"cannot read: {exc.strerror}")) from None
    except ValueError as exc:
        raise InputError(Problem(str(path), None, f"not a flipgate partial (bad JSON: {exc})")) from None
    if not isinstance(state, dict) or state.get("flipgate_partial") != PARTIAL_VERSION:
        raise InputError(Problem(str(path), None, "not a flipgate partial (written by --shard)"))
    return state


def _sum_into(total: dict[str, Any], part: Mapping[str, Any] | None) -> None:
    for key, value in (part or {}).items():
        if isinstance(value, Mapping):
            _sum_into(total.setdefault(key, {}), value)
        elif isinstance(value, int) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value
        else:
            total.setdefault(key, value)


def merge(paths: Sequence[str | os.PathLike[str]]) -> Report:
    """The report of one run, from the partials of its shards (InputError if they are not)."""
    if not paths:
        raise InputError("merge needs the partials of every shard (PARTIAL...)")
    states = [(str(path), read_partial(path)) for path in paths]
    first_path, first = states[0]
    count = first["shard"]["count"]
    seen: dict[int, str] = {}
    for path, state in states:
        for key, value in first["fingerprint"].items():
            other = state["fingerprint"].get(key)
            if other != value:
                raise InputError(Problem(path, None, f"was made from a different {key.replace('_', ' ')} "
                                                     f"({other}) than {first_path} ({value}); "
                                                     "partials of different runs cannot be merged"))
        if state["shard"]["count"] != count or state["cases"] != first["cases"]:
            raise InputError(Problem(path, None, f"is shard {state['shard']['index']}/"
                                                 f"{state['shard']['count']} of {state['cases']} cases, "
                                                 f"{first_path} is one of {count} of {first['cases']}"))
        index = state["shard"]["index"]
        if index in seen:
            raise InputError(Problem(path, None, f"shard {index}/{count} is also {seen[index]}"))
        seen[index] = path
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise InputError(f"merge: missing the partial of shard {', '.join(f'{i}/{count}' for i in missing)}")

    if ("suites" in first) != all("suites" in state for _, state in states) or (
            "suites" in first and any([part["name"] for part in state["suites"]]
                                      != [part["name"] for part in first["suites"]]
                                      for _, state in states)):
        raise InputError("merge: the partials were made for different suite selections "
                         "(--suite); partials of different runs cannot be merged")
    stopped = any(state["stopped"] for _, state in states)
    if "suites" not in first:
        report = _merge_part([state for _, state in states], cases=first["cases"],
                             stopped=stopped)
    else:

        suites = [SuiteReport(part["name"], _merge_part(
            [state["suites"][index] for _, state in states], cases=part["cases"],
            stopped=any(state["suites"][index]["stopped"] for _, state in states)))
            for index, part in enumerate(first["suites"])]
        top = [state["report"] for _, state in states]
        report = build_suites_report(
            suites, notes=list(dict.fromkeys(note for part in top for note in part["notes"])),
            head_sha=top[0]["head_sha"], relevance_threshold=top[0]["relevance_threshold"],
            strict=first["layout"]["strict"], per_suite_status=first["layout"]["per_suite_status"])
        if stopped and report.conclusion is not Conclusion.ERROR:
            report.conclusion = Conclusion.ERROR
    parts = [state["report"] for _, state in states]
    for name in ("usage", "cache"):
        if any(part[name] is not None for part in parts):
            total: dict[str, Any] = {}
            for part in parts:
                _sum_into(total, part[name])
            setattr(report, name, total)
    report.notes.append(f"Merged from {count} shards.")
    return report


def _merge_part(states: Sequence[Mapping[str, Any]], *, cases: int, stopped: bool) -> Report:
    """One run's (or one suite's) report from its parts: rows back in the cases' order."""
    placed = sorted((position, _row(row)) for state in states
                    for position, row in zip(state["positions"], state["rows"], strict=True))
    rows = [row for _, row in placed]
    parts = [state["report"] for state in states]
    # A part's own "fluency skipped" note counted only its rows; the run's is said once below.
    notes = list(dict.fromkeys(note for part in parts for note in part["notes"]
                               if not note.startswith(gate.FLUENCY_SKIPPED)))
    conclusions = {Conclusion(part["conclusion"]) for part in parts}
    counts = gate.count(rows, cases=cases)
    if stopped:
        conclusion = Conclusion.ERROR  # a part could not finish: neither can the run
    elif conclusions == {Conclusion.SKIPPED}:
        conclusion, counts = Conclusion.SKIPPED, gate.count([], cases=cases)
    else:
        conclusion = gate.conclude(counts)
    fluency = gate.fluency_summary(rows)
    if (skipped := gate.fluency_note(fluency)) is not None:
        notes.append(skipped)
    return Report(conclusion=conclusion, judge=JudgeInfo(**parts[0]["judge"]), counts=counts,
                  rows=rows, fluency=fluency,
                  relevance_threshold=parts[0]["relevance_threshold"], notes=notes,
                  change=_change(parts[0]["change"]), head_sha=parts[0]["head_sha"])
