"""`flipgate calibrate`: check the judge against a person's labels, or write a labels file to fill in."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from flipgate.commands.common import report_failures
from flipgate.config.schema import DEFAULT_OUT_DIR
from flipgate.output.answers import ANSWERS_FILE


def _read(path: str) -> bytes:
    from flipgate.errors import InputError, Problem

    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(Problem(path, None, f"cannot read: {exc.strerror}")) from None


@click.command("calibrate")
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              help="The report.json whose verdicts are checked. Without it, each label's "
                   "line must carry the judge's bucket (`judge_label`), as the action's "
                   "labels.jsonl and a filled-in template do.")
@click.option("--labels", "labels_path", type=click.Path(dir_okay=False),
              help='Labels (JSONL): {"id", "suite", "side": "baseline"|"candidate", "label": BUCKET}; '
                   'a filled-in template or the action\'s labels.jsonl as they are.')
@click.option("--template", "template_path", type=click.Path(dir_okay=False),
              help="Write a labels file to fill in for this report.json, flipped rows first "
                   "(with each row's query, context and answer from answers.jsonl beside it).")
@click.option("--out", "out", metavar="PATH", default=None,
              help=f"With --labels: the folder for calibration.json and calibration.md (default "
                   f"{DEFAULT_OUT_DIR}/). With --template: the labels file (default labels.jsonl).")
@report_failures
def calibrate(report_path: str | None, labels_path: str | None, template_path: str | None,
              out: str | None) -> None:
    """Compare the judge's buckets with human labels: confusion matrix, agreement, Cohen's
    kappa, precision and recall of `ungrounded`, per category and overall, with 95%
    Wilson intervals, then what they mean: whether the labels are enough and whether the
    judge may block on its own (docs/labelling.md). Exits 0, or 2 on bad input.
    """
    from rich.console import Console

    from flipgate.calibration import agreement as calibration
    from flipgate.errors import InputError

    if template_path is not None:
        if report_path or labels_path:
            raise InputError("--template takes the report itself: use either --template R "
                             "or --report R --labels L")
        sides = calibration.read_report_sides(_read(template_path), source=template_path)
        answers_path = Path(template_path).parent / ANSWERS_FILE
        answers = None
        if answers_path.is_file():
            answers = calibration.read_answers(_read(str(answers_path)), source=str(answers_path))
        else:
            click.echo(f"flipgate: warning: no {answers_path} beside the report: the template's "
                       "query, context and answer are null", err=True)
        target = Path(out or "labels.jsonl")
        lines = calibration.template_lines(sides, answers)
        target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        click.echo(f"wrote {target}: {len(lines):,} answers to label, flipped rows first "
                   "(set each \"label\" to ungrounded, non_answer, partial or grounded; "
                   "leave null what you skip)", err=True)
        return
    if not labels_path:
        raise InputError("flipgate calibrate needs --labels L [--report R] (or --template R)")

    labels = calibration.read_labels(_read(labels_path), source=labels_path)
    sides = (calibration.read_report_sides(_read(report_path), source=report_path) if report_path
             else calibration.sides_of_labels(labels, source=labels_path))
    result = calibration.calibrate(sides, labels, labels_source=labels_path)

    directory = Path(out or DEFAULT_OUT_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    from flipgate.calibration import reading

    figures = {**calibration.to_dict(result), "reading": reading.to_dict(reading.read(result.overall))}
    (directory / "calibration.json").write_text(
        json.dumps(figures, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    from flipgate.calibration.summary import print_calibration, render_markdown

    (directory / "calibration.md").write_text(render_markdown(result), encoding="utf-8")
    print_calibration(result, Console())
    click.echo(f"wrote {directory / 'calibration.json'} and {directory / 'calibration.md'}",
               err=True)
    sys.exit(0)
