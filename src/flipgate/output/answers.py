"""answers.jsonl: what a labeller reads for each row, beside report.json (which holds no
answers): `{"id", "suite", "category", "query", "context", "baseline", "candidate"}` a
line, written a row at a time. `flipgate calibrate --template` joins it to the report."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from flipgate.model import Report, Row

ANSWERS_FILE = "answers.jsonl"


def _suite_rows(report: Report) -> Iterator[tuple[str | None, Row]]:
    if not report.suites:
        yield from ((None, row) for row in report.rows)
        return
    for part in report.suites:
        yield from ((part.name, row) for row in part.report.rows)


def write_answers(report: Report, path: str | os.PathLike[str]) -> None:
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for suite, row in _suite_rows(report):
            handle.write(json.dumps({"id": row.id, "suite": suite, "category": row.category,
                                     "query": row.case.query, "context": row.case.context,
                                     "baseline": row.baseline.response,
                                     "candidate": row.candidate.response},
                                    ensure_ascii=False) + "\n")
    os.replace(tmp, target)
