"""What report.html shows of each row, and in which order. Pure.

Rows come in the page's order: blocking rows first, then by severity (the
first of `gate.KINDS` a row is in), then in case order. A row in some kind, or
one a person labelled, is shown in full (`page_rows`: the same marks as the
comment's evidence block); every other row is quiet (`quiet_rows`): its id,
category, movement and its query, answers and context, cut to share a fixed
text budget, so 100,000 rows stay a page a browser opens. Every field holds
raw, untrusted text (answers, contexts, reasons, ids); the page writes it as
JSON for its script, which only ever sets it as text. Rows are built one at a
time (both are generators), so a page never holds more than one row's view.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from flipgate.model import Evidence, Report, Row, Score, Side
from flipgate.output.anchors import row_anchor
from flipgate.output.review import Change, Passage, Piece, cited_spans, mark_context, review, word_diff
from flipgate.text.escaping import shorten
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
    index: int           # the case's place in the run (suites one after the other)
    anchor: str          # the row's id on the page (output/anchors.row_anchor)
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
    return side.bucket.value.replace("_", "-") if side.bucket else gate.unscored(side)


def _score(name: str, score: Score | None) -> Reading | None:
    if score is None:
        return None
    if score.set_aside:
        return Reading(name, gate.NOT_JUDGED_OFFLINE, score.reason)
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
        index=index, anchor=row_anchor(suite, row.id), id=row.id, suite=suite or "", category=row.category,
        verdict=row.verdict.value, blocking=row.blocking,
        kinds=tuple(kind.name for kind in gate.kinds_of(row)),
        movement=_movement(row),
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


# What the rows shown without the script may take in all (characters of their text).
UNSCRIPTED_TEXT_BUDGET = 600_000  # with the list of the rest, under 2 MB at 100,000 rows


def row_chars(row: PageRow) -> int:
    """The characters of a full row's text: query, answers, context, statements, claims."""
    return (len(row.query) + len(row.baseline.answer) + sum(len(p.text) for p in row.answer)
            + sum(len(p.text) for p in row.context)
            + sum(len(s.text) + len(s.span or "") for s in row.statements)
            + sum(len(passage or "") for _, passage, _ in row.closest))


@dataclass
class Unscripted:
    """What report.html shows where its script cannot run: every row shown in full (the rows
    the comment tables, and labelled ones), in the page's order, with its evidence while
    `budget` characters last, then the rest by id and verdict only (each still its row's
    anchor, so a `#case-…` link lands on it). Fed one row at a time (`take`)."""

    budget: int = UNSCRIPTED_TEXT_BUDGET
    shown: list[PageRow] = field(default_factory=list)
    listed: list[PageRow] = field(default_factory=list)

    def take(self, row: PageRow) -> None:
        size = row_chars(row)
        if size <= self.budget:
            self.budget -= size
            self.shown.append(row)
        else:  # only what the list shows is kept of it
            self.listed.append(replace(row, query="", context=(), answer=(), diff=None,
                                       statements=(), closest=(),
                                       baseline=SideView("", (), False),
                                       candidate=SideView("", (), False)))


# What the quiet rows' text may take in all (characters), and the most one row gets.
QUIET_TEXT_BUDGET = 12_000_000
QUIET_ROW_CHARS = (140, 4_000)


@dataclass(frozen=True)
class QuietRow:
    """A row nobody needs to read, as the page lists it: its text cut to `chars` in all."""

    index: int
    anchor: str
    id: str
    suite: str
    category: str
    verdict: str
    movement: str
    query: str
    candidate: str
    baseline: str | None   # None: the same answer as the candidate
    context: str
    cut: bool              # some of its text was shortened


def _placed(report: Report) -> list[tuple[int, str | None, Row]]:
    parts = ([(part.name, part.report.rows) for part in report.suites] if report.suites
             else [(None, report.rows)])
    placed, index = [], 0
    for suite, rows in parts:
        for row in rows:
            placed.append((index, suite, row))
            index += 1
    return placed


def _severity(row: Row) -> int:
    """The first kind the row is in (blocking is the first); after every kind if none."""
    return next((at for at, kind in enumerate(gate.KINDS) if kind.holds(row)), len(gate.KINDS))


def _full(row: Row, suite: str | None, labels: Labels) -> bool:
    return _severity(row) < len(gate.KINDS) or bool(labels.get((suite, row.id)))


def page_rows(report: Report, labels: Labels | None = None) -> Iterator[PageRow]:
    """The rows shown in full, blocking first, then by severity, then in case order."""
    labels = labels or {}
    second = report.judge.second_opinion
    full = [one for one in _placed(report) if _full(one[2], one[1], labels)]
    full.sort(key=lambda one: (not one[2].blocking, _severity(one[2]), one[0]))
    for index, suite, row in full:
        yield page_row(row, index=index, suite=suite, second_model=second,
                       labels=labels.get((suite, row.id), ()))


def _cut(text: str, limit: int) -> str:
    return shorten(text, max(limit, 0))


def quiet_rows(report: Report, labels: Labels | None = None, *,
               budget: int = QUIET_TEXT_BUDGET) -> Iterator[QuietRow]:
    """The other rows, in case order, their text cut to share `budget` characters (each row
    within `QUIET_ROW_CHARS`): the query up to a quarter of a row's share, the answers up
    to half, the context the rest."""
    labels = labels or {}
    quiet = [one for one in _placed(report) if not _full(one[2], one[1], labels)]
    low, high = QUIET_ROW_CHARS
    chars = max(low, min(high, budget // max(len(quiet), 1)))
    for index, suite, row in quiet:
        query = _cut(row.case.query, chars // 4)
        candidate, baseline = row.candidate.response, row.baseline.response
        same = candidate == baseline
        answers = chars // 2 if same else chars // 4
        shown = _cut(candidate, answers), None if same else _cut(baseline, answers)
        used = len(query) + len(shown[0]) + len(shown[1] or "")
        context = _cut(row.case.context, chars - used)
        yield QuietRow(
            index=index, anchor=row_anchor(suite, row.id), id=row.id, suite=suite or "",
            category=row.category, verdict=row.verdict.value, movement=_movement(row),
            query=query, candidate=shown[0], baseline=shown[1], context=context,
            cut=(query, shown[0], context) != (row.case.query, candidate, row.case.context)
            or (shown[1] is not None and shown[1] != baseline))


def _movement(row: Row) -> str:
    return (f"{_bucket(row.baseline)} ({row.baseline.groundedness.value or '—'}) → "
            f"{_bucket(row.candidate)} ({row.candidate.groundedness.value or '—'})")


def row_total(report: Report) -> int:
    if report.suites:
        return sum(len(part.report.rows) for part in report.suites)
    return len(report.rows)
