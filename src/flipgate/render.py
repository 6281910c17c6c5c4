"""comment.md and the step summary: the report rendered from Jinja2 templates.

Everything that came from the pull request or from a model (answers, reasons,
ids, categories, diffs, even config values) is untrusted. It reaches the
Markdown only through `cell`/`escape_md` (inline text) or `fence` (diffs), and
the templates run in Jinja2's immutable sandbox with strict undefined names.

GitHub refuses a comment over 65,536 characters, so the comment is rendered
again with less detail until it fits (`Plan` below, most detail first): cells
get shorter, low-priority rows are capped and then omitted, diffs go, and
blocking regressions are the last rows dropped. Whatever is left out is said.
Nothing is ever cut out of a rendered comment, so no row, tag or fence is
left open.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from flipgate.escaping import cell, cell_list, clear_cell_cache, escape_md, fence, number, plural
from flipgate.model import Bucket, E2EReport, Relevance, Report, Row, Score, Side, Verdict

MARKER = "<!-- flipgate -->"
GITHUB_COMMENT_LIMIT = 65_536
STEP_SUMMARY_LIMIT = 1_048_576
TEMPLATE = "comment.md.j2"
TABLES_TEMPLATE = "_tables.md.j2"

# --------------------------------------------------------------------------
# The view: what the template shows, built once from the report
# --------------------------------------------------------------------------

BUCKET_LABELS = {
    Bucket.UNGROUNDED: "ungrounded",
    Bucket.NON_ANSWER: "non-answer",
    Bucket.PARTIAL: "partial",
    Bucket.GROUNDED: "grounded",
}


@dataclass(frozen=True)
class RowView:
    """One row as the comment shows it. String fields hold raw, untrusted text."""

    id: str
    category: str
    before: str          # "grounded (5)"
    after: str           # "ungrounded (2; re-score 1)"
    relevance: str       # "0.91 → 0.42"
    reason: str
    figures: tuple[str, ...]
    statements: tuple[str, ...]
    answer: str
    errors: tuple[str, ...]
    questions: tuple[str, ...]
    truncated: str       # "" or which side the generator cut off at max tokens


def _reading(side: Side, *, with_rescore: bool = False) -> str:
    score = side.groundedness
    if not score.ok:
        return "no score"
    bucket = BUCKET_LABELS.get(side.bucket, str(side.bucket)) if side.bucket else "?"
    detail = f"{score.value}"
    if with_rescore and side.rescore is not None:
        detail += f"; re-score {side.rescore.value}" if side.rescore.ok else "; re-score failed"
    return f"{bucket} ({detail})"


def _relevance_text(relevance: Relevance | None) -> str:
    if relevance is None or relevance.score is None:
        return "—"
    text = f"{relevance.score:.2f}"
    return f"{text} (noncommittal)" if relevance.noncommittal else text


def _reason(side: Side) -> str:
    reasons: list[Score] = [side.groundedness] + ([side.rescore] if side.rescore else [])
    return next((score.reason for score in reasons if score.reason), "")


def _truncated(row: Row) -> str:
    cut = [name for name, side in (("candidate", row.candidate), ("baseline", row.baseline))
           if side.finish_reason == "length"]
    return " and ".join(cut)


def row_view(row: Row) -> RowView:
    evidence = row.evidence
    candidate_relevance = row.candidate.relevance
    return RowView(
        id=row.id,
        category=row.category,
        before=_reading(row.baseline),
        after=_reading(row.candidate, with_rescore=True),
        relevance=(f"{_relevance_text(row.baseline.relevance)} → "
                   f"{_relevance_text(candidate_relevance)}"),
        reason=_reason(row.candidate),
        figures=tuple(evidence.unsupported_figures) if evidence else (),
        statements=tuple(evidence.unsupported_statements) if evidence else (),
        answer=row.candidate.response,
        errors=tuple(row.errors),
        questions=tuple(candidate_relevance.questions) if candidate_relevance else (),
        truncated=_truncated(row),
    )


# The tables, in the order the comment shows them, with what selects a row.
_SECTION_RULES: dict[str, Callable[[Row], bool]] = {
    "blocking": lambda row: row.verdict is Verdict.REGRESSION and row.blocking,
    "review": lambda row: row.verdict is Verdict.REGRESSION and not row.blocking,
    "non_answers": lambda row: row.verdict is Verdict.NEW_NON_ANSWER,
    "unstable": lambda row: row.verdict is Verdict.UNSTABLE,
    "relevance": lambda row: row.relevance_drop,
    "errors": lambda row: row.verdict is Verdict.ERROR or bool(row.errors),
    "moved": lambda row: row.verdict is Verdict.MOVED,
    "still_ungrounded": lambda row: row.verdict is Verdict.STILL_UNGROUNDED,
}
# What goes first when the comment is too long: the reverse of this order.
KEEP_PRIORITY = ("blocking", "errors", "review", "non_answers", "unstable", "relevance",
                 "moved", "still_ungrounded")


@dataclass(frozen=True)
class ChangeView:
    """issue 3's change description, made total: every key may be missing."""

    generator: str | None
    files: tuple[str, ...]
    model: tuple[str, str] | None
    parameters: tuple[tuple[str, str, str], ...]
    template_diff: str | None
    config_diff: str | None
    cases_diff: str | None
    config_changed: bool
    cases_changed: bool


def _display(value: object) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _text_or_none(value: object) -> str | None:
    if value is None or value is False:
        return None
    text = value if isinstance(value, str) else _display(value)
    return text if text.strip() else None


def _parameters(raw: object) -> tuple[tuple[str, str, str], ...]:
    items: list[tuple[object, object, object]] = []
    if isinstance(raw, Mapping):
        for name, change in raw.items():
            if isinstance(change, Mapping):
                items.append((name, change.get("old"), change.get("new")))
    elif isinstance(raw, Sequence) and not isinstance(raw, str):
        for entry in raw:
            if isinstance(entry, Mapping):
                items.append((entry.get("name", "?"), entry.get("old"), entry.get("new")))
    return tuple((_display(name), _display(old), _display(new)) for name, old, new in items)


def change_view(change: Mapping[str, Any] | None) -> ChangeView | None:
    if not isinstance(change, Mapping):
        return None
    files = change.get("files") or ()
    if isinstance(files, str):
        files = (files,)
    model = change.get("model")
    model_pair: tuple[str, str] | None = None
    if isinstance(model, Mapping) and ("old" in model or "new" in model):
        model_pair = (_display(model.get("old")), _display(model.get("new")))
    elif model is not None:
        model_pair = (_display(model), _display(model))
    config_diff = _text_or_none(change.get("config_diff"))
    cases_diff = _text_or_none(change.get("cases_diff"))
    return ChangeView(
        generator=_text_or_none(change.get("generator")),
        files=tuple(_display(name) for name in files) if isinstance(files, Iterable) else (),
        model=model_pair,
        parameters=_parameters(change.get("parameters")),
        template_diff=_text_or_none(change.get("template_diff")),
        config_diff=config_diff,
        cases_diff=cases_diff,
        config_changed=config_diff is not None or bool(change.get("config_changed")),
        cases_changed=cases_diff is not None or bool(change.get("cases_changed")),
    )


def usage_table(
        usage: Mapping[str, Any] | None) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
    """Usage as (columns, rows): per purpose when nested, a single row when flat."""
    if not isinstance(usage, Mapping) or not usage:
        return (), ()
    nested = {str(key): value for key, value in usage.items() if isinstance(value, Mapping)}
    if nested:
        columns: list[Any] = []
        for counters in nested.values():
            columns.extend(key for key in counters if key not in columns)
        columns = columns[:8]
        rows = tuple((purpose, *(counters.get(name, "") for name in columns))
                     for purpose, counters in list(nested.items())[:12])
        return ("", *map(_label, columns)), rows
    flat = list(usage.items())[:8]
    return tuple(_label(key) for key, _ in flat), (tuple(value for _, value in flat),)


def _label(key: object) -> str:
    return str(key).replace("_", " ")


@dataclass(frozen=True)
class View:
    report: Report
    sections: Mapping[str, tuple[RowView, ...]]
    change: ChangeView | None


def build_view(report: Report) -> View:
    sections: dict[str, list[RowView]] = {key: [] for key in _SECTION_RULES}
    for row in report.rows:
        wanted = [key for key, rule in _SECTION_RULES.items() if rule(row)]
        if wanted:
            shown = row_view(row)
            for key in wanted:
                sections[key].append(shown)
    return View(report=report, sections={key: tuple(rows) for key, rows in sections.items()},
                change=change_view(report.change))


# --------------------------------------------------------------------------
# Plans: how much detail one rendering shows
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Cells:
    """Character limits for the cells of one table (before escaping)."""

    id: int = 80
    category: int = 40
    reason: int = 300
    answer: int = 300
    item: int = 120        # each unsupported figure/statement, error, question
    items: int = 5         # how many of them per cell


FULL = Cells()
MEDIUM = Cells(id=60, reason=200, answer=160, item=80, items=4)
SHORT = Cells(id=50, category=30, reason=120, answer=100, item=60, items=3)
TINY = Cells(id=40, category=24, reason=80, answer=60, item=40, items=2)


@dataclass(frozen=True)
class Plan:
    cells: Cells = FULL              # every table but the blocking one
    blocking_cells: Cells = FULL
    # Rows shown per section; None shows all of them. Blocking is None until the very end.
    caps: Mapping[str, int | None] = field(default_factory=dict)
    diff_limit: int | None = 20_000  # characters of each diff; None leaves diffs out
    notes: int = 20
    note_limit: int = 400
    files: int = 30
    parameters: int = 40
    minimal: bool = False            # heading and counts only

    def cap(self, section: str) -> int | None:
        return self.caps.get(section)


def _caps(*, blocking: int | None = None, errors: int | None = None, review: int | None = None,
          lesser: int | None = None, collapsed: int | None = None) -> dict[str, int | None]:
    return {"blocking": blocking, "errors": errors, "review": review, "non_answers": lesser,
            "unstable": lesser, "relevance": lesser, "moved": collapsed,
            "still_ungrounded": collapsed}


LADDER: tuple[Plan, ...] = (
    Plan(),
    Plan(cells=MEDIUM, diff_limit=8_000),
    Plan(cells=MEDIUM, caps=_caps(errors=500, review=500, lesser=500, collapsed=500),
         diff_limit=4_000),
    Plan(cells=MEDIUM, caps=_caps(errors=200, review=200, lesser=100, collapsed=50),
         diff_limit=4_000),
    Plan(cells=SHORT, caps=_caps(errors=50, review=50, lesser=30, collapsed=20),
         diff_limit=2_000, notes=10, note_limit=200),
    Plan(cells=SHORT, caps=_caps(errors=25, review=25, lesser=10, collapsed=0),
         diff_limit=None, notes=10, note_limit=200, files=10, parameters=15),
    Plan(cells=TINY, blocking_cells=MEDIUM, caps=_caps(errors=10, review=10, lesser=3, collapsed=0),
         diff_limit=None, notes=5, note_limit=150, files=5, parameters=10),
    Plan(cells=TINY, blocking_cells=SHORT, caps=_caps(errors=0, review=0, lesser=0, collapsed=0),
         diff_limit=None, notes=5, note_limit=150, files=5, parameters=10),
    Plan(cells=TINY, blocking_cells=TINY, caps=_caps(errors=0, review=0, lesser=0, collapsed=0),
         diff_limit=None, notes=5, note_limit=150, files=5, parameters=10),
)
MINIMAL = replace(LADDER[-1], caps=_caps(blocking=0, errors=0, review=0, lesser=0, collapsed=0),
                  minimal=True)


@dataclass(frozen=True)
class Section:
    key: str
    total: int
    rows: tuple[RowView, ...]
    cells: Cells

    @property
    def left_out(self) -> int:
        return self.total - len(self.rows)


def _sections(view: View, plan: Plan) -> dict[str, Section]:
    out: dict[str, Section] = {}
    for key, rows in view.sections.items():
        cap = plan.cap(key)
        shown = rows if cap is None else rows[:cap]
        cells = plan.blocking_cells if key == "blocking" else plan.cells
        out[key] = Section(key=key, total=len(rows), rows=shown, cells=cells)
    return out


@dataclass(frozen=True)
class E2ERowView:
    id: str
    category: str
    frozen: str
    live: str
    diff: str


@dataclass(frozen=True)
class E2EView:
    """The end-to-end section: drift rows (capped like the lesser tables) and their diffs."""

    retrieval: str
    date: str
    rows: tuple[E2ERowView, ...]
    drift_total: int
    changed_contexts: int
    retrieval_errors: int
    cases: int
    stopped: str | None
    diff_limit: int | None

    @property
    def left_out(self) -> int:
        return self.drift_total - len(self.rows)


def e2e_view(e2e: E2EReport | None, plan: Plan) -> E2EView | None:
    if e2e is None:
        return None
    drift = e2e.drift
    cap = plan.cap("unstable")
    shown = drift if cap is None else drift[:cap]
    return E2EView(
        retrieval=e2e.retrieval, date=e2e.date,
        rows=tuple(E2ERowView(id=row.id, category=row.category, frozen=row.frozen_verdict.value,
                              live=row.e2e_verdict.value if row.e2e_verdict else "—",
                              diff=row.context_diff) for row in shown),
        drift_total=len(drift), changed_contexts=e2e.changed_contexts,
        retrieval_errors=e2e.retrieval_errors, cases=len(e2e.rows), stopped=e2e.stopped,
        diff_limit=None if plan.diff_limit is None else min(plan.diff_limit, 4_000))


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------

def templates_dir() -> Path:
    """The wheel ships templates inside the package; a checkout keeps them at the repo root."""
    import flipgate

    candidates = (Path(flipgate.__file__).resolve().parent / "templates",
                  Path(__file__).resolve().parents[2] / "templates")
    for candidate in candidates:
        if (candidate / TEMPLATE).is_file():
            return candidate
    raise FileNotFoundError(f"{TEMPLATE} not found in " + " or ".join(map(str, candidates)))


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        loader=FileSystemLoader(str(templates_dir())),
        autoescape=False,  # Markdown, not HTML: the filters below do the escaping
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(cell=cell, cell_list=cell_list, escape_md=escape_md, fence=fence,
                       plural=plural, number=number)
    return env


def _size(text: str) -> int:
    # Counted in UTF-8 bytes: never fewer than characters, so GitHub's
    # 65,536-character comment limit and the 1 MiB step-summary limit both hold.
    return len(text.encode("utf-8"))


# A section's Markdown depends only on its key, its cell limits and how many
# rows it shows: plans that agree on those reuse it instead of rendering again.
_BlockKey = tuple[str, Cells, int]


def _section_blocks(view: View, plan: Plan, blocks: dict[_BlockKey, str],
                    max_chars: int) -> list[str] | None:
    """Each section's Markdown in comment order, or None once they alone exceed `max_chars`.

    Built most important first, so a plan whose blocking table is already
    too long is given up before the rest is rendered.
    """
    tables = environment().get_template(TABLES_TEMPLATE).module
    sections = _sections(view, plan)
    used = 0
    for key in KEEP_PRIORITY:
        section = sections[key]
        block_key = (key, section.cells, len(section.rows))
        if block_key not in blocks:
            blocks[block_key] = str(tables.section(section, view.report.relevance_threshold))
        used += _size(blocks[block_key])
        if used > max_chars:
            return None
    return [blocks[(key, section.cells, len(section.rows))] for key, section in sections.items()]


def _render(view: View, plan: Plan, blocks: dict[_BlockKey, str], max_chars: int) -> str | None:
    """The comment under `plan`, or None when it is certain not to fit in `max_chars`."""
    report = view.report
    section_blocks = [] if plan.minimal else _section_blocks(view, plan, blocks, max_chars)
    if section_blocks is None:
        return None
    columns, usage_rows = usage_table(report.usage)
    text = environment().get_template(TEMPLATE).render(
        marker=MARKER,
        conclusion=report.conclusion.value,
        judge=report.judge,
        head_sha=report.head_sha,
        counts=report.counts,
        threshold=report.relevance_threshold,
        notes=tuple(report.notes),
        change=view.change,
        section_blocks=section_blocks,
        fluency=report.fluency,
        usage_columns=columns,
        usage_rows=usage_rows,
        cache=report.cache if isinstance(report.cache, Mapping) else None,
        e2e=e2e_view(report.e2e, plan),
        plan=plan,
    )
    return text.rstrip("\n") + "\n"


# Every table row has at least this much besides its id and answer cells.
_ROW_SKELETON = 20


def _cannot_fit(view: View, plan: Plan, max_chars: int) -> bool:
    """A lower bound on the size of the rows a plan shows exceeds the budget.

    Rendering in the sandbox is the slow part; this skips plans that show far
    too many rows without rendering them (cells are memoised, so it is cheap).
    """
    floor = 0
    for section in _sections(view, plan).values():
        for row in section.rows:
            floor += (_ROW_SKELETON + len(cell(row.id, section.cells.id))
                      + len(cell(row.answer, section.cells.answer)))
            if floor > max_chars:
                return True
    return False


def render_within(report: Report, max_chars: int) -> str:
    """The most detailed rendering of `report` whose size stays within `max_chars`."""
    try:
        return _render_within(build_view(report), max_chars)
    finally:
        clear_cell_cache()


def _render_within(view: View, max_chars: int) -> str:
    blocks: dict[_BlockKey, str] = {}
    for plan in LADDER:
        if _cannot_fit(view, plan, max_chars):
            continue
        text = _render(view, plan, blocks, max_chars)
        if text is not None and _size(text) <= max_chars:
            return text
    best = _most_blocking_rows(view, max_chars, blocks)
    if best is not None:
        return best
    text = _render(view, MINIMAL, blocks, max_chars)
    if text is None or _size(text) > max_chars:
        raise ValueError(f"max_chars={max_chars:,} is too small for even the shortest comment")
    return text


def _most_blocking_rows(view: View, max_chars: int, blocks: dict[_BlockKey, str]) -> str | None:
    """Only blocking rows are left: the rendering with as many of them as fit.

    The size grows about linearly with the rows shown, so each guess
    interpolates between the largest count known to fit and the smallest
    known not to; every other step bisects, so it never stalls.
    """
    last = LADDER[-1]

    def attempt(shown: int) -> tuple[int, str]:
        text = _render(view, replace(last, caps={**last.caps, "blocking": shown}), blocks,
                       max_chars)
        return (max_chars + 1, "") if text is None else (_size(text), text)

    fits_count, (fits_size, fits_text) = 0, attempt(0)
    if fits_size > max_chars:
        return None
    too_many = len(view.sections["blocking"])  # LADDER[-1] showed them all, and failed
    too_many_size: int | None = None
    for step in itertools.count():
        if too_many - fits_count <= 1:
            break
        guess = (fits_count + too_many) // 2
        if too_many_size is not None and step % 2 == 0:
            per_row = (too_many_size - fits_size) / (too_many - fits_count)
            guess = fits_count + int((max_chars - fits_size) / max(per_row, 1.0))
            guess = min(max(guess, fits_count + 1), too_many - 1)
        size, text = attempt(guess)
        if size <= max_chars:
            fits_count, fits_size, fits_text = guess, size, text
        else:
            too_many, too_many_size = guess, size
    return fits_text


def render_comment(report: Report, *, max_chars: int = GITHUB_COMMENT_LIMIT) -> str:
    """comment.md: what GitHub gets, within its size limit."""
    return render_within(report, max_chars)


def render_summary(report: Report, *, max_chars: int = STEP_SUMMARY_LIMIT) -> str:
    """The same Markdown for $GITHUB_STEP_SUMMARY, as complete as its 1 MiB allows."""
    return render_within(report, max_chars)
