"""What GitHub's API answers, as an attacker between flipgate and its GitHub host (or a
hostile GitHub Enterprise) could shape it: a reply that inflates past the cap (issue 28).
The real PyGithub client against the loopback GitHub server; the cap is set small here
(the same code path as the real one) so a test serves megabytes, not gigabytes."""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest

import flipgate.github.api as api_module
from flipgate.github.api import GitHubError, RepoAPI, connect

from support.action_harness import PR, Harness, RecordingCheck
from support.bombs import WBITS, MiB, bomb, header_for, traced_peak
from support.github_server import FakeGitHub

BASE, HEAD = "b" * 40, "c" * 40
SMALL_CAP = 4 * MiB
# The cap and urllib3's own buffers (measured: 4.1 MiB, at times 13.6 MiB), far below the
# 64 MiB every bomb here inflates to.
HELD_AT_MOST = 5 * SMALL_CAP


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api_module, "MAX_GITHUB_REPLY_BYTES", SMALL_CAP, raising=False)


def api_for(server: FakeGitHub) -> RepoAPI:
    server.add_pull(7, base_sha=BASE, head_sha=HEAD)
    return RepoAPI(connect(server.api_url, server.token, pause_between_calls=False),
                   server.repository)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_a_reply_that_inflates_past_the_cap_is_an_error_in_bounded_memory(
        github_server: FakeGitHub, small_cap: None, encoding: str) -> None:
    api = api_for(github_server)
    github_server.fail("GET", "/pulls/7", 200, body=bomb(encoding, 16 * SMALL_CAP),
                       headers={"Content-Encoding": header_for(encoding)})

    with traced_peak() as traced, pytest.raises(GitHubError) as raised:
        api.pull(7)

    assert str(raised.value) == (f"GET pull request: HTTP 200: GitHub's reply inflates past "
                                 f"{SMALL_CAP:,} bytes")
    assert traced["peak"] < HELD_AT_MOST


def test_a_rate_limit_refusal_that_inflates_past_the_cap_is_an_error_in_bounded_memory(
        github_server: FakeGitHub, small_cap: None) -> None:
    # A 403 without retry-after: PyGithub reads its body to tell a rate limit from a refusal.
    api = api_for(github_server)
    github_server.fail("GET", "/pulls/7", 403, body=bomb("gzip", 16 * SMALL_CAP),
                       headers={"Content-Encoding": "gzip"})

    with traced_peak() as traced, pytest.raises(GitHubError, match="inflates past"):
        api.pull(7)
    assert traced["peak"] < HELD_AT_MOST


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_control_a_compressed_reply_under_the_cap_is_read(github_server: FakeGitHub,
                                                          small_cap: None, encoding: str) -> None:
    api = api_for(github_server)
    packer = zlib.compressobj(6, zlib.DEFLATED, WBITS[encoding])
    words = json.dumps({"message": "Not Found", "status": "404"}).encode()
    github_server.fail("GET", "/pulls/7", 404, body=packer.compress(words) + packer.flush(),
                       headers={"Content-Encoding": header_for(encoding)})

    with pytest.raises(GitHubError) as raised:
        api.pull(7)
    assert str(raised.value) == "GET pull request: HTTP 404: Not Found"


def test_github_is_asked_only_for_encodings_flipgate_bounds(github_server: FakeGitHub) -> None:
    api = api_for(github_server)
    assert api.pull(7).head_sha == HEAD
    assert github_server.requests[-1].headers["Accept-Encoding"] == "gzip, deflate"


def test_a_bomb_before_the_check_leaves_error_never_pending(
        harness: Harness, check: RecordingCheck, small_cap: None) -> None:
    harness.pull_event()
    harness.server.fail("GET", f"/issues/{PR}/comments", 200, body=bomb("gzip", 16 * SMALL_CAP),
                        headers={"Content-Encoding": "gzip"})

    assert harness.run(check) == 3

    assert check.calls == []
    final = harness.final_status()
    assert final["state"] == "error"
    assert "inflates past" in harness.log.getvalue()


def test_a_bomb_after_the_check_leaves_error_never_pending(
        harness: Harness, check: RecordingCheck, small_cap: None) -> None:
    harness.pull_event()

    def bombed_check(**kwargs: Any) -> Any:
        harness.server.fail("GET", f"/issues/{PR}/comments", 200,
                            body=bomb("gzip", 16 * SMALL_CAP), headers={"Content-Encoding": "gzip"})
        return check(**kwargs)

    assert harness.run(bombed_check) == 3

    states = [s["state"] for s in harness.server.statuses_for(harness.head)]
    assert states == ["pending", "error"]
