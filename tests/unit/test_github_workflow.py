"""The runner's channels: workflow commands, $GITHUB_OUTPUT entries, the step summary."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from flipgate.config.schema import STEP_SUMMARY_LIMIT
from flipgate.github.workflow import Workflow, command, fit_summary, output_entry

from support.runner_log import runner_commands


def read_outputs(text: str) -> dict[str, str]:
    """Parse $GITHUB_OUTPUT as the runner does: `name<<DELIM`, lines, `DELIM`."""
    outputs, lines = {}, iter(text.split("\n"))
    for line in lines:
        if not line:
            continue
        name, delimiter = line.split("<<", 1)
        value = []
        for body in lines:
            if body == delimiter:
                break
            value.append(body)
        outputs[name] = "\n".join(value)
    return outputs


@pytest.mark.parametrize("value", [
    "success", "", "line one\nline two", "ghadelimiter_abc\nEOF\n", "100%\r\n::error::x",
])
def test_outputs_round_trip_whatever_the_value(tmp_path: Path, value: str) -> None:
    workflow = Workflow(stream=io.StringIO(), output_path=tmp_path / "out")
    workflow.set_output("report", value)
    workflow.set_output("conclusion", "failure")
    with (tmp_path / "out").open(encoding="utf-8", newline="") as written:
        assert read_outputs(written.read()) == {"report": value, "conclusion": "failure"}


def test_a_delimiter_found_in_the_value_is_replaced() -> None:
    entry = output_entry("report", "x\nDELIM\ny", delimiter="DELIM")
    delimiter = entry.split("\n", 1)[0].split("<<", 1)[1]
    assert delimiter != "DELIM" and delimiter not in "x\nDELIM\ny"


@pytest.mark.parametrize("name", ["", "a\nb", "a=b", "a<<b"])
def test_output_names_that_would_break_the_file_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        output_entry(name, "v")


@pytest.mark.parametrize(("args", "line"), [
    (("error", "bad\nthing 100%"), "::error::bad%0Athing 100%25"),
    (("warning", "x", ), "::warning::x"),
    (("error", "m"), "::error::m"),
])
def test_command_lines_escape_their_message(args: tuple[str, ...], line: str) -> None:
    assert command(*args) == line


def test_command_properties_escape_commas_and_colons() -> None:
    assert command("error", "m", title="a,b:c") == "::error title=a%2Cb%3Ac::m"


def test_log_lines_cannot_forge_commands_and_secrets_are_masked_per_line() -> None:
    stream = io.StringIO()
    workflow = Workflow(stream=stream)
    workflow.info("::add-mask::nothing\nok")
    workflow.error("answer said ::set-output name=x::y\nsecond line")
    workflow.mask("line-one\nline-two")
    assert runner_commands(stream.getvalue()) == [
        ("error", "answer said ::set-output name=x::y%0Asecond line"),
        ("add-mask", "line-one"), ("add-mask", "line-two")]
    assert "ok" in stream.getvalue().splitlines()


@pytest.mark.parametrize("text", [
    "::add-mask::nothing",
    "  ::set-output name=conclusion::success",          # the runner trims leading space
    "\t::error::forged",
    "\u3000::warning::ideographic space is white space too",
    "the answer: ##[set-output name=conclusion;]success",  # legacy form, mid-line
    "Traceback (most recent call last):\nValueError: x\n  ::add-mask::y\r::debug::z",
])
def test_plain_log_text_is_never_read_as_a_command(text: str) -> None:
    stream = io.StringIO()
    Workflow(stream=stream).info(text)
    assert runner_commands(stream.getvalue()) == []
    shown = stream.getvalue()
    assert all(line in shown for line in text.splitlines())


def test_plain_log_text_without_commands_is_written_as_is() -> None:
    stream = io.StringIO()
    Workflow(stream=stream).info("flipgate: comment created\nsecond line")
    assert stream.getvalue() == "flipgate: comment created\nsecond line\n"


def test_commands_off_brackets_untrusted_output_with_a_fresh_token() -> None:
    stream = io.StringIO()
    workflow = Workflow(stream=stream)
    with workflow.group("check"), workflow.commands_off():
        stream.write("::error::from a model answer\n")
    lines = stream.getvalue().splitlines()
    token = re.fullmatch(r"::stop-commands::([0-9a-f]{32})", lines[1]).group(1)
    assert lines == ["::group::check", f"::stop-commands::{token}",
                     "::error::from a model answer", f"::{token}::", "::endgroup::"]


def test_summary_appends_and_keeps_within_1_mib(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    workflow = Workflow(stream=io.StringIO(), summary_path=path)
    workflow.append_summary("first")
    workflow.append_summary("é" * STEP_SUMMARY_LIMIT)
    text = path.read_bytes()
    assert len(text) <= STEP_SUMMARY_LIMIT and text.startswith(b"first\n")
    assert text.decode("utf-8").rstrip().endswith("report.json has everything._")
    assert workflow.summary_room() == STEP_SUMMARY_LIMIT - len(text)


@pytest.mark.parametrize(("already", "fits"), [(0, True), (STEP_SUMMARY_LIMIT - 3, False)])
def test_fit_summary(already: int, fits: bool) -> None:
    text = "ünïcode " * 10
    assert (fit_summary(text, already=already) == text) is fits
    assert len(fit_summary(text, already=already).encode()) <= STEP_SUMMARY_LIMIT - already
