"""docs/reviewing.md's workflow uploads the page the action writes, with inputs the action has."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from flipgate.config.schema import ARTIFACT_NAME, DEFAULT_OUT_DIR

ROOT = Path(__file__).resolve().parents[2]


def test_the_upload_example_uploads_report_html_even_when_the_gate_blocks() -> None:
    text = (ROOT / "docs/reviewing.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "upload-artifact" in b]
    steps = yaml.safe_load(block)["steps"]
    [flipgate] = [s for s in steps if str(s.get("uses", "")).startswith("OWNER/flipgate")]
    inputs = set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])
    assert set(flipgate["with"]) <= inputs
    [upload] = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload["if"] == "always()"  # a blocked run (exit 1) still uploads its page
    # The whole output folder, report.html in it, as the one artifact every page names.
    assert upload["with"]["path"] == f"{DEFAULT_OUT_DIR}/"
    assert upload["with"]["name"] == ARTIFACT_NAME
