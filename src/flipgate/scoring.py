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
from dataclasses import dataclass
from typing import Any

from flipgate import gate
from flipgate.config import Config
from flipgate.errors import FlipgateError
from flipgate.judges.base import EMPTY_ANSWER, Judge
from flipgate.model import (
    Answer,
    Case,
    Change,
    Conclusion,
    Evidence,
    FluencySummary,
    JudgeInfo,
    Relevance,
    Report,
    Row,
    Score,
)
from flipgate.progress import Progress


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


@dataclass(frozen=True)
class Scored:
    """Every row of a run, classified, and the fluency tie-breaker over them."""

    rows: list[Row]
    fluency: FluencySummary | None = None


async def score_rows(*, cases: Sequence[Case], baseline: Mapping[str, Answer],
                     candidate: Mapping[str, Answer], config: Config, judge: Judge,
                     progress: Progress) -> Scored:
    n = len(cases)
    progress.add(4 * n)  # groundedness and relevance for both sides
    relevance_items = [(case, answers[case.id].response)
                       for answers in (baseline, candidate) for case in cases]
    *judged, relevances = await asyncio.gather(
        *(_judge_row(judge, case, baseline[case.id], candidate[case.id], progress=progress)
          for case in cases),
        _relevance(judge, relevance_items, progress))

    rows = []
    for i, case in enumerate(cases):
        base_score, cand_score, rescore, fluency = judged[i]
        before, after = baseline[case.id], candidate[case.id]
        rows.append(gate.build_row(
            case,
            gate.side(before.response, base_score, relevance=relevances[i],
                      fluency=fluency[0] if fluency else None, finish_reason=before.finish_reason),
            gate.side(after.response, cand_score, relevance=relevances[n + i], rescore=rescore,
                      fluency=fluency[1] if fluency else None, finish_reason=after.finish_reason),
            blocking_categories=config.gate.blocking_categories,
            threshold=config.relevance.threshold, find_evidence=_evidence))
    return Scored(rows=rows, fluency=gate.fluency_summary(rows))


def judge_info(config: Config, provider: str | None) -> JudgeInfo:
    """What the report says about the judge, without building it (no client, no key)."""
    chosen = provider or config.judge.provider
    if chosen == "offline":
        from flipgate.judges.offline import OfflineJudge

        return OfflineJudge.info
    return JudgeInfo(provider=chosen, model=config.judge.model, engine=config.judge.engine,
                     embedding_model=config.relevance.embedding_model)


def build_report(*, config: Config, judge: JudgeInfo, cases: int, scored: Scored | None = None,
                 conclusion: Conclusion | None = None, notes: Sequence[str] = (),
                 change: Change | None = None, usage: dict[str, Any] | None = None,
                 cache: dict[str, int] | None = None, head_sha: str | None = None) -> Report:
    """The report, whole. Without `scored` (skipped, or stopped before its rows) it has no
    rows and `conclusion` must say why; with it, the gate concludes from its rows."""
    rows = scored.rows if scored is not None else []
    counts = gate.count(rows, cases=cases)
    if conclusion is None:
        assert scored is not None, "a report without rows needs a conclusion"
        conclusion = gate.conclude(counts)
    return Report(conclusion=conclusion, judge=judge, counts=counts, rows=rows,
                  fluency=scored.fluency if scored is not None else None,
                  relevance_threshold=config.relevance.threshold, change=change,
                  usage=usage, cache=cache, notes=list(notes), head_sha=head_sha)


def stopped_note(message: str) -> str:
    """The note of a run that could not finish (budget, API): conclusion `error`, no rows."""
    return f"The run could not finish: {message}"
