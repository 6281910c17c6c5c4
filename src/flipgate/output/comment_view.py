"""What comment.md shows of a report, built once from it: a row's reading, evidence and
reason (`RowView`), what changed (`ChangeView`), the usage table, the counts sentence and
where the review lives (`View`); `comment.py` renders it, fitted to GitHub's limit.

Everything here that came from the pull request or a model reaches the Markdown only
through `cell`/`escape_md` or `fence`, as `comment.py` says.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from flipgate.model import (
    Bucket,
    Change,
    Counts,
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
from flipgate.text.escaping import (
    link,
    plural,
)
from flipgate.verdict import gate
from flipgate.verdict.gate import carries_evidence

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
        return gate.unscored(side)
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
