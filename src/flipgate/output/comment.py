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
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from flipgate.config.schema import GITHUB_COMMENT_LIMIT, STEP_SUMMARY_LIMIT
from flipgate.model import (
    Bucket,
    Change,
    Counts,
    E2EReport,
    Evidence,
    Relevance,
    Report,
    Row,
    Score,
    Side,
    Statements,
)
from flipgate.output.links import NO_LINKS, Links
from flipgate.output.page import Labels
from flipgate.output.review import Review, review
from flipgate.output.review_md import context_legend, context_md, diff_legend, marked_answer
from flipgate.output.review_md import diff as review_diff
from flipgate.text.escaping import (
    cell,
    cell_list,
    clear_cell_cache,
    escape_md,
    fence,
    link,
    number,
    plural,
)
from flipgate.verdict import gate
from flipgate.verdict.gate import Kind, Tier, carries_evidence

MARKER = "<!-- flipgate -->"
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
    after: str           # "ungrounded (2; re-score 1; second judge 2)"
    relevance: str       # "0.91 → 0.42"
    reason: str
    figures: tuple[str, ...]
    statements: tuple[str, ...]   # unsupported statements: the judge's, else the lexical check's
    evidence_notes: tuple[str, ...]  # e.g. "evidence cut at 20,000 characters"
    answer: str
    errors: tuple[str, ...]
    questions: tuple[str, ...]
    truncated: str       # "" or which side the generator cut off at max tokens
    second_reason: str = ""       # "second judge (judge-2): ..." when a second opinion was asked
    confirmed: str = ""           # "confirmed by the second judge (judge-2)" for a regression
    review_reason: str = ""       # why a regression in a blocking category does not block
    supported: str = ""           # "1 of 3 statements supported"
    verdict: str = ""
    manipulation: tuple[str, ...] = ()
    query: str = ""
    baseline_answer: str = ""
    review: Review | None = None   # the evidence a reviewer checks; flipped rows only
    # (claim numbers, the context passage closest to them or None: nothing mentions them,
    # whether that passage is the judge's own span that contradicts them)
    closest: tuple[tuple[tuple[int, ...], str | None, bool], ...] = ()
    unsupported: str = ""  # the table's short cell: the figures, else how many statements
    claim: str = ""        # the first claim the context does not support, as written
    more_claims: int = 0   # how many more there are
    labels: tuple[str, ...] = ()  # people's labels on it: "labelled grounded by @alice"
    url: str = ""          # its row of report.html, when the page has a URL


def _reading(side: Side, *, with_rescore: bool = False) -> str:
    score = side.groundedness
    if not score.ok:
        return gate.unscored(score)
    bucket = BUCKET_LABELS.get(side.bucket, str(side.bucket)) if side.bucket else "?"
    detail = f"{score.value}"
    if with_rescore and side.rescore is not None:
        detail += f"; re-score {side.rescore.value}" if side.rescore.ok else "; re-score failed"
    if with_rescore and side.second_opinion is not None:
        second = side.second_opinion
        if not second.ok:
            detail += "; second judge failed"
        elif second.label is not None:
            detail += f"; second judge: {'grounded' if second.label else 'not grounded'}"
        else:
            detail += f"; second judge {second.value}"
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


def confirmation(confirmed_by: str | None, second_model: str | None) -> str:
    """Which instrument confirmed a regression, in words."""
    second = f"the second judge ({second_model})" if second_model else "the second judge"
    return {"same_judge": "confirmed by the same judge's re-score",
            "second_opinion": f"confirmed by {second}",
            "both": f"confirmed by the same judge's re-score and {second}"}.get(confirmed_by or "", "")


# The offline judge's reasons name the check that decided (judges/offline.py), first match wins.
_LEXICAL_CHECKS = (
    ("negation check", "the negation check (a claim the context negates)"),
    ("figure check", "the figure check (a figure the context gives otherwise)"),
    ("entity check", "the name check (a name the context gives otherwise)"),
    ("figures not in the context", "the figure check (a figure the context lacks)"),
    ("statement not supported", "the statement check (words the context lacks)"),
    ("unrelated", "the overlap check (the answer is unrelated to the context)"),
)


def decided_by(reason: str) -> str:
    """What decided a re-read regression (the offline judge's), in words: never "confirmed",
    since its re-score only repeats the same reading."""
    check = next((words for key, words in _LEXICAL_CHECKS if key in reason),
                 "the lexical checks")
    return f"decided by {check} alone; the re-score repeats it"


def statements_ratio(statements: Statements | None) -> str:
    """"1 of 3 statements supported": the judge's denominator, shown with its numerator."""
    if statements is None or statements.error or not statements.items:
        return ""
    if not statements.total:  # every statement was "not a claim": no ratio to speak of
        return "no checkable claim"
    return f"{statements.supported} of {plural(statements.total, 'statement')} supported"


def _closest_groups(found: Review) -> tuple[tuple[tuple[int, ...], str | None, bool], ...]:
    """Claims that share their closest passage are listed together, so it is shown once."""
    groups: dict[tuple[str | None, bool], list[int]] = {}
    for claim in found.claims:
        groups.setdefault((claim.closest, claim.cited), []).append(claim.number)
    return tuple((tuple(numbers), sentence, cited)
                 for (sentence, cited), numbers in groups.items())


def _first_claim(found: Review | None, statements: tuple[str, ...],
                 figures: tuple[str, ...]) -> str:
    """The first claim the context lacks, as one short line: its figures first (what is
    wrong is most often a figure), then the statement they stand in."""
    claim = next((piece.text for piece in found.answer if piece.claim), None) if found else None
    if claim is None:
        claim = next(iter(statements + figures), "")
    inside = [figure for figure in figures if figure in claim][:3]
    return f"{', '.join(inside)} — {claim}" if inside and claim not in inside else claim


def _unsupported(figures: tuple[str, ...], statements: tuple[str, ...]) -> str:
    if figures:
        return ", ".join(figures)
    return plural(len(statements), "statement") if statements else ""


def row_view(row: Row, *, second_model: str | None = None, with_reason: bool = True,
             reread: bool = False) -> RowView:
    """`with_reason=False` (the lexical judge) leaves the judge's reason out of a reviewed
    row's evidence: it only restates the marked claims, and a reviewer should read each
    thing once. Other rows keep it: there it is the only explanation. `reread`: the run's
    flips were re-read, not confirmed (gate.rereads), so a regression says what decided it."""
    evidence = row.evidence
    candidate = row.candidate
    candidate_relevance = candidate.relevance
    judged = candidate.statements if candidate.statements and not candidate.statements.error else None
    if judged is not None:
        unsupported = tuple(s.text for s in judged.unsupported)
    else:
        unsupported = tuple(evidence.unsupported_statements) if evidence else ()
    figures = tuple(evidence.unsupported_figures) if evidence else ()
    # The claims marked for a reviewer: the judge's unsupported statements when it
    # listed them, else the lexical check's, and the figures the context lacks.
    found = (review(context=row.case.context, baseline=row.baseline.response,
                    candidate=candidate.response,
                    evidence=Evidence(unsupported_figures=figures,
                                      unsupported_statements=unsupported),
                    statements=judged.items if judged is not None else ())
             if carries_evidence(row.verdict) else None)
    second = candidate.second_opinion
    second_reason = ""
    if second is not None and second.ok:
        name = f"second judge ({second_model})" if second_model else "second judge"
        second_reason = f"{name}: {second.reason}" if second.reason else ""
    return RowView(
        id=row.id,
        category=row.category,
        before=_reading(row.baseline),
        after=_reading(candidate, with_rescore=True),
        relevance=(f"{_relevance_text(row.baseline.relevance)} → "
                   f"{_relevance_text(candidate_relevance)}"),
        reason=_reason(candidate) if with_reason or found is None else "",
        figures=tuple(evidence.unsupported_figures) if evidence else (),
        statements=unsupported,
        evidence_notes=tuple(evidence.notes) if evidence else (),
        answer=candidate.response,
        errors=tuple(row.errors),
        questions=tuple(candidate_relevance.questions) if candidate_relevance else (),
        truncated=_truncated(row),
        second_reason=second_reason,
        confirmed=_confirmed(row, second_model, reread=reread),
        review_reason=row.review_reason or "",
        supported=statements_ratio(judged),
        verdict=row.verdict.value.replace("_", " "),
        manipulation=tuple(candidate.manipulation or row.baseline.manipulation),
        query=row.case.query,
        baseline_answer=row.baseline.response,
        review=found,
        closest=_closest_groups(found) if found else (),
        unsupported=_unsupported(figures, unsupported),
        claim=_first_claim(found, unsupported, figures),
        more_claims=max(len(found.claims) - 1, 0) if found else 0,
    )


def _confirmed(row: Row, second_model: str | None, *, reread: bool) -> str:
    kind = gate.confirmation_kind(row.confirmed_by, deterministic=reread)
    if kind == gate.REREAD:
        return decided_by(row.candidate.groundedness.reason)
    # A run confirms every flip the same way; the rows name it when a second judge did.
    return confirmation(kind, second_model) if kind not in (None, gate.SAME_JUDGE) else ""


@dataclass(frozen=True)
class ChangeView:
    """The change description with every value as the comment shows it."""

    generator: str
    files: tuple[str, ...]
    model: tuple[str, str] | None   # None: the application's own code, whose model is unseen
    parameters: tuple[tuple[str, str, str], ...]
    template_diff: str | None
    config_diff: str | None
    cases_diff: str | None


def _display(value: object) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _diff(text: str | None) -> str | None:
    return text if text and text.strip() else None


def change_view(change: Change | None) -> ChangeView | None:
    if change is None:
        return None
    return ChangeView(
        generator=change.generator,
        files=change.files,
        model=((_display(change.model[0]), _display(change.model[1]))
               if change.model[1] is not None else None),
        parameters=tuple((p.name, _display(p.old), _display(p.new)) for p in change.parameters),
        template_diff=_diff(change.template_diff),
        config_diff=_diff(change.config_diff),
        cases_diff=_diff(change.cases_diff),
    )


def usage_table(
        usage: Mapping[str, Any] | None) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
    """Usage as (columns, rows): per purpose when nested, a single row when flat."""
    if not isinstance(usage, Mapping) or not usage:
        return (), ()
    nested = {str(key): value for key, value in usage.items() if isinstance(value, Mapping)
              and any(count for count in value.values())}  # a purpose that sent nothing: no row
    if nested:
        columns: list[Any] = []
        for counters in nested.values():
            columns.extend(key for key in counters if key not in columns)
        columns = columns[:8]
        rows = tuple((purpose, *(counters.get(name, "") for name in columns))
                     for purpose, counters in list(nested.items())[:12])
        return ("", *map(_label, columns)), rows
    if any(isinstance(value, Mapping) for value in usage.values()):
        return (), ()
    flat = list(usage.items())[:8]
    return tuple(_label(key) for key, _ in flat), (tuple(value for _, value in flat),)


def _label(key: object) -> str:
    return str(key).replace("_", " ")


def counts_sentence(counts: Counts, *, scored: int | None = None) -> str:
    """The counts as one sentence that fits any width: "**15 cases:** 2 blocking
    regressions, 1 to review, …", zeros left out. `scored`: rows the report holds
    (a run that stopped early holds none)."""
    shown = [kind.status.of(counts[kind.count_field]) for kind in gate.KINDS
             if counts[kind.count_field]]
    if shown:
        rest = ", ".join(shown)
    elif scored == 0 and counts.cases:
        rest = "none was scored"
    else:
        rest = "no row changed bucket"
    return f"**{plural(counts.cases, 'case')}:** {rest}."


def where_line(links: Links) -> str:
    """The comment's line saying where every row is, linked; "" when nothing has a URL."""
    page = link("report.html", links.page)
    if page == "report.html":
        return ""
    run = link("this run", links.run)
    where = "" if run == "this run" else (
        f" (also in the flipgate-report artifact of {run})" if links.report
        else f", in the flipgate-report artifact of {run}")
    return ("📄 Every row, with its query, context, answers and the judge's output, is in "
            f"{page}{where}.")


@dataclass(frozen=True)
class View:
    report: Report
    sections: Mapping[str, tuple[RowView, ...]]
    change: ChangeView | None
    suite: str | None = None  # one suite's part of a several-suite comment
    links: Links = NO_LINKS

    @property
    def page(self) -> str:
        """"report.html" as the comment says it: linked to the page, else the run's artifacts."""
        return link("report.html", self.links.page)


def build_view(report: Report, suite: str | None = None, labels: Labels | None = None,
               links: Links = NO_LINKS) -> View:
    sections: dict[str, list[RowView]] = {kind.name: [] for kind in gate.KINDS}
    for row in report.rows:
        kinds = gate.kinds_of(row)
        if kinds:
            shown = row_view(row, second_model=report.judge.second_opinion,
                             with_reason=not report.judge.lexical,
                             reread=gate.rereads(report.judge))
            given = (labels or {}).get((suite, row.id))
            if given:
                shown = replace(shown, labels=tuple(given))
            if (url := links.row(suite, row.id)) is not None:
                shown = replace(shown, url=url)
            for kind in kinds:
                sections[kind.name].append(shown)
    return View(report=report, sections={key: tuple(rows) for key, rows in sections.items()},
                change=change_view(report.change), suite=suite, links=links)


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
    detail: int = 1_200    # each text in a row's evidence block; 0 leaves the blocks out
    context: int = 6_000   # the whole context in a row's evidence block; 0 leaves it out
    # With no evidence block, a flipped row's line shows its query, its claim and the
    # passage closest to it (the answer cell's and the item's limits) instead of its answer.
    compact: bool = False


FULL = Cells()
MEDIUM = Cells(id=60, reason=200, answer=160, item=80, items=4, detail=600, context=2_500)
SHORT = Cells(id=50, category=30, reason=120, answer=100, item=60, items=3, detail=300,
              context=1_000)
TINY = Cells(id=40, category=24, reason=80, answer=60, item=40, items=2, detail=0, context=0)
BRIEF = replace(SHORT, detail=0, context=0)  # SHORT without the evidence blocks
# A blocking row's last forms: its query, its claim and the closest passage on one line.
COMPACT = Cells(id=40, category=24, reason=0, answer=70, item=90, items=1, detail=0, context=0,
                compact=True)
COMPACT_SMALL = Cells(id=32, category=16, reason=0, answer=40, item=50, items=1, detail=0,
                      context=0, compact=True)
COMPACT_TINY = Cells(id=32, category=12, reason=0, answer=32, item=40, items=1, detail=0,
                     context=0, compact=True)


@dataclass(frozen=True)
class Plan:
    cells: Cells = FULL              # every table but the blocking one
    blocking_cells: Cells = FULL
    # Rows shown per section, by its kind's tier; None shows all of them.
    # Blocking is None until the very end.
    caps: Mapping[Tier, int | None] = field(default_factory=dict)
    diff_limit: int | None = 20_000  # characters of each diff; None leaves diffs out
    notes: int = 20
    note_limit: int = 400
    files: int = 30
    parameters: int = 40
    minimal: bool = False            # heading and counts only

    def cap(self, kind: Kind) -> int | None:
        return self.caps.get(kind.tier)


def _caps(*, blocking: int | None = None, must_read: int | None = None,
          worth_reading: int | None = None, skim: int | None = None) -> dict[Tier, int | None]:
    return {Tier.BLOCKING: blocking, Tier.MUST_READ: must_read,
            Tier.WORTH_READING: worth_reading, Tier.SKIM: skim}


LADDER: tuple[Plan, ...] = (
    Plan(),
    Plan(cells=MEDIUM, diff_limit=8_000),
    Plan(cells=MEDIUM, caps=_caps(must_read=500, worth_reading=500, skim=500),
         diff_limit=4_000),
    Plan(cells=MEDIUM, caps=_caps(must_read=200, worth_reading=100, skim=50),
         diff_limit=4_000),
    Plan(cells=SHORT, caps=_caps(must_read=50, worth_reading=30, skim=20),
         diff_limit=2_000, notes=10, note_limit=200),
    # The evidence blocks are the largest part of a row: below the blocking ones they
    # go before any more rows do (a row keeps its answer in its table line instead).
    Plan(cells=BRIEF, blocking_cells=MEDIUM, caps=_caps(must_read=50, worth_reading=30, skim=20),
         diff_limit=2_000, notes=10, note_limit=200),
    Plan(cells=BRIEF, blocking_cells=MEDIUM, caps=_caps(must_read=25, worth_reading=10, skim=0),
         diff_limit=None, notes=10, note_limit=200, files=10, parameters=15),
    Plan(cells=TINY, blocking_cells=MEDIUM, caps=_caps(must_read=10, worth_reading=3, skim=0),
         diff_limit=None, notes=5, note_limit=150, files=5, parameters=10),
    Plan(cells=TINY, blocking_cells=SHORT, caps=_caps(must_read=0, worth_reading=0, skim=0),
         diff_limit=None, notes=5, note_limit=150, files=5, parameters=10),
    # Every other table is gone: the blocking rows' whole context goes next, then their
    # evidence blocks, and each keeps its query, claim and closest passage on its line.
    Plan(cells=TINY, blocking_cells=replace(SHORT, context=0),
         caps=_caps(must_read=0, worth_reading=0, skim=0),
         diff_limit=None, notes=5, note_limit=150, files=5, parameters=10),
    Plan(cells=TINY, blocking_cells=COMPACT, caps=_caps(must_read=0, worth_reading=0, skim=0),
         diff_limit=None, notes=5, note_limit=150, files=5, parameters=10),
    Plan(cells=TINY, blocking_cells=COMPACT_SMALL,
         caps=_caps(must_read=0, worth_reading=0, skim=0),
         diff_limit=None, notes=5, note_limit=150, files=5, parameters=10),
    Plan(cells=TINY, blocking_cells=COMPACT_TINY,
         caps=_caps(must_read=0, worth_reading=0, skim=0),
         diff_limit=None, notes=5, note_limit=150, files=5, parameters=10),
)
MINIMAL = replace(LADDER[-1], caps=_caps(blocking=0, must_read=0, worth_reading=0, skim=0),
                  minimal=True)


@dataclass(frozen=True)
class Section:
    kind: Kind
    total: int
    rows: tuple[RowView, ...]
    cells: Cells
    # The ids of the rows left out, when they are named (blocking rows are).
    left_out_ids: tuple[str, ...] = ()
    about: str = ""  # the sentence under its heading (gate.kind_about)

    @property
    def left_out(self) -> int:
        return self.total - len(self.rows)


def _sections(view: View, plan: Plan) -> list[Section]:
    """The sections in the kinds' order, most important first."""
    out = []
    reread = gate.rereads(view.report.judge)
    about = {kind.name: gate.kind_about(kind, threshold=view.report.relevance_threshold,
                                        reread=reread) for kind in gate.KINDS}
    for kind in gate.KINDS:
        rows = view.sections[kind.name]
        cap = plan.cap(kind)
        shown = rows if cap is None else rows[:cap]
        blocking = kind.tier is Tier.BLOCKING
        cells = plan.blocking_cells if blocking else plan.cells
        named = tuple(row.id for row in rows[len(shown):]) if blocking else ()
        out.append(Section(kind=kind, total=len(rows), rows=shown, cells=cells,
                           left_out_ids=named, about=about[kind.name]))
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
    cap = plan.caps.get(Tier.WORTH_READING)   # drift rows are worth reading, never blocking
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
    """The comment's templates: inside the package, installed or editable alike
    (the repository's top-level `templates/` is a link to this folder)."""
    return Path(__file__).resolve().parent / "templates"


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
                       plural=plural, number=number, marked_answer=marked_answer,
                       review_diff=review_diff, context_md=context_md, link=link,
                       diff_legend=diff_legend, context_legend=context_legend)
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
    tables: Any = environment().get_template(TABLES_TEMPLATE).make_module({"page": view.page})
    out = []
    used = 0
    for section in _sections(view, plan):
        block_key = (section.kind.name, section.cells, len(section.rows))
        if block_key not in blocks:
            blocks[block_key] = str(tables.section(section, view.report.relevance_threshold))
        out.append(blocks[block_key])
        used += _size(blocks[block_key])
        if used > max_chars:
            return None
    return out


def _render(view: View, plan: Plan, blocks: dict[_BlockKey, str], max_chars: int) -> str | None:
    """The comment under `plan`, or None when it is certain not to fit in `max_chars`."""
    report = view.report
    section_blocks = [] if plan.minimal else _section_blocks(view, plan, blocks, max_chars)
    if section_blocks is None:
        return None
    columns, usage_rows = usage_table(report.usage)
    blocking = [(name, info) for name, info in report.categories.items() if info.blocking]
    text = environment().get_template(TEMPLATE).render(
        marker="" if view.suite else MARKER,
        suite=view.suite,
        conclusion=report.conclusion.value,
        judge=report.judge,
        blocking_categories=blocking,
        min_cases=next((info.minimum for _, info in blocking), 0),
        blocking_below_minimum=any(info.below_minimum for _, info in blocking),
        strict=report.strict,
        reread=gate.rereads(report.judge),
        held_back=gate.held_back_sentence(report),
        mark=gate.headline_mark(report),
        head_sha=report.head_sha,
        counts=report.counts,
        counts_sentence=counts_sentence(report.counts, scored=len(report.rows)),
        kinds=gate.KINDS,
        worth_reading=gate.worth_reading(report.counts),
        threshold=report.relevance_threshold,
        notes=tuple(report.notes),
        change=view.change,
        section_blocks=section_blocks,
        fluency=report.fluency,
        usage_columns=columns,
        usage_rows=usage_rows,
        cache=report.cache if isinstance(report.cache, Mapping) and any(report.cache.values())
        else None,  # a run that asked nothing has nothing to say about its cache
        e2e=e2e_view(report.e2e, plan),
        plan=plan,
        page=view.page,
        where=where_line(view.links),
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
    for section in _sections(view, plan):
        for row in section.rows:
            shown = row.query if section.cells.compact else row.answer
            floor += (_ROW_SKELETON + len(cell(row.id, section.cells.id))
                      + len(cell(shown, section.cells.answer)))
            if floor > max_chars:
                return True
    return False


def render_within(report: Report, max_chars: int, *, suite: str | None = None,
                  labels: Labels | None = None, links: Links = NO_LINKS) -> str:
    """The most detailed rendering of `report` whose size stays within `max_chars`
    (`suite`: the report is that suite's section of a several-suite comment; `labels`:
    people's labels, shown on their rows; `links`: where the run and report.html are)."""
    if report.suites and suite is None:
        return _render_suites(report, max_chars, labels, links)
    try:
        return _render_within(build_view(report, suite, labels, links), max_chars).lstrip("\n")
    finally:
        clear_cell_cache()


def _render_suites(report: Report, max_chars: int, labels: Labels | None = None,
                   links: Links = NO_LINKS) -> str:
    """A several-suite comment: the aggregate on top, naming the suites that were not
    evaluated, then one section per evaluated suite. The room left after the top is
    shared out smallest section first, so a short section leaves its rest to the others."""
    evaluated = [part for part in report.suites if part.evaluated]
    tables: Any = environment().get_template(TABLES_TEMPLATE).module
    top = str(tables.suites_top(
        marker=MARKER, conclusion=report.conclusion.value, counts=report.counts,
        counts_sentence=counts_sentence(report.counts),
        evaluated=[(part.name, part.report.conclusion.value) for part in evaluated],
        skipped=[part.name for part in report.suites if not part.evaluated],
        head_sha=report.head_sha, notes=tuple(report.notes), where=where_line(links),
        held_back=gate.held_back_sentence(report), mark=gate.headline_mark(report),
    )).rstrip("\n") + "\n"
    separator = "\n"
    room = max_chars - _size(top) - _size(separator) * len(evaluated)
    if room < 0:
        raise ValueError(f"max_chars={max_chars:,} is too small for even the shortest comment")
    full = {part.name: _size(render_within(part.report, room, suite=part.name, labels=labels,
                                           links=links))
            for part in evaluated}
    texts: dict[str, str] = {}
    for index, part in enumerate(sorted(evaluated, key=lambda one: full[one.name])):
        share = room // (len(evaluated) - index)
        texts[part.name] = render_within(part.report, share, suite=part.name, labels=labels,
                                         links=links)
        room -= _size(texts[part.name])
    return top + "".join(separator + texts[part.name] for part in evaluated)


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
        text = _render(view, replace(last, caps={**last.caps, Tier.BLOCKING: shown}), blocks,
                       max_chars)
        return (max_chars + 1, "") if text is None else (_size(text), text)

    fits_count, (fits_size, fits_text) = 0, attempt(0)
    if fits_size > max_chars:
        return None
    # LADDER[-1] showed every blocking row, and failed
    too_many = sum(len(view.sections[kind.name]) for kind in gate.KINDS if kind.tier is Tier.BLOCKING)
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


def render_comment(report: Report, *, max_chars: int = GITHUB_COMMENT_LIMIT,
                   labels: Labels | None = None, links: Links = NO_LINKS) -> str:
    """comment.md: what GitHub gets, within its size limit."""
    return render_within(report, max_chars, labels=labels, links=links)


def render_summary(report: Report, *, max_chars: int = STEP_SUMMARY_LIMIT,
                   links: Links = NO_LINKS) -> str:
    """The same Markdown for $GITHUB_STEP_SUMMARY, as complete as its 1 MiB allows."""
    return render_within(report, max_chars, links=links)
