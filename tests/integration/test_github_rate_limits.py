"""GitHub's rate limits, as GitHub sends them, through the real PyGithub client
(issue 22, item 6): a wait that fits the bound is waited, a longer one is an error
naming the limit at once, and every wait is counted, never a silent hang.
Headers and bodies: docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from flipgate.github.api import (
    RATE_LIMIT_BUDGET_SECONDS,
    RATE_LIMIT_RETRIES,
    GitHubError,
    RepoAPI,
    connect,
)

from support.action_harness import PR, Harness, RecordingCheck
from support.github_server import FakeGitHub

BASE, HEAD = "b" * 40, "c" * 40
PRIMARY = ("API rate limit exceeded for installation ID 1234. If you reach out to GitHub "
           "Support for help, please include the request ID 0000:0000.")
SECONDARY = ("You have exceeded a secondary rate limit. Please wait a few minutes before you "
             "try again. If you reach out to GitHub Support for help, please include the "
             "request ID 0000:0000.")


def api_for(server: FakeGitHub, *, wait: float = 60) -> RepoAPI:
    server.add_pull(7, base_sha=BASE, head_sha=HEAD)
    client = connect(server.api_url, server.token, pause_between_calls=False,
                     rate_limit_wait=wait)
    return RepoAPI(client, server.repository)


def primary_headers(reset_in: float) -> dict[str, str]:
    return {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
            "X-RateLimit-Used": "5000", "X-RateLimit-Resource": "core",
            "X-RateLimit-Reset": str(int(time.time() + reset_in))}


def pull_requests(server: FakeGitHub) -> int:
    return len(server.requests_to("GET", "/pulls/7"))


def test_a_primary_limit_that_resets_in_an_hour_is_an_error_at_once(
        github_server: FakeGitHub) -> None:
    api = api_for(github_server)
    github_server.fail("GET", "/pulls/7", 403, message=PRIMARY, headers=primary_headers(3600))

    with pytest.raises(GitHubError) as raised:
        api.pull(7)

    message = str(raised.value)
    assert "API rate limit exceeded" in message and "primary rate limit" in message
    assert "flipgate waits" in message and pull_requests(github_server) == 1


def test_a_primary_limit_that_has_reset_is_retried(github_server: FakeGitHub) -> None:
    api = api_for(github_server)
    github_server.fail("GET", "/pulls/7", 403, message=PRIMARY, headers=primary_headers(-5))

    assert api.pull(7).head_sha == HEAD
    assert pull_requests(github_server) == 2


@pytest.mark.parametrize("status", [403, 429])
def test_a_secondary_limit_asking_for_longer_than_the_bound_is_an_error_at_once(
        github_server: FakeGitHub, status: int) -> None:
    api = api_for(github_server)
    github_server.fail("GET", "/pulls/7", status, message=SECONDARY,
                       headers={"Retry-After": "3600"})

    with pytest.raises(GitHubError) as raised:
        api.pull(7)

    message = str(raised.value)
    assert "secondary rate limit" in message and 'retry-after "3600": 3,600 s' in message
    assert raised.value.status == status and pull_requests(github_server) == 1


@pytest.mark.parametrize("status", [403, 429])
def test_a_short_retry_after_is_waited_and_the_call_succeeds(github_server: FakeGitHub,
                                                             status: int) -> None:
    api = api_for(github_server)
    github_server.fail("GET", "/pulls/7", status, message=SECONDARY, headers={"Retry-After": "1"})

    assert api.pull(7).head_sha == HEAD
    assert pull_requests(github_server) == 2


@pytest.mark.parametrize("status", [403, 429])
def test_a_secondary_limit_without_retry_after_waits_its_bound(github_server: FakeGitHub,
                                                               status: int) -> None:
    """GitHub: without `retry-after`, wait (at least a minute; here the bound, 1 s)."""
    api = api_for(github_server, wait=1)
    github_server.fail("GET", "/pulls/7", status, message=SECONDARY)

    started = time.monotonic()
    assert api.pull(7).head_sha == HEAD
    assert time.monotonic() - started >= 0.9  # it waited, not hammered
    assert pull_requests(github_server) == 2


def test_a_limit_that_never_lifts_is_an_error_after_the_bounded_retries(
        github_server: FakeGitHub) -> None:
    api = api_for(github_server)
    github_server.fail("GET", "/pulls/7", 429, message=SECONDARY, headers={"Retry-After": "0"},
                       times=50)

    with pytest.raises(GitHubError) as raised:
        api.pull(7)

    assert "rate limit held" in str(raised.value)
    assert pull_requests(github_server) == RATE_LIMIT_RETRIES + 1


def test_control_a_plain_refusal_is_not_retried(github_server: FakeGitHub) -> None:
    api = api_for(github_server)
    github_server.fail("GET", "/pulls/7", 403, message="Resource not accessible by integration")

    with pytest.raises(GitHubError, match="Resource not accessible"):
        api.pull(7)
    assert pull_requests(github_server) == 1


# -- the action: a limit that does not lift leaves `error` naming it, never pending ----------

def test_a_limit_before_the_check_is_an_error_status_naming_it(harness: Harness,
                                                               check: RecordingCheck) -> None:
    harness.pull_event()
    harness.server.fail("GET", f"/issues/{PR}/comments", 403, message=SECONDARY,
                        headers={"Retry-After": "3600"})

    assert harness.run(check) == 3

    assert check.calls == []
    final = harness.final_status()
    assert final["state"] == "error" and "secondary rate limit" in final["description"]
    log = harness.log.getvalue()
    assert "::error" in log and 'retry-after "3600": 3,600 s' in log
    assert harness.outputs()["conclusion"] == "error"


def test_a_limit_after_the_check_never_leaves_the_status_pending(harness: Harness,
                                                                 check: RecordingCheck) -> None:
    harness.pull_event()

    def limited_check(**kwargs: Any) -> Any:
        harness.server.fail("GET", f"/issues/{PR}/comments", 403, message=PRIMARY,
                            headers=primary_headers(3600))
        return check(**kwargs)

    assert harness.run(limited_check) == 3

    states = [s["state"] for s in harness.server.statuses_for(harness.head)]
    assert states == ["pending", "error"]
    assert "primary rate limit" in harness.final_status()["description"]


# -- every form of `retry-after` and `x-ratelimit-reset` (issue 28, item 3) ------------------
# The waits are recorded, not slept: `connect(sleep=)` is where the retry sleeps.

FAR = "Wed, 03 Dec 2046 22:00:00 GMT"   # twenty years ahead: never waited


def recorded_api(server: FakeGitHub, waits: list[float], *, wait: float = 60) -> RepoAPI:
    server.add_pull(7, base_sha=BASE, head_sha=HEAD)
    client = connect(server.api_url, server.token, pause_between_calls=False,
                     rate_limit_wait=wait, sleep=waits.append)
    return RepoAPI(client, server.repository)


def http_date(seconds_ahead: float) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + seconds_ahead))


@pytest.mark.parametrize("status", [403, 429])
@pytest.mark.parametrize("value", [FAR, "99999999999999999999", "86400"])
def test_a_retry_after_past_the_bound_in_any_form_is_an_error_at_once_naming_it(
        github_server: FakeGitHub, status: int, value: str) -> None:
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", status, message=SECONDARY, headers={"Retry-After": value})

    with pytest.raises(GitHubError) as raised:
        api.pull(7)

    message = str(raised.value)
    assert message.startswith(f"GET pull request: HTTP {status}: GitHub's secondary rate limit")
    assert f'retry-after "{value}"' in message and "longer than flipgate waits: 60 s" in message
    assert waits == [] and pull_requests(github_server) == 1


@pytest.mark.parametrize("status", [403, 429])
@pytest.mark.parametrize("value", ["nan", "-1", "inf", "1e999", "soon", "1.5.2", "-0.5"])
def test_a_retry_after_that_says_no_time_is_waited_as_none_and_the_call_succeeds(
        github_server: FakeGitHub, status: int, value: str) -> None:
    """GitHub answered: a header that names no time is a limit that names none (a minute,
    within the bound), never "no response: InvalidHeader"."""
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", status, message=SECONDARY, headers={"Retry-After": value})

    assert api.pull(7).head_sha == HEAD
    assert waits == [60] and pull_requests(github_server) == 2


def test_a_retry_after_date_inside_the_bound_is_waited_until_then(
        github_server: FakeGitHub) -> None:
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", 429, message=SECONDARY,
                       headers={"Retry-After": http_date(30)})

    assert api.pull(7).head_sha == HEAD
    assert len(waits) == 1 and 28 <= waits[0] <= 31


def test_a_retry_after_date_in_the_past_is_not_waited(github_server: FakeGitHub) -> None:
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", 429, message=SECONDARY,
                       headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})

    assert api.pull(7).head_sha == HEAD
    assert sum(waits) == 0 and pull_requests(github_server) == 2


def test_a_server_errors_retry_after_is_bounded_too(github_server: FakeGitHub) -> None:
    # urllib3 honours `retry-after` on a 503 as on a 429: never longer than the bound.
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", 503, message="Service Unavailable",
                       headers={"Retry-After": FAR})

    assert api.pull(7).head_sha == HEAD
    assert waits == [60]


@pytest.mark.parametrize("value", ["nan", "-1", "soon", "1714564800.5"])
def test_a_primary_limit_whose_reset_says_no_time_is_waited_as_none(
        github_server: FakeGitHub, value: str) -> None:
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", 403, message=PRIMARY,
                       headers={**primary_headers(0), "X-RateLimit-Reset": value})

    assert api.pull(7).head_sha == HEAD
    assert waits == [60] and pull_requests(github_server) == 2


def test_a_primary_limit_resetting_past_any_clock_is_an_error_at_once_naming_it(
        github_server: FakeGitHub) -> None:
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    huge = "99999999999999999999"
    github_server.fail("GET", "/pulls/7", 403, message=PRIMARY,
                       headers={**primary_headers(0), "X-RateLimit-Reset": huge})

    with pytest.raises(GitHubError) as raised:
        api.pull(7)

    message = str(raised.value)
    assert "HTTP 403: GitHub's primary rate limit: API rate limit exceeded" in message
    assert f'x-ratelimit-reset "{huge}"' in message and "flipgate waits: 60 s" in message
    assert waits == [] and pull_requests(github_server) == 1


def test_a_limit_that_never_lifts_says_what_github_last_answered(
        github_server: FakeGitHub) -> None:
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", 429, message=SECONDARY, headers={"Retry-After": "nan"},
                       times=50)

    with pytest.raises(GitHubError) as raised:
        api.pull(7)

    message = str(raised.value)
    assert message.startswith("GET pull request: HTTP 429: GitHub's rate limit held through")
    assert 'retry-after "nan"' in message and "no response" not in message
    assert waits == [60, 60] and pull_requests(github_server) == RATE_LIMIT_RETRIES + 1


def test_a_hostile_retry_after_is_named_escaped(github_server: FakeGitHub) -> None:
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", 429, message=SECONDARY,
                       headers={"Retry-After": "::error::forged " + "x" * 200}, times=50)

    with pytest.raises(GitHubError) as raised:
        api.pull(7)

    message = str(raised.value)
    assert 'retry-after "::error::forged xxx' in message and "x" * 100 not in message


def test_a_far_retry_after_date_leaves_error_never_pending(harness: Harness,
                                                          check: RecordingCheck) -> None:
    harness.pull_event()
    harness.server.fail("GET", f"/issues/{PR}/comments", 429, message=SECONDARY,
                        headers={"Retry-After": FAR})

    started = time.monotonic()
    assert harness.run(check) == 3
    assert time.monotonic() - started < 30  # not asleep until 2046

    final = harness.final_status()
    assert final["state"] == "error" and "secondary rate limit" in final["description"]
    log = harness.log.getvalue()
    assert f'retry-after "{FAR}": ' in log and " days, longer than flipgate waits: 60 s" in log


# -- one budget of waits for a whole run (sixth red team) ------------------------------------

@pytest.mark.parametrize("value", ["nan", "-1"])
def test_a_run_waits_one_budget_then_every_call_is_tried_once_naming_what_github_answered(
        github_server: FakeGitHub, value: str) -> None:
    """A pending status, a final one and a comment, each refused with a limit that names no
    time: the first call waits GitHub's documented minute while the run's budget lasts; once
    it is spent, each later call is tried once and ends at once, saying what GitHub answered."""
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", 429, message=SECONDARY, headers={"Retry-After": value},
                       times=50)

    messages = []
    for _ in range(3):
        with pytest.raises(GitHubError) as raised:
            api.pull(7)
        messages.append(str(raised.value))

    assert waits == [60, 60] and sum(waits) <= RATE_LIMIT_BUDGET_SECONDS
    assert pull_requests(github_server) == RATE_LIMIT_RETRIES + 1 + 2
    for message in messages[1:]:
        assert message.startswith("GET pull request: HTTP 429: ")
        assert f'retry-after "{value}"' in message and "You have exceeded a secondary rate limit" in message
        assert f"flipgate's {RATE_LIMIT_BUDGET_SECONDS} s of waits for GitHub in this run are spent" in message


def test_a_call_that_succeeds_after_the_budget_is_spent_still_succeeds(
        github_server: FakeGitHub) -> None:
    waits: list[float] = []
    api = recorded_api(github_server, waits)
    github_server.fail("GET", "/pulls/7", 429, message=SECONDARY, headers={"Retry-After": "nan"},
                       times=3)
    with pytest.raises(GitHubError):
        api.pull(7)

    assert api.pull(7).head_sha == HEAD and waits == [60, 60]
