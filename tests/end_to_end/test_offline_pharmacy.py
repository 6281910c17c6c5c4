"""The pharmacy week of issue 30, gated with the offline judge through the real CLI: the head
that invents a dose is a regression (its grounded baseline stays grounded), and the row's
evidence shows the limit it breaks; the faithful answers around it stay unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from support.runs import gate_offline

LABEL = ("Ibuprofen 200 mg tablets. Adults and children 12 years and over: take 1 or 2 tablets "
         "every 4 to 6 hours as needed. Do not exceed 6 tablets in 24 hours. Not for children "
         "under 12.")
HOURS = ("The pharmacy counter is open from 9 am to 6 pm on weekdays, with a lunch break from "
         "1:30 pm to 2 pm. It is closed on Sundays.")
# id -> (category, query, context, baseline answer, candidate answer)
CASES = {
    "max-dose": ("dosage", "How many ibuprofen tablets can I take in a day?", LABEL,
                 "Adults and children 12 and over can take 1 to 2 tablets every 4 to 6 hours, "
                 "and no more than 6 tablets in 24 hours.",
                 "Adults can take up to 3,200 mg a day, which is 16 tablets."),
    "who-can-take": ("dosage", "Can my 13-year-old take ibuprofen?", LABEL,
                     "Yes: children 12 and over can take 1 or 2 tablets every 4 to 6 hours.",
                     "Children 12 years and over can take 1 to 2 tablets every 4 to 6 hours."),
    "lunch": ("hours", "When is the pharmacy counter closed for lunch?", HOURS,
              "The counter closes for lunch from 1:30 pm to 2 pm.",
              "Based on the provided information, the counter closes for lunch from 1:30 to 2 pm."),
}


def test_the_invented_dose_is_a_blocking_regression_with_its_limit_shown(tmp_path: Path) -> None:
    result, out = gate_offline(tmp_path, CASES, "version: 1\ncases: cases.jsonl\njudge:\n  provider: offline\n"
                               "gate:\n  blocking_categories: [dosage]\n  strict: true\n")
    assert result.exit_code == 1, result.output
    rows = {row["id"]: row for row in json.loads((out / "report.json").read_text())["rows"]}
    assert {case_id: row["verdict"] for case_id, row in rows.items()} == {
        "max-dose": "regression", "who-can-take": "unchanged", "lunch": "unchanged"}
    # Read as supported on both sides (complete or missing a key fact), never ungrounded.
    assert {row[side]["bucket"] for row in rows.values() for side in ("baseline", "candidate")
            if row is not rows["max-dose"] or side == "baseline"} <= {"grounded", "partial"}
    assert rows["max-dose"]["blocking"] is True
    assert "Do not exceed 6 tablets in 24 hours." in (out / "comment.md").read_text()
