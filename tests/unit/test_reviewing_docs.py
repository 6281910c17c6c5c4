"""docs/reviewing.md's workflow uploads the page the action writes, with inputs the action has."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from flipgate.config.schema import ARTIFACT_NAME, DEFAULT_OUT_DIR
from flipgate.output.html import HTML_FILE

ROOT = Path(__file__).resolve().parents[2]


def test_the_upload_example_uploads_report_html_even_when_the_gate_blocks() -> None:
    text = (ROOT / "docs/reviewing.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "upload-artifact" in b]
    steps = yaml.safe_load(block)["steps"]
    inputs = set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])
    for flipgate in [s for s in steps if str(s.get("uses", "")).startswith("OWNER/flipgate")]:
        assert set(flipgate["with"]) <= inputs
    page, bundle = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    # Both upload when the gate blocks (exit 1): the page alone and unzipped, then the whole
    # output folder, report.html in it, as the one artifact every page names.
    assert page["if"] == bundle["if"] == "always()"
    assert page["with"]["path"] == f"{DEFAULT_OUT_DIR}/{HTML_FILE}" and page["with"]["archive"] is False
    assert bundle["with"]["path"] == f"{DEFAULT_OUT_DIR}/"
    assert bundle["with"]["name"] == ARTIFACT_NAME
    [relink] = [s for s in steps if "relink" in (s.get("with") or {})]
    assert relink["with"]["relink"] == "${{ steps.page.outputs.artifact-url }}"
