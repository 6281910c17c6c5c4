"""A flip nobody confirmed waits for a person (`gate.review: required`): pure rules.

A run that concludes `awaiting_review` held flips back (the sample-size rule). Which rows,
on which head, and what maintainers decided about them is kept in the gate's own comment:
a visible section and a hidden block, `<!-- flipgate:review=BASE64 -->`, read as strictly
as the labels block (github/labels.py). From that record alone this module says what the
commit status is: `failure` once any held-back row is labelled ungrounded (a confirmed,
blocking regression), `success` once every one is cleared (labelled otherwise, or
accepted), `pending` until then. Decisions hold for the head they were given on; a run on
another head starts a new record, so a new head asks again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from flipgate.errors import EXIT_BLOCKED, EXIT_PASS
from flipgate.github.labels import (
    DEFAULT_SIDE,
    UNREADABLE,
    HumanLabel,
    decoded_block,
    hidden_block,
    shown,
    valid_id,
    valid_login,
)
from flipgate.model import Bucket, Report, Row
from flipgate.text.escaping import escape_md, plural, short, shorten
from flipgate.verdict import gate

Key = tuple[str | None, str]   # (suite, case id); suite None in a run without suites
CONFIRMED, CLEARED = "confirmed", "cleared"
ACCEPT = "accept"              # how a row was cleared by `/flipgate accept`
_HOWS = (*(bucket.value for bucket in Bucket), ACCEPT)
# The block names at most this many held-back rows; past them only `/flipgate accept`
# decides (its `rest` covers every row, named or not).
MOST_NAMED = 200
REVIEW_ROOM = 12_000           # what the section and the block take of the comment at most
_SECTION_LINES = 30   # each at most ~170 characters: the section stays in half the room
_BLOCK = re.compile(r"<!-- flipgate:review=([A-Za-z0-9_=-]*) -->")
SECTION_START = "<!-- flipgate:review-section -->"
SECTION_END = "<!-- flipgate:review-section-end -->"
_SECTION = re.compile(re.escape(SECTION_START) + r".*?" + re.escape(SECTION_END) + r"\n?",
                      re.DOTALL)
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


@dataclass(frozen=True)
class Decision:
    """A maintainer's word on one held-back row: `how` is the label they gave, or ACCEPT."""

    key: Key
    how: str
    by: str

    @property
    def outcome(self) -> str:
        return CONFIRMED if self.how == Bucket.UNGROUNDED.value else CLEARED

    def shown(self) -> str:
        if self.how == ACCEPT:
            return f"cleared: accepted by @{self.by}"
        verb = "confirmed" if self.outcome == CONFIRMED else "cleared"
        return f"{verb}: labelled {self.how} by @{self.by}"


@dataclass(frozen=True)
class Review:
    """The held-back rows of the run on `head`, and what maintainers decided on that head.
    `total`: how many rows were held back (the first MOST_NAMED are named in `held`);
    `accepted_by`: who accepted every row still undecided, if anyone did."""

    head: str
    held: tuple[Key, ...]
    total: int
    decisions: tuple[Decision, ...] = ()
    accepted_by: str | None = None
    per_suite: bool = False    # the run set a status per suite (`status: per-suite`)

    def decided(self) -> dict[Key, Decision]:
        """The latest decision of each named row."""
        return {one.key: one for one in self.decisions if one.key in self.held}


@dataclass(frozen=True)
class Status:
    """What the record amounts to: the commit status, its description, the `conclusion`
    output and the exit code of the run that posts it."""

    state: str
    description: str
    conclusion: str
    exit_code: int


def status_of(review: Review) -> Status:
    """`failure` when a row was confirmed; `success` when every held-back row is cleared
    (by a label, or by an accept); else `pending`."""
    decided = review.decided()
    confirmed = [one for one in decided.values() if one.outcome == CONFIRMED]
    if confirmed:
        who = ", ".join(sorted({f"@{one.by}" for one in confirmed}))
        return Status("failure", shorten(f"{gate.BLOCKED_MARK} blocked: "
                                         f"{plural(len(confirmed), 'held-back flip')} confirmed "
                                         f"ungrounded in review ({who})", 140),
                      "failure", EXIT_BLOCKED)
    if review.accepted_by is not None or len(decided) >= review.total:
        return Status("success", shorten(f"{gate.PASSED_MARK} passed after review: "
                                         f"{plural(review.total, 'held-back flip')} cleared", 140),
                      "success", EXIT_PASS)
    undecided = review.total - len(decided)
    return Status("pending", shorten(f"{gate.HELD_BACK_MARK} awaiting review: "
                                     f"{plural(undecided, 'flip')} undecided of {review.total}; "
                                     "label each, or /flipgate accept", 140),
                  "awaiting_review", EXIT_PASS)


def suite_statuses(review: Review) -> list[tuple[str, Status]]:
    """Each suite's own status under `status: per-suite`, from its held-back rows. Rows past
    MOST_NAMED are not named, so each suite counts them as undecided until an accept."""
    if not review.per_suite:
        return []
    unnamed = review.total - len(review.held)
    suites = dict.fromkeys(suite for suite, _ in review.held if suite is not None)
    return [(suite, status_of(replace(review, held=held, total=len(held) + unnamed)))
            for suite in suites
            for held in [tuple(key for key in review.held if key[0] == suite)]]


def held_rows(report: Report) -> list[Key]:
    """The rows the sample-size rule held back, by (suite, id), in the report's order."""
    parts: list[tuple[str | None, list[Row]]] = (
        [(part.name, part.report.rows) for part in report.suites] or [(None, report.rows)])
    return [(suite, row.id) for suite, rows in parts for row in rows if gate.held_back(row)]


def carried(previous: Review | None, *, head: str, held: Sequence[Key],
            per_suite: bool = False) -> Review:
    """The record of a run on `head` that held `held` back: the decisions of `previous`
    when it was about the same head (for rows still held back), none for a new head."""
    fresh = Review(head=head, held=tuple(held[:MOST_NAMED]), total=len(held), per_suite=per_suite)
    if previous is None or previous.head != head:
        return fresh
    return replace(fresh, decisions=tuple(one for one in previous.decisions if one.key in fresh.held),
                   accepted_by=previous.accepted_by)


def with_labels(review: Review, labels: Iterable[HumanLabel]) -> tuple[Review, list[Decision]]:
    """The record with the labels that decide a held-back row: a label on the candidate's
    answer of a row the record names (the baseline's answer decides nothing). The decisions
    made come second."""
    made = [Decision(key=(one.suite, one.id), how=one.label, by=one.by) for one in labels
            if one.side == DEFAULT_SIDE and (one.suite, one.id) in review.held]
    if not made:
        return review, []
    kept = [one for one in review.decisions if one.key not in {new.key for new in made}]
    return replace(review, decisions=(*kept, *made)), made


def accepted(review: Review, *, by: str) -> tuple[Review, int]:
    """The record with every row still undecided cleared by `by`, and how many that was."""
    decided = review.decided()
    fresh = tuple(Decision(key=key, how=ACCEPT, by=by) for key in review.held if key not in decided)
    undecided = review.total - len(decided)
    if undecided <= 0:
        return review, 0
    return replace(review, decisions=(*review.decisions, *fresh), accepted_by=by), undecided


# -- the record in the comment ----------------------------------------------------------

def block(review: Review) -> str:
    return hidden_block("review", {
        "head": review.head, "total": review.total, "accepted_by": review.accepted_by,
        "per_suite": review.per_suite,
        "held": [list(key) for key in review.held],
        "decisions": [[*one.key, one.how, one.by] for one in review.decisions]})


def read_block(body: str) -> Review | None:
    """The record a comment keeps; None when it keeps none, or one this module did not
    write (more than one block, a field of the wrong shape): nothing is decided then."""
    found = _BLOCK.findall(body)
    if len(found) != 1:
        return None
    try:
        data = decoded_block(found[0])
    except UNREADABLE:
        return None
    if not isinstance(data, dict) or set(data) != {"head", "total", "accepted_by", "per_suite",
                                                   "held", "decisions"}:
        return None
    head, total, by, held, decisions = (data["head"], data["total"], data["accepted_by"],
                                        data["held"], data["decisions"])
    if not (isinstance(head, str) and _SHA.fullmatch(head) and isinstance(held, list)
            and isinstance(data["per_suite"], bool)
            and isinstance(decisions, list) and (by is None or valid_login(by))
            and type(total) is int and len(held) <= min(total, MOST_NAMED)):
        return None
    keys = [_key(entry) for entry in held]
    made = [_decision(entry) for entry in decisions]
    if any(key is None for key in keys) or any(one is None for one in made):
        return None
    return Review(head=head, held=tuple(key for key in keys if key is not None), total=total,
                  decisions=tuple(one for one in made if one is not None), accepted_by=by,
                  per_suite=data["per_suite"])


def _key(entry: object) -> Key | None:
    if not (isinstance(entry, list) and len(entry) == 2):
        return None
    suite, case_id = entry
    return (suite, case_id) if (suite is None or valid_id(suite)) and valid_id(case_id) else None


def _decision(entry: object) -> Decision | None:
    if not (isinstance(entry, list) and len(entry) == 4):
        return None
    key = _key(entry[:2])
    how, by = entry[2], entry[3]
    if key is None or how not in _HOWS or not valid_login(by):
        return None
    return Decision(key=key, how=how, by=by)


def section(review: Review) -> str:
    """What the comment shows of the record: each held-back row and its decision."""
    decided = review.decided()
    status = status_of(review)
    lines = [f"{SECTION_START}\n### 🧑‍⚖️ Review\n\n"
             f"`gate.review: required`: {plural(review.total, 'flip')} held back on "
             f"`{short(review.head)}`. {escape_md(status.description)}.\n\n"]
    for key in review.held[:_SECTION_LINES]:
        suite, case_id = key
        name = f"{suite}/{case_id}" if suite else case_id
        found = decided.get(key)
        lines.append(f"- `{shown(name)}` — {escape_md(found.shown()) if found else 'undecided'}\n")
    rest = review.total - min(len(review.held), _SECTION_LINES)
    if rest > 0:
        lines.append(f"- … and {plural(rest, 'more row')}"
                     + (f", accepted by @{review.accepted_by}" if review.accepted_by else "") + "\n")
    lines.append("\nA maintainer decides: `/flipgate label ID ungrounded` makes a row a blocking "
                 "regression, `/flipgate label ID grounded` clears it, `/flipgate accept` clears "
                 "every row still undecided. Decisions hold for this head; a new push asks again."
                 f"\n{SECTION_END}")
    return "".join(lines)


def with_review(body: str, review: Review | None) -> str:
    """`body` with its review section and block replaced by this record's (None: removed)."""
    bare = _BLOCK.sub("", _SECTION.sub("", body)).rstrip("\n")
    if review is None:
        return bare + "\n"
    return f"{bare}\n\n{section(review)}\n{block(review)}\n"


def fitted(review: Review, room: int = REVIEW_ROOM // 2) -> Review:
    """The record with as many rows named as its block's room holds (the first ones)."""
    while len(block(review)) > room and review.held:
        named = review.held[:len(review.held) // 2]
        review = replace(review, held=named,
                         decisions=tuple(one for one in review.decisions if one.key in named))
    return review


# -- replies ------------------------------------------------------------------------------

NOTHING_AWAITS = ("Nothing was decided: flipgate's comment on this pull request holds no review. "
                  "A run awaits review only under `gate.review: required`, when the sample-size "
                  "rule held flips back.\n")


def not_decided_reply(why: str) -> str:
    """`why` comes from pinning.py or from this module (SHAs and fixed words)."""
    return (f"Nothing was decided in the review: {why}. Read the pull request's head as it is "
            "now and comment again.\n")


def all_decided_reply(review: Review) -> str:
    return (f"Nothing was accepted: every held-back flip on `{short(review.head)}` is already "
            "decided.\n")


def other_head(review: Review, head: str) -> str | None:
    """Why a command pinned to `head` may not decide this record, or None when it may."""
    if head == review.head:
        return None
    return (f"the review in flipgate's comment is of {short(review.head)}, and the command is "
            f"for {short(head)}; a run on that head asks again")
