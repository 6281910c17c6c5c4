"""Scoring a run: ask the judges about every answer, then let gate.py decide.

Each row follows the product's rule: groundedness of both answers, then a
real second scoring when the candidate newly fell to ungrounded (the same
judge again, a second-opinion judge, or both), and one statement-level
request for a flip a reviewer must read. Only once every row's groundedness
is settled, and only when the gate does not block, is fluency asked, for the
rows tied in an answering bucket. Every answer is checked for text addressed to the judge
before any verdict is read. A fixed pool of workers pulls rows (no barrier
between rows, memory bounded by the pool), beside one batched relevance pass
for every answer of the run; the shared concurrency limit lives in the LLM layer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flipgate.config.review_setting import REVIEW_REQUIRED
from flipgate.config.schema import Config
from flipgate.errors import FlipgateError, IncompleteError
from flipgate.generator.replay import first_failure_cancels
from flipgate.judges.base import EMPTY_ANSWER, Judge, ReadsPairs
from flipgate.llm.workpool import map_bounded, pool_size
from flipgate.model import (
    Answer,
    Case,
    CategoryInfo,
    Change,
    Conclusion,
    Evidence,
    FluencySummary,
    JudgeInfo,
    Relevance,
    Report,
    Row,
    Score,
    Side,
    Statements,
    SuiteReport,
)
from flipgate.output.progress import JUDGING, Progress
from flipgate.run.stopped import StoppedPartWay
from flipgate.verdict import gate
from flipgate.verdict.manipulation import find_manipulation


async def _guard(call: Awaitable[Score]) -> Score:
    """A judge must never raise for one row; if it does anyway, that is a judge error."""
    try:
        return await call
    except FlipgateError:
        raise  # budget exhausted and the like: the run stops
    except Exception as exc:  # noqa: BLE001 - anything else is this row's judge error
        return Score.failed(f"judge failed: {type(exc).__name__}: {exc}")


async def _groundedness(judge: Judge, case: Case, response: str, *, sample: int) -> Score:
    if not response.strip():
        return EMPTY_ANSWER
    return await _guard(judge.groundedness(case, response, sample=sample))


async def _candidate_groundedness(judge: Judge, case: Case, response: str, baseline: str, *,
                                  sample: int) -> Score:
    """The candidate's groundedness; beside its baseline when the judge reads pairs."""
    if isinstance(judge, ReadsPairs) and response.strip():
        return await _guard(judge.groundedness_beside(case, response, baseline))
    return await _groundedness(judge, case, response, sample=sample)


async def _relevance(judge: Judge, items: Sequence[tuple[Case, str]]) -> list[Relevance]:
    try:
        results = await judge.relevance(items)
        if len(results) != len(items):
            raise ValueError(f"expected {len(items)} relevance results, got {len(results)}")
    except FlipgateError:
        raise
    except Exception as exc:  # noqa: BLE001
        results = [Relevance(score=None, error=f"relevance failed: {type(exc).__name__}: {exc}")
                   for _ in items]
    return results


def _evidence(case: Case, response: str) -> Evidence:
    from flipgate.verdict.evidence import find_unsupported  # pure, deterministic

    return find_unsupported(case.context, response, query=case.query)


@dataclass
class Readings:
    """Everything the judges said about one row."""

    baseline: Score
    candidate: Score
    rescore: Score | None = None
    second: Score | None = None
    fluency: tuple[Score, Score] | None = None
    statements: Statements | None = None
    tied: bool = False  # partial or grounded on both sides: fluency may break the tie


async def _statements(judge: Judge, case: Case, response: str) -> Statements:
    try:
        return await judge.statements(case, response)
    except FlipgateError:
        raise
    except Exception as exc:  # noqa: BLE001 - this row's judge error, not the run's
        return Statements(error=f"judge failed: {type(exc).__name__}: {exc}")


# Judging progress: two steps a row, planned before the first request. The first is
# done when both sides are scored, the second when the follow-up (confirmation and
# statements, fluency, or nothing) is; a tied row's second step waits for the fluency
# phase, which may ask nothing.
JUDGING_STEPS_PER_ROW = 2


async def _judge_row(judge: Judge, case: Case, baseline: Answer, candidate: Answer, *,
                     second: Judge | None, mode: str, progress: Progress) -> Readings:
    """One row's groundedness judging; its progress steps are counted whatever happens
    (a tied row's last step is the fluency phase's to count)."""
    steps = [JUDGING_STEPS_PER_ROW]
    readings: Readings | None = None
    try:
        readings = await _readings(judge, case, baseline, candidate, second=second, mode=mode,
                                   progress=progress, steps=steps)
        return readings
    finally:
        progress.advance(steps[0] - (1 if readings is not None and readings.tied else 0), JUDGING)


async def _readings(judge: Judge, case: Case, baseline: Answer, candidate: Answer, *,
                    second: Judge | None, mode: str, progress: Progress,
                    steps: list[int]) -> Readings:
    """One row's groundedness work, in the rule's order, with no barrier between rows:
    both sides; then, if the candidate newly fell to ungrounded, its confirmation
    (the same judge again, the second-opinion judge, or both); then one statement-
    level request if the row is a flip a reviewer must read. A row tied in an
    answering bucket is marked for the fluency phase. `steps`: progress steps still
    to count."""
    base, cand = await asyncio.gather(
        _groundedness(judge, case, baseline.response, sample=0),
        _candidate_groundedness(judge, case, candidate.response, baseline.response, sample=0))
    progress.advance(1, JUDGING)
    steps[0] -= 1
    readings = Readings(base, cand)
    if base.value is None or cand.value is None:
        return readings
    before, after = gate.bucket_of(base.value), gate.bucket_of(cand.value)
    if gate.needs_rescore(before, after):
        wants_rescore, wants_second = gate.confirmations_needed(mode)
        asks: list[Awaitable[Score]] = []
        if wants_rescore:  # a fresh judge call (sample=1), never a cached verdict
            asks.append(_candidate_groundedness(judge, case, candidate.response,
                                                baseline.response, sample=1))
        if wants_second and second is not None:
            asks.append(_groundedness(second, case, candidate.response, sample=0))
        answers = list(await asyncio.gather(*asks))
        readings.rescore = answers.pop(0) if wants_rescore else None
        readings.second = answers.pop(0) if wants_second and second is not None else None
    readings.tied = gate.is_tie(before, after)
    verdict, _ = gate.classify(base, cand, readings.rescore, second=readings.second, mode=mode)
    if gate.needs_statements(verdict):
        readings.statements = await _statements(judge, case, candidate.response)
    return readings


async def _fluency(judge: Judge, baseline: Answer, candidate: Answer) -> tuple[Score, Score]:
    before, after = await asyncio.gather(_guard(judge.fluency(baseline.response)),
                                         _guard(judge.fluency(candidate.response)))
    return before, after


@dataclass(frozen=True)
class Scored:
    """Every row of a run, classified, and the fluency tie-breaker over them."""

    rows: list[Row]
    fluency: FluencySummary | None = None


async def score_rows(*, cases: Sequence[Case], baseline: Mapping[str, Answer],
                     candidate: Mapping[str, Answer], config: Config, judge: Judge,
                     progress: Progress, second: Judge | None = None,
                     mode: str = gate.SAME_JUDGE, workers: int | None = None,
                     category_cases: Mapping[str, int] | None = None) -> Scored:
    """Every row, classified, `workers` rows at a time (default: enough for
    `config.concurrency` requests in flight). `second` is the second-opinion judge
    that `mode` asks for. `category_cases`: each category's size in the whole run,
    when `cases` are a shard's part of it (the sample-size rule, and so whether the
    rows block and fluency is asked, counts every case of a category, never the part's).

    Two phases, as the rule orders them: groundedness (with its confirmations and
    statements) for every row; then, only if the gate does not block on those
    rows, fluency for the tied ones (`gate.fluency_wanted` decides)."""
    if mode != gate.SAME_JUDGE and second is None:
        raise ValueError(f"confirmation mode {mode} needs a second-opinion judge")
    workers = workers or pool_size(config.concurrency)
    n = len(cases)
    progress.add(JUDGING_STEPS_PER_ROW * n, JUDGING)  # planned before the first request
    relevance_items = [(case, answers[case.id].response)
                       for answers in (baseline, candidate) for case in cases]
    policy = gate.Policy(min_cases=config.gate.min_cases_per_category, strict=config.gate.strict,
                         mode=mode)
    sizes = (dict(category_cases) if category_cases is not None
             else gate.category_sizes(case.category for case in cases))

    def rows_of(judged: Sequence[Readings], relevances: Sequence[Relevance | None],
                find_evidence: Callable[[Case, str], Evidence]) -> list[Row]:
        return [_row(case, judged[i], baseline[case.id], candidate[case.id],
                     relevance=(relevances[i], relevances[n + i]), config=config, policy=policy,
                     category_cases=sizes[case.category], find_evidence=find_evidence)
                for i, case in enumerate(cases)]

    # What came back before a stop: the rows whose groundedness is settled, and the
    # relevance pass when it finished (run/stopped.py keeps those rows).
    finished: dict[int, Readings] = {}
    relevance_done: list[list[Relevance]] = []

    async def judge_one(i: int) -> Readings:
        case = cases[i]
        finished[i] = await _judge_row(judge, case, baseline[case.id], candidate[case.id],
                                       second=second, mode=mode, progress=progress)
        return finished[i]

    async def relevance_all() -> list[Relevance]:
        relevance_done.append(await _relevance(judge, relevance_items))
        return relevance_done[0]

    async def judge_all() -> list[Readings]:
        judged = await map_bounded(judge_one, range(n), workers=workers)
        # Groundedness is settled: the gate decides, without relevance (which never
        # makes or unmakes a block), whether fluency can matter at all.
        wanted = gate.fluency_wanted(rows_of(judged, [None] * (2 * n), _no_evidence))
        asked = set(wanted)
        progress.advance(sum(1 for i, one in enumerate(judged) if one.tied and i not in asked),
                         JUDGING)

        async def one(i: int) -> None:
            try:
                judged[i].fluency = await _fluency(judge, baseline[cases[i].id],
                                                   candidate[cases[i].id])
            finally:
                progress.advance(1, JUDGING)

        await map_bounded(one, wanted, workers=workers)
        return judged

    # Rows go through a bounded pool; a failure that stops the run (a key the provider
    # refuses, the budget) cancels the pool and the relevance batch at once, so nothing
    # more is sent, and is raised.
    try:
        judged, relevances = await first_failure_cancels([judge_all(), relevance_all()])
    except IncompleteError as exc:
        # Stopped part way (a rate limit, the budget): the settled rows are kept as they are.
        measured = relevance_done[0] if relevance_done else [None] * (2 * n)
        raise StoppedPartWay(exc, [
            _row(cases[i], finished[i], baseline[cases[i].id], candidate[cases[i].id],
                 relevance=(measured[i], measured[n + i]), config=config, policy=policy,
                 category_cases=sizes[cases[i].category], find_evidence=_evidence)
            for i in sorted(finished)]) from exc
    rows = rows_of(judged, relevances, _evidence)
    return Scored(rows=rows, fluency=gate.fluency_summary(rows))


def _no_evidence(case: Case, response: str) -> Evidence:
    return Evidence()


def _row(case: Case, readings: Readings, before: Answer, after: Answer, *,
         relevance: tuple[Relevance | None, Relevance | None], config: Config,
         policy: gate.Policy, category_cases: int,
         find_evidence: Callable[[Case, str], Evidence]) -> Row:
    fluency = readings.fluency
    return gate.build_row(
        case,
        gate.side(before.response, readings.baseline, relevance=relevance[0],
                  fluency=fluency[0] if fluency else None, finish_reason=before.finish_reason,
                  manipulation=find_manipulation(before.response)),
        gate.side(after.response, readings.candidate, relevance=relevance[1],
                  rescore=readings.rescore, second_opinion=readings.second,
                  statements=readings.statements,
                  fluency=fluency[1] if fluency else None, finish_reason=after.finish_reason,
                  manipulation=find_manipulation(after.response)),
        blocking_categories=config.gate.blocking_categories,
        threshold=config.relevance.threshold, find_evidence=find_evidence,
        policy=policy, category_cases=category_cases)


@dataclass(frozen=True)
class Rules:
    """What the configuration says about turning a run's readings into verdicts: the
    blocking categories, the sample-size rule and how flips are confirmed, the relevance
    threshold. A merged run applies the same rules to all its shards' readings at once."""

    blocking_categories: tuple[str, ...] = ()
    threshold: float = 0.7
    policy: gate.Policy = gate.Policy()
    review: bool = False   # `gate.review: required`: held-back flips await a person

    @classmethod
    def of(cls, config: Config, *, mode: str = gate.SAME_JUDGE) -> Rules:
        return cls(blocking_categories=tuple(config.gate.blocking_categories),
                   threshold=config.relevance.threshold,
                   policy=gate.Policy(min_cases=config.gate.min_cases_per_category,
                                      strict=config.gate.strict, mode=mode),
                   review=config.gate.review == REVIEW_REQUIRED)


def decide_rows(sides: Sequence[tuple[Case, Side, Side]], rules: Rules) -> list[Row]:
    """Every row's verdict, blocking flag and evidence, from its two sides' readings, with
    the category sizes of all of `sides` (the whole run: the sample-size rule counts every
    case of a category, never a shard's part)."""
    sizes = gate.category_sizes(case.category for case, _, _ in sides)
    return [gate.build_row(case, before, after, blocking_categories=rules.blocking_categories,
                           threshold=rules.threshold, find_evidence=_evidence,
                           policy=rules.policy, category_cases=sizes[case.category])
            for case, before, after in sides]


def categories(rows: Sequence[Row], rules: Rules) -> dict[str, CategoryInfo]:
    """Each category's size in this run, whether it blocks, and whether it is below the
    minimum. A blocking category without a single case is listed too (0 cases): nothing
    in it was gated. A run without rows (skipped, stopped) lists none."""
    blocking = rules.blocking_categories
    minimum = rules.policy.min_cases
    sizes = gate.category_sizes(row.category for row in rows)
    if rows:
        sizes = {**dict.fromkeys(blocking, 0), **sizes}
    return {name: CategoryInfo(cases=n, blocking=name in blocking,
                               below_minimum=gate.below_minimum(n, minimum), minimum=minimum)
            for name, n in sorted(sizes.items())}


def judge_info(config: Config, provider: str | None) -> JudgeInfo:
    """What the report says about the judge, without building it (no client, no key)."""
    from flipgate.judges import describe

    return describe(config, provider)


def build_report(*, config: Config, judge: JudgeInfo, cases: int, scored: Scored | None = None,
                 conclusion: Conclusion | None = None, notes: Sequence[str] = (),
                 change: Change | None = None, usage: dict[str, Any] | None = None,
                 cache: dict[str, int] | None = None, head_sha: str | None = None) -> Report:
    """The report, whole. Without `scored` (skipped, or stopped before its rows) it has no
    rows and `conclusion` must say why; with it, the gate concludes from its rows."""
    return report_of(scored.rows if scored is not None else None, rules=Rules.of(config),
                     judge=judge, cases=cases, conclusion=conclusion, notes=notes, change=change,
                     usage=usage, cache=cache, head_sha=head_sha)


def report_of(rows: list[Row] | None, *, rules: Rules, judge: JudgeInfo, cases: int,
              conclusion: Conclusion | None = None, notes: Sequence[str] = (),
              change: Change | None = None, usage: dict[str, Any] | None = None,
              cache: dict[str, int] | None = None, head_sha: str | None = None) -> Report:
    """`build_report` from decided rows (None: none were scored) and the rules they were
    decided by."""
    counts = gate.count(rows or [], cases=cases)
    if conclusion is None:
        assert rows is not None, "a report without rows needs a conclusion"
        conclusion = gate.conclude(counts, review=rules.review)
    fluency = gate.fluency_summary(rows) if rows is not None else None
    skipped = gate.fluency_note(fluency)
    return Report(conclusion=conclusion, judge=judge, counts=counts, rows=rows or [],
                  fluency=fluency, relevance_threshold=rules.threshold, change=change,
                  usage=usage, cache=cache, notes=[*notes, *([skipped] if skipped else [])],
                  head_sha=head_sha, categories=categories(rows or [], rules),
                  strict=rules.policy.strict)


def build_suites_report(parts: Sequence[SuiteReport], *, notes: Sequence[str] = (),
                        usage: dict[str, Any] | None = None, cache: dict[str, int] | None = None,
                        head_sha: str | None = None, relevance_threshold: float = 0.7,
                        strict: bool = False, per_suite_status: bool = False) -> Report:
    """Several suites' reports as the run's one: each suite's own report under `suites`, the
    worst conclusion and the counts of the suites that were evaluated summed on top
    (gate.worst, gate.add_counts; when none was, every suite's). The run's usage and cache
    are reported once, on top."""
    for part in parts:
        part.report.usage = part.report.cache = None
    judge = next((part.report.judge for part in parts if part.evaluated), parts[0].report.judge)
    counted = [part for part in parts if part.evaluated] or list(parts)
    return Report(conclusion=gate.worst(part.report.conclusion for part in parts), judge=judge,
                  counts=gate.add_counts(part.report.counts for part in counted),
                  rows=[row for part in parts for row in part.report.rows],
                  relevance_threshold=relevance_threshold, usage=usage, cache=cache,
                  notes=list(notes), head_sha=head_sha, strict=strict, suites=list(parts),
                  per_suite_status=per_suite_status)


def stopped_note(message: str) -> str:
    """The note of a run that could not finish (budget, API): conclusion `error`; the rows it
    finished are kept, the rest not run (run/stopped.py)."""
    return f"The run could not finish: {message}"
