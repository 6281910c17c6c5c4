"""The label comment as an attack surface: a comment's words (quoted, pasted, flooded,
hostile) and the bot comment's hidden readings, which a label job trusts for calibrate."""

from __future__ import annotations

import base64
import json
import re
import zlib

from flipgate.github import labels
from flipgate.github.event import LABELS_PER_COMMENT, Ignore, LabelCommand, decide, parse_command
from flipgate.github.texts import label_batch_reply

from support.gfm import to_html

CASES = {None: ["q1", "q2"]}


def comment_payload(body: str) -> dict:
    return {"action": "created", "issue": {"number": 7, "pull_request": {"url": "u"}},
            "comment": {"id": 1, "body": body, "user": {"login": "maintainer"},
                        "created_at": "2024-05-01T12:00:00Z"}}


def test_a_maintainer_quoting_or_pasting_someones_commands_gives_none_of_them() -> None:
    """A writer who quotes a reader's comment, or pastes it as code, does not record the
    labels it holds: only the writer's own lines are commands."""
    body = ("Quoting the author:\n"
            "> /flipgate label q1 grounded\n"
            "> /flipgate label q2 grounded\n"
            "/flipgate label q2 grounded\n\n"   # a quote's lazy continuation: still quoted
            "```\n/flipgate label q1 grounded\n```\n"
            "    /flipgate label q2 grounded\n"
            "`` x\n/flipgate label q1 grounded ``\n")
    assert isinstance(decide("issue_comment", comment_payload(body)), Ignore)


def test_a_flood_of_label_lines_reads_only_the_limit() -> None:
    body = "\n".join(f"/flipgate label q{i % 2 + 1} grounded" for i in range(20_000))
    activity = decide("issue_comment", comment_payload(body))
    assert isinstance(activity, LabelCommand)
    assert len(activity.labels) == LABELS_PER_COMMENT and activity.unread == 20_000 - 50


def test_hostile_words_echoed_in_the_reply_stay_inert() -> None:
    """The reply lists refused lines as typed: no mention, link, image or HTML survives."""
    parsed = parse_command("/flipgate label @everyone <img src=x onerror=alert(1)> grounded\n"
                           "/flipgate label [x](https://evil.example) grounded\n"
                           "/flipgate label q1 `` <script> grounded\n"
                           "/flipgate run ![a](https://evil.example/p.png) @org/team\n")
    assert parsed is not None
    recorded, refused = labels.resolve_all(parsed.labels, CASES, by="maintainer")
    assert not recorded and len(refused) == 3
    reply = label_batch_reply(recorded=[], refused=[(one.line, one.why) for one in refused],
                              unread=0, set_aside=[labels.shown(line) for line in parsed.set_aside],
                              limit=LABELS_PER_COMMENT)
    html = to_html(reply)
    assert "<img" not in html and "<script" not in html and "<a " not in html
    outside_code = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    assert "@everyone" not in outside_code and "@org" not in outside_code


def test_a_readings_block_that_inflates_without_end_is_ignored() -> None:
    entry = json.dumps([None, "q1", "candidate", "policy", "grounded"]).encode()
    bomb = zlib.compress(b"[" + b",".join([entry] * 200_000) + b"]", 9)  # 9 MB of readings
    body = f"<!-- flipgate:readings={base64.urlsafe_b64encode(bomb).decode()} -->"
    assert labels.read_readings(body) == {}


def test_readings_of_the_wrong_shape_give_no_judge_label() -> None:
    for forged in ([[None, "q1", "candidate", "policy", "excellent"]],
                   [[None, "q1", "sideways", "policy", "grounded"]],
                   [[None, "q`1", "candidate", "policy", "grounded"]],
                   [[None, "q1", "candidate", "policy", "grounded", "extra"]],
                   {"q1": "grounded"}):
        packed = zlib.compress(json.dumps(forged).encode())
        body = f"<!-- flipgate:readings={base64.urlsafe_b64encode(packed).decode()} -->"
        assert labels.read_readings(body) == {}, forged
    two = labels.readings_block({(None, "q1", "candidate"): labels.Reading("p", "grounded")})
    assert labels.read_readings(two + two) == {}  # more than one block: none is trusted
