"""What the Actions job log says at the end of a run: pure, from the report.

The verdict table as plain text (printed inside a `::group::`), then one line
per row a reviewer must read, most important first: blocking regressions and judge
errors as `::error` annotations; held-back regressions, regressions to review, answers
that address the judge, unstable rows and new non-answers as `::warning`s. Ids, categories, answers and
judges' words are untrusted: they are flattened to one line here, and
`workflow.Workflow` escapes them so no line can forge a workflow command.
"""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from enum import StrEnum

from flipgate.model import Report, Row
from flipgate.output.terminal import print_summary, reading, why
from flipgate.text.escaping import one_line_within
from flipgate.verdict import gate

TABLE_WIDTH = 160        # the job log does not wrap; a wide table keeps ids whole
ROW_LINE_LIMIT = 200     # rows listed one by one; the rest are counted
_TEXT = 300              # characters of a row's evidence or errors


class Level(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class Entry:
    level: Level
    text: str


# Which kinds of row (gate.KINDS, by name) get a line, in this order, and at which level;
# what the line calls the row is the kind's own `one_row`. A regression to review that the
# sample-size rule held back from blocking (gate.held_back) is a line of its own, named
# gate.HELD_BACK_ROW, before the other regressions to review. The kinds not named here
# (relevance drops, moved, still ungrounded) get no line. Every regression is an annotation
# (a blocking one an error), so the run's page lists it, not only the log.
HELD_BACK = "held_back"
_ROW_LEVELS = {
    "blocking": Level.ERROR,
    HELD_BACK: Level.WARNING,
    "review": Level.WARNING,
    "generator_error": Level.ERROR,
    "errors": Level.ERROR,
    "flagged": Level.WARNING,
    "unstable": Level.WARNING,
    "non_answers": Level.WARNING,
}


def verdict_table(report: Report, *, width: int = TABLE_WIDTH) -> str:
    """The terminal summary (table, judge, counts, conclusion) as plain text."""
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, force_terminal=False,
                      highlight=False, emoji=False)
    print_summary(report, console)
    return out.getvalue().rstrip("\n")


def row_line(kind: str, row: Row) -> Entry:
    level = _ROW_LEVELS[kind]
    name = gate.HELD_BACK_ROW if kind == HELD_BACK else gate.kind_named(kind).one_row
    where = f"{one_line_within(row.id, 80)} [{one_line_within(row.category, 40)}]"
    movement = f"{reading(row.baseline)} → {reading(row.candidate)}"
    if kind == HELD_BACK and row.review_reason:
        # What the answer claims first, then why the flip did not block.
        evidence = why(dataclasses.replace(row, review_reason=None))
        return Entry(level, f"{name}: {where}, {movement}: {one_line_within(evidence, _TEXT)} "
                            f"({one_line_within(row.review_reason, 120)})")
    return Entry(level, f"{name}: {where}, {movement}: {one_line_within(why(row), _TEXT)}")


def _line_kind(row: Row) -> str | None:
    """The name of the line a row gets (a key of `_ROW_LEVELS`), or None for no line."""
    kind = gate.kind_of(row)
    if kind is None or kind.name not in _ROW_LEVELS:
        return None
    return HELD_BACK if kind.name == "review" and gate.held_back(row) else kind.name


def row_entries(report: Report, *, limit: int = ROW_LINE_LIMIT) -> list[Entry]:
    """One entry per row worth a line, most important first, at most `limit` of them."""
    picked = [(name, row) for row in report.rows if (name := _line_kind(row)) is not None]
    order = list(_ROW_LEVELS)
    picked.sort(key=lambda pair: order.index(pair[0]))
    entries = [row_line(kind, row) for kind, row in picked[:limit]]
    if len(picked) > limit:
        entries.append(Entry(Level.INFO, f"… and {len(picked) - limit:,} more rows in "
                                         "flipgate-out/report.json"))
    return entries
