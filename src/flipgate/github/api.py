"""The GitHub REST calls flipgate makes, as a thin shell over PyGithub.

The `Github` client is passed in (tests hand in one pointed at a loopback
server through `GITHUB_API_URL`). Every PyGithub or network failure leaves
this module as a `GitHubError` carrying the HTTP status and GitHub's own
message, never the token.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from github import Auth, Github, GithubException, GithubRetry, RateLimitExceededExceedsMaxWait
from github.Requester import HTTPRequestsConnectionClass, HTTPSRequestsConnectionClass, Requester
from requests import RequestException
from requests.exceptions import RetryError
from urllib3.exceptions import MaxRetryError
from urllib3.util.retry import Retry

from flipgate.errors import InputError
from flipgate.github.event import GHOST, PullRequest, pull_from_payload
from flipgate.github.pinning import HeadRecord
from flipgate.github.texts import recorded_pull
from flipgate.llm.pacing import retry_after
from flipgate.text.escaping import one_line, shorten
from flipgate.text.inflate import ACCEPTED

# Timeline events that move a PR's head other than forward, as the reply names them.
REWRITES = {"head_ref_force_pushed": "a force-push", "head_ref_deleted": "the head branch deleted",
            "head_ref_restored": "the head branch restored", "reopened": "a reopening"}
BASE_CHANGED = "base_ref_changed"  # the timeline's event for a PR moved to another base
_SHA = re.compile(r"^[0-9a-f]{40}$")

# GitHub answers GET /user with 401/403 for the Actions token; its comments are this login's.
ACTIONS_BOT_LOGIN = "github-actions[bot]"
PER_PAGE = 100  # the most GitHub serves a page; fewer round trips through long threads

F = TypeVar("F", bound=Callable[..., Any])


def github_logging(*, verbose: bool) -> None:
    """PyGithub logs every refused request at INFO on its own stderr handler, including the
    Actions token's expected 403 on GET /user; the job log shows them with --verbose only."""
    logging.getLogger("github").setLevel(logging.DEBUG if verbose else logging.WARNING)


class GitHubError(Exception):
    """A GitHub API call failed. `status` is the HTTP status, when there was one."""

    def __init__(self, what: str, status: int | None = None, message: str | None = None):
        self.what = what
        self.status = status
        detail = f"HTTP {status}" if status is not None else "no response"
        super().__init__(f"{what}: {detail}" + (f": {message}" if message else ""))


def _translated(what: str) -> Callable[[F], F]:
    def decorate(call: F) -> F:
        @functools.wraps(call)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return call(*args, **kwargs)
            except RateLimitExceededExceedsMaxWait as exc:
                raise GitHubError(what, exc.status, (_github_message(exc) or "") + (
                    f" (GitHub's primary rate limit resets in {exc.wait:.0f} s, longer than "
                    f"flipgate waits: {RATE_LIMIT_WAIT_SECONDS} s)")) from None
            except GithubException as exc:
                raise GitHubError(what, exc.status, _github_message(exc)) from None
            except ReplyTooLarge as exc:
                raise GitHubError(what, exc.status, str(exc)) from None
            except RetryError as exc:  # GitHub still refused after every bounded wait
                cause = re.search(r"too many (\d+) error responses", str(exc))
                status = int(cause[1]) if cause else None
                lead = ("GitHub's rate limit held" if status in (403, 429)
                        else "GitHub kept failing")
                answer = getattr(exc.args[0] if exc.args else None, "flipgate_answer", None)
                raise GitHubError(what, status, f"{lead} through {RATE_LIMIT_RETRIES} retries"
                                  + (f" ({cause[0]})" if cause else "")
                                  + (f"; GitHub last answered {answer}" if answer else "")) from None
            except RequestException as exc:
                raise GitHubError(what, None, type(exc).__name__) from None
        return wrapper  # type: ignore[return-value]
    return decorate


def _github_message(exc: GithubException) -> str | None:
    """GitHub's `message`, with the validation errors' own messages when it lists them."""
    data = exc.data if isinstance(exc.data, dict) else {}
    details = [item["message"] for item in data.get("errors") or []
               if isinstance(item, dict) and item.get("message")]
    message = data.get("message") or exc.message
    return "; ".join([message, *details]) if message else None


# Seconds GitHub may stay silent on one read (PyGithub's own bound is per read, like
# every client on `requests`; the job's own timeout bounds the rest).
GITHUB_TIMEOUT_SECONDS = 15
GITHUB_READ_RETRIES = 1
# GitHub's rate limits (docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api):
# a call waits at most this long at a time, and this many times, for a limit to lift; a
# longer wait (a primary limit resetting in half an hour) is an error naming the limit.
RATE_LIMIT_WAIT_SECONDS = 60
RATE_LIMIT_RETRIES = 2
SECONDARY_WAIT_SECONDS = 60  # GitHub: without `retry-after`, wait at least a minute
# All of a run's waits (one client's) together: what one call could wait before, two of
# GitHub's minutes, for the whole run. Once spent, a limit ends the call at once (tried
# once), so a run GitHub keeps refusing ends `error` in bounded time, saying what GitHub said.
RATE_LIMIT_BUDGET_SECONDS = RATE_LIMIT_RETRIES * SECONDARY_WAIT_SECONDS


# The most of one GitHub reply flipgate reads, counted after decompression. A page of 100
# comments of 65,536 characters each is at most about 26 MB of UTF-8.
MAX_GITHUB_REPLY_BYTES = 64 * 1024 * 1024


class ReplyTooLarge(ValueError):
    """GitHub's reply inflates past `MAX_GITHUB_REPLY_BYTES`: reading stopped there. Not a
    `RequestException` (an `OSError`), which urllib3 would take for a lost connection."""

    def __init__(self, status: int | None, cap: int):
        self.status = status
        super().__init__(f"GitHub's reply inflates past {cap:,} bytes")


class _CappedBody:
    """A urllib3 reply whose decoded body is read at most to the cap. urllib3 undoes the
    content-encoding a bounded piece at a time; this counts the pieces. Everything else
    is the reply's own."""

    def __init__(self, raw: Any):
        self._raw = raw

    def stream(self, amt: int | None = 2 ** 16, decode_content: bool | None = None) -> Any:
        cap, held = MAX_GITHUB_REPLY_BYTES, 0
        for piece in self._raw.stream(amt, decode_content=decode_content):
            held += len(piece)
            if held > cap:
                self._raw.close()
                raise ReplyTooLarge(getattr(self._raw, "status", None), cap)
            yield piece

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def _cap_reply(response: Any, **_: Any) -> None:
    """requests' response hook: runs before the body is read."""
    response.raw = _CappedBody(response.raw)


def _capped_connection(base: type[Any]) -> type[Any]:
    class Capped(base):
        """PyGithub's connection, asking only for encodings urllib3 decodes in bounded
        pieces, and reading no reply past the cap."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.session.headers["Accept-Encoding"] = ACCEPTED
            self.session.hooks["response"].append(_cap_reply)

    return Capped


_CAPPED = {HTTPRequestsConnectionClass: _capped_connection(HTTPRequestsConnectionClass),
           HTTPSRequestsConnectionClass: _capped_connection(HTTPSRequestsConnectionClass)}


def _cap_replies(client: Github) -> None:
    """Give the client's requester the capped connection of its scheme. PyGithub offers no
    per-client way (its `injectConnectionClasses` is process-wide and drops keep-alive),
    so the requester's own choice is replaced; if PyGithub renames it, this fails loudly."""
    requester, name = client.requester, "_Requester__connectionClass"
    chosen = vars(requester)[name]
    setattr(requester, name, _CAPPED[chosen])


class WaitBudget:
    """The seconds a run (one client) may still spend waiting for GitHub, shared by every
    call's retry."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.left = seconds, seconds
        self._lock = threading.Lock()

    def take(self, seconds: float) -> bool:
        """Whether `seconds` fit what is left (then they are spent)."""
        with self._lock:
            if seconds > self.left:
                return False
            self.left -= seconds
            return True


class BoundedRetry(GithubRetry):
    """PyGithub's retry (a 403 or 429 that is a rate limit waits for it to lift), with every
    wait bounded by `max_rate_limit_wait`, whatever form GitHub writes it in.

    PyGithub bounds only the waits it reads from the body and a whole-number
    `x-ratelimit-reset`; a `retry-after` it hands to urllib3, which sleeps whatever GitHub
    says (an HTTP date twenty years ahead included) and stops the call with "InvalidHeader"
    on `nan` or `-1`. Here both headers are read by flipgate: a wait past the bound is an
    error at once naming the header as GitHub sent it; one that names no time (`nan`, `-1`,
    garbage) is a limit that names none (`secondary_rate_wait`); anything else is waited,
    through `sleep` (tests record it), while the run's `budget` lasts: a wait it cannot
    afford ends the call at once, naming what GitHub answered."""

    def __init__(self, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, budget: WaitBudget | None = None,
                 **kwargs: Any) -> None:
        self._sleep, self._clock = sleep, clock
        self._budget = budget or WaitBudget(RATE_LIMIT_BUDGET_SECONDS)
        super().__init__(**kwargs)

    def new(self, **kw: Any) -> Any:
        return super().new(sleep=self._sleep, clock=self._clock, budget=self._budget, **kw)

    def increment(self, method: str | None = None, url: str | None = None,
                  response: Any = None, error: Exception | None = None, _pool: Any = None,
                  _stacktrace: Any = None) -> Any:
        try:
            return self._increment(method, url, response, error, _pool, _stacktrace)
        except MaxRetryError as exc:  # the bounded retries are spent: say what GitHub answered
            if response is not None:
                exc.flipgate_answer = _answered(response)  # type: ignore[attr-defined]
            raise

    def _increment(self, method: str | None, url: str | None, response: Any,
                   error: Exception | None, _pool: Any, _stacktrace: Any) -> Any:
        if response is None or response.status not in (403, 429):
            return super().increment(method, url, response, error, _pool, _stacktrace)
        # Read here, capped (PyGithub reads a refusal's body whole to tell a rate limit
        # apart, and would turn our error into a bare refusal).
        body = self.get_content(response, url or "")
        limit = self.max_rate_limit_wait if self.max_rate_limit_wait is not None else math.inf
        told = response.headers.get("Retry-After")
        if told is not None:
            after = retry_after(response.headers, now=self._clock)
            if after is None:  # GitHub answered, naming no time it can be held to
                return self._then_wait(self.secondary_rate_wait, method, url, response, error,
                                       _pool, _stacktrace)
            if after > limit:
                raise GithubException(response.status, {"message": _limit_message(
                    body, _header("retry-after", told, after), limit)}, dict(response.headers))
            return super().increment(method, url, response, error, _pool, _stacktrace)
        if _is_primary(body):
            reset = response.headers.get("X-RateLimit-Reset")
            wait = _reset_in(reset, now=self._clock())
            if wait is None:
                wait = self.secondary_rate_wait
            elif wait > limit:
                raise GithubException(response.status, {"message": _limit_message(
                    body, _header("x-ratelimit-reset", reset, wait), limit)},
                    dict(response.headers))
            elif wait > 0:
                wait = min(wait + 1, limit)  # as PyGithub: the reset's second is not exact
            return self._then_wait(wait, method, url, response, error, _pool, _stacktrace)
        if response.status == 429:  # a secondary limit naming no time: GitHub says a minute
            return self._then_wait(self.secondary_rate_wait, method, url, response, error,
                                   _pool, _stacktrace)
        return super().increment(method, url, response, error, _pool, _stacktrace)

    def _then_wait(self, seconds: float, *args: Any) -> Any:
        """urllib3's count of the retry, then a wait of `seconds` before it."""
        retry = Retry.increment(self, *args)
        retry.get_backoff_time = lambda: seconds  # type: ignore[method-assign]
        return retry

    def get_retry_after(self, response: Any) -> float | None:
        """urllib3's reading of `retry-after`, replaced: any form, bounded, never an error."""
        seconds = retry_after(response.headers, now=self._clock)
        limit = self.max_rate_limit_wait
        return seconds if seconds is None or limit is None else min(seconds, limit)

    def sleep(self, response: Any = None) -> None:
        wait = self.get_retry_after(response) if response is not None else None
        wait = wait if wait else self.get_backoff_time()
        if wait <= 0:
            return
        if not self._budget.take(wait):
            spent = (f"flipgate's {self._budget.seconds:g} s of waits for GitHub in this run "
                     "are spent")
            if response is None:
                raise GithubException(0, {"message": spent}, {})
            said = _message_of(self.get_content(response, ""))
            raise GithubException(response.status, {"message": "; ".join(
                part for part in (f"GitHub's rate limit: {said}" if said else "",
                                  f"GitHub answered {_answered(response)}", spent) if part)},
                dict(response.headers))
        self._sleep(wait)

    @staticmethod
    def get_content(resp: Any, url: str) -> bytes:
        """The refusal's body, read once and at most to the cap."""
        body = getattr(resp, "_flipgate_body", None)
        if body is None:
            body = GithubRetry.get_content(_CappedBody(resp), url)  # type: ignore[arg-type]
            resp._flipgate_body = body
        return body


def _reset_in(value: str | None, *, now: float) -> float | None:
    """Seconds until `x-ratelimit-reset` (UTC epoch seconds, as GitHub writes it), 0 when it
    has passed; None when it is not a whole number of seconds."""
    text = (value or "").strip()
    if not text.isascii() or not text.isdigit():
        return None
    return max(0.0, int(text) - now)


def _header(name: str, value: str | None, seconds: float | None = None) -> str:
    """A header as GitHub sent it, on one line and cut short (it is GitHub's text, not
    ours), with the wait flipgate read from it."""
    read = f": {_duration(seconds)}" if seconds is not None else ""
    return f'{name} "{shorten(one_line(value or ""), 60)}"{read}'


def _duration(seconds: float) -> str:
    return f"{seconds:,.0f} s" if seconds < 86400 * 3 else f"{seconds / 86400:,.0f} days"


def _answered(response: Any) -> str:
    """What GitHub last answered, for the line that ends a call: its status and the wait
    headers as received."""
    named = [_header(name.lower(), response.headers.get(name))
             for name in ("Retry-After", "X-RateLimit-Reset") if response.headers.get(name)]
    return f"HTTP {response.status}" + (f" with {', '.join(named)}" if named else "")


def _message_of(body: bytes) -> str:
    try:
        return str(json.loads(body).get("message") or "")
    except (ValueError, AttributeError):
        return ""


def _is_primary(body: bytes) -> bool:
    return Requester.isPrimaryRateLimitError(_message_of(body))


def _limit_message(body: bytes, wait: str, limit: float) -> str:
    """GitHub's own message for a limit, with the wait it asked for and flipgate's bound."""
    message = _message_of(body)
    kind = "primary" if Requester.isPrimaryRateLimitError(message) else "secondary"
    return (f"GitHub's {kind} rate limit: {message or 'rate limited'} ({wait}, longer than "
            f"flipgate waits: {limit:g} s)")


def connect(api_url: str, token: str, *, pause_between_calls: bool = True,
            timeout: int = GITHUB_TIMEOUT_SECONDS,
            rate_limit_wait: float = RATE_LIMIT_WAIT_SECONDS,
            sleep: Callable[[float], None] = time.sleep) -> Github:
    """A PyGithub client for `api_url` (GitHub, GitHub Enterprise, or a test server).

    `lazy=True` makes objects addressed by number or SHA cost no request until
    read. PyGithub's polite pauses between calls (0.25 s, 1 s between writes)
    suit github.com; a loopback server in tests does not need them. `sleep`: how a
    retry waits out a limit (tests record the waits instead).
    """
    pauses: dict[str, Any] = {} if pause_between_calls else {
        "seconds_between_requests": None, "seconds_between_writes": None}
    # PyGithub retries a read that timed out ten times: one more is enough, so a silent
    # GitHub costs at most two timeouts a call. Rate limits: see BoundedRetry.
    retry = BoundedRetry(read=GITHUB_READ_RETRIES, status=RATE_LIMIT_RETRIES,
                         total=RATE_LIMIT_RETRIES + GITHUB_READ_RETRIES,
                         status_forcelist=[*range(500, 600), 429],
                         secondary_rate_wait=min(SECONDARY_WAIT_SECONDS, rate_limit_wait),
                         max_rate_limit_wait=rate_limit_wait, sleep=sleep)
    client = Github(base_url=api_url, auth=Auth.Token(token), per_page=PER_PAGE, lazy=True,
                    timeout=timeout, retry=retry, **pauses)
    _cap_replies(client)
    return client


@dataclass(frozen=True)
class IssueComment:
    id: int
    author: str
    body: str


@dataclass(frozen=True)
class PullCommit:
    """A commit of a pull request, with the committer date its author wrote (forgeable)."""

    sha: str
    committed_at: datetime | None


@dataclass(frozen=True)
class StatusUpdate:
    """A commit status to set. `description` must already fit GitHub's 140 characters."""

    state: str        # pending | success | failure | error
    description: str
    context: str
    target_url: str | None = None


class RepoAPI:
    """The calls flipgate makes on one repository."""

    def __init__(self, client: Github, repository: str):
        self._client = client
        self._repo = client.get_repo(repository)  # no request: the client is lazy
        self.repository = repository

    @_translated("GET /user")
    def _authenticated_login(self) -> str:
        return self._client.get_user().login

    def own_login(self) -> str:
        """The token's login; the Actions token may not ask, and is `github-actions[bot]`."""
        try:
            return self._authenticated_login()
        except GitHubError as exc:
            if exc.status in (401, 403):
                return ACTIONS_BOT_LOGIN
            raise

    @_translated("GET pull request")
    def _pull_data(self, number: int) -> dict[str, Any]:
        return self._repo.get_pull(number).raw_data

    def pull(self, number: int) -> PullRequest:
        """The pull request as it is now: its current base and head SHAs."""
        try:
            return pull_from_payload(self._pull_data(number), source="GitHub's answer",
                                     path="pull")
        except InputError as exc:  # GitHub answered, but not what its API promises
            raise GitHubError("GET pull request", 200, str(exc)) from None

    @_translated("GET branch")
    def branch_sha(self, name: str) -> str:
        """The commit a branch of this repository points at now."""
        return self._repo.get_branch(name).commit.sha

    @_translated("list pull request commits")
    def pull_commits(self, number: int) -> list[PullCommit]:
        """The PR's commits, oldest first (GitHub lists at most 250)."""
        return [PullCommit(sha=item.sha, committed_at=item.commit.committer.date
                           if item.commit.committer else None)
                for item in self._repo.get_pull(number).get_commits()]

    @_translated("list the pull request's timeline")
    def head_rewrites(self, number: int) -> list[HeadRecord]:
        """The timeline's events that move the head where pushes cannot (GitHub's clock):
        force-pushes (with the new head, when GitHub names it), deleted or restored head
        branches, reopenings; and every change of the base."""
        found = []
        for item in self._repo.get_issue(number).get_timeline():
            raw = item.raw_data
            at = _timestamp(raw.get("created_at"))
            if at is None:  # an event GitHub did not date: nothing after it can be proven
                at = datetime.max.replace(tzinfo=UTC)
            if raw.get("event") == BASE_CHANGED:
                found.append(HeadRecord(at=at, sha=None, what="the base changed", base_change=True))
                continue
            what = REWRITES.get(str(raw.get("event")))
            if what is None:
                continue
            commit = raw.get("commit_id") if raw.get("event") == "head_ref_force_pushed" else None
            found.append(HeadRecord(at=at, sha=commit if _is_sha(commit) else None,
                                    rewrite=True, what=what))
        return found

    @_translated("list commit statuses")
    def head_statuses(self, sha: str, *, context: str, number: int,
                      login: str) -> list[HeadRecord]:
        """The pending statuses flipgate (`login`) set on `sha` for pull request `number`:
        each records `sha` as that PR's head when GitHub stamped it."""
        return [HeadRecord(at=status.created_at, sha=sha, what="flipgate's status")
                for status in self._repo.get_commit(sha).get_statuses()
                if status.context == context and status.state == "pending"
                and status.creator is not None and status.creator.login == login
                and recorded_pull(status.description) == number]

    @_translated("GET collaborator permission")
    def _permission(self, user: str) -> str:
        return self._repo.get_collaborator_permission(user)

    def permission(self, user: str) -> str:
        """`admin`, `write`, `read`, ... as GitHub reports it; `none` for a stranger."""
        try:
            return self._permission(user)
        except GitHubError as exc:
            if exc.status == 404:  # not a user of this repository at all
                return "none"
            raise

    @_translated("list pull request comments")
    def matching_comments(self, number: int,
                          matches: Callable[[IssueComment], bool]) -> list[IssueComment]:
        """Every comment on the PR's conversation that `matches`, oldest first (all pages)."""
        found = []
        for item in self._repo.get_issue(number).get_comments():
            # `user: null`: a deleted account, which GitHub shows as its ghost.
            comment = IssueComment(id=item.id, author=item.user.login if item.user else GHOST,
                                   body=item.body or "")
            if matches(comment):
                found.append(comment)
        return found

    @_translated("create comment")
    def create_comment(self, number: int, body: str) -> int:
        return self._repo.get_issue(number).create_comment(body).id

    @_translated("edit comment")
    def edit_comment(self, number: int, comment_id: int, body: str) -> None:
        self._repo.get_issue(number).get_comment(comment_id).edit(body)

    @_translated("add reaction")
    def react(self, number: int, comment_id: int, content: str) -> None:
        self._repo.get_issue(number).get_comment(comment_id).create_reaction(content)

    @_translated("set commit status")
    def set_status(self, sha: str, status: StatusUpdate) -> None:
        optional = {"target_url": status.target_url} if status.target_url else {}
        self._repo.get_commit(sha).create_status(state=status.state,
                                                 description=status.description,
                                                 context=status.context, **optional)

    @_translated("GET commit")
    def _commit_date(self, sha: str) -> datetime:
        return self._repo.get_commit(sha).commit.committer.date

    def commit_date(self, sha: str) -> datetime | None:
        """When `sha` was committed; None when GitHub no longer knows it (force-pushed away)."""
        try:
            return self._commit_date(sha)
        except GitHubError as exc:
            if exc.status in (404, 422):
                return None
            raise


def _is_sha(value: object) -> bool:
    return isinstance(value, str) and bool(_SHA.match(value))


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
