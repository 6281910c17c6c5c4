"""Scoring a run: ask the judge about every answer, then let gate.py decide.

The order follows the product's rule: groundedness first (both sides, all
rows at once), a real second scoring for every candidate that newly fell to
ungrounded, relevance for every answer in one batched pass, and fluency only
for rows tied in an answering bucket. All calls run concurrently; the shared
limit lives in the LLM layer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import TypeVar

from flipgate import gate
from flipgate.config import Config
from flipgate.errors import FlipgateError
from flipgate.judges.base import Judge
from flipgate.model import (Answer, Case, Evidence, FluencySummary, Relevance, Report, Row, Score,
                            Side, Verdict)
from flipgate.progress import Progress
from flipgate.runtime import Runtime

T = TypeVar("T")

EMPTY_ANSWER = Score(value=3, reason="empty answer: nothing to ground, counted as a non-answer "
                                     "without asking the judge")
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


async def score_rows(*, cases: Sequence[Case], baseline: Mapping[str, Answer],
                     candidate: Mapping[str, Answer], config: Config, judge: Judge,
                     progress: Progress) -> Report:
    n = len(cases)
    progress.add(4 * n)  # groundedness and relevance for both sides

    ground_tasks = [
        _groundedness(judge, case, answers[case.id].response, sample=0, progress=progress)
        for answers in (baseline, candidate) for case in cases
    ]
    relevance_items = [(case, answers[case.id].response)
                       for answers in (baseline, candidate) for case in cases]
    *scores, relevances = await asyncio.gather(
        *ground_tasks, _relevance(judge, relevance_items, progress))
    base_scores, cand_scores = scores[:n], scores[n:]
    sides = [(_side(baseline[c.id], base_scores[i], relevances[i]),
              _side(candidate[c.id], cand_scores[i], relevances[n + i]))
             for i, c in enumerate(cases)]

    # The confirming second scoring: a fresh judge call (sample=1), never a cached verdict.
    to_rescore = [i for i, (b, c) in enumerate(sides)
                  if b.bucket and c.bucket and gate.needs_rescore(b.bucket, c.bucket)]
    progress.add(len(to_rescore))
    rescores = await asyncio.gather(*(
        _groundedness(judge, cases[i], sides[i][1].response, sample=1, progress=progress)
        for i in to_rescore))
    for i, rescore in zip(to_rescore, rescores):
        sides[i][1].rescore = rescore

    rows = []
    for case, (base, cand) in zip(cases, sides):
        verdict, errors = gate.classify(base.groundedness, cand.groundedness, cand.rescore)
        for label, side in (("baseline", base), ("candidate", cand)):
            if side.relevance is not None and side.relevance.error:
                errors.append(f"{label} relevance: {side.relevance.error}")
        if errors and verdict is not Verdict.REGRESSION:
            # A row the judge could not fully score is neither a pass nor a move.
            # A confirmed regression stays listed as one, with its errors beside it.
            verdict = Verdict.ERROR
        rows.append(Row(
            case=case, baseline=base, candidate=cand, verdict=verdict,
            blocking=gate.is_blocking(verdict, case.category, config.gate.blocking_categories),
            relevance_drop=gate.relevance_dropped(base.relevance, cand.relevance,
                                                  config.relevance.threshold),
            errors=errors,
            evidence=_evidence(case, cand.response) if verdict in _EVIDENCE_VERDICTS else None,
        ))

    fluency = await _fluency_on_ties(rows, judge=judge, progress=progress)
    counts = gate.count(rows)
    return Report(conclusion=gate.conclude(counts), judge=judge.info, counts=counts, rows=rows,
                  fluency=fluency, relevance_threshold=config.relevance.threshold)


async def _fluency_on_ties(rows: Sequence[Row], *, judge: Judge,
                           progress: Progress) -> FluencySummary | None:
    """Fluency breaks ties only: rows in the same answering bucket on both sides."""
    ties = [row for row in rows if row.verdict is Verdict.UNCHANGED and row.baseline.bucket
            and row.candidate.bucket and gate.is_tie(row.baseline.bucket, row.candidate.bucket)]
    if not ties:
        return None
    progress.add(2 * len(ties))
    readings = await asyncio.gather(*(
        _guard(judge.fluency(side.response), progress)
        for row in ties for side in (row.baseline, row.candidate)))
    deltas, failed = [], 0
    for index, row in enumerate(ties):
        row.baseline.fluency, row.candidate.fluency = readings[2 * index], readings[2 * index + 1]
        before, after = row.baseline.fluency.value, row.candidate.fluency.value
        if before is None or after is None:
            failed += 1
        else:
            deltas.append(after - before)
    mean = round(sum(deltas) / len(deltas), 3) if deltas else None
    return FluencySummary(rows=len(deltas), mean_delta=mean, failed=failed)


async def gate_answers(*, cases: Sequence[Case], baseline: Mapping[str, Answer],
                       candidate: Mapping[str, Answer], config: Config, runtime: Runtime,
                       judge_provider: str | None = None) -> Report:
    """Build the configured judge, score both answer sets, classify every row."""
    from flipgate.judges import make_judge

    judge = make_judge(config, runtime=runtime, provider=judge_provider)
    try:
        report = await score_rows(cases=cases, baseline=baseline, candidate=candidate,
                                  config=config, judge=judge, progress=runtime.progress)
    finally:
        await judge.aclose()
    if runtime.usage:
        report.usage = runtime.usage_report()
    if runtime.cache is not None:
        report.cache = runtime.cache.stats()
    return report
