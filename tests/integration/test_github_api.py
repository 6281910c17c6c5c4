"""The GitHub shell against a loopback GitHub REST server, through the real PyGithub client."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from flipgate.github.api import ACTIONS_BOT_LOGIN, GitHubError, RepoAPI, StatusUpdate, connect
from flipgate.github.sticky import (
    LEGACY_MARKER,
    CommentMode,
    Published,
    context_marker,
    marked_fingerprint,
    marked_sha,
    newer_by_date,
    newer_by_head,
    publish,
    with_markers,
)

from support.github_server import FakeGitHub

OLD, NEW, NEWEST = "1" * 40, "2" * 40, "3" * 40
BASE = "b" * 40
MARKER = context_marker("flipgate")  # the default gate's marker


def api_for(server: FakeGitHub) -> RepoAPI:
    client = connect(server.api_url, server.token, pause_between_calls=False)
    return RepoAPI(client, server.repository)


@pytest.fixture
def api(github_server: FakeGitHub) -> RepoAPI:
    github_server.add_pull(7, base_sha=BASE, head_sha=NEW)
    return api_for(github_server)


# -- identity ------------------------------------------------------------------

def test_the_actions_token_is_github_actions_bot(api: RepoAPI,
                                                 github_server: FakeGitHub) -> None:
    assert api.own_login() == ACTIONS_BOT_LOGIN
    assert github_server.requests_to("GET", "/user")[0].status == 403


def test_a_personal_token_is_its_own_login() -> None:
    server = FakeGitHub(actions_token=False, login="release-bot")
    server.start()
    try:
        assert api_for(server).own_login() == "release-bot"
    finally:
        server.stop()


def test_a_bad_token_is_an_error_that_does_not_show_it(github_server: FakeGitHub) -> None:
    client = connect(github_server.api_url, "ghp_wrong_token_value", pause_between_calls=False)
    with pytest.raises(GitHubError) as caught:
        RepoAPI(client, github_server.repository).pull(1)
    assert caught.value.status == 401
    assert "ghp_wrong_token_value" not in str(caught.value)


# -- reading ---------------------------------------------------------------------

@pytest.mark.parametrize("fork", [False, True])
def test_pull_reads_the_current_shas_and_where_the_head_lives(api: RepoAPI,
                                                              github_server: FakeGitHub,
                                                              fork: bool) -> None:
    github_server.add_pull(8, base_sha=BASE, head_sha=NEWEST, fork=fork)
    pull = api.pull(8)
    assert (pull.number, pull.base_sha, pull.head_sha, pull.fork) == (8, BASE, NEWEST, fork)


@pytest.mark.parametrize(("role", "permission"), [
    ("admin", "admin"), ("maintain", "write"), ("write", "write"),
    ("triage", "read"), ("read", "read"),
])
def test_permission_is_githubs_permission_field(api: RepoAPI, github_server: FakeGitHub,
                                                role: str, permission: str) -> None:
    github_server.grant("someone", role)
    assert api.permission("someone") == permission


def test_permission_of_an_unknown_user_is_none(api: RepoAPI, github_server: FakeGitHub) -> None:
    github_server.fail("GET", "/collaborators/ghost/permission", 404, message="Not Found")
    assert api.permission("ghost") == "none"


def test_commit_date_and_a_commit_github_forgot(api: RepoAPI, github_server: FakeGitHub) -> None:
    when = datetime(2024, 6, 1, 9, 30, tzinfo=UTC)
    github_server.add_commit(NEW, when)
    assert api.commit_date(NEW) == when
    assert api.commit_date(OLD) is None


def test_a_pull_requests_commits_oldest_first_past_one_page(api: RepoAPI,
                                                            github_server: FakeGitHub) -> None:
    shas = [f"{index:040x}" for index in range(1, 131)]
    forged = datetime(2020, 1, 1, tzinfo=UTC)
    for sha in shas:
        github_server.push(7, sha, committed_at=forged if sha == shas[-1] else None)

    commits = api.pull_commits(7)

    assert [c.sha for c in commits] == [NEW, *shas]  # 131 commits: two pages of 100
    assert commits[-1].committed_at == forged  # the author's date, as written
    assert commits[0].committed_at is not None and commits[1].committed_at > commits[0].committed_at
    assert len(github_server.requests_to("GET", "/commits")) == 2


def test_a_force_push_replaces_the_commits(api: RepoAPI, github_server: FakeGitHub) -> None:
    github_server.push(7, OLD)
    github_server.push(7, NEWEST, force=True)
    assert [c.sha for c in api.pull_commits(7)] == [NEWEST]


def test_head_statuses_are_flipgates_pending_ones_naming_the_pull_request(
        api: RepoAPI, github_server: FakeGitHub) -> None:
    api.set_status(NEW, StatusUpdate(state="pending", description="#7: waiting", context="other"))
    api.set_status(NEW, StatusUpdate(state="pending", description="#7: waiting", context="flipgate"))
    api.set_status(NEW, StatusUpdate(state="pending", description="#8: waiting", context="flipgate"))
    api.set_status(NEW, StatusUpdate(state="success", description="#7: passed", context="flipgate"))
    github_server.add_status(NEW, state="pending", description="#7: waiting", creator="other[bot]")

    records = api.head_statuses(NEW, context="flipgate", number=7, login=github_server.login)

    [ours] = [s for s in github_server.statuses_for(NEW)
              if s["context"] == "flipgate" and s["description"] == "#7: waiting"
              and s["creator"]["login"] == github_server.login]
    assert [(r.sha, r.at) for r in records] == [(NEW, datetime.fromisoformat(ours["created_at"]))]


def test_head_rewrites_read_force_pushes_and_branch_events_from_the_timeline(
        api: RepoAPI, github_server: FakeGitHub) -> None:
    github_server.add_comment(7, "hello")
    github_server.push(7, NEW, force=True)
    github_server.add_event(7, "head_ref_deleted")
    github_server.add_event(7, "labeled")

    records = api.head_rewrites(7)

    assert [(r.sha, r.rewrite, r.what) for r in records] == [
        (NEW, True, "a force-push"), (None, True, "the head branch deleted")]
    assert all(r.at.tzinfo is not None for r in records)


# -- writing ---------------------------------------------------------------------

def test_status_reaches_the_sha_with_every_field(api: RepoAPI, github_server: FakeGitHub) -> None:
    api.set_status(NEW, StatusUpdate(state="pending", description="evaluating", context="flipgate",
                                     target_url="https://github.com/o/r/actions/runs/1"))
    [status] = github_server.statuses_for(NEW)
    assert (status["state"], status["description"], status["context"], status["target_url"]) == (
        "pending", "evaluating", "flipgate", "https://github.com/o/r/actions/runs/1")


def test_a_refused_write_is_a_github_error_with_githubs_message(api: RepoAPI) -> None:
    with pytest.raises(GitHubError, match="422.*description is too long"):
        api.set_status(NEW, StatusUpdate(state="success", description="x" * 141,
                                         context="flipgate"))


def test_reactions_land_on_the_comment(api: RepoAPI, github_server: FakeGitHub) -> None:
    comment = github_server.add_comment(7, "/flipgate run", user="maintainer")
    api.react(7, comment["id"], "eyes")
    api.react(7, comment["id"], "rocket")
    assert github_server.reactions_on(comment["id"]) == ["eyes", "rocket"]


# -- the sticky comment ----------------------------------------------------------

def own_comments(server: FakeGitHub, number: int) -> list[dict]:
    return [c for c in server.comments_on(number) if MARKER in c["body"]
            and c["user"]["login"] == server.login]


def test_first_publish_creates_one_comment_with_both_markers(api: RepoAPI,
                                                             github_server: FakeGitHub) -> None:
    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW,
                   body="## report") == Published.CREATED
    [comment] = github_server.comments_on(7)
    assert comment["user"]["login"] == ACTIONS_BOT_LOGIN
    assert MARKER in comment["body"] and marked_sha(comment["body"]) == NEW
    assert comment["body"].endswith("## report")


def test_publish_finds_its_comment_past_the_first_pages(api: RepoAPI,
                                                        github_server: FakeGitHub) -> None:
    for index in range(120):
        github_server.add_comment(7, f"review note {index}")
    publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW, body="first")
    for index in range(130):
        github_server.add_comment(7, f"later note {index}")

    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW,
                   body="second") == Published.EDITED

    [comment] = own_comments(github_server, 7)
    assert comment["body"].endswith("second")
    pages = [r.query.get("page", "1") for r in github_server.requests_to("GET", "/comments")]
    assert "2" in pages  # it had to follow the Link header to find it


@pytest.mark.parametrize("marker", [MARKER, LEGACY_MARKER])
def test_a_quoted_marker_from_someone_else_is_not_our_comment(api: RepoAPI,
                                                              github_server: FakeGitHub,
                                                              marker: str) -> None:
    github_server.add_comment(7, f"copied: {marker}", user="mallory")
    publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW, body="report")
    bodies = [c["body"] for c in github_server.comments_on(7)]
    assert bodies[0] == f"copied: {marker}" and len(bodies) == 2


def test_a_deleted_comment_is_recreated(api: RepoAPI, github_server: FakeGitHub) -> None:
    publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW, body="one")
    github_server.comments[7].clear()
    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW,
                   body="two") == Published.CREATED


def test_publish_without_create_only_updates(api: RepoAPI, github_server: FakeGitHub) -> None:
    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW, body="x",
                   create=False) == Published.NOT_CREATED
    assert github_server.comments_on(7) == []


def test_an_older_heads_run_never_overwrites_a_newer_one(api: RepoAPI,
                                                         github_server: FakeGitHub) -> None:
    github_server.push(7, NEWEST)
    publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEWEST, body="about newest")
    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW,
                   body="about new (slow run)") == Published.KEPT_NEWER
    [comment] = github_server.comments_on(7)
    assert comment["body"].endswith("about newest")


def test_a_newer_heads_run_replaces_an_older_comment(api: RepoAPI,
                                                     github_server: FakeGitHub) -> None:
    publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=OLD, body="about old")
    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW,
                   body="about new") == Published.EDITED


def test_between_two_stale_runs_the_later_commit_wins(api: RepoAPI,
                                                      github_server: FakeGitHub) -> None:
    github_server.push(7, NEWEST)  # neither run is about the current head
    github_server.add_commit(OLD, datetime(2024, 1, 1, tzinfo=UTC))
    github_server.add_commit(NEW, datetime(2024, 2, 1, tzinfo=UTC))
    publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW, body="about new")
    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=OLD,
                   body="about old") == Published.KEPT_NEWER


@pytest.mark.parametrize(("ours", "theirs", "current", "newer"), [
    (NEW, NEW, NEW, False),        # same head: refresh it
    (NEW, OLD, NEW, False),        # we are the head now
    (OLD, NEW, NEW, True),         # they are the head now: keep theirs
    (OLD, NEW, NEWEST, None),      # both stale: ask the dates
])
def test_newer_by_head(ours: str, theirs: str, current: str, newer: bool | None) -> None:
    assert newer_by_head(ours=ours, theirs=theirs, current_head=current) is newer


@pytest.mark.parametrize(("ours", "theirs", "newer"), [
    (datetime(2024, 1, 1), datetime(2024, 1, 2), True),
    (datetime(2024, 1, 2), datetime(2024, 1, 1), False),
    (datetime(2024, 1, 1), None, False),   # their commit was force-pushed away
])
def test_newer_by_date(ours: datetime, theirs: datetime | None, newer: bool) -> None:
    assert newer_by_date(our_date=ours, their_date=theirs) is newer


def test_with_markers_replaces_an_old_sha_marker_and_keeps_one_marker() -> None:
    once = with_markers(f"{LEGACY_MARKER}\nbody", context="flipgate", head_sha=OLD,
                        fingerprint="abc")
    twice = with_markers(once, context="flipgate", head_sha=NEW, fingerprint="def")
    assert twice.count(MARKER) == 1 and marked_sha(twice) == NEW and OLD not in twice
    assert marked_fingerprint(twice) == "def" and LEGACY_MARKER not in twice
    assert twice.splitlines()[1:] == ["body"]


@pytest.mark.parametrize(("context", "marker"), [
    ("flipgate", "<!-- flipgate:flipgate -->"),
    ("flipgate/prod", "<!-- flipgate:flipgate/prod -->"),
    ("evil --> <b>x</b>", "<!-- flipgate:evil -\u2010\u203a <b\u203ax</b\u203a -->"),
])
def test_the_marker_names_the_status_context_and_cannot_end_early(context: str,
                                                                  marker: str) -> None:
    assert context_marker(context) == marker
    assert context_marker(context).count("-->") == 1


# -- several gates on one pull request -------------------------------------------

def gate_comments(server: FakeGitHub, context: str) -> list[dict]:
    return [c for c in server.comments_on(7) if context_marker(context) in c["body"]]


def test_two_gates_keep_two_comments_each_edited_in_place(api: RepoAPI,
                                                          github_server: FakeGitHub) -> None:
    for run in ("first", "second"):
        for context in ("flipgate/support", "flipgate/sales"):
            publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW,
                    body=f"{LEGACY_MARKER}\n{context} {run}", context=context)

    support, sales = (gate_comments(github_server, c) for c in ("flipgate/support",
                                                                  "flipgate/sales"))
    assert [c["body"].splitlines()[-1] for c in support + sales] == [
        "flipgate/support second", "flipgate/sales second"]
    assert len(github_server.comments_on(7)) == 2
    assert len(github_server.requests_to("POST", "/comments")) == 2


def test_a_bare_marker_comment_is_adopted_once_and_remarked(api: RepoAPI,
                                                            github_server: FakeGitHub) -> None:
    old = github_server.add_comment(7, f"{LEGACY_MARKER}<!-- flipgate:sha={OLD} -->\nold report",
                                    user=ACTIONS_BOT_LOGIN)
    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW,
                   body=f"{LEGACY_MARKER}\nnew report",
                   context="flipgate/prod") == Published.MIGRATED
    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW,
                   body=f"{LEGACY_MARKER}\nstaging report",
                   context="flipgate/staging") == Published.CREATED

    prod, staging = gate_comments(github_server, "flipgate/prod"), gate_comments(
        github_server, "flipgate/staging")
    assert [c["id"] for c in prod] == [old["id"]] and len(staging) == 1
    assert LEGACY_MARKER not in prod[0]["body"] and prod[0]["body"].endswith("new report")


def test_on_change_leaves_a_comment_with_the_same_verdicts(api: RepoAPI,
                                                           github_server: FakeGitHub) -> None:
    def post(body: str, fingerprint: str) -> Published:
        return publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW, body=body,
                       fingerprint=fingerprint, mode=CommentMode.ON_CHANGE)

    assert post("1 blocking (12.3 s)", "aaa") is Published.CREATED
    assert post("1 blocking (9.8 s)", "aaa") is Published.SAME_VERDICTS
    assert post("2 blocking", "bbb") is Published.EDITED
    [comment] = github_server.comments_on(7)
    assert comment["body"].endswith("2 blocking") and marked_fingerprint(comment["body"]) == "bbb"
    assert len(github_server.requests_to("PATCH", "/comments")) == 1


def test_comment_never_reads_and_writes_no_comment(api: RepoAPI,
                                                   github_server: FakeGitHub) -> None:
    assert publish(api, number=7, login=ACTIONS_BOT_LOGIN, head_sha=NEW, body="report",
                   mode=CommentMode.NEVER) is Published.DISABLED
    assert github_server.requests_to("GET", "/comments") == []
    assert github_server.comments_on(7) == []


# -- GitHub Enterprise layout -------------------------------------------------------

def test_an_api_url_with_a_path_prefix_is_honoured() -> None:
    server = FakeGitHub(prefix="/api/v3")
    server.start()
    try:
        server.add_pull(3, base_sha=BASE, head_sha=NEW)
        for index in range(105):
            server.add_comment(3, f"note {index}")
        api = api_for(server)
        publish(api, number=3, login=ACTIONS_BOT_LOGIN, head_sha=NEW, body="a")
        publish(api, number=3, login=ACTIONS_BOT_LOGIN, head_sha=NEW, body="b")
        assert len(own_comments(server, 3)) == 1
        assert all(r.path.startswith("/api/v3/") for r in server.requests)
    finally:
        server.stop()


@pytest.mark.parametrize("verbose", [False, True])
def test_the_expected_403_on_get_user_reaches_the_log_only_when_verbose(
        api: RepoAPI, verbose: bool) -> None:
    import logging

    from flipgate.github.api import github_logging

    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.lines: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.lines.append(record.getMessage())

    collect = Collect()
    logger = logging.getLogger("github")
    logger.addHandler(collect)  # beside PyGithub's own stderr handler
    github_logging(verbose=verbose)
    try:
        assert api.own_login() == ACTIONS_BOT_LOGIN
    finally:
        logger.removeHandler(collect)
        logger.setLevel(logging.INFO)  # PyGithub's own default
    assert any("failed with 403" in line for line in collect.lines) is verbose
