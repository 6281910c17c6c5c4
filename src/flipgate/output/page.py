"""What report.html shows of each row: the view its template reads. Pure.

Every field holds raw, untrusted text (answers, contexts, reasons, ids); the
page's template escapes it (autoescape in Jinja2's sandbox). Rows are built
one at a time (`page_rows` is a generator), so a page of 100,000 rows never
holds more than one row's view at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from flipgate.model import Evidence, Report, Row, Score, Side
from flipgate.output.review import Change, Passage, Piece, cited_spans, mark_context, review, word_diff
from flipgate.verdict import gate
from flipgate.verdict.evidence import cut_text

# Labels a person gave rows, by (suite or None, row id): each shown as written,
# e.g. "labelled grounded by @alice".
Labels = Mapping[tuple[str | None, str], Sequence[str]]


@dataclass(frozen=True)
class Reading:
    """One judge reading, as the page lists it."""

    name: str            # "groundedness", "re-score", "second opinion (judge-2)", ...
    value: str           # "5 (grounded)", "0.91", "failed"
    reason: str = ""


@dataclass(frozen=True)
class SideView:
    answer: str
    readings: tuple[Reading, ...]
    truncated: bool      # the generator stopped at max tokens


@dataclass(frozen=True)
class StatementView:
    text: str
    label: str           # supported | unsupported | not_a_claim
    span: str | None


@dataclass(frozen=True)
class PageRow:
    index: int
    id: str
    suite: str           # "" with a single suite
    category: str
    verdict: str         # the row's verdict, e.g. "regression"
    blocking: bool
    kinds: tuple[str, ...]   # the comment sections it is in (gate.KINDS names)
    movement: str        # "grounded (5) → ungrounded (2)"
    query: str
    context: tuple[Passage, ...]
    baseline: SideView
    candidate: SideView
    answer: tuple[Piece, ...]          # the candidate's answer, its claims marked
    diff: tuple[Change, ...] | None    # None: too different (or identical) for a word diff
    identical: bool
    statements: tuple[StatementView, ...]
    statements_error: str
    errors: tuple[str, ...]
    notes: tuple[str, ...]
    labels: tuple[str, ...]
    closest: tuple[tuple[int, str | None, bool], ...]  # (claim, passage, the judge's own span)


def _bucket(side: Side) -> str:
    return side.bucket.value.replace("_", "-") if side.bucket else "no score"


def _score(name: str, score: Score | None) -> Reading | None:
    if score is None:
        return None
    if not score.ok:
        return Reading(name, "failed", score.error or "")
    if score.label is not None:  # a true/false instrument (GroundednessPro)
        return Reading(name, "grounded" if score.label else "not grounded", score.reason)
    return Reading(name, str(score.value), score.reason)


def _readings(side: Side, *, second_model: str | None) -> tuple[Reading, ...]:
    readings = [_score("groundedness", side.groundedness), _score("re-score", side.rescore),
                _score(f"second opinion ({second_model})" if second_model else "second opinion",
                       side.second_opinion),
                _score("fluency", side.fluency)]
    relevance = side.relevance
    if relevance is not None:
        value = "failed" if relevance.score is None else f"{relevance.score:.2f}"
        detail = "; ".join(relevance.questions)
        if relevance.noncommittal:
            detail = f"noncommittal. {detail}".strip()
        readings.append(Reading("relevance", value, relevance.error or detail))
    if side.manipulation:
        readings.append(Reading("addresses the judge", "flagged", "; ".join(side.manipulation)))
    return tuple(reading for reading in readings if reading is not None)


def _side(side: Side, *, second_model: str | None = None) -> SideView:
    return SideView(answer=side.response, readings=_readings(side, second_model=second_model),
                    truncated=side.finish_reason == "length")


def _evidence(row: Row) -> Evidence:
    statements = row.candidate.statements
    if statements is not None and not statements.error:
        return Evidence(unsupported_figures=row.evidence.unsupported_figures if row.evidence else (),
                        unsupported_statements=tuple(s.text for s in statements.unsupported))
    return row.evidence or Evidence()


def page_row(row: Row, *, index: int, suite: str | None = None, second_model: str | None = None,
             labels: Sequence[str] = ()) -> PageRow:
    """One row as the page shows it: the same marks as the comment's evidence block."""
    statements = row.candidate.statements
    items = statements.items if statements is not None and not statements.error else ()
    baseline, candidate = row.baseline.response, row.candidate.response
    if gate.carries_evidence(row.verdict):
        found = review(context=row.case.context, baseline=baseline, candidate=candidate,
                       evidence=_evidence(row), statements=items)
        answer, diff, context = found.answer, found.diff, found.context
        closest = tuple((claim.number, claim.closest, claim.cited) for claim in found.claims)
    else:
        supporting, _ = cited_spans(items)
        context = mark_context(row.case.context, supporting=supporting, claims=())
        cut_candidate, _ = cut_text(candidate)
        answer = (Piece(cut_candidate),)
        diff = (word_diff(cut_text(baseline)[0], cut_candidate)
                if baseline.strip() and baseline != candidate else None)
        closest = ()
    second = row.candidate.second_opinion
    return PageRow(
        index=index, id=row.id, suite=suite or "", category=row.category,
        verdict=row.verdict.value, blocking=row.blocking,
        kinds=tuple(kind.name for kind in gate.kinds_of(row)),
        movement=(f"{_bucket(row.baseline)} ({row.baseline.groundedness.value or '—'}) → "
                  f"{_bucket(row.candidate)} ({row.candidate.groundedness.value or '—'})"),
        query=row.case.query, context=context,
        baseline=_side(row.baseline), candidate=_side(row.candidate, second_model=second_model
                                                      if second is not None else None),
        answer=answer, diff=diff, identical=baseline == candidate,
        statements=tuple(StatementView(s.text, s.label.value, s.span) for s in items),
        statements_error=(statements.error or "") if statements is not None else "",
        errors=tuple(row.errors),
        notes=tuple(note for note in ((row.review_reason or ""), *(row.evidence.notes if row.evidence
                                                                    else ())) if note),
        labels=tuple(labels), closest=closest,
    )


def page_rows(report: Report, labels: Labels | None = None) -> Iterator[PageRow]:
    """Every row of the run, a suite's rows under its name, one view at a time."""
    labels = labels or {}
    second = report.judge.second_opinion
    parts = ([(part.name, part.report.rows) for part in report.suites] if report.suites
             else [(None, report.rows)])
    index = 0
    for suite, rows in parts:
        for row in rows:
            yield page_row(row, index=index, suite=suite, second_model=second,
                           labels=labels.get((suite, row.id), ()))
            index += 1


def row_total(report: Report) -> int:
    if report.suites:
        return sum(len(part.report.rows) for part in report.suites)
    return len(report.rows)
