"""Scoring a run: ask the judge about every answer, then let gate.py decide.

Each row follows the product's rule: groundedness of both answers, then a
real second scoring when the candidate newly fell to ungrounded, and fluency
only when the row is tied in an answering bucket. A fixed pool of workers
pulls rows (no barrier between rows, memory bounded by the pool), beside one
batched relevance pass for every answer of the run; the shared concurrency
limit lives in the LLM layer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import TypeVar

from flipgate import gate
from flipgate.config import Config
from flipgate.errors import FlipgateError
from flipgate.judges.base import EMPTY_ANSWER, Judge
from flipgate.model import (
    Answer,
    Case,
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
    Verdict,
)
from flipgate.progress import Progress
from flipgate.runtime import Runtime
from flipgate.workpool import map_bounded, pool_size

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


async def _judge_row(judge: Judge, case: Case, baseline: Answer, candidate: Answer, *,
                     progress: Progress) -> tuple[Score, Score, Score | None, tuple[Score, Score] | None]:
    """One row's groundedness work, in the rule's order, with no barrier between rows:
    both sides, then the confirming re-score if the candidate newly fell to
    ungrounded, then fluency if the row is tied in an answering bucket."""
    base, cand = await asyncio.gather(
        _groundedness(judge, case, baseline.response, sample=0, progress=progress),
        _groundedness(judge, case, candidate.response, sample=0, progress=progress))
    if base.value is None or cand.value is None:
        return base, cand, None, None
    before, after = gate.bucket_of(base.value), gate.bucket_of(cand.value)
    if gate.needs_rescore(before, after):
        # A fresh judge call (sample=1), never a cached verdict.
        progress.add(1)
        rescore = await _groundedness(judge, case, candidate.response, sample=1, progress=progress)
        return base, cand, rescore, None
    if gate.is_tie(before, after):
        progress.add(2)
        fluency = await asyncio.gather(_guard(judge.fluency(baseline.response), progress),
                                       _guard(judge.fluency(candidate.response), progress))
        return base, cand, None, (fluency[0], fluency[1])
    return base, cand, None, None


async def score_rows(*, cases: Sequence[Case], baseline: Mapping[str, Answer],
                     candidate: Mapping[str, Answer], config: Config, judge: Judge,
                     progress: Progress, workers: int | None = None) -> Report:
    """Every row, `workers` rows at a time (default: enough for `config.concurrency`
    requests in flight), beside the run's relevance pass."""
    workers = workers or pool_size(config.concurrency)
    n = len(cases)
    progress.add(4 * n)  # groundedness and relevance for both sides
    relevance_items = [(case, answers[case.id].response)
                       for answers in (baseline, candidate) for case in cases]
    judged, relevances = await asyncio.gather(
        map_bounded(lambda case: _judge_row(judge, case, baseline[case.id], candidate[case.id],
                                            progress=progress),
                    cases, workers=workers),
        _relevance(judge, relevance_items, progress))

    rows = []
    for i, case in enumerate(cases):
        base_score, cand_score, rescore, fluency = judged[i]
        base = _side(baseline[case.id], base_score, relevances[i])
        cand = _side(candidate[case.id], cand_score, relevances[n + i])
        cand.rescore = rescore
        if fluency is not None:
            base.fluency, cand.fluency = fluency
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

    counts = gate.count(rows)
    return Report(conclusion=gate.conclude(counts), judge=judge.info, counts=counts, rows=rows,
                  fluency=fluency_summary(rows), relevance_threshold=config.relevance.threshold)


def fluency_summary(rows: Sequence[Row]) -> FluencySummary | None:
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
    chosen = provider or config.judge.provider
    if chosen == "offline":
        from flipgate.judges.offline import OfflineJudge

        return OfflineJudge.info
    return JudgeInfo(provider=chosen, model=config.judge.model, engine=config.judge.engine,
                     embedding_model=config.relevance.embedding_model)


def stopped_report(*, cases: Sequence[Case], config: Config, judge_provider: str | None,
                   message: str) -> Report:
    """The report of a run that could not finish (budget, API): conclusion `error`, no rows."""
    return Report(conclusion=Conclusion.ERROR, judge=judge_info(config, judge_provider),
                  counts=Counts(cases=len(cases)), rows=[],
                  relevance_threshold=config.relevance.threshold,
                  notes=[f"The run could not finish: {message}"])


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
        runtime.fill_report(report)
    elif runtime.cache is not None:
        report.cache = runtime.cache.stats()
    return report
