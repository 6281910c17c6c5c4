"""Keyword-argument factories for the shared value types, for any test that needs a Report.

Rows are built by the real gate core (gate.build_row, with its judge-error
override), so a row built here is a row the gate could have produced.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from flipgate.model import (
    Case,
    Change,
    Conclusion,
    Evidence,
    FluencySummary,
    JudgeInfo,
    ParameterChange,
    Relevance,
    Report,
    Row,
    Score,
    Side,
)
from flipgate.settings import Settings
from flipgate.verdict import gate

BLOCKING_CATEGORIES = ("policy", "pricing", "safety")


def settings_now() -> Settings:
    """The settings a command would build from the environment as it is now
    (the loopback servers' fixtures point OPENAI_BASE_URL and the keys at themselves)."""
    return Settings.from_environ(os.environ)


def make_score(value: int | None = 5, reason: str = "", error: str | None = None) -> Score:
    if value is None:
        return Score.failed(error or "judge reply did not parse")
    return Score(value=value, reason=reason)


def make_side(score: int | None = 5, *, response: str = "An answer taken from the context.",
              reason: str = "", relevance: float | None = 0.9,
              questions: Sequence[str] = (), noncommittal: bool = False,
              rescore: int | None | bool = False, fluency: int | None = None,
              finish_reason: str | None = "stop", error: str | None = None) -> Side:
    """One answer and its readings. `rescore=False` means it was not re-scored."""
    return gate.side(
        response,
        make_score(score, reason=reason, error=error),
        relevance=(Relevance(score=relevance, questions=tuple(questions), noncommittal=noncommittal)
                   if relevance is not None else None),
        rescore=None if rescore is False else make_score(rescore, reason="second scoring"),
        fluency=make_score(fluency) if fluency is not None else None,
        finish_reason=finish_reason,
    )


def make_row(id: str = "refund-007", *, category: str = "policy", before: int | None = 5,
             after: int | None = 2, rescore: int | None | bool = None,
             answer: str = "Refunds take 30 days and cost a $12 fee.",
             baseline_answer: str = "Refunds are issued within 30 days.",
             query: str = "How long do refunds take?",
             context: str = "Refunds are issued within 30 days of the request.",
             reason: str = "The $12 fee is not in the context.",
             figures: Sequence[str] = ("$12",), statements: Sequence[str] = ("cost a $12 fee",),
             relevance: tuple[float | None, float | None] = (0.9, 0.88),
             questions: Sequence[str] = ("How long do refunds take?",),
             finish_reason: str | None = "stop", threshold: float = 0.7,
             blocking_categories: Sequence[str] = BLOCKING_CATEGORIES,
             error: str = "judge reply did not parse") -> Row:
    """A row built by the gate core (gate.build_row), as a run would build it.

    `rescore=None` re-scores only when the gate would; a side scored None failed
    with `error`; `figures`/`statements` are the evidence, found only for rows
    whose verdict carries evidence.
    """
    if rescore is None:
        needs = (before is not None and after is not None
                 and gate.needs_rescore(gate.bucket_of(before), gate.bucket_of(after)))
        rescore = after if needs else False
    evidence = Evidence(unsupported_figures=tuple(figures),
                        unsupported_statements=tuple(statements))
    return gate.build_row(
        Case(id=id, query=query, context=context, category=category),
        make_side(before, response=baseline_answer, relevance=relevance[0], error=error),
        make_side(after, response=answer, reason=reason, relevance=relevance[1],
                  questions=questions, rescore=rescore, finish_reason=finish_reason, error=error),
        blocking_categories=blocking_categories, threshold=threshold,
        find_evidence=lambda case, response: evidence)


def make_judge(provider: str = "openai", model: str = "gpt-4.1-mini", *,
               engine: str | None = None,
               embedding_model: str | None = "text-embedding-3-small") -> JudgeInfo:
    engine = engine or ("lexical" if provider == "offline" else "openai")
    return JudgeInfo(provider=provider, model=model, engine=engine,
                     embedding_model=embedding_model)


def make_report(rows: Sequence[Row] = (), *, conclusion: Conclusion | None = None,
                judge: JudgeInfo | None = None, **extra: Any) -> Report:
    """A report whose counts and conclusion come from the gate core unless given."""
    counts = gate.count(rows)
    return Report(
        conclusion=conclusion or gate.conclude(counts),
        judge=judge or make_judge(),
        counts=counts,
        rows=list(rows),
        **extra,
    )


def make_change(*, generator: str = "prompts/answer.prompty",
                files: Sequence[str] = ("prompts/answer.prompty", "prompts/partials/tone.md"),
                model: tuple[str | None, str | None] = ("gpt-4o-mini", "gpt-4.1"),
                parameters: Sequence[tuple[str, Any, Any]] = (("temperature", 0.2, 0.7),
                                                              ("max_tokens", None, 400)),
                template_diff: str = ("--- a/prompts/answer.prompty\n+++ b/prompts/answer.prompty\n"
                                      "@@ -3 +3 @@\n-Answer only from the context.\n"
                                      "+Be helpful and complete."),
                config_diff: str | None = None, cases_diff: str | None = None) -> Change:
    """A change description; `parameters` as (name, old, new), None for unset."""
    return Change(generator=generator, files=tuple(files), model=model,
                  parameters=tuple(ParameterChange(name, old, new) for name, old, new in parameters),
                  template_diff=template_diff, config_diff=config_diff, cases_diff=cases_diff)


def fluency(rows: int = 12, mean_delta: float | None = 0.25, failed: int = 0,
            skipped: int = 0) -> FluencySummary:
    return FluencySummary(rows=rows, mean_delta=mean_delta, failed=failed, skipped=skipped)


def one_of_each(*, id_prefix: str = "", blocking_category: str = "policy",
                other_category: str = "smalltalk", **row_overrides: Any) -> list[Row]:
    """One row per verdict (and a non-blocking regression), ids naming the verdict.

    Only `blocking_category` blocks, so any text can stand in for it.
    """
    def row(id: str, category: str = blocking_category, **kwargs: Any) -> Row:
        return make_row(id_prefix + id, category=category,
                        blocking_categories=(blocking_category,), **{**kwargs, **row_overrides})

    return [
        row("blocking", before=5, after=2, rescore=1),
        row("review", category=other_category, before=4, after=1, rescore=2),
        row("non-answer", before=5, after=3),
        row("unstable", before=5, after=2, rescore=4),
        row("relevance", before=5, after=5, relevance=(0.9, 0.3)),
        row("error", before=5, after=None),
        row("moved", before=4, after=5),
        row("still", before=2, after=1),
        row("unchanged", before=5, after=5),
    ]
