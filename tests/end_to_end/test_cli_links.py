"""`flipgate gate --report-url URL` and the runner's variables: the CLI links what it is
given, and nothing on a laptop (no GITHUB_RUN_ID, no flag)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.gfm import github_html

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cards"
PAGE = "https://pages.example/repo/pr-7/report.html"
RUNNER = {"GITHUB_SERVER_URL": "https://github.example.com", "GITHUB_REPOSITORY": "o/r",
          "GITHUB_RUN_ID": "99"}
LAPTOP = dict.fromkeys(RUNNER, "")


def gate(out: Path, *extra: str, env: dict[str, str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [
        "gate", "--cases", str(EXAMPLE / "cases.jsonl"),
        "--baseline", str(EXAMPLE / "baseline.jsonl"),
        "--candidate", str(EXAMPLE / "candidate.jsonl"),
        "--config", str(EXAMPLE / ".flipgate.yml"), "--judge", "offline",
        "--out", str(out), "--no-cache", *extra], env=env)
    comment = (out / "comment.md").read_text() if (out / "comment.md").exists() else ""
    return result.exit_code, result.output, comment


def hrefs(markdown: str) -> set[str]:
    return set(re.findall(r'<a href="([^"]*)"', github_html(markdown)))


def test_on_a_laptop_the_comment_links_nothing(tmp_path: Path) -> None:
    code, _, comment = gate(tmp_path, env=LAPTOP)
    assert code == 1 and hrefs(comment) == set()


def test_in_a_job_the_comment_links_the_run_and_with_a_page_url_its_rows(tmp_path: Path) -> None:
    code, _, comment = gate(tmp_path, "--report-url", PAGE, env=RUNNER)
    assert code == 1
    found = hrefs(comment)
    assert {"https://github.example.com/o/r/actions/runs/99", PAGE,
            f"{PAGE}#case-replacement-card-fee", f"{PAGE}#case-overdraft-protection"} <= found


@pytest.mark.parametrize("url", ["javascript:alert(1)", "ftp://x/report.html", "report.html"])
def test_a_report_url_that_is_not_http_is_bad_input(tmp_path: Path, url: str) -> None:
    code, output, comment = gate(tmp_path, "--report-url", url, env=LAPTOP)
    assert code == 2 and comment == ""
    assert output.strip().splitlines() == [
        f"flipgate: error: --report-url: expected the http(s) URL of report.html, got {url!r}"]
