"""`judge.second_opinion.engine: groundedness_pro` end to end: the real CLI and the real
azure-ai-evaluation GroundednessProEvaluator, against a loopback Azure AI project over HTTPS
that speaks the SDK's `sync_evals:run` protocol and lets in only the bearer tokens a
loopback managed identity issued."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.entra import FakeAIProject, FakeManagedIdentity, TestCertificate
from support.openai_server import FakeOpenAI

pytestmark = [
    pytest.mark.azure,
    pytest.mark.skipif(importlib.util.find_spec("azure.ai.evaluation") is None,
                       reason="the optional azure-ai-evaluation package is not installed"),
]

# id -> (category, baseline score, candidate score, the service's groundedness score or a refusal)
SCRIPT = {
    "confirmed": ("pricing", 5, 2, 2),
    "disputed": ("pricing", 5, 1, 5),
    "steady": ("pricing", 5, 5, None),
    "region": ("policy", 4, 2, (400, "Groundedness Pro is not available in the region westus3.")),
}


@pytest.fixture
def services(tmp_path: Path) -> Iterator[tuple[FakeOpenAI, FakeManagedIdentity, FakeAIProject, TestCertificate]]:
    certificate = TestCertificate(tmp_path / "tls")
    model, identity = FakeOpenAI(), FakeManagedIdentity()
    project = FakeAIProject(certificate, tokens=lambda: identity.issued)
    for server in (model, identity, project):
        server.start()

    def score(query, context, response, call):  # type: ignore[no-untyped-def]
        side, case_id = response.split(" answer ")
        _, base, cand, _ = SCRIPT[case_id]
        return base if side == "baseline" else cand

    def verdict(query, context, response):  # type: ignore[no-untyped-def]
        return SCRIPT[response.split(" answer ")[1]][3]

    model.on_groundedness(score)
    project.verdict = verdict
    try:
        yield model, identity, project, certificate
    finally:
        for server in (model, identity, project):
            server.stop()


def write_run(directory: Path, model: FakeOpenAI, project: FakeAIProject, script: dict) -> list[str]:
    with (directory / "cases.jsonl").open("w") as cases, \
            (directory / "base.jsonl").open("w") as base, (directory / "cand.jsonl").open("w") as cand:
        for case_id, (category, *_) in script.items():
            cases.write(json.dumps({"id": case_id, "query": f"question {case_id}?",
                                    "context": f"context of {case_id}", "category": category}) + "\n")
            base.write(json.dumps({"id": case_id, "response": f"baseline answer {case_id}"}) + "\n")
            cand.write(json.dumps({"id": case_id, "response": f"candidate answer {case_id}"}) + "\n")
    # The blocking categories the cases have (an entry no case has is bad input).
    blocking = ", ".join(sorted({category for category, *_ in script.values()} & {"pricing", "policy"}))
    (directory / "flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: azure\n  model: judge-deploy\n"
        f"  azure_endpoint: {model.azure_endpoint}\n  api_version: '2024-10-21'\n"
        "  max_retries: 0\n  timeout: 20\n"
        f"  second_opinion:\n    engine: groundedness_pro\n    azure_ai_project: {project.endpoint}\n"
        f"gate:\n  blocking_categories: [{blocking}]\n  min_cases_per_category: 1\n")
    return ["gate", "--cases", str(directory / "cases.jsonl"), "--baseline", str(directory / "base.jsonl"),
            "--candidate", str(directory / "cand.jsonl"), "--config", str(directory / "flipgate.yml"),
            "--out", str(directory / "out"), "--cache", str(directory / "cache")]


def run_flipgate(args: list[str], *, identity: FakeManagedIdentity, certificate: TestCertificate,
                 home: Path):
    import subprocess

    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AZURE_", "IDENTITY_", "MSI_", "ACTIONS_ID_TOKEN", "OPENAI_"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), PF_LOGGING_LEVEL="CRITICAL", AZURE_OPENAI_API_KEY="judge-key",
               IDENTITY_ENDPOINT=identity.endpoint, IDENTITY_HEADER=identity.header,
               REQUESTS_CA_BUNDLE=str(certificate.cert_file), SSL_CERT_FILE=str(certificate.cert_file))
    return subprocess.run([sys.executable, "-m", "flipgate", *args], env=env, capture_output=True,
                          text=True, timeout=180)


def test_the_service_confirms_or_disputes_each_flip_and_its_refusals_are_judge_errors(
        services, tmp_path: Path) -> None:
    model, identity, project, certificate = services
    result = run_flipgate(write_run(tmp_path, model, project, SCRIPT), identity=identity,
                          certificate=certificate, home=tmp_path / "home")
    assert result.returncode == 3, result.stderr   # a judge error on a row: could not finish
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    rows = {row["id"]: row for row in report["rows"]}
    assert report["judge"]["second_opinion"] == "groundedness_pro"
    assert report["judge"]["rescore"] == "second_opinion"

    confirmed, disputed = rows["confirmed"], rows["disputed"]
    assert (confirmed["verdict"], confirmed["blocking"]) == ("regression", True)
    assert confirmed["candidate"]["second_opinion"] == {
        "engine": "groundedness_pro", "label": False,
        "reason": "the service read 20 characters of context"}
    assert disputed["verdict"] == "unstable"
    assert disputed["candidate"]["second_opinion"]["label"] is True
    assert rows["steady"]["verdict"] == "unchanged" and "second_opinion" not in rows["steady"]["candidate"]

    region = rows["region"]
    assert region["verdict"] == "error"
    assert any("not available in the region westus3" in error for error in region["errors"])
    assert region["candidate"]["second_opinion"]["label"] is None
    assert report["counts"]["blocking_regressions"] == 1 and report["conclusion"] == "error"

    # The service was asked only about the three flips, with each case's own texts.
    asked = sorted((b["data_source"]["source"]["content"]["item"]["query"],
                    b["data_source"]["source"]["content"]["item"]["context"],
                    b["data_source"]["source"]["content"]["item"]["response"]) for b in project.bodies)
    assert asked == sorted((f"question {i}?", f"context of {i}", f"candidate answer {i}")
                           for i in ("confirmed", "disputed", "region"))
    # Its token is for the AI services scope and is written nowhere.
    assert {r["args"]["resource"] for r in identity.requests} == {"https://ai.azure.com"}
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "not grounded" in comment
    for token in identity.issued:
        assert token not in comment and token not in result.stderr and token not in result.stdout
        assert token not in (tmp_path / "out" / "report.json").read_text()
        for cached in (tmp_path / "cache").rglob("*"):
            if cached.is_file():
                assert token not in cached.read_text(errors="replace")


def test_a_confirmed_flip_blocks_and_a_disputed_one_does_not(services, tmp_path: Path) -> None:
    model, identity, project, certificate = services
    script = {key: SCRIPT[key] for key in ("confirmed", "disputed", "steady")}
    result = run_flipgate(write_run(tmp_path, model, project, script), identity=identity,
                          certificate=certificate, home=tmp_path / "home")
    assert result.returncode == 1, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["conclusion"] == "failure" and report["counts"]["unstable"] == 1
