"""Every way azure-identity can fail to sign in is one line naming the authority, exit 3,
no traceback: an `http://` authority, one that is not a URL, a host nobody answers on, a
certificate nobody trusts. Both sign-ins: a workload identity (the CLI, through
DefaultAzureCredential) and GitHub's OIDC token exchanged for an Entra token (the action's
path, ClientAssertionCredential). The real CLI in its own process, the real azure-identity."""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from end_to_end.test_entra_signin import clean_environment, error_line, run_flipgate, write_run

from support.entra import FakeAuthority, FakeGitHubOIDC, TestCertificate
from support.openai_server import FakeOpenAI

pytestmark = pytest.mark.skipif(importlib.util.find_spec("azure.identity") is None,
                                reason="azure-identity (flipgate[azure]) is not installed")

TENANT = "7f2c0d1e-tenant"
CLIENT = "3b9a6c4d-client"


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.start()
    server.on_groundedness(lambda query, context, response, call: 5)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def github() -> Iterator[FakeGitHubOIDC]:
    server = FakeGitHubOIDC()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _sign_in_env(tmp_path: Path, way: str, authority: str, github: FakeGitHubOIDC,
                 **extra: str) -> dict[str, str]:
    if way == "workload identity":
        token_file = tmp_path / "federated-token"
        token_file.write_text("federated-k8s-token")
        ids = {"AZURE_FEDERATED_TOKEN_FILE": str(token_file)}
    else:
        ids = {"ACTIONS_ID_TOKEN_REQUEST_URL": github.request_url,
               "ACTIONS_ID_TOKEN_REQUEST_TOKEN": github.request_token}
    # No retries of a sign-in nobody answers: the line is the same after azure-core's three
    # (test_entra.py checks the variable), which would spend about ten seconds a test asleep.
    return clean_environment(tmp_path / "home", AZURE_CLIENT_ID=CLIENT, AZURE_TENANT_ID=TENANT,
                             AZURE_AUTHORITY_HOST=authority, FLIPGATE_ENTRA_RETRIES="0",
                             **ids, **extra)


WAYS = ["workload identity", "GitHub OIDC"]


def _assert_one_line_exit_3(result, model: FakeOpenAI, authority: str) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode == 3, result.stderr
    line = error_line(result.stderr)
    assert "auth entra" in line and authority in line
    assert not model.chat_requests()
    return line


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("authority", ["http://login.example.invalid", "not a url at all",
                                       "ftp://login.example.invalid/"])
def test_an_authority_azure_identity_refuses_is_one_line_naming_it(
        model: FakeOpenAI, github: FakeGitHubOIDC, tmp_path: Path, way: str, authority: str) -> None:
    env = _sign_in_env(tmp_path, way, authority, github)
    _assert_one_line_exit_3(run_flipgate(write_run(tmp_path, model), env), model, authority)


@pytest.mark.parametrize("way", WAYS)
def test_an_authority_nobody_answers_on_is_one_line_naming_it(
        model: FakeOpenAI, github: FakeGitHubOIDC, tmp_path: Path, way: str) -> None:
    authority = f"https://127.0.0.1:{_closed_port()}"
    env = _sign_in_env(tmp_path, way, authority, github)
    _assert_one_line_exit_3(run_flipgate(write_run(tmp_path, model), env), model, authority)


@pytest.fixture
def certificate(tmp_path: Path) -> TestCertificate:
    return TestCertificate(tmp_path / "tls")


@pytest.fixture
def authority(certificate: TestCertificate, github: FakeGitHubOIDC) -> Iterator[FakeAuthority]:
    """An Entra authority on HTTPS under `certificate`, which this machine does not trust
    unless told to, accepting both ways' assertions."""
    served = FakeAuthority(certificate, tenant=TENANT, client_id=CLIENT,
                           assertions=lambda: {"federated-k8s-token", *github.issued})
    served.start()
    try:
        yield served
    finally:
        served.stop()


@pytest.mark.parametrize("way", WAYS)
def test_an_authority_with_a_certificate_nobody_trusts_is_one_line_naming_it(
        model: FakeOpenAI, github: FakeGitHubOIDC, authority: FakeAuthority, tmp_path: Path,
        way: str) -> None:
    env = _sign_in_env(tmp_path, way, authority.url, github)   # its certificate not trusted
    _assert_one_line_exit_3(run_flipgate(write_run(tmp_path, model), env), model, authority.url)
    assert not authority.issued


@pytest.mark.parametrize("way", WAYS)
def test_control_the_same_authority_trusted_signs_in(
        model: FakeOpenAI, github: FakeGitHubOIDC, certificate: TestCertificate,
        authority: FakeAuthority, tmp_path: Path, way: str) -> None:
    model.bearer_tokens = authority.issued
    trusted = str(certificate.cert_file)
    env = _sign_in_env(tmp_path, way, authority.url, github,
                       REQUESTS_CA_BUNDLE=trusted, SSL_CERT_FILE=trusted)
    result = run_flipgate(write_run(tmp_path, model), env)
    assert result.returncode == 0, result.stderr
    assert authority.issued and model.chat_requests()
