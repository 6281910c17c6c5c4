"""`gate.review: required` through the action, as a team with a small suite meets it.

`flipgate action` runs the real pipeline against the loopback OpenAI and GitHub servers:
5 cases, 2 of them flipping to ungrounded in a blocking category of 2 cases, so the
sample-size rule holds them back. The status waits (`pending`, exit 0) until a
maintainer's labels or `/flipgate accept` decide; a re-run of the head keeps the decision,
a new head asks again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from flipgate.github import action, awaiting
from flipgate.github.texts import STATUS_LIMIT

from support.action_harness import PR, Harness, helpful_prompt_pull

CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [safety]
{review}"""
CATEGORIES = ["safety", "safety", "general", "general", "general"]
CASES = [{"id": f"{category}-{i}", "category": category, "query": f"Question {i}?",
          "context": f"Fact {i} ({category}-{i}) is in the documentation."}
         for i, category in enumerate(CATEGORIES)]
FLIPPED = {"safety-0", "safety-1"}
AWAITING = ("⚠️ awaiting review: 2 confirmed flips did not block: safety has 2 cases, below 50; "
            "a maintainer decides in the pull request")


@pytest.fixture
def small_suite(harness: Harness, openai_server: Any, monkeypatch: pytest.MonkeyPatch,
                tmp_path: Path):
    def setup(*, review: bool = True) -> Harness:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the key arrives as the input only
        config = CONFIG.format(review="  review: required\n" if review else "")
        return helpful_prompt_pull(harness, openai_server, tmp_path / "service", config=config,
                                   cases=CASES, flipped=FLIPPED)

    return setup


def run(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> int:
    """The action as the runner starts it, with the harness's environment."""
    for name, value in harness.env.items():
        monkeypatch.setenv(name, value)
    return action.main(os.environ, stream=harness.log)


def comment(harness: Harness, monkeypatch: pytest.MonkeyPatch, body: str, *,
            author: str = "maintainer") -> dict[str, Any]:
    made = harness.comment_event(body, author=author)
    assert run(harness, monkeypatch) == 0, harness.log.getvalue()[-3000:]
    return made


def body_of(harness: Harness) -> str:
    [own] = harness.own_comments()
    return own["body"].replace("@&#8203;", "@")


def test_a_small_suites_confirmed_flips_wait_for_a_person(small_suite, monkeypatch) -> None:
    harness = small_suite()

    assert run(harness, monkeypatch) == 0, harness.log.getvalue()[-3000:]

    final = harness.final_status()
    assert final["state"] == "pending"
    assert final["description"] == AWAITING and len(final["description"]) <= STATUS_LIMIT
    assert harness.outputs()["conclusion"] == "awaiting_review"
    assert harness.outputs()["held-back"] == "2"
    report = json.loads((harness.repo.path / "flipgate-out/report.json").read_text())
    assert report["conclusion"] == "awaiting_review" and report["counts"]["held_back"] == 2
    body = body_of(harness)
    headline = next(line for line in body.splitlines() if line.startswith("## "))
    assert headline.startswith("## ⚠️ flipgate awaits review: 2 confirmed flips did not block")
    assert "### 🧑‍⚖️ Review" in body
    assert "`safety-0` — undecided" in body and "`safety-1` — undecided" in body
    assert "::warning title=flipgate::flipgate: " + AWAITING in harness.log.getvalue()


def test_without_the_setting_the_same_flips_pass_as_before(small_suite, monkeypatch) -> None:
    harness = small_suite(review=False)

    assert run(harness, monkeypatch) == 0

    assert harness.final_status()["state"] == "success"
    assert harness.outputs()["conclusion"] == "success"
    assert "### 🧑‍⚖️ Review" not in body_of(harness)
    assert awaiting.read_block(body_of(harness)) is None


def test_a_writers_ungrounded_label_blocks_and_grounded_labels_clear(small_suite,
                                                                     monkeypatch) -> None:
    harness = small_suite()
    assert run(harness, monkeypatch) == 0

    made = comment(harness, monkeypatch, "/flipgate label safety-0 ungrounded")

    assert harness.server.reactions_on(made["id"]) == ["+1"]
    final = harness.final_status()
    assert final["state"] == "failure"
    assert final["description"].startswith("❌ blocked: 1 held-back flip confirmed ungrounded in "
                                           "review")
    assert "`safety-0` — confirmed: labelled ungrounded by @maintainer" in body_of(harness)

    # The maintainer reads it again and finds both answers grounded: the change passes.
    comment(harness, monkeypatch, "/flipgate label safety-0 grounded\n"
                                  "/flipgate label safety-1 grounded")

    final = harness.final_status()
    assert final["state"] == "success" and final["description"].startswith("✅ passed after review")
    body = body_of(harness)
    assert "`safety-0` — cleared: labelled grounded by @maintainer" in body
    assert "`safety-1` — cleared: labelled grounded by @maintainer" in body


def test_accept_clears_the_rest_holds_for_a_rerun_and_a_new_head_asks_again(
        small_suite, monkeypatch) -> None:
    harness = small_suite()
    assert run(harness, monkeypatch) == 0
    comment(harness, monkeypatch, "/flipgate label safety-1 grounded")
    assert harness.final_status()["state"] == "pending"
    assert harness.final_status()["description"].startswith("⚠️ awaiting review: 1 flip undecided of 2")

    made = comment(harness, monkeypatch, "/flipgate accept")

    assert harness.server.reactions_on(made["id"]) == ["+1"]
    assert harness.final_status()["state"] == "success"
    body = body_of(harness)
    assert "`safety-0` — cleared: accepted by @maintainer" in body
    assert "`safety-1` — cleared: labelled grounded by @maintainer" in body

    # A re-run of the same head (the job re-run, or /flipgate run) keeps the decision.
    harness.pull_event()
    assert run(harness, monkeypatch) == 0
    assert harness.final_status()["state"] == "success"
    assert harness.outputs()["conclusion"] == "success"
    assert "`safety-0` — cleared: accepted by @maintainer" in body_of(harness)

    # A new head asks again, though its flips are the same rows.
    new_head = harness.repo.commit({"README.md": "more\n"})
    harness.server.push(PR, new_head)
    harness.head = new_head
    harness.pull_event(head=new_head)
    assert run(harness, monkeypatch) == 0
    assert harness.final_status(new_head)["state"] == "pending"
    assert harness.final_status(new_head)["description"] == AWAITING
    body = body_of(harness)
    assert "`safety-0` — undecided" in body and "accepted by" not in body
    record = awaiting.read_block(body)
    assert record is not None and record.head == new_head and record.decisions == ()
