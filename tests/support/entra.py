"""Loopback Microsoft Entra ID services that azure-identity really calls.

- `TestCertificate`: a self-signed certificate for 127.0.0.1 (made with `cryptography`),
  trusted by the process through REQUESTS_CA_BUNDLE / SSL_CERT_FILE.
- `FakeAuthority`: an Entra authority over HTTPS (`AZURE_AUTHORITY_HOST`): the token
  endpoint `/{tenant}/oauth2/v2.0/token` for client assertions (workload identity, GitHub's
  OIDC token), checking tenant, client, assertion and scope.
- `FakeGitHubOIDC`: the runner's ID token endpoint (`ACTIONS_ID_TOKEN_REQUEST_URL`),
  checking its request token and the audience.
- `FakeManagedIdentity`: App Service's managed identity endpoint (`IDENTITY_ENDPOINT` /
  `IDENTITY_HEADER`), checking the header.
- `FakeAIProject`: an Azure AI project over HTTPS that answers GroundednessProEvaluator's
  `sync_evals:run`, checking the bearer token.

Every token handed out is fresh and random, so a test can look for it anywhere it must not be.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import secrets
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from werkzeug.wrappers import Request, Response

from support.loopback import LoopbackHTTP

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def _json(status: int, body: Any) -> Response:
    return Response(json.dumps(body), status=status, mimetype="application/json")


def new_token(kind: str) -> str:
    return f"{kind}-{secrets.token_urlsafe(24)}"


@dataclass
class TestCertificate:
    """A self-signed certificate and key for 127.0.0.1, written to `directory`."""

    directory: Path
    cert_file: Path = field(init=False)
    key_file: Path = field(init=False)

    __test__ = False  # not a pytest class

    def __post_init__(self) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
                    critical=False)
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .sign(key, hashes.SHA256()))
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cert_file = self.directory / "loopback-cert.pem"
        self.key_file = self.directory / "loopback-key.pem"
        self.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        self.key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                    serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption()))

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def trust(self, monkeypatch: Any) -> None:
        """Make this process (requests, httpx, ssl) and its children trust the certificate."""
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(self.cert_file))
        monkeypatch.setenv("SSL_CERT_FILE", str(self.cert_file))


class _Server:
    """A loopback WSGI service that records what it was asked."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None):
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.issued: list[str] = []
        self._http = LoopbackHTTP(self._wsgi, ssl_context=ssl_context)
        self.url = ""

    def start(self) -> str:
        self.url = self._http.start()
        return self.url

    def stop(self) -> None:
        self._http.stop()

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        request = Request(environ)
        with self._lock:
            self.requests.append({"method": request.method, "path": request.path,
                                  "args": dict(request.args), "headers": dict(request.headers),
                                  "form": dict(request.form)})
        return self.handle(request)(environ, start_response)

    def issue(self, kind: str) -> str:
        token = new_token(kind)
        with self._lock:
            self.issued.append(token)
        return token

    def handle(self, request: Request) -> Response:
        raise NotImplementedError


class FakeAuthority(_Server):
    """Entra ID's token endpoint for client assertions, over HTTPS."""

    def __init__(self, certificate: TestCertificate, *, tenant: str, client_id: str,
                 assertions: Callable[[], set[str]], expires_in: int = 3600):
        super().__init__(certificate.server_context())
        self.tenant, self.client_id = tenant, client_id
        self.assertions = assertions   # the assertions the federated credential trusts now
        self.expires_in = expires_in

    def handle(self, request: Request) -> Response:
        if request.method != "POST" or request.path != f"/{self.tenant}/oauth2/v2.0/token":
            return _json(404, {"error": "invalid_tenant",
                               "error_description": f"AADSTS90002: Tenant not found ({request.path})"})
        form = request.form
        if form.get("grant_type") != "client_credentials" or form.get("client_id") != self.client_id \
                or form.get("client_assertion_type") != ASSERTION_TYPE:
            return _json(400, {"error": "unauthorized_client",
                               "error_description": "AADSTS700016: Application not found"})
        if form.get("client_assertion") not in self.assertions():
            return _json(400, {"error": "invalid_client",
                               "error_description": "AADSTS700213: No matching federated identity "
                                                    "record found for presented assertion subject"})
        if form.get("scope") not in ("https://cognitiveservices.azure.com/.default",
                                     "https://ai.azure.com/.default"):
            return _json(400, {"error": "invalid_scope", "error_description": "AADSTS70011"})
        return _json(200, {"token_type": "Bearer", "expires_in": self.expires_in,
                           "ext_expires_in": self.expires_in,
                           "access_token": self.issue("entra-access")})


class FakeGitHubOIDC(_Server):
    """The runner's ID token endpoint: a fresh token per request for the right audience."""

    def __init__(self) -> None:
        super().__init__()
        self.request_token = new_token("actions-request")

    @property
    def request_url(self) -> str:
        return f"{self.url}/_apis/distributedtask/token?api-version=2.0"

    def handle(self, request: Request) -> Response:
        if request.headers.get("Authorization") != f"Bearer {self.request_token}":
            return _json(401, {"message": "Bad credentials"})
        if request.args.get("api-version") != "2.0" \
                or request.args.get("audience") != "api://AzureADTokenExchange":
            return _json(400, {"message": f"unexpected audience {request.args.get('audience')!r}"})
        return _json(200, {"count": 1, "value": self.issue("github-oidc")})


class FakeManagedIdentity(_Server):
    """App Service's managed identity endpoint (api-version 2019-08-01)."""

    def __init__(self) -> None:
        super().__init__()
        self.header = new_token("identity-header")

    @property
    def endpoint(self) -> str:
        return f"{self.url}/msi/token"

    def handle(self, request: Request) -> Response:
        if request.headers.get("X-IDENTITY-HEADER") != self.header:
            return _json(401, {"error": "unauthorized"})
        resource = request.args.get("resource")
        if request.path != "/msi/token" or request.args.get("api-version") != "2019-08-01" \
                or resource not in ("https://cognitiveservices.azure.com", "https://ai.azure.com"):
            return _json(400, {"error": "invalid_request", "error_description": f"resource {resource}"})
        return _json(200, {"access_token": self.issue("managed-identity"),
                           "expires_on": str(int(time.time()) + 3600), "resource": resource,
                           "token_type": "Bearer", "client_id": "loopback-identity"})

    def use(self, monkeypatch: Any) -> None:
        monkeypatch.setenv("IDENTITY_ENDPOINT", self.endpoint)
        monkeypatch.setenv("IDENTITY_HEADER", self.header)


class FakeAIProject(_Server):
    """An Azure AI project answering GroundednessPro's `sync_evals:run`, over HTTPS.

    `verdict(query, context, response)` returns the service's groundedness score (the SDK's
    label is score >= 5), or an (HTTP status, error message) pair to refuse with."""

    def __init__(self, certificate: TestCertificate, *, tokens: Callable[[], list[str]],
                 project: str = "flipgate-proj"):
        super().__init__(certificate.server_context())
        self.project = project
        self.tokens = tokens     # the bearer tokens the authority has issued
        self.verdict: Callable[[str, str, str], Any] = lambda query, context, response: 5
        self.bodies: list[dict[str, Any]] = []

    @property
    def endpoint(self) -> str:
        return f"{self.url}/api/projects/{self.project}"

    def handle(self, request: Request) -> Response:
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or auth[7:] not in self.tokens():
            return _json(401, {"error": {"code": "Unauthorized", "message": "invalid bearer token"}})
        if request.method != "POST" or request.path != f"/api/projects/{self.project}/sync_evals:run" \
                or request.args.get("api-version") != "2025-11-15-preview":
            return _json(404, {"error": {"code": "NotFound", "message": f"no route {request.path}"}})
        body = json.loads(request.get_data() or b"{}")
        self.bodies.append(body)
        item = body["data_source"]["source"]["content"]["item"]
        criteria = body["testing_criteria"][0]
        if criteria["evaluator_name"] != "builtin.groundedness":
            return _json(400, {"error": {"code": "BadRequest", "message": "unknown evaluator"}})
        answer = self.verdict(item.get("query"), item.get("context"), item.get("response"))
        if isinstance(answer, tuple):
            status, message = answer
            return _json(status, {"error": {"code": "ServiceUnavailable", "message": message}})
        result = {"type": "azure_ai_evaluator", "name": criteria["name"],
                  "metric": "builtin.groundedness", "score": answer,
                  "reason": f"the service read {len(item.get('context') or '')} characters of context",
                  "label": "pass" if answer >= 5 else "fail", "threshold": 5, "passed": answer >= 5}
        return _json(200, {"object": "eval.run.output_item", "id": "item-1", "run_id": "run-1",
                           "eval_id": "eval-1", "created_at": int(time.time()),
                           "status": "completed", "datasource_item_id": 0,
                           "datasource_item": item, "results": [result]})
