"""The example workflows use only inputs the action has, and give each gate its own context."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def action_inputs() -> set[str]:
    return set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])


def test_the_action_declares_the_comment_and_pr_number_inputs() -> None:
    inputs = yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]
    assert inputs["comment"]["default"] == "always"
    assert "pr-number" in inputs


def test_the_monorepo_example_runs_two_gates_with_their_own_contexts() -> None:
    workflow = yaml.safe_load((ROOT / "examples/workflows/flipgate-monorepo.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert "pr-number" in triggers["workflow_dispatch"]["inputs"]
    job = workflow["jobs"]["flipgate"]
    [step] = [s for s in job["steps"] if str(s.get("uses", "")).startswith("OWNER/flipgate")]
    assert set(step["with"]) <= action_inputs()
    gates = [entry["gate"] for entry in job["strategy"]["matrix"]["include"]]
    contexts = {step["with"]["status-context"].replace("${{ matrix.gate }}", gate)
                for gate in gates}
    configs = {entry["config"] for entry in job["strategy"]["matrix"]["include"]}
    assert len(gates) == 2 and len(contexts) == 2 and len(configs) == 2
    assert "matrix.gate" in job["concurrency"]["group"]  # one gate never cancels the other
