"""The terminal summary: the rows that matter, the counts and the conclusion.

Ids, categories and model text are untrusted: they are flattened to one line
without control characters (no escape sequences reach the terminal) and
handed to rich as `Text`, which never parses markup.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from flipgate.model import Conclusion, Report, Row, Side
from flipgate.output.comment_view import BUCKET_LABELS, statements_ratio
from flipgate.text.escaping import one_line_within, plural
from flipgate.verdict import gate
from flipgate.verdict.gate import Kind

MAX_ROWS = 40
WIDE = 120  # narrower consoles (a CI log is 80) give each row a second line for the "why"


def rows_that_matter(report: Report) -> list[tuple[Kind, Row]]:
    """(kind, row) for every row worth showing, most important kind first, stable within one."""
    kinds = ((gate.kind_of(row), row) for row in report.rows)
    found = [(kind, row) for kind, row in kinds if kind is not None]
    return sorted(found, key=lambda pair: gate.KINDS.index(pair[0]))


def _plain(text: object, limit: int, style: str = "") -> Text:
    return Text(one_line_within(text, limit), style=style)


def reading(side: Side) -> str:
    if not side.groundedness.ok or side.bucket is None:
        return gate.unscored(side)
    return f"{BUCKET_LABELS[side.bucket]} ({side.groundedness.value})"


def _relevance(side: Side) -> str:
    relevance = side.relevance
    return "—" if relevance is None or relevance.score is None else f"{relevance.score:.2f}"


def why(row: Row) -> str:
    """What a reader should see first about a row: its errors, the figures or statement
    the context lacks, else the judge's reason."""
    if row.errors:
        return "; ".join(row.errors)
    if row.review_reason:
        return row.review_reason
    if gate.is_flagged(row):
        return "; ".join(row.candidate.manipulation or row.baseline.manipulation)
    evidence = row.evidence
    notes = f" ({'; '.join(evidence.notes)})" if evidence and evidence.notes else ""
    ratio = statements_ratio(row.candidate.statements)
    if ratio and row.candidate.statements is not None and row.candidate.statements.unsupported:
        return f"{ratio}; not supported: {row.candidate.statements.unsupported[0].text}" + notes
    if evidence and evidence.unsupported_figures:
        return "not in context: " + ", ".join(evidence.unsupported_figures) + notes
    if evidence and evidence.unsupported_statements:
        return "not in context: " + evidence.unsupported_statements[0] + notes
    return row.candidate.groundedness.reason + notes


def _movement(row: Row) -> str:
    movement = f"{reading(row.baseline)} → {reading(row.candidate)}"
    return movement + " (truncated)" if row.candidate.finish_reason == "length" else movement


def rows_table(report: Report, *, max_rows: int = MAX_ROWS,
               with_why: bool = True) -> tuple[Table, int]:
    """The table of rows that matter, and how many were left out of it.

    Ids are never broken: the other columns fold first. `with_why=False` (a
    console narrower than WIDE) gives each row two lines instead: the id, category,
    movement and relevance, then the evidence, in one wide column.
    """
    picked = rows_that_matter(report)
    longest_id = max((len(one_line_within(row.id, 40)) for _, row in picked[:max_rows]), default=2)
    table = Table(show_header=True, header_style="bold")
    table.add_column("verdict", no_wrap=True)
    if with_why:
        table.add_column("id", no_wrap=True, min_width=longest_id)
        table.add_column("category", overflow="fold")
        table.add_column("baseline → candidate")
        table.add_column("relevance", no_wrap=True)
        table.add_column("why", overflow="fold", ratio=1)
    else:
        table.add_column("id · category · baseline → candidate · relevance", ratio=1,
                         overflow="fold")
    for kind, row in picked[:max_rows]:
        label, style = kind.label, kind.style
        relevance = Text(f"{_relevance(row.baseline)} → {_relevance(row.candidate)}",
                         style="cyan" if row.relevance_drop else "")
        if with_why:
            table.add_row(Text(label, style=style), _plain(row.id, 40), _plain(row.category, 24),
                          Text(_movement(row)), relevance, _plain(why(row), 80))
            continue
        cell = Text.assemble(_plain(row.id, 40), " · ", _plain(row.category, 24), " · ",
                             _movement(row), " · ", relevance)
        evidence = one_line_within(why(row), 120)
        if evidence:
            cell.append("\n")
            cell.append_text(Text(evidence, style="dim"))
        table.add_row(Text(label, style=style), cell)
    return table, max(0, len(picked) - max_rows)


def counts_line(report: Report) -> str:
    """The counts on one line; a count of zero is left out."""
    counts = report.counts
    parts = [plural(counts.cases, "case"),
             *(kind.status.of(counts[kind.count_field]) for kind in gate.KINDS
               if counts[kind.count_field])]
    return " · ".join(parts)


def conclusion_line(report: Report) -> tuple[str, str]:
    """The verdict in words, and its style."""
    counts = report.counts
    if report.conclusion is Conclusion.FAILURE:
        blocked = plural(counts.blocking_regressions, "blocking regression")
        return f"❌ blocked: {blocked}", "bold red"
    if report.conclusion is Conclusion.ERROR and counts.generator_errors:
        line = f"⚠️  could not finish: the generator gave no answer on {plural(counts.generator_errors, 'row')}"
        if counts.errors:
            line += f" (and judge errors on {plural(counts.errors, 'row')})"
        return line, "bold yellow"
    if report.conclusion is Conclusion.ERROR and not counts.errors:
        # The run stopped early; the error message itself is printed once, elsewhere.
        line = "⚠️  could not finish: the run stopped before every row was scored"
        if counts.not_run:
            line += f" ({plural(counts.not_run, 'row')} not run"
            if counts.blocking_regressions:
                line += f"; {plural(counts.blocking_regressions, 'blocking regression')} among the rest"
            line += ")"
        return line, "bold yellow"
    if report.conclusion is Conclusion.ERROR:
        line = f"⚠️  could not finish: judge errors on {plural(counts.errors, 'row')}"
        if counts.blocking_regressions:
            found = "blocking regression" if gate.rereads(report.judge) else "confirmed blocking regression"
            line += f" (and {plural(counts.blocking_regressions, found)})"
        return line, "bold yellow"
    if report.conclusion is Conclusion.SKIPPED:
        return "⏭️  skipped: no prompt or model change", "bold"
    held = gate.held_back_sentence(report)
    if held and report.conclusion is Conclusion.AWAITING_REVIEW:
        return f"{gate.headline_mark(report)}  awaiting review: {held}", "bold yellow"
    if held:
        return f"{gate.headline_mark(report)}  passed, but {held}", "bold yellow"
    return "✅ passed: no blocking regression", "bold green"


def suite_lines(report: Report) -> list[str]:
    """One line per suite of a several-suite run (names come from the base's config)."""
    return [f"suite {part.name}: " + (conclusion_line(part.report)[0] if part.evaluated
                                      else "not evaluated, nothing of its changed")
            for part in report.suites]


def judge_line(report: Report) -> Text:
    judge = report.judge
    if judge.lexical:
        return Text("judge: offline lexical judge (word and figure overlap, not an LLM)")
    line = Text("judge: ")
    line.append_text(_plain(judge.provider, 40))
    line.append(" · ")
    line.append_text(_plain(judge.model, 100))
    if judge.rubric_version:
        line.append(" · rubric ")
        line.append_text(_plain(judge.rubric_version, 60))
    if judge.second_opinion:
        line.append(" · second opinion ")
        line.append_text(_plain(judge.second_opinion, 100))
        line.append(" (with the re-score)" if judge.rescore == "both" else "")
    return line


WARNING_PREFIX = "Warning:"


def warnings(report: Report) -> list[str]:
    """The report's warnings (notes that say `Warning:`), its suites' too, each once: what the
    comment warns about, the terminal says as well."""
    notes = [*report.notes, *(note for part in report.suites for note in part.report.notes)]
    return list(dict.fromkeys(note for note in notes if note.startswith(WARNING_PREFIX)))


def print_summary(report: Report, console: Console) -> None:
    if report.conclusion is not Conclusion.SKIPPED:
        table, left_out = rows_table(report, with_why=console.width >= WIDE)
        if table.row_count:
            console.print(table)
        if left_out:
            console.print(Text(f"… and {left_out:,} more rows in report.html and report.json"))
        console.print(judge_line(report))
        console.print(Text(counts_line(report)))
    for line in suite_lines(report):
        console.print(Text(line))
    for warning in warnings(report):
        console.print(Text(one_line_within(warning, 2_000), style="yellow"))
    line, style = conclusion_line(report)
    console.print(Text(line, style=style))
