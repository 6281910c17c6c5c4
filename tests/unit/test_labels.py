"""Labels from the PR, the pure part: the command's words, resolving an id, the hidden block."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from flipgate.github import labels
from flipgate.github.event import (
    LABELS_PER_COMMENT,
    LabelCommand,
    UsageCommand,
    decide,
    parse_command,
)
from flipgate.model import Bucket
from flipgate.output.comment import render_comment
from flipgate.output.links import Links

from support.factories import make_report, make_row
from support.gfm import to_html

CASES = {None: ["q1", "q2"]}
SUITES = {"support": ["q1", "refund/7"], "sales": ["q1", "s2"]}


def test_the_labels_are_the_buckets_in_their_order() -> None:
    assert labels.LABELS == tuple(bucket.value for bucket in Bucket)


@pytest.mark.parametrize(("words", "expected"), [
    (["q1", "grounded"], labels.HumanLabel("q1", "candidate", "grounded", "al")),
    (["q1", "baseline", "partial"], labels.HumanLabel("q1", "baseline", "partial", "al")),
    (["q2", "candidate", "non_answer"], labels.HumanLabel("q2", "candidate", "non_answer", "al")),
])
def test_a_label_names_an_answer(words: list[str], expected: labels.HumanLabel) -> None:
    request = labels.parse_label(words)
    assert isinstance(request, labels.LabelRequest)
    assert labels.resolve(request, CASES, by="al") == expected


@pytest.mark.parametrize(("target", "found"), [
    ("s2", ("sales", "s2")), ("sales/q1", ("sales", "q1")), ("support/refund/7", ("support", "refund/7")),
    ("refund/7", ("support", "refund/7")),
])
def test_with_suites_an_id_or_suite_slash_id_names_one_answer(target: str, found: tuple) -> None:
    request = labels.parse_label([target, "grounded"])
    assert isinstance(request, labels.LabelRequest)
    resolved = labels.resolve(request, SUITES, by="al")
    assert isinstance(resolved, labels.HumanLabel) and (resolved.suite, resolved.id) == found


def test_an_id_two_suites_share_must_name_its_suite() -> None:
    request = labels.parse_label(["q1", "grounded"])
    assert isinstance(request, labels.LabelRequest)
    mistake = labels.resolve(request, SUITES, by="al")
    assert isinstance(mistake, labels.LabelMistake)
    assert "`support/q1`" in mistake.why and "`sales/q1`" in mistake.why


def test_an_unknown_id_lists_the_valid_ones_up_to_a_bound() -> None:
    request = labels.parse_label(["nope", "grounded"])
    assert isinstance(request, labels.LabelRequest)
    many = {None: [f"c{i}" for i in range(1000)]}
    mistake = labels.resolve(request, many, by="al")
    assert isinstance(mistake, labels.LabelMistake)
    assert "`c0`" in mistake.why and "`c29`" in mistake.why and "`c30`" not in mistake.why
    assert "and 970 more" in mistake.why


# A pharmacy's 24 cases (issue 30): dosage, refills, hours, insurance.
PHARMACY = {None: [f"{topic}-{n:02d}" for topic in ("dosage", "refill", "hours", "insurance")
                   for n in range(1, 7)]}


@pytest.mark.parametrize(("typed", "meant"), [
    ("refil-03", ["refill-03"]),
    ("Dosage-05", ["dosage-05"]),
    ("insurance-7", ["insurance-01", "insurance-02", "insurance-03"]),
])
def test_a_mistyped_id_gets_the_closest_ids_not_every_id(typed: str, meant: list[str]) -> None:
    request = labels.parse_label([typed, "grounded"])
    assert isinstance(request, labels.LabelRequest)
    mistake = labels.resolve(request, PHARMACY, by="al")
    assert isinstance(mistake, labels.LabelMistake)
    named = re.findall(r"`([^`]+)`", mistake.why)
    assert named[0] == typed and "did you mean" in mistake.why
    assert named[1:] == meant  # closest first, and only those: not the run's 24 ids


def test_a_mistyped_id_of_a_suite_gets_its_suite_named() -> None:
    request = labels.parse_label(["sales/q11", "grounded"])
    assert isinstance(request, labels.LabelRequest)
    mistake = labels.resolve(request, {"support": ["q1", "q2"], "sales": ["q1", "q7"]}, by="al")
    assert isinstance(mistake, labels.LabelMistake)
    assert "did you mean `sales/q1`" in mistake.why


@pytest.mark.parametrize("words", [["a`b", "grounded"], ["x" * 201, "grounded"], ["a\u0000b", "grounded"],
                                   ["q1", "Grounded"], ["q1", "both", "grounded"], [], ["a", "b", "c", "d"]])
def test_words_that_are_not_a_label_are_a_mistake(words: list[str]) -> None:
    mistake = labels.parse_label(words)
    assert isinstance(mistake, labels.LabelMistake)
    assert len(mistake.why) < 300 and "\u0000" not in mistake.why


def test_a_label_line_with_too_many_words_is_a_label_the_reply_refuses() -> None:
    parsed = parse_command("/flipgate label q1 baseline grounded\nthanks")
    assert parsed is not None and parsed.name == "label"
    assert parsed.arguments == ("q1", "baseline", "grounded")
    too_many = parse_command("/flipgate label " + " ".join(["w"] * 50))
    assert too_many is not None and too_many.name == "label"
    assert isinstance(labels.parse_label(too_many.labels[0]), labels.LabelMistake)


BATCH = """Looks good! Three labels:
/flipgate label q1 partial
  /flipgate label q2 baseline grounded

> /flipgate label quoted grounded
>
> /flipgate label quoted2 grounded

```
/flipgate label fenced grounded
```
~~~~ text
/flipgate label tilde grounded
~~~~
    /flipgate label indented grounded
\t/flipgate label tabbed grounded
`/flipgate label inline grounded`
see `this span
/flipgate label in-span grounded` ends here
<!--
/flipgate label html grounded
-->
- /flipgate label listed grounded
please /flipgate label mid grounded

/flipgate label q3 ungrounded"""


def test_every_label_line_counts_but_not_in_quotes_or_code() -> None:
    parsed = parse_command(BATCH)
    assert parsed is not None and parsed.name == "label"
    assert parsed.labels == (("q1", "partial"), ("q2", "baseline", "grounded"),
                             ("q3", "ungrounded"))
    assert parsed.arguments == ("q1", "partial") and parsed.unread == 0


def test_a_comment_records_at_most_the_limit_and_counts_the_rest() -> None:
    body = "\n".join(f"/flipgate label q{i} grounded" for i in range(LABELS_PER_COMMENT + 7))
    parsed = parse_command(body)
    assert parsed is not None and len(parsed.labels) == LABELS_PER_COMMENT
    assert parsed.labels[-1] == (f"q{LABELS_PER_COMMENT - 1}", "grounded") and parsed.unread == 7


def test_a_run_line_beside_label_lines_is_set_aside() -> None:
    parsed = parse_command("/flipgate run\n/flipgate label q1 grounded\n/flipgate frobnicate")
    assert parsed is not None and parsed.name == "label" and parsed.labels == (("q1", "grounded"),)
    assert parsed.set_aside == ("/flipgate run", "/flipgate frobnicate")


def test_one_batch_records_what_it_can_and_says_why_for_the_rest() -> None:
    batch = [("q1", "grounded"), ("q9", "grounded"), ("q2", "left", "partial"), ("q2", "great")]
    recorded, refused = labels.resolve_all(batch, CASES, by="al")
    assert recorded == [labels.HumanLabel("q1", "candidate", "grounded", "al")]
    assert [one.line for one in refused] == ["/flipgate label q9 grounded",
                                             "/flipgate label q2 left partial",
                                             "/flipgate label q2 great"]
    assert "is not a case of this run" in refused[0].why
    assert "the sides are baseline, candidate" in refused[1].why
    assert "the labels are ungrounded, non_answer, partial, grounded" in refused[2].why


@pytest.mark.parametrize(("body", "kind"), [("/flipgate label q1 grounded", LabelCommand),
                                            ("/flipgate labels", UsageCommand)])
def test_decide_reads_a_label_command_from_the_real_payload(body: str, kind: type) -> None:
    payload = json.loads((Path(__file__).parents[1] / "fixtures" / "github" /
                          "issue_comment.created.json").read_text())
    payload["comment"]["body"] = body
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}
    assert isinstance(decide("issue_comment", payload), kind)


def test_a_block_of_plain_json_as_earlier_versions_wrote_it_is_still_read() -> None:
    import base64
    import json as json_module

    entry = {"suite": None, "id": "q1", "side": "candidate", "label": "grounded", "by": "al"}
    plain = base64.urlsafe_b64encode(json_module.dumps([entry]).encode()).decode()
    stored = labels.read_block(f"<!-- flipgate:labels={plain} -->")
    assert stored.problem is None and stored.labels == (labels.HumanLabel("q1", "candidate",
                                                                          "grounded", "al"),)
    # What this version writes is compressed: many more labels fit the block's room.
    many = [labels.HumanLabel(f"refund-{i:04d}", "candidate", "grounded", "alice")
            for i in range(300)]
    assert labels.fits(many) and labels.read_block(labels.block(many)).labels == tuple(many)


def test_the_block_round_trips_and_keeps_the_latest_label_per_answer() -> None:
    given = [labels.HumanLabel("q1", "candidate", "grounded", "alice"),
             labels.HumanLabel("q1", "candidate", "ungrounded", "bob"),
             labels.HumanLabel("q1", "candidate", "partial", "carol", suite="support")]
    body = labels.with_labels("the comment", labels.latest(given))
    stored = labels.read_block(body)
    assert stored.problem is None
    assert [(one.suite, one.by) for one in stored.labels] == [(None, "bob"), ("support", "carol")]
    assert labels.with_labels(body, []) == "the comment\n"


def test_the_section_mentions_nobody_and_stays_inert() -> None:
    hostile = labels.HumanLabel("<img src=x onerror=alert(1)>|*x*", "candidate", "grounded", "alice")
    body = labels.with_labels("top", [hostile])
    assert "@alice" not in body  # a zero-width space after @: no notification
    html = to_html(body)
    assert "<img" not in html and "&lt;img" in html and "<em>" not in html


@pytest.mark.parametrize("entry", [
    {"suite": None, "id": "q1", "side": "candidate", "label": "grounded", "by": "-alice"},
    {"suite": None, "id": "q1", "side": "candidate", "label": "grounded", "by": "a" * 40},
    {"suite": None, "id": "", "side": "candidate", "label": "grounded", "by": "alice"},
    {"suite": 3, "id": "q1", "side": "candidate", "label": "grounded", "by": "alice"},
    {"suite": None, "id": "q1", "side": "candidate", "label": None, "by": "alice"},
    {"suite": None, "id": "q1", "side": "candidate", "label": "grounded"},
])
def test_an_entry_that_is_not_a_label_makes_the_block_ignored(entry: dict) -> None:
    encoded = base64.urlsafe_b64encode(json.dumps([entry]).encode()).decode()
    stored = labels.read_block(f"x <!-- flipgate:labels={encoded} -->")
    assert stored.labels == () and stored.problem


def test_two_blocks_are_not_trusted() -> None:
    one = labels.block([labels.HumanLabel("q1", "candidate", "grounded", "alice")])
    stored = labels.read_block(one + one)
    assert stored.labels == () and "more than one" in (stored.problem or "")


def test_the_row_in_the_comment_says_who_labelled_it() -> None:
    report = make_report([make_row("q1", category="policy", before=5, after=2, rescore=1)])
    markdown = render_comment(report, labels={(None, "q1"): ("labelled grounded by @alice",)})
    row = next(line for line in markdown.splitlines() if line.startswith("| q1"))
    assert row.startswith("| q1 · 🏷️ labelled grounded by @") and "alice" in row
    # The label command's edit of a comment writes the same tag, so it leaves this row be.
    assert labels.on_rows(markdown, [labels.HumanLabel("q1", "candidate", "grounded", "alice")]) \
        == markdown
    assert "labelled" not in render_comment(report)


def test_a_row_whose_id_links_to_report_html_gets_its_label_tag_after_the_link() -> None:
    report = make_report([make_row("q_1", category="policy", before=5, after=2, rescore=1)])
    links = Links(report="https://pages.example/pr-7/report.html")
    tagged = render_comment(report, links=links,
                            labels={(None, "q_1"): ("labelled grounded by @alice",)})
    edited = labels.on_rows(render_comment(report, links=links),
                            [labels.HumanLabel("q_1", "candidate", "grounded", "alice")])
    row = next(line for line in edited.splitlines() if line.startswith("| [q"))
    assert row.startswith("| [q\\_1](https://pages.example/pr-7/report.html#case-q_5f_1) · 🏷️ "
                          "labelled grounded by @")
    assert edited == tagged  # the edit writes what a new rendering would
