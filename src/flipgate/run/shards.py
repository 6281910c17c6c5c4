"""Spreading one gate over several jobs: `--shard i/n` and `flipgate merge`.

A shard evaluates a stable part of the cases (by a hash of the case id, so
the parts never depend on the order or the runner) and writes a partial:
its rows' readings (scores, re-scores, second opinions, statements, the
cases themselves), where each stood among all the cases, and a fingerprint
of what it judged (configuration, the cases' digest, the rules that turn
readings into verdicts, judge, refs or answer files).

A partial is checked, never trusted. `merge` reads it into typed values
(pydantic, strict) after bounding its size, checks that the partials are
exactly the n parts of one run (indexes 1..n once each, every fingerprint
field equal, each row a case its index selects, every case once, the cases'
digest that of the run), and then decides every row again from its readings
with the whole run's category sizes: a shard never applies the sample-size
rule to its own part. Nor does it when it judges: it reads every case to pick
its part, so it sizes each category as the whole run does (`score_rows`'s
`category_cases`) and asks fluency only where the merged run would (a shard
whose part holds no blocking row cannot see another's: it asks for its ties and
the merge drops those readings). What it writes is the report of the unsharded
run; only usage, cache, budget spending and scheduling peaks (per job) differ.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flipgate.errors import InputError, Problem
from flipgate.model import (
    Case,
    Change,
    Conclusion,
    E2EReport,
    JudgeInfo,
    Report,
    Side,
    SuiteReport,
)
from flipgate.run.scoring import Rules, build_suites_report, decide_rows, report_of
from flipgate.verdict import gate
from flipgate.verdict.manipulation import find_manipulation

PARTIAL_FILE = "partial.json"
PARTIAL_VERSION = 2
# A partial's size is bounded before it is parsed: a shard of 100,000 long cases with
# both answers is well under this, and nothing larger is read into memory.
MAX_PARTIAL_BYTES = 512 * 1024 * 1024
MAX_LISTED_SHARDS = 1000  # a message names the missing shards of a run this size at most
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


def cases_digest(cases: Iterable[Case]) -> str:
    """The digest of a run's cases, in order: every field but the line it stood on."""
    hashed = hashlib.sha256()
    for case in cases:
        hashed.update(json.dumps([case.id, case.query, case.context, case.category,
                                  case.ground_truth, dict(case.extra)], sort_keys=True,
                                 ensure_ascii=False, default=str).encode("utf-8") + b"\n")
    return hashed.hexdigest()


def rules_dict(rules: Rules) -> dict[str, Any]:
    return {"blocking_categories": sorted(rules.blocking_categories),
            "min_cases_per_category": rules.policy.min_cases, "strict": rules.policy.strict,
            "mode": rules.policy.mode, "relevance_threshold": rules.threshold,
            "review": rules.review}


# --- writing a partial ----------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    """One suite's part in a shard (a run without suites has one, named None)."""

    name: str | None
    report: Report
    cases: Sequence[Case]      # all the suite's cases, before the shard took its part
    positions: Sequence[int]   # where the part's cases stood among them
    rules: Rules


def _state(report: Report) -> dict[str, Any]:
    return {
        "conclusion": report.conclusion.value,
        "judge": dataclasses.asdict(report.judge),
        "notes": list(report.notes),
        "change": dataclasses.asdict(report.change) if report.change is not None else None,
        "e2e": dataclasses.asdict(report.e2e) if report.e2e is not None else None,
        **{name: getattr(report, name) for name in
           ("usage", "budget", "scheduling", "cache", "head_sha", "merge_base")},
    }


def _readings(side: Side) -> dict[str, Any]:
    """What was measured about an answer; the bucket and flags are derived again on merge."""
    data = dataclasses.asdict(side)
    for derived in ("bucket", "manipulation"):
        data.pop(derived)
    return data


def write_partial(report: Report, out_dir: str | os.PathLike[str], *, shard: Shard,
                  fingerprint: Mapping[str, Any], parts: Sequence[Part],
                  stopped: bool = False) -> Path:
    """`report`: the shard's (with several suites, the aggregate of `parts`). `stopped`: the
    shard could not finish (budget, API), so the merged run cannot either."""
    pinned = {**fingerprint,
              "cases_digest": {part.name or "": cases_digest(part.cases) for part in parts},
              "rules": {part.name or "": rules_dict(part.rules) for part in parts}}
    state: dict[str, Any] = {
        "flipgate_partial": PARTIAL_VERSION,
        "stopped": stopped,
        # The contract's one-string form of what the shards must share, beside the fields.
        "shard": {"index": shard.index, "count": shard.count,
                  "fingerprint": digest(json.dumps(pinned, sort_keys=True, default=str))},
        "fingerprint": pinned,
        "report": _state(report),
        "layout": {"strict": report.strict, "per_suite_status": report.per_suite_status},
        "parts": [{"name": part.name, "cases": len(part.cases),
                   "stopped": part.report.conclusion is Conclusion.ERROR and (
                       not part.report.rows or bool(part.report.counts["not_run"])),
                   "report": _state(part.report),
                   "rows": [{"position": position, "case": dataclasses.asdict(row.case),
                             "baseline": _readings(row.baseline),
                             "candidate": _readings(row.candidate)}
                            # A skipped part has no rows to place.
                            for position, row in zip(part.positions if part.report.rows else [],
                                                     part.report.rows, strict=True)]}
                  for part in parts],
    }
    target = Path(out_dir) / PARTIAL_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, target)
    return target


# --- reading a partial: its shape, typed and strict -------------------------------------

class _Version(BaseModel):
    model_config = ConfigDict(extra="ignore")
    flipgate_partial: Any = None


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _ShardBlock(_Strict):
    index: int = Field(ge=1)
    count: int = Field(ge=1)
    fingerprint: str


class _Rules(_Strict):
    blocking_categories: list[str]
    min_cases_per_category: int = Field(ge=0)
    strict: bool
    mode: Literal["same_judge", "second_opinion", "both"]
    relevance_threshold: float
    review: bool = False   # absent from partials written before `gate.review`


class _Fingerprint(BaseModel):
    """The fields the shards must share; beside these two, any field the writer named."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)
    cases_digest: dict[str, str]
    rules: dict[str, _Rules]


class _State(_Strict):
    conclusion: Conclusion
    judge: JudgeInfo
    notes: list[str]
    change: Change | None
    e2e: E2EReport | None
    usage: dict[str, Any] | None
    budget: dict[str, int | None] | None
    scheduling: dict[str, int] | None
    cache: dict[str, int] | None
    head_sha: str | None
    merge_base: str | None = None


class _Row(_Strict):
    position: int = Field(ge=0)
    case: Case
    baseline: Side
    candidate: Side


class _Part(_Strict):
    name: str | None
    cases: int = Field(ge=0)
    stopped: bool
    report: _State
    rows: list[_Row]


class _Layout(_Strict):
    strict: bool
    per_suite_status: bool


class Partial(_Strict):
    flipgate_partial: int
    stopped: bool
    shard: _ShardBlock
    fingerprint: _Fingerprint
    report: _State
    layout: _Layout
    parts: list[_Part] = Field(min_length=1)


def _field_name(location: Sequence[int | str]) -> str:
    name = ""
    for step in location:
        name += f"[{step}]" if isinstance(step, int) else (f".{step}" if name else str(step))
    return name or "the top level"


def read_partial(path: str | os.PathLike[str]) -> Partial:
    """A partial, typed: bad input (exit 2, naming the file and the field) if it is not one."""
    source = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_PARTIAL_BYTES + 1)
    except OSError as exc:
        raise InputError(Problem(source, None, f"cannot read: {exc.strerror}")) from None
    if len(data) > MAX_PARTIAL_BYTES:
        raise InputError(Problem(source, None, f"larger than {MAX_PARTIAL_BYTES // 2**20} MB: "
                                               "not a partial flipgate wrote"))
    try:  # the version alone first; the rest of the file is skipped, not built
        version = _Version.model_validate_json(data).flipgate_partial
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(Problem(source, None, "not a flipgate partial (written by --shard): "
                                               f"{first['msg']}")) from None
    if version is None:
        raise InputError(Problem(source, None, "not a flipgate partial (written by --shard)"))
    if version != PARTIAL_VERSION:
        raise InputError(Problem(source, None, f"field flipgate_partial: version {version!r}, this "
                                               f"flipgate reads version {PARTIAL_VERSION}: run the "
                                               "shards again with this flipgate"))
    try:
        return Partial.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = exc.error_count() - 1
        raise InputError(Problem(source, None, f"field {_field_name(first['loc'])}: {first['msg']}"
                                 + (f" (and {more} more)" if more else ""))) from None


# --- merging partials -----------------------------------------------------------------

_PINNED = ("cases_digest", "rules")


def _shown(value: Any) -> str:
    if isinstance(value, Mapping) and len(value) == 1:
        value = next(iter(value.values()))  # one suite's digest or rules
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return str(value)
    return str(value) if isinstance(value, str | int | None) else "other rules"


def _check_set(read: Sequence[tuple[str, Partial]]) -> int:
    """The partials are the n shards of one run, each once, every fingerprint field equal."""
    first_path, first = read[0]
    count = first.shard.count
    for path, partial in read:
        where = f"{partial.shard.index}/{partial.shard.count}"
        if partial.shard.count != count:
            raise InputError(Problem(path, None, f"field shard.count: is shard {where}, "
                                                 f"{first_path} is one of {count}"))
        if partial.shard.index > count:
            raise InputError(Problem(path, None, f"field shard.index: shard {where} does not exist"))
    indexes = {partial.shard.index for _, partial in read}
    if len(read) < count <= MAX_LISTED_SHARDS:
        missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in indexes]
        if missing:
            raise InputError(f"merge: missing the partial of shard {', '.join(missing)}")
    if len(read) != count:
        raise InputError(f"merge: {len(read)} partials given for a run of {count} shards "
                         "(each shard's partial exactly once)")
    expected = first.fingerprint.model_dump()
    seen: dict[int, str] = {}
    for path, partial in read:
        theirs = partial.fingerprint.model_dump()
        # The writer's own fields first (refs, configuration, suites), then the two pinned here.
        for key in [*dict.fromkeys(k for k in [*expected, *theirs] if k not in _PINNED), *_PINNED]:
            if theirs.get(key) != expected.get(key):
                raise InputError(Problem(path, None, f"field fingerprint.{key}: was made from a "
                                                     f"different {key.replace('_', ' ')} "
                                                     f"({_shown(theirs.get(key))}) than {first_path} "
                                                     f"({_shown(expected.get(key))}); partials of "
                                                     "different runs cannot be merged"))
        if partial.shard.fingerprint != first.shard.fingerprint:
            raise InputError(Problem(path, None, "field shard.fingerprint: differs from "
                                                 f"{first_path}'s; partials of different runs "
                                                 "cannot be merged"))
        index = partial.shard.index
        if index in seen:
            raise InputError(Problem(path, None, f"shard {index}/{count} is also {seen[index]}"))
        seen[index] = path
        names = [part.name for part in partial.parts]
        if names != [part.name for part in first.parts] or len(set(names)) != len(names) or \
                set(name or "" for name in names) != set(partial.fingerprint.cases_digest):
            raise InputError(Problem(path, None, "field parts: not the suites its fingerprint "
                                                 f"names, or not those of {first_path}"))
    return count


def _decided(read: Sequence[tuple[str, Partial]], at: int, count: int) -> Report:
    """Part `at` of every partial as one report: every row checked and decided again."""
    name = read[0][1].parts[at].name
    key = name or ""
    rules_data = read[0][1].fingerprint.rules[key]
    rules = Rules(blocking_categories=tuple(rules_data.blocking_categories),
                  threshold=rules_data.relevance_threshold,
                  policy=gate.Policy(min_cases=rules_data.min_cases_per_category,
                                     strict=rules_data.strict, mode=rules_data.mode),
                  review=rules_data.review)
    total = read[0][1].parts[at].cases
    placed: dict[int, _Row] = {}
    stopped = False
    for path, partial in read:
        part = partial.parts[at]
        where = f"parts[{at}]" + (f" (suite {name})" if name else "")
        if part.cases != total:
            raise InputError(Problem(path, None, f"field {where}.cases: {part.cases}, "
                                                 f"{read[0][0]} says {total}"))
        stopped = stopped or part.stopped or partial.stopped
        shard = Shard(partial.shard.index, count)
        for number, row in enumerate(part.rows):
            field = f"{where}.rows[{number}]"
            if not shard.holds(row.case.id):
                raise InputError(Problem(path, None, f"field {field}.case.id: case {row.case.id!r} "
                                                     f"is not one shard {shard} evaluates"))
            if row.position >= total or row.position in placed:
                taken = placed.get(row.position)
                raise InputError(Problem(path, None, f"field {field}.position: {row.position} "
                                         + (f"is also case {taken.case.id!r}'s" if taken else
                                            f"is not among the run's {total} cases")))
            placed[row.position] = row
    skipped = {partial.parts[at].report.conclusion is Conclusion.SKIPPED for _, partial in read}
    if len(skipped) > 1:
        raise InputError(f"merge: some partials skipped {key or 'the run'} and others evaluated it")
    if skipped == {True}:
        if placed:
            raise InputError(f"merge: part {key or 'of the run'} is skipped yet carries rows")
        return _report(read, at, rows=None, rules=rules, total=total,
                       conclusion=Conclusion.SKIPPED)
    if not stopped:
        if len(placed) != total:
            missing = next(i for i in range(total) if i not in placed)
            raise InputError(f"merge: the partials hold {len(placed)} of the run's {total} cases "
                             f"(position {missing} is in none): rows were removed")
        ordered = [placed[i] for i in range(total)]
        if cases_digest(row.case for row in ordered) != read[0][1].fingerprint.cases_digest[key]:
            raise InputError("merge: the partials' cases are not the cases their fingerprint "
                             "pins (a case was changed, relabelled or replaced)")
    else:
        ordered = [placed[i] for i in sorted(placed)]
    rows = decide_rows([(row.case, _side(row.baseline), _side(row.candidate)) for row in ordered],
                       rules)
    if gate.run_blocks(rows):
        # The run blocks, so it asks no fluency; a shard that did not block on its own part
        # asked for its ties, and those readings are not the run's.
        rows = [dataclasses.replace(row, baseline=dataclasses.replace(row.baseline, fluency=None),
                                    candidate=dataclasses.replace(row.candidate, fluency=None))
                for row in rows]
    report = _report(read, at, rows=rows, rules=rules, total=total,
                     conclusion=Conclusion.ERROR if stopped else None)
    report.e2e = _merged_e2e([partial.parts[at].report.e2e for _, partial in read], report)
    return report


def _side(side: Side) -> Side:
    """An answer's readings, with its bucket and flags derived again from them."""
    return gate.side(side.response, side.groundedness, relevance=side.relevance,
                     rescore=side.rescore, fluency=side.fluency, finish_reason=side.finish_reason,
                     second_opinion=side.second_opinion, statements=side.statements,
                     manipulation=find_manipulation(side.response),
                     generator_error=side.generator_error, not_run=side.not_run)


def _report(read: Sequence[tuple[str, Partial]], at: int, *, rows: list[Any] | None,
            rules: Rules, total: int, conclusion: Conclusion | None) -> Report:
    states = [partial.parts[at].report for _, partial in read]
    # A shard's own "fluency was not asked" note counted only its rows; report_of says the
    # run's once.
    notes = dict.fromkeys(note for state in states for note in state.notes
                          if not note.startswith(gate.FLUENCY_SKIPPED))
    return report_of(rows, rules=rules, judge=_judge([state.judge for state in states]),
                     cases=total, conclusion=conclusion, notes=list(notes),
                     change=states[0].change, head_sha=states[0].head_sha)


def _judge(judges: Sequence[JudgeInfo]) -> JudgeInfo:
    """The judge of every shard; what the provider said answered, from all of them."""
    return dataclasses.replace(
        judges[0],
        returned_models=tuple(dict.fromkeys(m for j in judges for m in j.returned_models)),
        system_fingerprints=tuple(dict.fromkeys(f for j in judges for f in j.system_fingerprints)))


def _merged_e2e(parts: Sequence[E2EReport | None], report: Report) -> E2EReport | None:
    """The shards' end-to-end runs as one: rows in the cases' order, drift against the
    merged frozen verdicts."""
    present = [part for part in parts if part is not None]
    if not present:
        return None
    verdicts = {row.id: (i, row.verdict) for i, row in enumerate(report.rows)}
    rows = []
    for part in present:
        for row in part.rows:
            if row.id not in verdicts:
                raise InputError(f"merge: the end-to-end row {row.id!r} is not a case of the run")
            frozen = verdicts[row.id][1]
            rows.append(dataclasses.replace(row, frozen_verdict=frozen,
                                            drift=gate.retrieval_drift(frozen, row.e2e_verdict)))
    rows.sort(key=lambda row: verdicts[row.id][0])
    return E2EReport(rows=rows, date=present[0].date, retrieval=present[0].retrieval,
                     stopped=next((part.stopped for part in present if part.stopped), None),
                     notes=list(dict.fromkeys(note for part in present for note in part.notes)))


def _sum_into(total: dict[str, Any], part: Mapping[str, Any] | None) -> None:
    for key, value in (part or {}).items():
        if isinstance(value, Mapping):
            _sum_into(total.setdefault(key, {}), value)
        elif isinstance(value, int) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value
        else:
            total.setdefault(key, value)


def _budget(parts: Sequence[Mapping[str, int | None]]) -> dict[str, int | None]:
    """The shards' budgets: each job had the configured limits; spending adds up."""
    merged: dict[str, int | None] = dict(parts[0])
    for key in merged:
        if not key.startswith("max_"):
            merged[key] = sum(part.get(key) or 0 for part in parts)
    return merged


def _scheduling(parts: Sequence[Mapping[str, int]]) -> dict[str, int]:
    pick = {"lowest_concurrency": min, "peak_in_flight": max, "max_concurrency": max}
    return {key: pick.get(key, sum)([part.get(key, 0) for part in parts]) for key in parts[0]}


def merge(paths: Sequence[str | os.PathLike[str]], *, pinned: Mapping[str, Any] | None = None) -> Report:
    """The report of one run, from the partials of its shards (InputError if they are not).
    `pinned`: fingerprint fields known from elsewhere (the checkout) that every partial must
    carry as they are."""
    if not paths:
        raise InputError("merge needs the partials of every shard (PARTIAL...)")
    read = [(str(path), read_partial(path)) for path in paths]
    for path, partial in read:
        theirs = partial.fingerprint.model_dump()
        for key, value in (pinned or {}).items():
            if theirs.get(key) != value:
                raise InputError(Problem(path, None, f"field fingerprint.{key}: was made for "
                                                     f"{key.replace('_', ' ')} "
                                                     f"{_shown(theirs.get(key))}, not "
                                                     f"{_shown(value)} as the checkout says"))
    count = _check_set(read)
    first = read[0][1]
    stopped = any(partial.stopped for _, partial in read)
    decided = [_decided(read, at, count) for at in range(len(first.parts))]
    tops = [partial.report for _, partial in read]
    if first.parts[0].name is None:
        report = decided[0]
    else:
        report = build_suites_report(
            [SuiteReport(part.name or "", one) for part, one in zip(first.parts, decided, strict=True)],
            notes=list(dict.fromkeys(note for top in tops for note in top.notes)),
            head_sha=tops[0].head_sha, relevance_threshold=decided[0].relevance_threshold,
            strict=first.layout.strict, per_suite_status=first.layout.per_suite_status)
    report.merge_base = tops[0].merge_base
    if stopped:
        report.conclusion = Conclusion.ERROR  # a shard could not finish: neither can the run
    for name in ("usage", "cache"):
        if any(getattr(top, name) is not None for top in tops):
            total: dict[str, Any] = {}
            for top in tops:
                _sum_into(total, getattr(top, name))
            setattr(report, name, total)
    budgets = [top.budget for top in tops if top.budget is not None]
    report.budget = _budget(budgets) if budgets else None
    schedules = [top.scheduling for top in tops if top.scheduling is not None]
    report.scheduling = _scheduling(schedules) if schedules else None
    report.notes.append(f"Merged from {count} shards.")
    return report
