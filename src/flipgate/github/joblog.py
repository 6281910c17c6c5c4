"""What the Actions job log says at the end of a run: pure, from the report.

The verdict table as plain text (printed inside a `::group::`), then one line
per row a reviewer must read: blocking and to-review regressions as plain
lines with their evidence, judge errors as `::error` annotations, answers that
address the judge, unstable rows and new non-answers as `::warning`s. Ids, categories, answers and
judges' words are untrusted: they are flattened to one line here, and
`workflow.Workflow` escapes them so no line can forge a workflow command.
"""

from __future__ import annotations

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
# what the line calls the row is the kind's own `one_row`. The kinds not named here
# (relevance drops, moved, still ungrounded) get no line.
_ROW_LEVELS = {
    "blocking": Level.INFO,
    "review": Level.INFO,
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
    level, name = _ROW_LEVELS[kind], gate.kind_named(kind).one_row
    where = f"{one_line_within(row.id, 80)} [{one_line_within(row.category, 40)}]"
    movement = f"{reading(row.baseline)} → {reading(row.candidate)}"
    return Entry(level, f"{name}: {where}, {movement}: {one_line_within(why(row), _TEXT)}")


def row_entries(report: Report, *, limit: int = ROW_LINE_LIMIT) -> list[Entry]:
    """One entry per row worth a line, most important first, at most `limit` of them."""
    picked = [(kind.name, row) for row in report.rows
              if (kind := gate.kind_of(row)) is not None and kind.name in _ROW_LEVELS]
    order = list(_ROW_LEVELS)
    picked.sort(key=lambda pair: order.index(pair[0]))
    entries = [row_line(kind, row) for kind, row in picked[:limit]]
    if len(picked) > limit:
        entries.append(Entry(Level.INFO, f"… and {len(picked) - limit:,} more rows in "
                                         "flipgate-out/report.json"))
    return entries
