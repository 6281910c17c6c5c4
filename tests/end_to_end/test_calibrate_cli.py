"""`flipgate calibrate` end to end: gate the example offline, write the template, label, calibrate."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from flipgate.cli import cli

from support.gfm import consistent_tables, read

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cards"


def gate_example(tmp_path: Path) -> dict:
    result = CliRunner().invoke(cli, [
        "gate", "--cases", str(EXAMPLE / "cases.jsonl"), "--baseline", str(EXAMPLE / "baseline.jsonl"),
        "--candidate", str(EXAMPLE / "candidate.jsonl"), "--config", str(EXAMPLE / ".flipgate.yml"),
        "--judge", "offline", "--out", str(tmp_path / "out"), "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    return json.loads((tmp_path / "out" / "report.json").read_text())


def test_template_then_labels_then_figures(tmp_path: Path) -> None:
    report = gate_example(tmp_path)
    labels_path = tmp_path / "labels.jsonl"
    result = CliRunner().invoke(cli, ["calibrate", "--template", str(tmp_path / "out" / "report.json"),
                                      "--out", str(labels_path)])
    assert result.exit_code == 0, result.output
    template = [json.loads(line) for line in labels_path.read_text().splitlines()]
    verdicts = {row["id"]: row["verdict"] for row in report["rows"]}
    flipped = {"regression", "unstable", "new_non_answer"}
    first_calm = next(i for i, line in enumerate(template) if verdicts[line["id"]] not in flipped)
    assert all(verdicts[line["id"]] not in flipped for line in template[first_calm:])
    assert len(template) == 2 * len(report["rows"])
    # Each line carries what a labeller reads: the case and the answer of its side.
    cases = {c["id"]: c for c in map(json.loads, (EXAMPLE / "cases.jsonl").read_text().splitlines())}
    answers = {side: {a["id"]: a["response"] for a in
                      map(json.loads, (EXAMPLE / f"{side}.jsonl").read_text().splitlines())}
               for side in ("baseline", "candidate")}
    for line in template:
        assert line["query"] == cases[line["id"]]["query"]
        assert line["context"] == cases[line["id"]]["context"]
        assert line["answer"] == answers[line["side"]][line["id"]]
        assert line["suite"] is None and line["label"] is None
        assert line["judge_label"] == next(r[line["side"]]["bucket"] for r in report["rows"]
                                           if r["id"] == line["id"])

    # A person who agrees with the judge everywhere except on one ungrounded answer.
    buckets = {(row["id"], side): row[side]["bucket"] for row in report["rows"]
               for side in ("baseline", "candidate")}
    disputed = next(key for key, bucket in buckets.items() if bucket == "ungrounded")
    for line in template:
        key = (line["id"], line["side"])
        line["label"] = "grounded" if key == disputed else buckets[key]
    labels_path.write_text("".join(json.dumps(line) + "\n" for line in template))

    out = tmp_path / "cal"
    result = CliRunner().invoke(cli, ["calibrate", "--report", str(tmp_path / "out" / "report.json"),
                                      "--labels", str(labels_path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    figures = json.loads((out / "calibration.json").read_text())
    overall = figures["overall"]
    n = len(template)
    judged_ungrounded = sum(bucket == "ungrounded" for bucket in buckets.values())
    assert overall["n"] == n and overall["agreed"] == n - 1
    assert figures["confusion"]["ungrounded"]["grounded"] == 1
    assert overall["ungrounded_by_judge"] == judged_ungrounded
    assert overall["ungrounded_both"] == judged_ungrounded - 1
    assert overall["ungrounded_recall"] == 1.0
    assert set(figures["per_category"]) == {row["category"] for row in report["rows"]}
    assert "agreement" in result.output and "kappa" in result.output
    # The figures are read: the verdict under the rule and whether the labels are enough.
    reading = figures["reading"]
    assert reading["verdict"] in ("may block on its own", "may not block on its own",
                                  "not decided yet")
    assert " ".join(reading["why"].split()[:3]) in " ".join(result.output.split())
    assert reading["enough"].split(":")[0] in result.output

    page = read((out / "calibration.md").read_text())
    assert any(text == "Overall" for _, text in page.headings)
    assert f"{n - 1} of {n}" in page.text and "95% CI" in page.text
    assert any(text == "Reading" for _, text in page.headings)
    assert reading["enough"].split(":")[0] in page.text
    assert consistent_tables(page) and len(page.tables) == 2 * (1 + len(figures["per_category"]))


def test_bad_labels_exit_2_with_file_and_line(tmp_path: Path) -> None:
    gate_example(tmp_path)
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "nope", "side": "candidate", "label": "grounded"}\n')
    result = CliRunner().invoke(cli, ["calibrate", "--report", str(tmp_path / "out" / "report.json"),
                                      "--labels", str(labels), "--out", str(tmp_path / "cal")])
    assert result.exit_code == 2
    assert f"{labels}:1: id 'nope' is not a row of the report" in result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["calibrate", "--report", str(labels)])
    assert result.exit_code == 2
