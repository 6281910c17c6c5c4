"""A rerun whose every reply is cached sends nothing and never imports the openai SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from flipgate.cli import cli

from support.openai_server import FakeOpenAI

PROBE = """
import sys
from flipgate.cli import cli
try:
    cli.main(args=sys.argv[1:], prog_name="flipgate")
finally:
    print("openai imported:", "openai" in sys.modules, file=sys.stderr)
"""


def test_a_fully_cached_rerun_imports_no_sdk(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    with (tmp_path / "cases.jsonl").open("w") as cases, (tmp_path / "b.jsonl").open("w") as base, \
            (tmp_path / "c.jsonl").open("w") as cand:
        for i in range(4):
            context = f"Card {i} costs {i + 1} dollars."
            cases.write(json.dumps({"id": f"c{i}", "query": f"Card {i}?", "context": context}) + "\n")
            base.write(json.dumps({"id": f"c{i}", "response": context}) + "\n")
            cand.write(json.dumps({"id": f"c{i}", "response": context + " Or 9 dollars."}) + "\n")
    (tmp_path / "flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: openai\n  model: judge-1\n")
    args = ["gate", "--cases", str(tmp_path / "cases.jsonl"), "--baseline", str(tmp_path / "b.jsonl"),
            "--candidate", str(tmp_path / "c.jsonl"), "--config", str(tmp_path / "flipgate.yml"),
            "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code in (0, 1), first.output
    assert openai_server.requests
    first_report = json.loads((tmp_path / "out" / "report.json").read_text())
    openai_server.clear()

    again = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                           env=dict(os.environ), check=False)
    assert again.returncode == first.exit_code, again.stderr
    assert "openai imported: False" in again.stderr
    assert openai_server.requests == []
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [r["verdict"] for r in report["rows"]] == [r["verdict"] for r in first_report["rows"]]
