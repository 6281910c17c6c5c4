"""Entra ID sign-in (llm/entra.py) in-process: renewal during a long run, the action's
inputs, and the failures that must be one line and exit 3."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.errors import InputError
from flipgate.github.inputs import Settings as ActionSettings
from flipgate.github.inputs import export_model_keys
from flipgate.llm.endpoints import Endpoint, LazyClient
from flipgate.llm.entra import EntraSignIn, SignInError
from flipgate.settings import Settings

from support.action_harness import Harness, RecordingCheck
from support.entra import FakeAuthority, FakeGitHubOIDC, TestCertificate

pytestmark = pytest.mark.skipif(importlib.util.find_spec("azure.identity") is None,
                                reason="azure-identity (flipgate[azure]) is not installed")

TENANT, CLIENT = "tenant-0001", "client-0001"


@pytest.fixture
def certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestCertificate:
    certificate = TestCertificate(tmp_path / "tls")
    certificate.trust(monkeypatch)
    return certificate


@pytest.fixture
def github() -> Iterator[FakeGitHubOIDC]:
    server = FakeGitHubOIDC()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def oidc_settings(github: FakeGitHubOIDC, authority: FakeAuthority, **extra: str) -> Settings:
    return Settings.from_environ({"ACTIONS_ID_TOKEN_REQUEST_URL": github.request_url,
                                  "ACTIONS_ID_TOKEN_REQUEST_TOKEN": github.request_token,
                                  "AZURE_CLIENT_ID": CLIENT, "AZURE_TENANT_ID": TENANT,
                                  "AZURE_AUTHORITY_HOST": authority.url, **extra})


def test_an_expired_token_is_renewed_with_a_fresh_assertion_from_github(
        certificate: TestCertificate, github: FakeGitHubOIDC) -> None:
    """A long run outlives its Entra token: the provider the openai client holds asks for a
    new one, and the credential asks GitHub for a new OIDC token to exchange."""
    authority = FakeAuthority(certificate, tenant=TENANT, client_id=CLIENT,
                              assertions=lambda: set(github.issued), expires_in=2)
    authority.start()
    try:
        sign_in = EntraSignIn(oidc_settings(github, authority))
        assert sign_in.federated
        provider = sign_in.token_provider()
        first = provider()
        assert provider() == first            # still valid: no new request
        time.sleep(2.2)  # the token's real 2 s: azure-identity and MSAL read the wall clock
        second = provider()
        assert second != first and [first, second] == authority.issued
        assertions = [r["form"]["client_assertion"] for r in authority.requests]
        assert assertions == github.issued and len(set(assertions)) == 2
        sign_in.close()
    finally:
        authority.stop()


def test_a_job_without_id_token_permission_is_told_what_to_grant(
        certificate: TestCertificate, github: FakeGitHubOIDC) -> None:
    authority = FakeAuthority(certificate, tenant=TENANT, client_id=CLIENT, assertions=set)
    authority.start()
    try:
        settings = oidc_settings(github, authority, ACTIONS_ID_TOKEN_REQUEST_TOKEN="not-the-runners")
        with pytest.raises(SignInError) as caught:
            EntraSignIn(settings).check()
        message = str(caught.value)
        assert "HTTP 401" in message and "Bad credentials" in message and "id-token: write" in message
        assert "\n" not in message and "not-the-runners" not in message
        assert not authority.requests
    finally:
        authority.stop()


def test_the_action_hands_its_inputs_to_the_sign_in(harness: Harness, check: RecordingCheck,
                                                    certificate: TestCertificate,
                                                    github: FakeGitHubOIDC) -> None:
    """`azure-client-id` / `azure-tenant-id` and the runner's OIDC variables reach the check,
    whose sign-in exchanges GitHub's token at the authority; neither token reaches the log."""
    authority = FakeAuthority(certificate, tenant=TENANT, client_id=CLIENT,
                              assertions=lambda: set(github.issued))
    authority.start()
    tokens: list[str] = []

    def signing_check(**kwargs: Any) -> Any:
        sign_in = EntraSignIn(kwargs["settings"])
        assert sign_in.federated
        tokens.append(sign_in.credential().get_token("https://cognitiveservices.azure.com/.default").token)
        return check(**kwargs)

    try:
        harness.pull_event()
        code = harness.run(signing_check, **{
            "INPUT_AZURE-CLIENT-ID": CLIENT, "INPUT_AZURE-TENANT-ID": TENANT,
            "ACTIONS_ID_TOKEN_REQUEST_URL": github.request_url,
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": github.request_token,
            "AZURE_AUTHORITY_HOST": authority.url})
        assert code == 0
        assert tokens == authority.issued and len(github.issued) == 1
        log = harness.log.getvalue()
        for secret in [*tokens, *github.issued, github.request_token]:
            assert secret not in log
    finally:
        authority.stop()


@pytest.mark.parametrize("given", [{"INPUT_AZURE-CLIENT-ID": CLIENT}, {"INPUT_AZURE-TENANT-ID": TENANT}])
def test_one_of_the_two_app_registration_inputs_is_bad_input(given: dict[str, str]) -> None:
    environ = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": "/e.json",
               "GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "t", **given}
    with pytest.raises(InputError) as caught:
        ActionSettings.from_env(environ)
    assert "needs both" in str(caught.value)


def test_the_app_registration_inputs_are_exported_where_the_sign_in_reads_them() -> None:
    environ = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": "/e.json",
               "GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "t",
               "INPUT_AZURE-CLIENT-ID": CLIENT, "INPUT_AZURE-TENANT-ID": TENANT}
    settings = ActionSettings.from_env(environ)
    exported = export_model_keys(settings, environ, mask=lambda value: None)
    assert {"AZURE_CLIENT_ID", "AZURE_TENANT_ID"} <= set(exported)
    run = Settings.from_environ(environ)
    assert (run.azure_client_id, run.azure_tenant_id) == (CLIENT, TENANT)


def test_without_azure_identity_auth_entra_is_one_line_and_exit_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "azure.identity", None)  # `import azure.identity` fails
    with pytest.raises(SignInError) as caught:
        EntraSignIn(Settings()).credential()
    assert "azure-identity" in str(caught.value) and "flipgate[azure]" in str(caught.value)

    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "query": "q?", "context": "c"}) + "\n")
    for name in ("base", "cand"):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps({"id": "a", "response": "r"}) + "\n")
    (tmp_path / "f.yml").write_text("version: 1\ncases: cases.jsonl\njudge:\n  provider: azure\n"
                                    "  model: d\n  auth: entra\n  azure_endpoint: http://127.0.0.1:9\n"
                                    "  api_version: '2024-10-21'\n")
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(cli, ["gate", "--cases", str(tmp_path / "cases.jsonl"),
                                      "--baseline", str(tmp_path / "base.jsonl"),
                                      "--candidate", str(tmp_path / "cand.jsonl"),
                                      "--config", str(tmp_path / "f.yml"), "--out", str(tmp_path / "out"),
                                      "--no-cache"])
    assert result.exit_code == 3, result.output
    errors = [line for line in result.output.splitlines() if "error" in line]
    assert len(errors) == 1 and "azure-identity" in errors[0] and "Traceback" not in result.output


def test_the_sign_in_is_part_of_every_cache_key_and_keys_need_no_sign_in() -> None:
    keyed = Endpoint(kind="azure", base_url="https://r.openai.azure.com", api_version="v", deployment="d")
    entra = Endpoint(kind="azure", base_url="https://r.openai.azure.com", api_version="v", deployment="d",
                     auth="entra")
    assert keyed.identity() != entra.identity() and entra.identity()["auth"] == "entra"
    with pytest.raises(InputError):
        LazyClient(entra, settings=Settings())  # entra without a sign-in: never a key instead
    with pytest.raises(InputError):
        LazyClient(Endpoint(kind="openai", base_url="http://x/v1", auth="entra"), settings=Settings(),
                   sign_in=EntraSignIn(Settings()))


def test_an_action_without_id_token_permission_is_told_to_grant_it() -> None:
    """azure-client-id given, but the runner offers no OIDC token (no `id-token: write`)."""
    settings = Settings.from_environ({"GITHUB_ACTIONS": "true", "AZURE_CLIENT_ID": CLIENT,
                                      "AZURE_TENANT_ID": TENANT})
    with pytest.raises(SignInError) as caught:
        EntraSignIn(settings).check()
    assert "id-token: write" in str(caught.value) and "\n" not in str(caught.value)


def test_a_retry_bound_that_is_not_a_number_is_one_line_naming_the_variable() -> None:
    """FLIPGATE_ENTRA_RETRIES bounds azure-identity's retries of an authority that does not
    answer (tests/security/test_entra_signin_failures.py sets 0); nonsense there is bad input."""
    settings = Settings.from_environ({"FLIPGATE_ENTRA_RETRIES": "many", "AZURE_CLIENT_ID": CLIENT,
                                      "AZURE_TENANT_ID": TENANT})
    with pytest.raises(InputError) as caught:
        EntraSignIn(settings).check()
    assert "FLIPGATE_ENTRA_RETRIES" in str(caught.value) and "'many'" in str(caught.value)
