"""`auth: entra` end to end: the real CLI in its own process, the real openai client and
azure-identity, against loopback token services that azure-identity really calls (a managed
identity endpoint, a workload identity authority behind a self-signed certificate, GitHub's
OIDC token endpoint) and a model server that lets in only the tokens they issued."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.entra import FakeAuthority, FakeGitHubOIDC, FakeManagedIdentity, TestCertificate, _json, _Server
from support.openai_server import FakeOpenAI

pytestmark = pytest.mark.skipif(importlib.util.find_spec("azure.identity") is None,
                                reason="azure-identity (flipgate[azure]) is not installed")

TENANT = "7f2c0d1e-tenant"
CLIENT = "3b9a6c4d-client"
DEPLOYMENT = "judge-deploy"
CASES = {"fee": ("pricing", "A replacement card costs 5 dollars."),
         "hours": ("support", "The branch opens at 9.")}


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.start()
    server.on_groundedness(lambda query, context, response, call: 5)
    try:
        yield server
    finally:
        server.stop()


def write_run(directory: Path, model: FakeOpenAI, *, engine: str = "openai") -> list[str]:
    with (directory / "cases.jsonl").open("w") as cases, \
            (directory / "base.jsonl").open("w") as base, (directory / "cand.jsonl").open("w") as cand:
        for case_id, (category, context) in CASES.items():
            cases.write(json.dumps({"id": case_id, "query": f"what about {case_id}?",
                                    "context": context, "category": category}) + "\n")
            base.write(json.dumps({"id": case_id, "response": f"baseline {context}"}) + "\n")
            cand.write(json.dumps({"id": case_id, "response": f"candidate {context}"}) + "\n")
    (directory / "flipgate.yml").write_text(
        "version: 1\ncases: cases.jsonl\njudge:\n  provider: azure\n"
        f"  model: {DEPLOYMENT}\n  engine: {engine}\n  auth: entra\n"
        f"  azure_endpoint: {model.azure_endpoint}\n  api_version: \"2024-10-21\"\n"
        "  max_retries: 0\n  timeout: 10\n")
    return ["gate", "--cases", str(directory / "cases.jsonl"), "--baseline", str(directory / "base.jsonl"),
            "--candidate", str(directory / "cand.jsonl"), "--config", str(directory / "flipgate.yml"),
            "--out", str(directory / "out"), "--cache", str(directory / "cache")]


def clean_environment(home: Path, **extra: str) -> dict[str, str]:
    """The process environment without any sign-in or key of the machine running the tests."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AZURE_", "IDENTITY_", "MSI_", "ACTIONS_ID_TOKEN", "OPENAI_"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin",
               PF_LOGGING_LEVEL="CRITICAL", **extra)
    return env


def run_flipgate(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flipgate", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def assert_never_written(tokens: list[str], directory: Path, *streams: str) -> None:
    """No token or assertion in any file flipgate wrote (its outputs, its response cache),
    nor in what it printed."""
    assert tokens
    outputs = [path for path in (directory / "out").rglob("*") if path.is_file()]
    cached = [path for path in (directory / "cache").rglob("*") if path.is_file()]
    assert any(path.name == "report.json" for path in outputs)
    assert any(path.name == "comment.md" for path in outputs)
    assert cached, "the cache holds the replies"
    files = outputs + cached
    for token in tokens:
        for path in files:
            assert token not in path.read_text(errors="replace"), path
        for stream in streams:
            assert token not in stream


def error_line(stderr: str) -> str:
    """The one line that says why the run stopped (the other is where the report went)."""
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("flipgate: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def assert_only_bearer(model: FakeOpenAI, tokens: list[str]) -> None:
    sent = model.chat_requests()
    assert sent
    for request in sent:
        auth = request.headers.get("Authorization", "")
        assert auth.startswith("Bearer ") and auth[7:] in tokens
        assert "Api-Key" not in request.headers and "api-key" not in request.headers


def test_a_managed_identity_signs_the_judge_in_and_its_token_is_written_nowhere(
        model: FakeOpenAI, tmp_path: Path) -> None:
    identity = FakeManagedIdentity()
    identity.start()
    try:
        model.bearer_tokens = identity.issued
        env = clean_environment(tmp_path / "home", IDENTITY_ENDPOINT=identity.endpoint,
                                IDENTITY_HEADER=identity.header)
        result = run_flipgate(write_run(tmp_path, model), env)
        assert result.returncode == 0, result.stderr
        report = json.loads((tmp_path / "out" / "report.json").read_text())
        assert report["judge"]["auth"] == "entra" and report["counts"]["errors"] == 0
        assert {r["args"]["resource"] for r in identity.requests} == {"https://cognitiveservices.azure.com"}
        assert_only_bearer(model, identity.issued)
        assert_never_written(identity.issued + [identity.header], tmp_path, result.stdout, result.stderr)
    finally:
        identity.stop()


def test_a_token_the_model_server_does_not_accept_stops_the_run_with_exit_3(
        model: FakeOpenAI, tmp_path: Path) -> None:
    identity = FakeManagedIdentity()
    identity.start()
    try:
        model.bearer_tokens = {"a-token-nobody-issued"}
        env = clean_environment(tmp_path / "home", IDENTITY_ENDPOINT=identity.endpoint,
                                IDENTITY_HEADER=identity.header)
        result = run_flipgate(write_run(tmp_path, model), env)
        assert result.returncode == 3
        assert "HTTP 401" in error_line(result.stderr)
        assert identity.issued and all(token not in result.stderr for token in identity.issued)
    finally:
        identity.stop()


def test_a_workload_identity_signs_in_at_an_authority_behind_a_certificate_the_test_trusts(
        model: FakeOpenAI, tmp_path: Path) -> None:
    certificate = TestCertificate(tmp_path / "tls")
    federated = "federated-" + "k8s-service-account-token"
    token_file = tmp_path / "federated-token"
    token_file.write_text(federated)
    authority = FakeAuthority(certificate, tenant=TENANT, client_id=CLIENT,
                              assertions=lambda: {federated})
    authority.start()
    try:
        model.bearer_tokens = authority.issued
        env = clean_environment(tmp_path / "home", AZURE_FEDERATED_TOKEN_FILE=str(token_file),
                                AZURE_CLIENT_ID=CLIENT, AZURE_TENANT_ID=TENANT,
                                AZURE_AUTHORITY_HOST=authority.url,
                                REQUESTS_CA_BUNDLE=str(certificate.cert_file),
                                SSL_CERT_FILE=str(certificate.cert_file))
        result = run_flipgate(write_run(tmp_path, model), env)
        assert result.returncode == 0, result.stderr
        assert authority.requests[0]["form"]["scope"] == "https://cognitiveservices.azure.com/.default"
        assert_only_bearer(model, authority.issued)
        assert_never_written(authority.issued + [federated], tmp_path, result.stdout, result.stderr)
    finally:
        authority.stop()


def test_githubs_oidc_token_is_exchanged_for_an_entra_token_through_the_app_registration(
        model: FakeOpenAI, tmp_path: Path) -> None:
    """The action's path: the runner's ID token endpoint and the app registration's ids
    (renewal during a long run: tests/integration/test_entra.py)."""
    certificate = TestCertificate(tmp_path / "tls")
    github = FakeGitHubOIDC()
    github.start()
    authority = FakeAuthority(certificate, tenant=TENANT, client_id=CLIENT,
                              assertions=lambda: set(github.issued))
    authority.start()
    try:
        model.bearer_tokens = authority.issued
        env = clean_environment(tmp_path / "home", ACTIONS_ID_TOKEN_REQUEST_URL=github.request_url,
                                ACTIONS_ID_TOKEN_REQUEST_TOKEN=github.request_token,
                                AZURE_CLIENT_ID=CLIENT, AZURE_TENANT_ID=TENANT,
                                AZURE_AUTHORITY_HOST=authority.url,
                                REQUESTS_CA_BUNDLE=str(certificate.cert_file),
                                SSL_CERT_FILE=str(certificate.cert_file))
        result = run_flipgate(write_run(tmp_path, model), env)
        assert result.returncode == 0, result.stderr
        assertions = [r["form"]["client_assertion"] for r in authority.requests]
        assert assertions and set(assertions) <= set(github.issued)
        assert {r["form"]["client_id"] for r in authority.requests} == {CLIENT}
        assert {r["args"]["audience"] for r in github.requests} == {"api://AzureADTokenExchange"}
        assert_only_bearer(model, authority.issued)
        assert_never_written(authority.issued + github.issued + [github.request_token], tmp_path,
                             result.stdout, result.stderr)
    finally:
        github.stop()
        authority.stop()


def test_an_assertion_entra_does_not_trust_is_one_line_exit_3_naming_the_federated_credential(
        model: FakeOpenAI, tmp_path: Path) -> None:
    certificate = TestCertificate(tmp_path / "tls")
    github = FakeGitHubOIDC()
    github.start()
    authority = FakeAuthority(certificate, tenant=TENANT, client_id=CLIENT, assertions=set)
    authority.start()
    try:
        env = clean_environment(tmp_path / "home", ACTIONS_ID_TOKEN_REQUEST_URL=github.request_url,
                                ACTIONS_ID_TOKEN_REQUEST_TOKEN=github.request_token,
                                AZURE_CLIENT_ID=CLIENT, AZURE_TENANT_ID=TENANT,
                                AZURE_AUTHORITY_HOST=authority.url,
                                REQUESTS_CA_BUNDLE=str(certificate.cert_file))
        result = run_flipgate(write_run(tmp_path, model), env)
        assert result.returncode == 3
        line = error_line(result.stderr)
        assert "AADSTS700213" in line and CLIENT in line and "OIDC" in line
        assert "federated credential" in line
        assert not model.chat_requests()
        assert all(token not in result.stderr for token in github.issued)
    finally:
        github.stop()
        authority.stop()


class _NoIdentity(_Server):
    """A managed identity endpoint (IMDS) on a machine with no identity assigned."""

    def handle(self, request):  # type: ignore[no-untyped-def]
        return _json(400, {"error": "invalid_request", "error_description": "Identity not found"})


def test_no_credential_found_is_one_line_exit_3_naming_what_was_tried_and_the_fix(
        model: FakeOpenAI, tmp_path: Path) -> None:
    imds = _NoIdentity()
    imds.start()
    try:
        env = clean_environment(tmp_path / "home", AZURE_POD_IDENTITY_AUTHORITY_HOST=imds.url)
        result = run_flipgate(write_run(tmp_path, model), env)
        assert result.returncode == 3
        line = error_line(result.stderr)
        assert "EnvironmentCredential" in line and "ManagedIdentityCredential" in line
        assert "AzureCliCredential" in line and "az login" in line
        assert "azure-client-id" in line and "id-token: write" in line
        assert not model.requests
    finally:
        imds.stop()


@pytest.mark.azure
@pytest.mark.skipif(importlib.util.find_spec("azure.ai.evaluation") is None,
                    reason="the optional azure-ai-evaluation package is not installed")
def test_the_azure_eval_engine_signs_in_with_the_same_credential(model: FakeOpenAI, tmp_path: Path) -> None:
    identity = FakeManagedIdentity()
    identity.start()
    try:
        model.bearer_tokens = identity.issued
        env = clean_environment(tmp_path / "home", IDENTITY_ENDPOINT=identity.endpoint,
                                IDENTITY_HEADER=identity.header)
        result = run_flipgate(write_run(tmp_path, model, engine="azure-ai-evaluation"), env)
        assert result.returncode == 0, result.stderr
        report = json.loads((tmp_path / "out" / "report.json").read_text())
        assert report["judge"]["auth"] == "entra" and report["judge"]["engine"] == "azure-ai-evaluation"
        # The SDK's own groundedness requests reached the server, signed in.
        sdk = [r for r in model.chat_requests("groundedness") if r.deployment == DEPLOYMENT]
        assert len(sdk) >= 2 * len(CASES)
        assert_only_bearer(model, identity.issued)
        assert_never_written(identity.issued, tmp_path, result.stdout, result.stderr)
    finally:
        identity.stop()
