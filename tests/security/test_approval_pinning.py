"""Attacks on `/flipgate run` approvals through history rewrites (issue 17, item 2).

A fork's pull request under `fork-policy: require-command`: each push triggers the
base's `pull_request_target` run, which only records the head (a pending status
naming the PR). A maintainer's command runs the check with the model key. The attacker
pushes, force-pushes and borrows heads from other PRs so that a commit nobody approved
runs under the approval. Only the head that is the head now, and provably was when the
command was written, may run; anything else is refused with a reply and runs nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flipgate.github.pinning import HeadRecord, Pinned, PinnedBy, Unpinned, pin_head

from support.action_harness import PR, Harness, RecordingCheck

GOOD = "v2: benign\n"


def new_commit(harness: Harness, text: str) -> str:
    return harness.repo.commit({"prompts/answer.prompty": text}, message=text.strip())


def fork_pr(harness: Harness) -> None:
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head, fork=True)


def synchronize(harness: Harness, check: RecordingCheck, sha: str) -> None:
    """The base's pull_request_target run on a push: it records `sha` as the head, pending."""
    harness.pull_event(event_name="pull_request_target", fork=True, head=sha)
    assert harness.run(check) == 0, harness.log.getvalue()[-2000:]


def push(harness: Harness, check: RecordingCheck, sha: str, *, force: bool = False,
         run: bool = True) -> None:
    harness.server.push(PR, sha, force=force)
    if run:
        synchronize(harness, check, sha)


def command(harness: Harness, body: str = "/flipgate run") -> None:
    harness.comment_event(body)
    harness._command_event = harness.env["GITHUB_EVENT_PATH"]  # type: ignore[attr-defined]


def run_command(harness: Harness, check: RecordingCheck) -> int:
    harness.env.update(GITHUB_EVENT_NAME="issue_comment",
                       GITHUB_EVENT_PATH=harness._command_event)  # type: ignore[attr-defined]
    before = len(check.calls)
    code = harness.run(check)
    harness._ran = check.calls[before:]  # type: ignore[attr-defined]
    return code


def nothing_ran(harness: Harness, check: RecordingCheck, *, evil: str, says: str) -> None:
    assert harness._ran == []  # type: ignore[attr-defined]
    assert [s["state"] for s in harness.server.statuses_for(evil)
            if s["state"] != "pending"] == []
    reply = harness.replies()[-1]
    assert reply.startswith("Nothing was run") and says in reply, reply


def test_force_push_back_to_an_evil_head_after_the_approval_of_its_child_runs_nothing(
        harness: Harness, check: RecordingCheck) -> None:
    """The issue's attack: C (evil, pending), then A (benign child, pending), approval of A,
    then a force-push back to C before the job runs."""
    fork_pr(harness)
    evil_c = harness.head
    synchronize(harness, check, evil_c)
    benign_a = new_commit(harness, GOOD)
    push(harness, check, benign_a)
    command(harness)
    push(harness, check, evil_c, force=True)

    assert run_command(harness, check) == 0

    nothing_ran(harness, check, evil=evil_c, says="rewritten")


def test_force_push_back_without_the_synchronize_run_having_happened_yet_runs_nothing(
        harness: Harness, check: RecordingCheck) -> None:
    fork_pr(harness)
    evil_c = harness.head
    synchronize(harness, check, evil_c)
    benign_a = new_commit(harness, GOOD)
    push(harness, check, benign_a)
    command(harness)
    push(harness, check, evil_c, force=True, run=False)

    assert run_command(harness, check) == 0

    nothing_ran(harness, check, evil=evil_c, says="rewritten")


def test_force_push_forward_to_an_unseen_commit_after_the_approval_runs_nothing(
        harness: Harness, check: RecordingCheck) -> None:
    fork_pr(harness)
    synchronize(harness, check, harness.head)
    command(harness)
    harness.repo.checkout(harness.base)
    evil_d = new_commit(harness, "v9: evil, unrelated history\n")
    push(harness, check, evil_d, force=True)

    assert run_command(harness, check) == 0

    nothing_ran(harness, check, evil=evil_d, says="")


def test_a_plain_push_between_the_command_and_the_run_runs_nothing(
        harness: Harness, check: RecordingCheck) -> None:
    fork_pr(harness)
    synchronize(harness, check, harness.head)
    command(harness)
    evil_b = new_commit(harness, "v3: evil\n")
    push(harness, check, evil_b, run=False)

    assert run_command(harness, check) == 0

    nothing_ran(harness, check, evil=evil_b, says=f"its head now, {evil_b[:7]}")


def test_a_plain_push_after_the_command_recorded_by_its_own_run_runs_nothing(
        harness: Harness, check: RecordingCheck) -> None:
    fork_pr(harness)
    synchronize(harness, check, harness.head)
    command(harness)
    evil_b = new_commit(harness, "v3: evil\n")
    push(harness, check, evil_b)

    assert run_command(harness, check) == 0

    nothing_ran(harness, check, evil=evil_b, says=f"its head now, {evil_b[:7]}")


def test_a_commit_that_was_the_head_of_another_pull_request_earlier_runs_nothing(
        harness: Harness, check: RecordingCheck) -> None:
    """The evil commit got flipgate's status long before the command, as PR 43's head;
    it is fast-forwarded onto PR 42 after the approval."""
    fork_pr(harness)
    synchronize(harness, check, harness.head)
    evil_x = new_commit(harness, "v3: evil\n")
    harness.server.add_status(evil_x, state="pending", description="#43: evaluating …")
    command(harness)
    push(harness, check, evil_x, run=False)

    assert run_command(harness, check) == 0

    nothing_ran(harness, check, evil=evil_x, says="")


def test_a_status_naming_this_pull_request_set_by_someone_else_proves_nothing(
        harness: Harness, check: RecordingCheck) -> None:
    """Another app (or a same-repository contributor's token) writes flipgate's format."""
    fork_pr(harness)
    evil_x = new_commit(harness, "v3: evil\n")
    harness.server.push(PR, evil_x)
    harness.server.add_status(evil_x, state="pending", description=f"#{PR}: evaluating …",
                              creator="some-other-app[bot]")
    command(harness)

    assert run_command(harness, check) == 0

    nothing_ran(harness, check, evil=evil_x, says="nothing in the pull request's history")


def test_a_final_status_or_another_context_proves_nothing(harness: Harness,
                                                          check: RecordingCheck) -> None:
    fork_pr(harness)
    harness.server.add_status(harness.head, state="success", description=f"#{PR}: evaluating …")
    harness.server.add_status(harness.head, state="pending", description=f"#{PR}: evaluating …",
                              context="other-gate")
    command(harness)
    assert run_command(harness, check) == 0
    assert harness._ran == []  # type: ignore[attr-defined]
    assert "nothing in the pull request's history" in harness.replies()[-1]


def test_a_command_on_a_pull_request_flipgate_never_recorded_is_refused_with_a_way_out(
        harness: Harness, check: RecordingCheck) -> None:
    """A workflow on comments only leaves no record; the committer dates prove nothing."""
    fork_pr(harness)
    command(harness)
    assert run_command(harness, check) == 0
    nothing_ran(harness, check, evil=harness.head, says="nothing in the pull request's history")
    assert "/flipgate run SHA" in harness.replies()[-1]


def test_the_recorded_head_unchanged_since_the_command_runs(harness: Harness,
                                                            check: RecordingCheck) -> None:
    fork_pr(harness)
    synchronize(harness, check, harness.head)
    command(harness)
    assert run_command(harness, check) == 0
    assert [call["head"] for call in harness._ran] == [harness.head]  # type: ignore[attr-defined]
    assert harness.final_status()["state"] == "success"


def test_a_force_push_before_the_command_is_what_the_maintainer_saw_and_runs(
        harness: Harness, check: RecordingCheck) -> None:
    fork_pr(harness)
    first = harness.head
    synchronize(harness, check, first)
    second = new_commit(harness, GOOD)
    push(harness, check, second)
    push(harness, check, first, force=True)  # back to the first, before anyone approved
    command(harness)
    assert run_command(harness, check) == 0
    assert [call["head"] for call in harness._ran] == [first]  # type: ignore[attr-defined]


def test_a_full_sha_named_in_the_command_runs_when_it_is_the_head(harness: Harness,
                                                                  check: RecordingCheck) -> None:
    fork_pr(harness)
    command(harness, f"/flipgate run {harness.head}")
    assert run_command(harness, check) == 0
    assert [call["head"] for call in harness._ran] == [harness.head]  # type: ignore[attr-defined]


def test_a_named_commit_that_is_no_longer_the_head_runs_nothing(harness: Harness,
                                                                check: RecordingCheck) -> None:
    fork_pr(harness)
    named = harness.head
    command(harness, f"/flipgate run {named}")
    evil_b = new_commit(harness, "v3: evil\n")
    push(harness, check, evil_b, run=False)
    assert run_command(harness, check) == 0
    nothing_ran(harness, check, evil=evil_b, says="is not the pull request's head now")


def test_a_short_named_sha_after_a_force_push_runs_nothing(harness: Harness,
                                                           check: RecordingCheck) -> None:
    """A force-push could bring in a commit ground to share the shortened prefix."""
    fork_pr(harness)
    named = harness.head
    command(harness, f"/flipgate run {named[:7]}")
    harness.server.push(PR, named, force=True)
    assert run_command(harness, check) == 0
    nothing_ran(harness, check, evil=named, says="give the full SHA")


# -- the rule itself, on records GitHub could serve ----------------------------------------

T = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
A, B, C = "a" * 40, "b" * 40, "c" * 40


def at(minutes: float) -> datetime:
    return T + timedelta(minutes=minutes)


def pin(records: list[HeadRecord], head: str = A, named: str | None = None) -> Pinned | Unpinned:
    return pin_head(commits=[C, B, A], current_head=head, comment_at=T, named=named,
                    records=records)


def test_a_force_push_in_the_same_second_as_the_command_cannot_be_placed_and_is_refused() -> None:
    assert isinstance(pin([HeadRecord(at(-5), A), HeadRecord(T, None, rewrite=True)]), Unpinned)


def test_a_record_in_the_same_second_as_the_command_proves_nothing() -> None:
    assert isinstance(pin([HeadRecord(T, A)]), Unpinned)


def test_two_heads_recorded_in_the_same_second_are_ambiguous() -> None:
    assert isinstance(pin([HeadRecord(at(-1), A), HeadRecord(at(-1), B)]), Unpinned)


def test_a_force_push_github_named_no_commit_for_after_the_record_is_refused() -> None:
    assert isinstance(pin([HeadRecord(at(-5), A), HeadRecord(at(-1), None, rewrite=True)]),
                      Unpinned)


def test_a_deleted_and_restored_head_branch_after_the_command_is_refused() -> None:
    records = [HeadRecord(at(-5), A), HeadRecord(at(1), None, rewrite=True, what="deleted"),
               HeadRecord(at(2), None, rewrite=True, what="restored")]
    assert isinstance(pin(records), Unpinned)


def test_a_force_push_that_github_names_becomes_the_head_record() -> None:
    records = [HeadRecord(at(-9), C), HeadRecord(at(-5), B), HeadRecord(at(-2), A, rewrite=True)]
    assert pin(records) == Pinned(A, pin(records).by)  # type: ignore[union-attr]


def test_a_record_of_another_head_after_the_command_is_refused() -> None:
    assert isinstance(pin([HeadRecord(at(-5), A), HeadRecord(at(3), B)]), Unpinned)


def test_a_prefix_that_matches_two_commits_is_refused() -> None:
    assert isinstance(pin_head(commits=["abc1" + "0" * 36, "abc1" + "f" * 36],
                               current_head="abc1" + "f" * 36, comment_at=T, named="abc1",
                               records=[]), Unpinned)


def test_a_rerun_of_an_old_deliverys_job_records_nothing_so_its_head_cannot_ride_on_it(
        harness: Harness, check: RecordingCheck) -> None:
    """C (evil) is force-pushed away for its parent A; a maintainer re-runs C's old
    synchronize job (its payload still says C); after the command, C is pushed again as a
    fast-forward of A. Were the re-run's status a record, C would be the newest head
    before the command, with no rewrite after it."""
    fork_pr(harness)
    benign_a = harness.head
    evil_c = new_commit(harness, "v3: evil child\n")
    push(harness, check, evil_c)
    push(harness, check, benign_a, force=True)
    synchronize(harness, check, evil_c)  # the re-run: the old payload, the head is A
    assert harness.server.statuses_for(evil_c)[-1]["description"].startswith("waiting")
    command(harness)
    push(harness, check, evil_c, run=False)

    assert run_command(harness, check) == 0

    nothing_ran(harness, check, evil=evil_c, says="")


# -- the base is part of the approval (issue 22, item 2) --------------------------------

def base_change(minutes: float) -> HeadRecord:
    return HeadRecord(at(minutes), None, what="the base changed", base_change=True)


def test_a_base_changed_after_the_command_is_refused() -> None:
    result = pin([HeadRecord(at(-5), A), base_change(2)])
    assert isinstance(result, Unpinned) and "base changed" in result.why


def test_a_base_changed_in_the_same_second_as_the_command_is_refused() -> None:
    assert isinstance(pin([HeadRecord(at(-5), A), base_change(0)]), Unpinned)


def test_a_named_commit_does_not_escape_a_later_base_change() -> None:
    assert isinstance(pin([base_change(1)], named=A), Unpinned)


def test_control_a_base_changed_before_the_command_is_what_the_maintainer_saw() -> None:
    assert pin([HeadRecord(at(-5), A), base_change(-2)]) == Pinned(A, PinnedBy.RECORDED)
