"""`gate.review: required`, the record's rules (github/awaiting.py): held-back rows, the
maintainers' decisions and the head they were given on, to a commit status."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import replace

import pytest

from flipgate.github import awaiting
from flipgate.github.awaiting import ACCEPT, Decision, Review, status_of
from flipgate.github.labels import HumanLabel

HEAD, OTHER = "a" * 40, "b" * 40
HELD = ((None, "safety-1"), (None, "safety-2"), (None, "policy-1"))


def record(*decisions: Decision, accepted_by: str | None = None, total: int = 3) -> Review:
    return Review(head=HEAD, held=HELD[:total], total=total, decisions=decisions,
                  accepted_by=accepted_by)


def by_label(case_id: str, label: str, who: str = "alice") -> Decision:
    return Decision(key=(None, case_id), how=label, by=who)


@pytest.mark.parametrize(("decisions", "accepted_by", "state", "starts"), [
    ((), None, "pending", "⚠️ awaiting review: 3 flips undecided of 3"),
    ((by_label("safety-1", "grounded"),), None, "pending", "⚠️ awaiting review: 2 flips undecided of 3"),
    ((by_label("safety-1", "ungrounded"),), None, "failure", "❌ blocked: 1 held-back flip confirmed"),
    # A confirmation blocks whatever else was decided, an accept included.
    ((by_label("safety-1", "ungrounded"), by_label("safety-2", "grounded")), "bob", "failure",
     "❌ blocked"),
    (tuple(by_label(key[1], "grounded") for key in HELD), None, "success",
     "✅ passed after review: 3 held-back flips cleared"),
    # partial and non_answer say the answer is not ungrounded: the row is cleared.
    ((by_label("safety-1", "partial"), by_label("safety-2", "non_answer"),
      by_label("policy-1", "grounded")), None, "success", "✅ passed after review"),
    (tuple(Decision(key=key, how=ACCEPT, by="bob") for key in HELD), "bob", "success", "✅"),
])
def test_the_status_is_what_the_decisions_make_it(decisions, accepted_by, state, starts) -> None:
    status = status_of(record(*decisions, accepted_by=accepted_by))
    assert status.state == state and status.description.startswith(starts)
    assert len(status.description) <= 140
    assert (status.conclusion, status.exit_code) == {
        "pending": ("awaiting_review", 0), "failure": ("failure", 1), "success": ("success", 0)}[state]


def test_a_label_decides_only_the_candidates_answer_of_a_held_back_row() -> None:
    labels = [HumanLabel(id="safety-1", side="baseline", label="ungrounded", by="alice"),
              HumanLabel(id="general-1", side="candidate", label="ungrounded", by="alice"),
              HumanLabel(id="safety-2", side="candidate", label="ungrounded", by="alice")]
    updated, made = awaiting.with_labels(record(), labels)
    assert [one.key for one in made] == [(None, "safety-2")]
    assert status_of(updated).state == "failure"
    # A later label of the same row replaces the earlier decision.
    again, _ = awaiting.with_labels(updated, [HumanLabel(id="safety-2", side="candidate",
                                                         label="grounded", by="bob")])
    assert status_of(again).state == "pending"
    assert awaiting.with_labels(record(), labels[:2]) == (record(), [])


def test_accept_clears_what_is_undecided_and_leaves_the_decided_rows_as_they_are() -> None:
    start = record(by_label("safety-1", "grounded"))
    updated, cleared = awaiting.accepted(start, by="bob")
    assert cleared == 2 and status_of(updated).state == "success"
    assert updated.decided()[(None, "safety-1")].how == "grounded"
    assert updated.decided()[(None, "policy-1")] == Decision((None, "policy-1"), ACCEPT, "bob")
    assert awaiting.accepted(updated, by="carol") == (updated, 0)
    # Rows past those the record names are cleared only by an accept.
    many = Review(head=HEAD, held=HELD, total=250,
                  decisions=tuple(by_label(key[1], "grounded") for key in HELD))
    assert status_of(many).state == "pending"
    assert status_of(awaiting.accepted(many, by="bob")[0]).state == "success"


def test_decisions_hold_for_their_head_and_a_new_head_asks_again() -> None:
    decided = record(by_label("safety-1", "ungrounded"), accepted_by=None)
    same = awaiting.carried(decided, head=HEAD, held=list(HELD))
    assert same.decisions == decided.decisions and status_of(same).state == "failure"
    moved = awaiting.carried(decided, head=OTHER, held=list(HELD))
    assert moved.head == OTHER and moved.decisions == () and status_of(moved).state == "pending"
    # A row no longer held back on the same head loses its decision.
    fewer = awaiting.carried(decided, head=HEAD, held=list(HELD[1:]))
    assert fewer.decisions == () and fewer.total == 2


def test_the_record_survives_the_comment_and_its_section_says_who_decided() -> None:
    decided = record(by_label("safety-1", "ungrounded"), Decision((None, "policy-1"), ACCEPT, "bob"))
    body = awaiting.with_review("## flipgate\n\nrows\n", decided)
    assert awaiting.read_block(body) == decided
    assert "@alice" not in body  # a login is shown, never a mention that notifies
    body = body.replace("@&#8203;", "@")
    assert "`safety-1` — confirmed: labelled ungrounded by @alice" in body
    assert "`policy-1` — cleared: accepted by @bob" in body and "`safety-2` — undecided" in body
    # Written again, the old section and block are replaced, not repeated.
    again = awaiting.with_review(body, record())
    assert again.count("### 🧑‍⚖️ Review") == 1 and awaiting.read_block(again) == record()
    assert awaiting.read_block(awaiting.with_review(body, None)) is None


def _forged(data: object) -> str:
    packed = zlib.compress(json.dumps(data).encode())
    return f"<!-- flipgate:review={base64.urlsafe_b64encode(packed).decode()} -->"


def test_a_record_of_the_wrong_shape_decides_nothing() -> None:
    good = {"head": HEAD, "total": 1, "accepted_by": None, "per_suite": False,
            "held": [[None, "q1"]], "decisions": [[None, "q1", "grounded", "alice"]]}
    assert awaiting.read_block(_forged(good)) is not None
    for change in ({"head": "main"}, {"total": "1"}, {"accepted_by": "@everyone x"},
                   {"decisions": [[None, "q1", "fine", "alice"]]},
                   {"decisions": [[None, "q`1", "grounded", "alice"]]},
                   {"held": [[None, "q1"], [None, "q2"]]}, {"per_suite": "yes"}):
        assert awaiting.read_block(_forged({**good, **change})) is None, change
    assert awaiting.read_block(_forged(good) + _forged(good)) is None  # two blocks: neither


def test_a_large_record_names_what_fits_and_counts_the_rest() -> None:
    held = [(None, f"case-{n:04d}-" + "x" * 150) for n in range(400)]
    fitted = awaiting.fitted(awaiting.carried(None, head=HEAD, held=held))
    assert fitted.total == 400 and 0 < len(fitted.held) < 400
    body = awaiting.with_review("", fitted)
    assert len(body) <= awaiting.REVIEW_ROOM and awaiting.read_block(body) == fitted


def test_under_per_suite_statuses_each_suite_follows_its_own_rows() -> None:
    held = (("billing", "b1"), ("safety", "s1"), ("safety", "s2"))
    review = Review(head=HEAD, held=held, total=3, per_suite=True,
                    decisions=(Decision(("billing", "b1"), "grounded", "alice"),
                               Decision(("safety", "s1"), "grounded", "alice")))
    states = {suite: status.state for suite, status in awaiting.suite_statuses(review)}
    assert states == {"billing": "success", "safety": "pending"}
    assert awaiting.suite_statuses(replace(review, per_suite=False)) == []
    assert awaiting.read_block(awaiting.block(review)) == review
