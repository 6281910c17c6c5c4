"""One artifact name everywhere (issue 23.3): the workflow init writes uploads it, and every
page, the job summary and the label job's summary download it by that name."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from flipgate.config.schema import ARTIFACT_NAME, DEFAULT_OUT_DIR
from flipgate.config.starter import Starter, workflow_text
from flipgate.github import texts
from flipgate.output.html import HTML_FILE

ROOT = Path(__file__).resolve().parents[2]
# A matrix of gates needs one artifact a gate: that example is the one exception.
MATRIX_EXAMPLE = ROOT / "examples" / "workflows" / "flipgate-monorepo.yml"


def test_the_workflow_init_writes_uploads_the_whole_output_folder_by_that_name() -> None:
    workflow = yaml.safe_load(workflow_text(Starter(generator="prompts/a.prompty",
                                                    cases="eval/cases.jsonl")))
    uploads = [step["with"] for job in workflow["jobs"].values() for step in job["steps"]
               if str(step.get("uses", "")).startswith("actions/upload-artifact")]
    # The page alone, unzipped (its artifact is named after the file), then the bundle.
    assert uploads == [{"path": f"{DEFAULT_OUT_DIR}/{HTML_FILE}", "archive": False,
                        "if-no-files-found": "ignore"},
                       {"name": ARTIFACT_NAME, "path": f"{DEFAULT_OUT_DIR}/",
                        "if-no-files-found": "ignore"}]


def test_no_page_names_another_artifact() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *(path for path in sorted((ROOT / "examples").rglob("*.yml")) if path != MATRIX_EXAMPLE)]
    named = re.compile(r"(?:\bname: |-n )([\w${}.\-]+)")
    for page in pages:
        for found in named.finditer(page.read_text(encoding="utf-8")):
            artifact = found.group(1)
            if artifact.startswith("flipgate-") and "part" not in artifact:  # shards' partials
                assert artifact == ARTIFACT_NAME, f"{page.name}: artifact {artifact}"


def test_the_summaries_download_it_and_calibrate_on_it() -> None:
    note = texts.download_note(repository="o/r", run_id="42", labels=True)
    assert f"gh run download 42 -R o/r -n {ARTIFACT_NAME} -D {ARTIFACT_NAME}" in note
    assert f"flipgate calibrate --labels {ARTIFACT_NAME}/labels.jsonl" in note
    assert "flipgate calibrate --labels" not in texts.download_note(repository="o/r", run_id="42",
                                                                     labels=False)
    summary = texts.labels_summary(recorded=5, kept=5, repository="o/r", run_id=None)
    assert "gh run download RUN_ID" in summary and "5 labels recorded" in summary
