"""A GitHub REST server on loopback, for tests that drive the real PyGithub client.

Usage (the fixture is registered in tests/conftest.py)::

    def test_something(github_server):
        github_server.add_pull(7, base_sha=BASE, head_sha=HEAD)
        github_server.grant("maintainer", "write")
        ...run flipgate with GITHUB_API_URL=github_server.api_url...
        assert [c["body"] for c in github_server.comments_on(7)] == [...]

What it serves (one repository, `owner/name`, real response shapes)
-------------------------------------------------------------------
- ``GET /user``: the token's user; with ``actions_token=True`` (the default)
  it answers 403 "Resource not accessible by integration", as GitHub does for
  the workflow's GITHUB_TOKEN, whose comments are by ``github-actions[bot]``;
- ``GET /repos/{o}/{r}``;
- ``GET /repos/{o}/{r}/pulls/{n}``;
- ``GET /repos/{o}/{r}/pulls/{n}/commits``: the PR's commits, oldest first, paged
  like the comments (``push`` appends one, ``push(..., force=True)`` replaces
  them); each commit's committer date is when it was pushed unless
  ``committed_at`` says otherwise (an author can forge that date);
- ``GET /repos/{o}/{r}/commits/{sha}/statuses`` (and GitHub's older
  ``GET /repos/{o}/{r}/statuses/{sha}``): the statuses set on a commit, newest
  first, paged;
- ``GET|POST /repos/{o}/{r}/issues/{n}/comments`` with ``per_page`` (max 100,
  default 30) / ``page`` and a ``Link`` header whose URLs, like GitHub's, use
  ``/repositories/{id}/...`` (served too);
- ``GET|PATCH|DELETE /repos/{o}/{r}/issues/comments/{id}`` (body at most 65,536
  characters, else 422);
- ``POST /repos/{o}/{r}/issues/comments/{id}/reactions``;
- ``POST /repos/{o}/{r}/statuses/{sha}`` (description at most 140 characters,
  else 422);
- ``GET /repos/{o}/{r}/commits/{sha}`` (422 for a SHA it doesn't know);
- ``GET /repos/{o}/{r}/issues/{n}/timeline``: the PR's events as GitHub's timeline
  lists them, paged: ``commented`` for each comment, ``committed`` for each of its
  commits (no ``created_at``: GitHub gives only the dates the author wrote),
  ``head_ref_force_pushed`` for each ``push(..., force=True)`` (``commit_id`` the new
  head, ``created_at`` the server's clock), and whatever ``add_event`` adds;
- ``GET /repos/{o}/{r}/collaborators/{user}/permission``: the role given with
  ``grant(user, role)`` (``admin | maintain | write | triage | read``), with the
  legacy ``permission`` field GitHub derives from it (maintain -> write, triage
  -> read); anyone else has ``read`` (a public repository).

Every request must carry ``Authorization: token <token>`` (or ``Bearer``),
else 401 "Bad credentials". ``prefix="/api/v3"`` serves the GitHub Enterprise
layout. ``fail(method, path_fragment, status, times)`` makes the next matching
requests fail. ``requests`` records every request (method, path, query, JSON).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from support.loopback import LoopbackHTTP

DOCS = "https://docs.github.com/rest"
ACTIONS_BOT = "github-actions[bot]"
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
STATUS_STATES = ("error", "failure", "pending", "success")
LEGACY_PERMISSION = {"admin": "admin", "maintain": "write", "write": "write",
                     "triage": "read", "read": "read", "none": "none"}
_EPOCH = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

_ROUTES = Map([
    Rule("/user", endpoint="user", methods=["GET"]),
    Rule("/repos/<owner>/<repo>", endpoint="repo", methods=["GET"]),
    Rule("/repos/<owner>/<repo>/pulls/<int:number>", endpoint="pull", methods=["GET"]),
    Rule("/repos/<owner>/<repo>/pulls/<int:number>/commits", endpoint="pull_commits",
         methods=["GET"]),
    Rule("/repositories/<int:repo_id>/pulls/<int:number>/commits", endpoint="pull_commits",
         methods=["GET"]),
    Rule("/repos/<owner>/<repo>/commits/<sha>/statuses", endpoint="commit_statuses",
         methods=["GET"]),
    Rule("/repos/<owner>/<repo>/statuses/<sha>", endpoint="commit_statuses",
         methods=["GET"]),  # the older path to the same list; PyGithub uses it
    Rule("/repositories/<int:repo_id>/commits/<sha>/statuses", endpoint="commit_statuses",
         methods=["GET"]),
    Rule("/repos/<owner>/<repo>/issues/<int:number>/comments", endpoint="issue_comments",
         methods=["GET", "POST"]),
    Rule("/repositories/<int:repo_id>/issues/<int:number>/comments", endpoint="issue_comments",
         methods=["GET"]),
    Rule("/repos/<owner>/<repo>/issues/comments/<int:comment_id>", endpoint="comment",
         methods=["GET", "PATCH", "DELETE"]),
    Rule("/repos/<owner>/<repo>/issues/comments/<int:comment_id>/reactions",
         endpoint="reactions", methods=["POST"]),
    Rule("/repos/<owner>/<repo>/statuses/<sha>", endpoint="statuses", methods=["POST"]),
    Rule("/repos/<owner>/<repo>/commits/<sha>", endpoint="commit", methods=["GET"]),
    Rule("/repos/<owner>/<repo>/branches/<path:branch>", endpoint="branch", methods=["GET"]),
    Rule("/repos/<owner>/<repo>/collaborators/<user>/permission", endpoint="permission",
         methods=["GET"]),
    Rule("/repos/<owner>/<repo>/issues/<int:number>/timeline", endpoint="timeline",
         methods=["GET"]),
    Rule("/repositories/<int:repo_id>/issues/<int:number>/timeline", endpoint="timeline",
         methods=["GET"]),
])


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Fault:
    method: str
    fragment: str
    status: int
    message: str
    times: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


def _node_id(kind: str, number: int) -> str:
    return hashlib.sha1(f"{kind}:{number}".encode()).hexdigest()[:20]


def _user_id(login: str) -> int:
    return int(hashlib.sha1(login.encode()).hexdigest()[:7], 16)


@dataclass
class FakeGitHub:
    """One repository's state, served over HTTP on 127.0.0.1."""

    owner: str = "octo-org"
    name: str = "prompt-service"
    repo_id: int = 1296269
    token: str = "ghs_loopback_test_token"
    login: str = ACTIONS_BOT         # who the token writes as
    actions_token: bool = True       # GET /user answers 403, as for the workflow token
    prefix: str = ""                 # "/api/v3" for the GitHub Enterprise layout

    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)
    commits: dict[str, datetime] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # timeline, not comments
    branches: dict[str, str] = field(default_factory=dict)  # name -> the commit it points at

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self._ids = itertools.count(1_000_000_001)
        self._clock = itertools.count(1)
        self._faults: list[_Fault] = []
        self._http = LoopbackHTTP(self._wsgi)
        self.root_url = ""

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        self.root_url = self._http.start()

    def stop(self) -> None:
        self._http.stop()

    @property
    def api_url(self) -> str:
        """What GITHUB_API_URL should say."""
        return self.root_url + self.prefix

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.name}"

    # -- arranging state ---------------------------------------------------------

    def _tick(self) -> datetime:
        """The server's clock: a minute later at every event it records."""
        return _EPOCH + timedelta(minutes=next(self._clock))

    def _now(self) -> str:
        return _stamp(self._tick())

    def add_pull(self, number: int, *, base_sha: str, head_sha: str, fork: bool = False,
                 author: str = "contributor", state: str = "open",
                 base_ref: str = "main") -> dict[str, Any]:
        with self._lock:
            self.commits.setdefault(head_sha, self._tick())
            self.branches.setdefault(base_ref, base_sha)
            self.pulls[number] = {"number": number, "base_sha": base_sha, "head_sha": head_sha,
                                  "base_ref": base_ref,
                                  "fork": fork, "author": author, "state": state,
                                  "created_at": self._now(), "commits": [head_sha]}
            self.comments.setdefault(number, [])
            return self.pulls[number]

    def push(self, number: int, head_sha: str, *, committed_at: datetime | None = None,
             force: bool = False) -> None:
        """A new head on the PR, as after a push: its commit joins the PR's commits
        (or, forced, replaces them). `committed_at` forges the commit's date."""
        with self._lock:
            record = self.pulls[number]
            record["head_sha"] = head_sha
            record["commits"] = ([] if force else
                                 [sha for sha in record["commits"] if sha != head_sha])
            record["commits"].append(head_sha)
            self.commits[head_sha] = committed_at or self._tick()
            if force:
                self.add_event(number, "head_ref_force_pushed", commit_id=head_sha,
                               actor=record["author"])

    def retarget(self, number: int, base_ref: str, *, actor: str = "contributor") -> None:
        """The PR moved to another branch of the repository, as its author may do: its base
        is that branch's commit, and the timeline gets `base_ref_changed`."""
        with self._lock:
            self.pulls[number].update(base_ref=base_ref, base_sha=self.branches[base_ref])
            self.add_event(number, "base_ref_changed", actor=actor)

    def add_event(self, number: int, event: str, *, commit_id: str | None = None,
                  actor: str = "contributor", created_at: datetime | None = None) -> None:
        """An issue event on the PR's timeline (`head_ref_force_pushed`, `head_ref_deleted`...)."""
        with self._lock:
            event_id = next(self._ids)
            api = self._api(f"/repos/{self.repository}")
            self.events.setdefault(number, []).append({
                "id": event_id, "node_id": _node_id("event", event_id),
                "url": f"{api}/issues/events/{event_id}", "actor": self._user(actor),
                "event": event, "commit_id": commit_id,
                "commit_url": f"{api}/commits/{commit_id}" if commit_id else None,
                "created_at": _stamp(created_at or self._tick()),
                "performed_via_github_app": None})

    def add_status(self, sha: str, *, state: str, description: str, context: str = "flipgate",
                   creator: str | None = None) -> None:
        """A commit status as someone set it earlier (`creator`: whose token; ours by default)."""
        with self._lock:
            status_id = next(self._ids)
            created = self._now()
            self.statuses.append({
                "sha": sha, "url": self._api(f"/repos/{self.repository}/statuses/{sha}"),
                "id": status_id, "node_id": _node_id("status", status_id), "state": state,
                "description": description, "target_url": None, "context": context,
                "created_at": created, "updated_at": created,
                "creator": self._user(creator or self.login)})

    def add_commit(self, sha: str, committed_at: datetime) -> None:
        with self._lock:
            self.commits[sha] = committed_at

    def grant(self, login: str, role: str) -> None:
        assert role in LEGACY_PERMISSION, role
        self.roles[login] = role

    def add_comment(self, number: int, body: str, *, user: str = "someone",
                    user_type: str = "User") -> dict[str, Any]:
        with self._lock:
            comment = self._new_comment(number, body, user=user, user_type=user_type)
            self.comments.setdefault(number, []).append(comment)
            return comment

    def fail(self, method: str, fragment: str, status: int, *, message: str = "Server Error",
             times: int = 1, headers: dict[str, str] | None = None,
             body: bytes | None = None) -> None:
        """The next `times` requests whose method matches and path contains `fragment` fail
        (with `headers`, e.g. GitHub's rate-limit headers, over the usual ones). `body`:
        these bytes, as they are, instead of GitHub's JSON message (e.g. a gzip bomb, with
        `headers={"Content-Encoding": "gzip"}`)."""
        self._faults.append(_Fault(method.upper(), fragment, status, message, times,
                                   dict(headers or {}), body))

    # -- reading state -----------------------------------------------------------

    def comments_on(self, number: int) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.comments.get(number, []))

    def statuses_for(self, sha: str) -> list[dict[str, Any]]:
        with self._lock:
            return [status for status in self.statuses if status["sha"] == sha]

    def reactions_on(self, comment_id: int) -> list[str]:
        with self._lock:
            return [r["content"] for r in self.reactions if r["comment_id"] == comment_id]

    def requests_to(self, method: str, fragment: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == method and fragment in r.path]

    # -- shapes -------------------------------------------------------------------

    def _api(self, path: str) -> str:
        return f"{self.api_url}{path}"

    def _html(self, path: str) -> str:
        return f"{self.root_url}/{path.lstrip('/')}"

    def _user(self, login: str, user_type: str | None = None) -> dict[str, Any]:
        kind = user_type or ("Bot" if login.endswith("[bot]") else "User")
        api = self._api(f"/users/{login}")
        return {"login": login, "id": _user_id(login), "node_id": _node_id("user", _user_id(login)),
                "avatar_url": f"{self.root_url}/avatars/u/{_user_id(login)}?v=4",
                "gravatar_id": "", "url": api, "html_url": self._html(login),
                "followers_url": f"{api}/followers",
                "following_url": f"{api}/following{{/other_user}}",
                "gists_url": f"{api}/gists{{/gist_id}}",
                "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
                "subscriptions_url": f"{api}/subscriptions",
                "organizations_url": f"{api}/orgs", "repos_url": f"{api}/repos",
                "events_url": f"{api}/events{{/privacy}}",
                "received_events_url": f"{api}/received_events",
                "type": kind, "site_admin": False}

    def _repo(self, full_name: str | None = None, *, fork: bool = False) -> dict[str, Any]:
        full_name = full_name or self.repository
        owner, name = full_name.split("/")
        repo_id = self.repo_id if full_name == self.repository else _user_id(full_name)
        api = self._api(f"/repos/{full_name}")
        return {"id": repo_id, "node_id": _node_id("repo", repo_id), "name": name,
                "full_name": full_name, "private": False, "owner": self._user(owner),
                "html_url": self._html(full_name), "description": None, "fork": fork,
                "url": api, "pulls_url": f"{api}/pulls{{/number}}",
                "statuses_url": f"{api}/statuses/{{sha}}",
                "comments_url": f"{api}/comments{{/number}}",
                "issue_comment_url": f"{api}/issues/comments{{/number}}",
                "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-05-01T00:00:00Z",
                "pushed_at": "2024-05-01T00:00:00Z", "default_branch": "main",
                "visibility": "public", "archived": False, "disabled": False}

    def _new_comment(self, number: int, body: str, *, user: str,
                     user_type: str | None = None) -> dict[str, Any]:
        comment_id = next(self._ids)
        created = self._now()
        api = self._api(f"/repos/{self.repository}/issues/comments/{comment_id}")
        page = f"{self.repository}/pull/{number}#issuecomment-{comment_id}"
        return {"url": api, "html_url": self._html(page),
                "issue_url": self._api(f"/repos/{self.repository}/issues/{number}"),
                "id": comment_id, "node_id": _node_id("comment", comment_id),
                "user": self._user(user, user_type), "created_at": created, "updated_at": created,
                "author_association": "NONE", "body": body, "performed_via_github_app": None,
                "reactions": {"url": f"{api}/reactions", "total_count": 0, "+1": 0, "-1": 0,
                              "laugh": 0, "hooray": 0, "confused": 0, "heart": 0, "rocket": 0,
                              "eyes": 0}}

    def _pull(self, record: dict[str, Any]) -> dict[str, Any]:
        number = record["number"]
        api = self._api(f"/repos/{self.repository}/pulls/{number}")
        head_repo_name = (f"{record['author']}/{self.name}" if record["fork"]
                          else self.repository)
        head_owner = head_repo_name.split("/")[0]
        return {"url": api, "id": 100_000 + number, "node_id": _node_id("pull", number),
                "html_url": self._html(f"{self.repository}/pull/{number}"),
                "diff_url": self._html(f"{self.repository}/pull/{number}.diff"),
                "patch_url": self._html(f"{self.repository}/pull/{number}.patch"),
                "issue_url": self._api(f"/repos/{self.repository}/issues/{number}"),
                "number": number, "state": record["state"], "locked": False,
                "title": f"Pull request {number}", "user": self._user(record["author"]),
                "body": None, "created_at": record["created_at"],
                "updated_at": record["created_at"], "closed_at": None, "merged_at": None,
                "merge_commit_sha": None, "draft": False,
                "head": {"label": f"{head_owner}:feature", "ref": "feature",
                         "sha": record["head_sha"], "user": self._user(head_owner),
                         "repo": self._repo(head_repo_name, fork=record["fork"])},
                "base": {"label": f"{self.owner}:{record['base_ref']}", "ref": record["base_ref"],
                         "sha": record["base_sha"], "user": self._user(self.owner),
                         "repo": self._repo()},
                "author_association": "CONTRIBUTOR" if record["fork"] else "MEMBER",
                "merged": False, "mergeable": None, "comments": len(self.comments[number]),
                "commits": len(record["commits"]), "additions": 1, "deletions": 1,
                "changed_files": 1}

    # -- HTTP ---------------------------------------------------------------------

    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        body: Any = None
        if request.data:
            try:
                body = json.loads(request.data)
            except ValueError:
                body = request.get_data(as_text=True)
        response = self._respond(request, body)
        with self._lock:
            self.requests.append(Recorded(request.method, request.path, dict(request.args), body,
                                          response.status_code, dict(request.headers)))
        return response(environ, start_response)

    def _respond(self, request: Request, body: Any) -> Response:
        if not request.path.startswith(self.prefix):
            return _message(404, "Not Found")
        path = request.path[len(self.prefix):] or "/"
        if request.headers.get("Authorization", "") not in (f"token {self.token}",
                                                             f"Bearer {self.token}"):
            return _message(401, "Bad credentials")
        for fault in self._faults:
            if fault.times > 0 and fault.method == request.method and fault.fragment in path:
                fault.times -= 1
                if fault.body is not None:
                    return Response(fault.body, status=fault.status, headers=fault.headers,
                                    content_type="application/json; charset=utf-8")
                return _message(fault.status, fault.message, headers=fault.headers)
        try:
            endpoint, args = _ROUTES.bind("127.0.0.1").match(path, method=request.method)
        except NotFound:
            return _message(404, "Not Found")
        except MethodNotAllowed:
            return _message(404, "Not Found")
        except HTTPException as exc:  # e.g. a redirect for a trailing slash
            return _message(exc.code or 400, "Not Found")
        owner, repo = args.pop("owner", self.owner), args.pop("repo", self.name)
        if args.pop("repo_id", self.repo_id) != self.repo_id or \
                f"{owner}/{repo}".lower() != self.repository.lower():
            return _message(404, "Not Found")
        with self._lock:
            return getattr(self, f"_on_{endpoint}")(request, body, **args)

    def _on_user(self, request: Request, body: Any) -> Response:
        if self.actions_token:
            return _message(403, "Resource not accessible by integration",
                            "/users/users#get-the-authenticated-user")
        return _json(self._user(self.login))

    def _on_repo(self, request: Request, body: Any) -> Response:
        return _json(self._repo())

    def _on_pull(self, request: Request, body: Any, number: int) -> Response:
        if number not in self.pulls:
            return _message(404, "Not Found")
        return _json(self._pull(self.pulls[number]))

    def _on_issue_comments(self, request: Request, body: Any, number: int) -> Response:
        if number not in self.comments:
            return _message(404, "Not Found")
        if request.method == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                return _message(422, "Invalid request.\n\n\"body\" wasn't supplied.")
            if len(body["body"]) > 65536:
                return _too_long("IssueComment", "body", 65536)
            comment = self._new_comment(number, body["body"], user=self.login)
            self.comments[number].append(comment)
            return _json(comment, 201)
        return self._page(request, self.comments[number],
                          f"/repositories/{self.repo_id}/issues/{number}/comments")

    def _page(self, request: Request, items: list[Any], link_path: str) -> Response:
        per_page = max(1, min(int(request.args.get("per_page", 30)), 100))
        page = max(1, int(request.args.get("page", 1)))
        last = max(1, -(-len(items) // per_page))
        links = []
        for rel, target in (("prev", page - 1), ("next", page + 1), ("last", last), ("first", 1)):
            if (rel in ("prev", "first") and page > 1) or (rel in ("next", "last") and page < last):
                query = urlencode({"per_page": per_page, "page": target})
                links.append(f'<{self._api(link_path)}?{query}>; rel="{rel}"')
        headers = {"Link": ", ".join(links)} if links else {}
        return _json(items[(page - 1) * per_page:page * per_page], headers=headers)

    def _find_comment(self, comment_id: int) -> tuple[int, dict[str, Any]] | None:
        for number, comments in self.comments.items():
            for comment in comments:
                if comment["id"] == comment_id:
                    return number, comment
        return None

    def _on_comment(self, request: Request, body: Any, comment_id: int) -> Response:
        found = self._find_comment(comment_id)
        if found is None:
            return _message(404, "Not Found")
        number, comment = found
        if request.method == "GET":
            return _json(comment)
        if request.method == "DELETE":
            self.comments[number].remove(comment)
            return Response(status=204)
        if comment["user"]["login"] != self.login:
            return _message(403, "You must have push access to edit this comment")
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return _message(422, "Invalid request.\n\n\"body\" wasn't supplied.")
        if len(body["body"]) > 65536:
            return _too_long("IssueComment", "body", 65536)
        comment["body"] = body["body"]
        comment["updated_at"] = self._now()
        return _json(comment)

    def _on_reactions(self, request: Request, body: Any, comment_id: int) -> Response:
        if self._find_comment(comment_id) is None:
            return _message(404, "Not Found")
        content = body.get("content") if isinstance(body, dict) else None
        if content not in REACTIONS:
            return _message(422, "Validation Failed")
        for reaction in self.reactions:
            if reaction["comment_id"] == comment_id and reaction["content"] == content:
                return _json(reaction["shape"], 200)
        reaction_id = next(self._ids)
        shape = {"id": reaction_id, "node_id": _node_id("reaction", reaction_id),
                 "user": self._user(self.login), "content": content, "created_at": self._now()}
        self.reactions.append({"comment_id": comment_id, "content": content, "shape": shape})
        return _json(shape, 201)

    def _on_statuses(self, request: Request, body: Any, sha: str) -> Response:
        if not isinstance(body, dict) or body.get("state") not in STATUS_STATES:
            return _message(422, "Validation Failed")
        description = body.get("description")
        if description is not None and len(description) > 140:
            return _too_long("Status", "description", 140)
        status_id = next(self._ids)
        created = self._now()
        shape = {"url": self._api(f"/repos/{self.repository}/statuses/{sha}"),
                 "avatar_url": f"{self.root_url}/avatars/u/{_user_id(self.login)}?v=4",
                 "id": status_id, "node_id": _node_id("status", status_id),
                 "state": body["state"], "description": description,
                 "target_url": body.get("target_url"), "context": body.get("context", "default"),
                 "created_at": created, "updated_at": created, "creator": self._user(self.login)}
        self.statuses.append({"sha": sha, **shape})
        return _json(shape, 201)

    def _commit(self, sha: str) -> dict[str, Any]:
        """A commit as the commits and pull-commits endpoints show it."""
        person = {"name": "Dev", "email": "dev@example.com", "date": _stamp(self.commits[sha])}
        api = self._api(f"/repos/{self.repository}/commits/{sha}")
        git_api = self._api(f"/repos/{self.repository}/git/commits/{sha}")
        return {"sha": sha, "node_id": _node_id("commit", int(sha[:7], 16)),
                "commit": {"author": person, "committer": person, "message": "change",
                           "tree": {"sha": "0" * 40, "url": git_api}, "url": git_api,
                           "comment_count": 0,
                           "verification": {"verified": False, "reason": "unsigned",
                                            "signature": None, "payload": None}},
                "url": api, "html_url": self._html(f"{self.repository}/commit/{sha}"),
                "comments_url": f"{api}/comments", "author": None, "committer": None,
                "parents": []}

    def _on_commit(self, request: Request, body: Any, sha: str) -> Response:
        if sha not in self.commits:
            return _message(422, f"No commit found for SHA: {sha}",
                            "/commits/commits#get-a-commit")
        return _json({**self._commit(sha),
                      "stats": {"total": 2, "additions": 1, "deletions": 1}, "files": []})

    def _on_pull_commits(self, request: Request, body: Any, number: int) -> Response:
        if number not in self.pulls:
            return _message(404, "Not Found")
        # GitHub lists at most 250 commits of a pull request, oldest first.
        shas = self.pulls[number]["commits"][-250:]
        return self._page(request, [self._commit(sha) for sha in shas],
                          f"/repositories/{self.repo_id}/pulls/{number}/commits")

    def _on_commit_statuses(self, request: Request, body: Any, sha: str) -> Response:
        newest_first = [{k: v for k, v in status.items() if k != "sha"}
                        for status in reversed(self.statuses) if status["sha"] == sha]
        return self._page(request, newest_first,
                          f"/repositories/{self.repo_id}/commits/{sha}/statuses")

    def _on_timeline(self, request: Request, body: Any, number: int) -> Response:
        if number not in self.pulls:
            return _message(404, "Not Found")
        record = self.pulls[number]
        stamped = [(comment["created_at"], {"event": "commented", "actor": comment["user"],
                                            **comment}) for comment in self.comments[number]]
        stamped += [(event["created_at"], event) for event in self.events.get(number, [])]
        # GitHub places commits by the dates their author wrote, which prove nothing.
        stamped += [(_stamp(self.commits[sha]), {**self._commit(sha), "event": "committed"})
                    for sha in record["commits"]]
        items = [item for _, item in sorted(stamped, key=lambda pair: pair[0])]
        return self._page(request, items, f"/repositories/{self.repo_id}/issues/{number}/timeline")

    def _on_branch(self, request: Request, body: Any, branch: str) -> Response:
        if branch not in self.branches:
            return _message(404, "Branch not found", "/branches/branches#get-a-branch")
        sha = self.branches[branch]
        self.commits.setdefault(sha, _EPOCH)
        api = self._api(f"/repos/{self.repository}/branches/{branch}")
        return _json({"name": branch, "commit": self._commit(sha), "protected": False,
                      "_links": {"self": api, "html": self._html(f"{self.repository}/tree/{branch}")}})

    def _on_permission(self, request: Request, body: Any, user: str) -> Response:
        role = self.roles.get(user, "read")
        collaborator = self._user(user)
        collaborator["permissions"] = {
            "admin": role == "admin", "maintain": role in ("admin", "maintain"),
            "push": role in ("admin", "maintain", "write"),
            "triage": role in ("admin", "maintain", "write", "triage"),
            "pull": role != "none"}
        collaborator["role_name"] = role
        return _json({"permission": LEGACY_PERMISSION[role], "role_name": role,
                      "user": collaborator})


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    base = {"X-GitHub-Media-Type": "github.v3; format=json", "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999", "X-RateLimit-Reset": "1714564800",
            "X-RateLimit-Resource": "core"}
    return Response(json.dumps(payload), status=status, headers={**base, **(headers or {})},
                    content_type="application/json; charset=utf-8")


def _message(status: int, message: str, docs: str = "",
             headers: dict[str, str] | None = None) -> Response:
    return _json({"message": message, "documentation_url": f"{DOCS}{docs}",
                  "status": str(status)}, status, headers)


def _too_long(resource: str, field_name: str, limit: int) -> Response:
    return _json({"message": "Validation Failed",
                  "errors": [{"resource": resource, "code": "custom", "field": field_name,
                              "message": f"{field_name} is too long (maximum is {limit} "
                                         "characters)"}],
                  "documentation_url": DOCS, "status": "422"}, 422)


@pytest.fixture
def github_server() -> Iterator[FakeGitHub]:
    """A running FakeGitHub (the workflow-token flavour: GET /user is refused)."""
    server = FakeGitHub()
    server.start()
    try:
        yield server
    finally:
        server.stop()
