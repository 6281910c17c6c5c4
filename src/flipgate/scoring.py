"""Scoring a run: ask the judge about every answer, then let gate.py decide.

Each row follows the product's rule: groundedness of both answers, then a
real second scoring when the candidate newly fell to ungrounded, and fluency
only when the row is tied in an answering bucket. Rows run concurrently with
no barrier between them, beside one batched relevance pass for every answer
of the run; the shared concurrency limit lives in the LLM layer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from flipgate import gate
from flipgate.config import Config
from flipgate.errors import FlipgateError
from flipgate.judges.base import EMPTY_ANSWER, Judge
from flipgate.manipulation import find_manipulation
from flipgate.model import (
    Answer,
    Case,
    CategoryInfo,
    Conclusion,
    Counts,
    Evidence,
    FluencySummary,
    JudgeInfo,
    Relevance,
    Report,
    Row,
    Score,
    Side,
    Statements,
    Verdict,
)
from flipgate.progress import Progress
from flipgate.runtime import Runtime

T = TypeVar("T")

# Verdicts whose rows carry the evidence a reviewer needs to see why.
_EVIDENCE_VERDICTS = (Verdict.REGRESSION, Verdict.UNSTABLE, Verdict.NEW_NON_ANSWER)


async def _guard(call: Awaitable[Score], progress: Progress) -> Score:
    """A judge must never raise for one row; if it does anyway, that is a judge error."""
    try:
        return await call
    except FlipgateError:
        raise  # budget exhausted and the like: the run stops
    except Exception as exc:  # noqa: BLE001 - anything else is this row's judge error
        return Score.failed(f"judge failed: {type(exc).__name__}: {exc}")
    finally:
        progress.advance()


async def _groundedness(judge: Judge, case: Case, response: str, *, sample: int,
                        progress: Progress) -> Score:
    if not response.strip():
        progress.advance()
        return EMPTY_ANSWER
    return await _guard(judge.groundedness(case, response, sample=sample), progress)


async def _relevance(judge: Judge, items: Sequence[tuple[Case, str]],
                     progress: Progress) -> list[Relevance]:
    try:
        results = await judge.relevance(items)
        if len(results) != len(items):
            raise ValueError(f"expected {len(items)} relevance results, got {len(results)}")
    except FlipgateError:
        raise
    except Exception as exc:  # noqa: BLE001
        results = [Relevance(score=None, error=f"relevance failed: {type(exc).__name__}: {exc}")
                   for _ in items]
    progress.advance(len(items))
    return results


def _side(answer: Answer, score: Score, relevance: Relevance) -> Side:
    return Side(response=answer.response, groundedness=score,
                bucket=gate.bucket_of(score.value) if score.value is not None else None,
                relevance=relevance, finish_reason=answer.finish_reason)


def _evidence(case: Case, response: str) -> Evidence:
    from flipgate.evidence import find_unsupported  # pure, deterministic

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


async def _statements(judge: Judge, case: Case, response: str, progress: Progress) -> Statements:
    try:
        return await judge.statements(case, response)
    except FlipgateError:
        raise
    except Exception as exc:  # noqa: BLE001 - this row's judge error, not the run's
        return Statements(error=f"judge failed: {type(exc).__name__}: {exc}")
    finally:
        progress.advance()


async def _judge_row(judge: Judge, case: Case, baseline: Answer, candidate: Answer, *,
                     second: Judge | None, mode: str, progress: Progress) -> Readings:
    """One row's groundedness work, in the rule's order, with no barrier between rows:
    both sides; then, if the candidate newly fell to ungrounded, its confirmation
    (the same judge again, the second-opinion judge, or both); then one statement-
    level request if the row is a flip a reviewer must read, or fluency if the row
    is tied in an answering bucket."""
    base, cand = await asyncio.gather(
        _groundedness(judge, case, baseline.response, sample=0, progress=progress),
        _groundedness(judge, case, candidate.response, sample=0, progress=progress))
    readings = Readings(base, cand)
    if base.value is None or cand.value is None:
        return readings
    before, after = gate.bucket_of(base.value), gate.bucket_of(cand.value)
    if gate.needs_rescore(before, after):
        wants_rescore, wants_second = gate.confirmations_needed(mode)
        asks: list[Awaitable[Score]] = []
        if wants_rescore:  # a fresh judge call (sample=1), never a cached verdict
            asks.append(_groundedness(judge, case, candidate.response, sample=1, progress=progress))
        if wants_second and second is not None:
            asks.append(_groundedness(second, case, candidate.response, sample=0, progress=progress))
        progress.add(len(asks))
        answers = list(await asyncio.gather(*asks))
        readings.rescore = answers.pop(0) if wants_rescore else None
        readings.second = answers.pop(0) if wants_second and second is not None else None
    elif gate.is_tie(before, after):
        progress.add(2)
        fluency = await asyncio.gather(_guard(judge.fluency(baseline.response), progress),
                                       _guard(judge.fluency(candidate.response), progress))
        readings.fluency = (fluency[0], fluency[1])
    verdict, _ = gate.classify(base, cand, readings.rescore, second=readings.second, mode=mode)
    if gate.needs_statements(verdict):
        progress.add(1)
        readings.statements = await _statements(judge, case, candidate.response, progress)
    return readings


async def score_rows(*, cases: Sequence[Case], baseline: Mapping[str, Answer],
                     candidate: Mapping[str, Answer], config: Config, judge: Judge,
                     progress: Progress, second: Judge | None = None,
                     mode: str = gate.SAME_JUDGE) -> Report:
    if mode != gate.SAME_JUDGE and second is None:
        raise ValueError(f"confirmation mode {mode} needs a second-opinion judge")
    n = len(cases)
    progress.add(4 * n)  # groundedness and relevance for both sides
    relevance_items = [(case, answers[case.id].response)
                       for answers in (baseline, candidate) for case in cases]
    *judged, relevances = await asyncio.gather(
        *(_judge_row(judge, case, baseline[case.id], candidate[case.id], second=second, mode=mode,
                     progress=progress)
          for case in cases),
        _relevance(judge, relevance_items, progress))

    gate_config = config.gate
    sizes = gate.category_sizes(case.category for case in cases)
    rows = []
    for i, case in enumerate(cases):
        readings: Readings = judged[i]
        base = _side(baseline[case.id], readings.baseline, relevances[i])
        cand = _side(candidate[case.id], readings.candidate, relevances[n + i])
        # Before any verdict is read: does an answer talk to its grader?
        base.manipulation = find_manipulation(base.response)
        cand.manipulation = find_manipulation(cand.response)
        cand.rescore, cand.second_opinion = readings.rescore, readings.second
        cand.statements = readings.statements
        if readings.fluency is not None:
            base.fluency, cand.fluency = readings.fluency
        verdict, errors = gate.classify(base.groundedness, cand.groundedness, cand.rescore,
                                        second=cand.second_opinion, mode=mode)
        for label, side in (("baseline", base), ("candidate", cand)):
            if side.relevance is not None and side.relevance.error:
                errors.append(f"{label} relevance: {side.relevance.error}")
        if errors and verdict is not Verdict.REGRESSION:
            # A row the judge could not fully score is neither a pass nor a move.
            # A confirmed regression stays listed as one, with its errors beside it.
            verdict = Verdict.ERROR
        if cand.statements is not None and cand.statements.error:
            # A statement list that is not evidence is a judge error of that step;
            # the verdict still stands on its scores.
            errors.append(f"candidate statements: {cand.statements.error}")
        blocking, review_reason = gate.blocks(
            verdict, case.category, blocking_categories=gate_config.blocking_categories,
            category_cases=sizes[case.category], min_cases=gate_config.min_cases_per_category,
            strict=gate_config.strict, mode=mode)
        rows.append(Row(
            case=case, baseline=base, candidate=cand, verdict=verdict,
            blocking=blocking,
            relevance_drop=gate.relevance_dropped(base.relevance, cand.relevance,
                                                  config.relevance.threshold),
            errors=errors,
            evidence=_evidence(case, cand.response) if verdict in _EVIDENCE_VERDICTS else None,
            confirmed_by=mode if verdict is Verdict.REGRESSION else None,
            review_reason=review_reason,
        ))

    counts = gate.count(rows)
    info = replace(judge.info, rescore=mode,
                   second_opinion=second.info.model if second is not None else None)
    return Report(conclusion=gate.conclude(counts), judge=info, counts=counts, rows=rows,
                  fluency=_fluency_summary(rows), relevance_threshold=config.relevance.threshold,
                  categories=categories(sizes, config), strict=config.gate.strict)


def categories(sizes: Mapping[str, int], config: Config) -> dict[str, CategoryInfo]:
    """Each category's size, whether it blocks, and whether it is below the minimum."""
    blocking = config.gate.blocking_categories
    minimum = config.gate.min_cases_per_category
    return {name: CategoryInfo(cases=n, blocking=name in blocking,
                               below_minimum=gate.below_minimum(n, minimum), minimum=minimum)
            for name, n in sorted(sizes.items())}


def _fluency_summary(rows: Sequence[Row]) -> FluencySummary | None:
    """Mean fluency change over tied rows: a tie-breaker reported last, never a vote."""
    ties = [row for row in rows if row.verdict is Verdict.UNCHANGED
            and row.baseline.fluency is not None and row.candidate.fluency is not None]
    if not ties:
        return None
    deltas, failed = [], 0
    for row in ties:
        assert row.baseline.fluency is not None and row.candidate.fluency is not None
        before, after = row.baseline.fluency.value, row.candidate.fluency.value
        if before is None or after is None:
            failed += 1
        else:
            deltas.append(after - before)
    mean = round(sum(deltas) / len(deltas), 3) if deltas else None
    return FluencySummary(rows=len(deltas), mean_delta=mean, failed=failed)


def judge_info(config: Config, provider: str | None) -> JudgeInfo:
    """What the report says about the judge, without building it (no client, no key)."""
    from flipgate.judges import describe

    return describe(config, provider)


def stopped_report(*, cases: Sequence[Case], config: Config, judge_provider: str | None,
                   message: str) -> Report:
    """The report of a run that could not finish (budget, API): conclusion `error`, no rows."""
    return Report(conclusion=Conclusion.ERROR, judge=judge_info(config, judge_provider),
                  counts=Counts(cases=len(cases)), rows=[],
                  categories=categories(gate.category_sizes(c.category for c in cases), config),
                  relevance_threshold=config.relevance.threshold,
                  notes=[f"The run could not finish: {message}"])


async def gate_answers(*, cases: Sequence[Case], baseline: Mapping[str, Answer],
                       candidate: Mapping[str, Answer], config: Config, runtime: Runtime,
                       judge_provider: str | None = None) -> Report:
    """Build the configured judge, score both answer sets, classify every row."""
    from flipgate.judges import make_judge, make_second_judge, rescore_mode

    judge = make_judge(config, runtime=runtime, provider=judge_provider)
    second = None
    try:
        second = make_second_judge(config, runtime=runtime, provider=judge_provider)
        report = await score_rows(cases=cases, baseline=baseline, candidate=candidate,
                                  config=config, judge=judge, progress=runtime.progress,
                                  second=second, mode=rescore_mode(config, judge_provider))
    finally:
        await judge.aclose()
        if second is not None:
            await second.aclose()
    if runtime.usage:
        report.usage = runtime.usage_report()
    if runtime.cache is not None:
        report.cache = runtime.cache.stats()
    return report
