"""The end of a job log: the verdict table, one line per row to read, annotations, nothing forged."""

from __future__ import annotations

import io

from flipgate.github import joblog
from flipgate.github.action import write_verdicts
from flipgate.github.workflow import Workflow

from support.factories import make_report, make_row, one_of_each
from support.runner_log import runner_commands


def logged(report) -> str:
    stream = io.StringIO()
    write_verdicts(Workflow(stream=stream), report)
    return stream.getvalue()


def test_rows_to_read_get_one_entry_each_with_their_level() -> None:
    entries = joblog.row_entries(make_report(one_of_each()))
    levels = [(entry.level.value, entry.text.split(":", 1)[0]) for entry in entries]
    assert levels == [("error", "BLOCKING regression"), ("warning", "regression to review"),
                      ("error", "judge error"), ("warning", "unstable row"),
                      ("warning", "new non-answer")]


def test_held_back_rows_are_warnings_after_the_blocking_errors_and_before_the_rest() -> None:
    # The pharmacy's week: flips in a blocking category too small to block alone.
    from dataclasses import replace

    held = [replace(make_row(f"dosage-{i}", category="dosage", before=5, after=1, rescore=1,
                             blocking_categories=("dosage",)),
                    blocking=False, review_reason="dosage has 6 cases; below 50 a flip needs a "
                                                  "second judge to block")
            for i in (1, 2)]
    rows = [make_row("hours-1", category="hours", before=5, after=3), *held,
            make_row("insurance-1", category="insurance", before=5, after=1, rescore=1,
                     blocking_categories=()),
            make_row("refills-1", category="refills", before=5, after=1, rescore=1,
                     blocking_categories=("refills",))]
    report = make_report(rows)
    assert report.counts["held_back"] == 2
    entries = [(entry.level.value, entry.text.split(",", 1)[0]) for entry in joblog.row_entries(report)]
    assert entries == [("error", "BLOCKING regression: refills-1 [refills]"),
                       ("warning", "held-back regression: dosage-1 [dosage]"),
                       ("warning", "held-back regression: dosage-2 [dosage]"),
                       ("warning", "regression to review: insurance-1 [insurance]"),
                       ("warning", "new non-answer: hours-1 [hours]")]
    held_line = joblog.row_entries(report)[1].text
    assert held_line.endswith("(dosage has 6 cases; below 50 a flip needs a second judge to block)")
    commands = [name for name, _ in runner_commands(logged(report)) if name in ("error", "warning")]
    assert commands == ["error", "warning", "warning", "warning", "warning"]


def test_a_blocking_line_names_the_row_the_movement_and_the_evidence() -> None:
    [entry] = joblog.row_entries(make_report([make_row("refund-007", before=5, after=2,
                                                       rescore=1)]))
    assert entry.text == ("BLOCKING regression: refund-007 [policy], grounded (5) → "
                          "ungrounded (2): not in context: $12")


def test_the_log_has_the_table_in_a_group_and_one_error_per_judge_error_row() -> None:
    rows = [make_row(f"broken-{i}", before=5, after=None) for i in range(3)]
    rows.append(make_row("refund-007", before=5, after=2, rescore=1))
    log = logged(make_report(rows))

    commands = runner_commands(log)
    names = [name for name, _ in commands]
    assert names[0] == "group" and "endgroup" in names
    inside = log.split("::group::", 1)[1].split("::endgroup::", 1)[0]
    assert "broken-0" in inside and "could not finish" in inside  # the verdict table
    errors = [data for name, data in commands if name == "error"]
    assert len(errors) == 4 and errors[0].startswith("BLOCKING regression: refund-007")
    assert all(data.startswith("judge error: broken-") for data in errors[1:])


def test_nothing_a_model_or_a_pull_request_wrote_becomes_a_workflow_command() -> None:
    evil = "x\n::set-output name=conclusion::success\r::add-mask::y ##[set-env name=A;]b"
    rows = [make_row(evil, category=evil, before=5, after=2, rescore=1, reason=evil,
                     figures=(), statements=(evil,)),
            make_row("e" + evil, before=5, after=None, error=evil),
            make_row("u" + evil, before=5, after=2, rescore=4, statements=(evil,), figures=())]
    log = logged(make_report(rows))
    acted = {name for name, _ in runner_commands(log)}
    assert acted <= {"group", "endgroup", "error", "warning"}
    for _, data in runner_commands(log):
        assert "\n" not in data and "\r" not in data


def test_the_job_log_names_rows_as_the_kinds_table_does(monkeypatch) -> None:
    # One home: renaming a kind's row in gate.KINDS renames it in the job log too.
    from dataclasses import replace

    from flipgate.verdict import gate

    from support.factories import make_row

    renamed = tuple(replace(kind, one_row="row that newly says nothing") if kind.name == "non_answers"
                    else kind for kind in gate.KINDS)
    monkeypatch.setattr(gate, "KINDS", renamed)
    row = make_row("q-7", before=5, after=3)
    assert row.verdict.value == "new_non_answer"
    assert joblog.row_line("non_answers", row).text.startswith("row that newly says nothing: q-7")


def test_a_generator_error_row_is_an_error_line_of_its_own_not_a_judge_error() -> None:
    from flipgate.model import Case, Evidence, Score
    from flipgate.verdict import gate

    failed = "the application's code gave no answer: the command exited with status 1"
    row = gate.build_row(Case(id="fee-1", query="q", context="c", category="pricing"),
                         gate.side("", Score.failed(failed), generator_error=failed),
                         gate.side("", Score.failed("not judged: the other side has no answer")),
                         blocking_categories=("pricing",), threshold=0.7,
                         find_evidence=lambda case, answer: Evidence())
    report = make_report([row, make_row("broken", before=5, after=None)])
    assert (report.counts["generator_errors"], report.counts["errors"]) == (1, 1)
    entries = [(entry.level.value, entry.text.split(":", 1)[0]) for entry in joblog.row_entries(report)]
    assert entries == [("error", "generator error"), ("error", "judge error")]
    assert gate.conclude(report.counts).value == "error"
