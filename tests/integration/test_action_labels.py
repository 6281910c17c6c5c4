"""`/flipgate label ID [baseline|candidate] LABEL` through the action: real webhook payloads
(the body adapted), PyGithub against the loopback GitHub server, a real git workspace whose
base holds the configuration and the cases a label must name."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.github.labels import read_block
from flipgate.output.write import write_outputs

from support.action_harness import PR, Harness, RecordingCheck
from support.factories import make_report, make_row

CONFIG = "version: 1\ncases: eval/cases.jsonl\ngenerator: prompts/answer.prompty\n"
CASES = "".join(json.dumps({"id": f"q{i}", "query": f"q {i}?", "context": f"c {i}.",
                            "category": "policy"}) + "\n" for i in range(1, 4))


@pytest.fixture
def labelled(harness: Harness, check: RecordingCheck) -> Harness:
    """A PR whose base has cases q1..q3, after one run that posted the gate's comment."""
    base = harness.repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES,
                                "prompts/answer.prompty": "v1\n"}, message="cases")
    head = harness.repo.commit({"prompts/answer.prompty": "v3\n"}, message="head 2")
    harness.base, harness.head = base, head
    harness.server.add_pull(PR, base_sha=base, head_sha=head)
    check.outcome = make_report([make_row("q1", category="policy", before=5, after=2, rescore=3),
                                 make_row("q2", before=5, after=5)])
    harness.pull_event()
    harness.run(check)
    assert len(harness.own_comments()) == 1
    return harness


def label(harness: Harness, words: str, *, author: str = "maintainer") -> dict:
    comment = harness.comment_event(f"/flipgate label {words}", author=author)
    assert harness.run(None) == 0
    return comment


def _unlinked(body: str) -> list[str]:
    """The comment's lines with each row id's link to its report.html anchor read as the id."""
    return [re.sub(r"\[(q\d)\]\([^)]*#case-\1\)", r"\1", line) for line in body.splitlines()]


def test_a_maintainers_label_is_kept_shown_and_written(labelled: Harness, check: RecordingCheck) -> None:
    command = label(labelled, "q1 grounded")
    assert labelled.server.reactions_on(command["id"]) == ["+1"]
    [comment] = labelled.own_comments()
    assert "`q1` — labelled grounded by @" in comment["body"]
    # The row itself says so at once, though the label command re-renders nothing.
    rows = [line for line in _unlinked(comment["body"]) if line.startswith("| q1")]
    assert rows and all(line.startswith("| q1 · 🏷️ labelled grounded by @") for line in rows)
    assert read_block(comment["body"]).labels[0].by == "maintainer"
    written = (labelled.repo.path / "flipgate-out" / "labels.jsonl").read_text()
    # With what calibrate needs of the judge, from the comment's run (q1 went 5 → 2).
    assert json.loads(written) == {"id": "q1", "suite": None, "side": "candidate",
                                   "label": "grounded", "by": "maintainer",
                                   "category": "policy", "judge_label": "ungrounded"}
    assert labelled.replies() == []

    # A later label of the same answer replaces it; another side is its own label.
    label(labelled, "q1 ungrounded")
    label(labelled, "q1 baseline grounded")
    body = labelled.own_comments()[0]["body"]
    kept = read_block(body).labels
    assert [(one.side, one.label) for one in kept] == [("candidate", "ungrounded"),
                                                       ("baseline", "grounded")]
    row = next(line for line in _unlinked(body) if line.startswith("| q1"))
    assert row.count("🏷️") == 1 and "labelled grounded by" not in row.split("|")[1].split(";")[0]

    # The next run keeps them, shows them on the row, and writes labels.jsonl again.
    (labelled.repo.path / "flipgate-out" / "labels.jsonl").unlink()
    labelled.pull_event()
    labelled.run(check)
    assert check.calls[-1]["labels"] == {(None, "q1"): ("labelled ungrounded by @maintainer",
                                                        "labelled grounded (baseline) by @maintainer")}
    [comment] = labelled.own_comments()
    assert len(read_block(comment["body"]).labels) == 2
    assert "labelled ungrounded by @" in next(line for line in _unlinked(comment["body"])
                                              if line.startswith("| q1"))
    assert (labelled.repo.path / "flipgate-out" / "labels.jsonl").read_text().count("\n") == 2


def test_a_readers_label_is_refused_with_a_reply(labelled: Harness) -> None:
    labelled.server.grant("reader", "read")
    command = label(labelled, "q1 grounded", author="reader")
    [reply] = labelled.replies()
    assert "`read` access" in reply and "/flipgate label" in reply and "Nothing was recorded" in reply
    assert labelled.server.reactions_on(command["id"]) == ["-1"]
    assert read_block(labelled.own_comments()[0]["body"]).labels == ()
    assert not (labelled.repo.path / "flipgate-out" / "labels.jsonl").exists()


@pytest.mark.parametrize(("words", "says"), [
    ("q9 grounded", "`q9` is not a case of this run; the ids are `q1`, `q2`, `q3`"),
    ("Q1x grounded", "`Q1x` is not a case of this run; did you mean `q1`?"),
    ("q1 left grounded", "unknown side `left`; the sides are baseline, candidate"),
    ("q1 great", "unknown label `great`; the labels are ungrounded, non_answer, partial, grounded"),
    ("q1", "`/flipgate label ID [baseline|candidate] LABEL`"),
])
def test_an_unknown_id_side_or_label_gets_the_valid_ones_and_records_nothing(
        labelled: Harness, words: str, says: str) -> None:
    command = label(labelled, words)
    [reply] = labelled.replies()
    assert says in reply and reply.startswith("Nothing was recorded")
    assert labelled.server.reactions_on(command["id"]) == ["confused"]
    assert read_block(labelled.own_comments()[0]["body"]).labels == ()


def forge_block(harness: Harness, payload: bytes) -> None:
    comment = harness.own_comments()[0]
    encoded = base64.urlsafe_b64encode(payload).decode()
    comment["body"] += f"\n<!-- flipgate:labels={encoded} -->\n"


@pytest.mark.parametrize("payload", [
    b"not json",
    b'{"id": "q1"}',
    json.dumps([{"suite": None, "id": "q1", "side": "candidate", "label": "grounded",
                 "by": "x y <script>"}]).encode(),
    json.dumps([{"suite": None, "id": "q1", "side": "sideways", "label": "grounded",
                 "by": "alice"}]).encode(),
    json.dumps([{"suite": None, "id": "q1", "side": "candidate", "label": "excellent",
                 "by": "alice"}]).encode(),
    json.dumps([{"suite": None, "id": "q1", "side": "candidate", "label": "grounded",
                 "by": "alice", "verdict": "unchanged"}]).encode(),
    b"[" * 10_000,
])
def test_a_block_that_does_not_parse_is_ignored_and_reported(labelled: Harness, check: RecordingCheck,
                                                             payload: bytes) -> None:
    forge_block(labelled, payload)
    labelled.pull_event()
    labelled.run(check)
    assert "the comment's labels were ignored" in labelled.log.getvalue()
    assert not check.calls[-1]["labels"]
    assert read_block(labelled.own_comments()[0]["body"]).labels == ()
    assert not (labelled.repo.path / "flipgate-out" / "labels.jsonl").exists()


def test_labels_jsonl_is_read_by_calibrate_as_it_is(labelled: Harness, tmp_path: Path) -> None:
    label(labelled, "q1 grounded")
    label(labelled, "q2 baseline grounded")
    report = make_report([make_row("q1", category="policy", before=5, after=2, rescore=1),
                          make_row("q2", before=5, after=5)])
    write_outputs(report, tmp_path / "run")
    result = CliRunner().invoke(cli, [
        "calibrate", "--report", str(tmp_path / "run" / "report.json"),
        "--labels", str(labelled.repo.path / "flipgate-out" / "labels.jsonl"),
        "--out", str(tmp_path / "cal")])
    assert result.exit_code == 0, result.output
    figures = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert figures["labelled"] == 2
    assert figures["confusion"]["ungrounded"]["grounded"] == 1  # the judge said 2, a person grounded
    assert figures["confusion"]["grounded"]["grounded"] == 1


def test_a_label_jobs_labels_jsonl_is_calibrated_alone(labelled: Harness, tmp_path: Path) -> None:
    """The label job runs no check, yet its labels.jsonl carries the judge's bucket of each
    answer from the comment's run: one file, one calibrate, no report.json."""
    label(labelled, "q1 grounded")
    label(labelled, "q2 baseline grounded")
    assert "flipgate calibrate --labels flipgate-report/labels.jsonl" in labelled.summary()
    assert "gh run download" in labelled.summary() and "-n flipgate-report" in labelled.summary()
    result = CliRunner().invoke(cli, [
        "calibrate", "--labels", str(labelled.repo.path / "flipgate-out" / "labels.jsonl"),
        "--out", str(tmp_path / "cal")])
    assert result.exit_code == 0, result.output
    figures = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert figures["labelled"] == 2 and list(figures["per_category"]) == ["policy"]
    assert figures["confusion"]["ungrounded"]["grounded"] == 1  # the run's judge said 2
    assert figures["confusion"]["grounded"]["grounded"] == 1
    assert figures["reading"]["verdict"] == "may not block on its own"


def test_readings_forged_into_the_comment_are_ignored(labelled: Harness) -> None:
    """The readings block is read as strictly as the labels block: one that is not what
    flipgate writes gives no judge_label (calibrate then asks for the report)."""
    import zlib

    comment = labelled.own_comments()[0]
    forged = [[None, "q1", "candidate", "policy", "excellent"]]
    encoded = base64.urlsafe_b64encode(zlib.compress(json.dumps(forged).encode())).decode()
    comment["body"] = re.sub(r"<!-- flipgate:readings=[^ ]* -->",
                             f"<!-- flipgate:readings={encoded} -->", comment["body"])
    label(labelled, "q1 grounded")
    written = json.loads((labelled.repo.path / "flipgate-out" / "labels.jsonl").read_text())
    assert "judge_label" not in written and written["label"] == "grounded"


def test_a_label_given_while_the_check_runs_is_not_lost(labelled: Harness, check: RecordingCheck) -> None:
    """The label job edits the comment while a run's check is under way: the run's edit
    keeps it (the labels are read again just before the comment is written)."""
    from flipgate.github.labels import HumanLabel, with_labels

    def labelling_meanwhile(**kwargs):
        comment = labelled.own_comments()[0]
        comment["body"] = with_labels(comment["body"], [HumanLabel("q2", "candidate", "partial",
                                                                   "maintainer")])
        return check(**kwargs)

    labelled.pull_event()
    labelled.run(labelling_meanwhile)
    [comment] = labelled.own_comments()
    assert [one.id for one in read_block(comment["body"]).labels] == ["q2"]
    assert "q2" in (labelled.repo.path / "flipgate-out" / "labels.jsonl").read_text()


def test_labels_jsonl_holds_the_labels_of_this_runs_rows(labelled: Harness, check: RecordingCheck) -> None:
    """A label of a case the run no longer has stays in the comment but not in labels.jsonl,
    which calibrate reads beside this run's report.json."""
    label(labelled, "q1 grounded")
    label(labelled, "q3 grounded")  # a case of the base, not a row of the report below
    labelled.pull_event()
    labelled.run(check)
    lines = (labelled.repo.path / "flipgate-out" / "labels.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["q1"]
    assert len(read_block(labelled.own_comments()[0]["body"]).labels) == 2


def test_labels_jsonl_is_never_written_through_a_linked_output_folder(labelled: Harness,
                                                                      tmp_path: Path) -> None:
    """A pull request that makes flipgate-out a link does not get labels written where it points."""
    import shutil

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = labelled.repo.path / "flipgate-out"
    shutil.rmtree(out, ignore_errors=True)
    out.symlink_to(elsewhere)
    label(labelled, "q1 grounded")
    assert not (elsewhere / "labels.jsonl").exists()
    assert "labels.jsonl not written" in labelled.log.getvalue()
    assert read_block(labelled.own_comments()[0]["body"]).labels  # the label is still kept


def test_a_comment_of_label_lines_records_each_and_answers_once(labelled: Harness) -> None:
    body = ("Looked at these rows.\n"
            "/flipgate label q1 partial\n"
            "> /flipgate label q2 ungrounded\n\n"        # a quote of someone else: not read
            "/flipgate label q2 baseline grounded\n"
            "```\n/flipgate label q3 ungrounded\n```\n"   # in code: not read
            "/flipgate label q9 grounded\n"
            "/flipgate label q3 sideways grounded\n"
            "/flipgate run\n")
    command = labelled.comment_event(body)
    assert labelled.run(None) == 0
    [reply] = labelled.replies()
    assert reply.startswith("Recorded 2 of the 4 labels in this comment:")
    assert "- `q1` labelled partial by @&#8203;maintainer" in reply  # no mention ping
    assert "- `q2` labelled grounded (baseline) by @&#8203;maintainer" in reply
    assert "`/flipgate label q9 grounded`: `q9` is not a case of this run" in reply
    assert "`/flipgate label q3 sideways grounded`: unknown side `sideways`" in reply
    assert "Not obeyed" in reply and "`/flipgate run`" in reply
    assert labelled.server.reactions_on(command["id"]) == ["+1"]
    kept = read_block(labelled.own_comments()[0]["body"]).labels
    assert [(one.id, one.side, one.label) for one in kept] == [("q1", "candidate", "partial"),
                                                               ("q2", "baseline", "grounded")]
    lines = (labelled.repo.path / "flipgate-out" / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 2


def test_a_comment_past_the_limit_says_what_was_not_read(labelled: Harness) -> None:
    from flipgate.github.event import LABELS_PER_COMMENT

    body = "\n".join(["/flipgate label q1 grounded"] * (LABELS_PER_COMMENT + 3))
    labelled.comment_event(body)
    assert labelled.run(None) == 0
    [reply] = labelled.replies()
    assert f"Recorded {LABELS_PER_COMMENT} of the {LABELS_PER_COMMENT + 3} labels" in reply
    assert f"3 more label lines were not read: a comment records at most {LABELS_PER_COMMENT}" in reply
    assert len(read_block(labelled.own_comments()[0]["body"]).labels) == 1  # one answer, last wins
