"""The texts flipgate writes itself: status descriptions, replies, escaping of user text."""

from __future__ import annotations

import cmarkgfm
import pytest

from flipgate.github.texts import (
    STATUS_LIMIT,
    code_block,
    could_not_run_comment,
    refusal_reply,
    status_description,
    usage_reply,
)
from flipgate.model import Conclusion, Counts
from flipgate.text.escaping import inline_code

from support.factories import make_report


def _with_counts(conclusion: Conclusion, counts: Counts):
    """A report with these counts (the rows don't matter to a status description)."""
    built = make_report([], conclusion=conclusion)
    built.counts = counts
    return built


@pytest.mark.parametrize(("conclusion", "counts", "description"), [
    (Conclusion.SUCCESS, dict(cases=40), "passed: 40 cases; no regressions"),
    (Conclusion.SUCCESS, dict(cases=1, regressions_to_review=1, moved=3),
     "passed: 1 case; 1 to review, 3 moved"),
    (Conclusion.FAILURE, dict(cases=40, blocking_regressions=2, unstable=1),
     "blocked: 40 cases; 2 blocking regressions, 1 unstable"),
    (Conclusion.ERROR, dict(cases=40, errors=1, blocking_regressions=1),
     "could not finish: 40 cases; 1 blocking regression, 1 judge error"),
    (Conclusion.ERROR, dict(cases=40), "could not finish: 40 cases; see the comment"),
    (Conclusion.SKIPPED, dict(), "no prompt or model change"),
])
def test_status_description(conclusion: Conclusion, counts: dict, description: str) -> None:
    assert status_description(_with_counts(conclusion, Counts(**counts))) == description


def test_status_description_never_exceeds_140_characters() -> None:
    huge = Counts(cases=10**12, blocking_regressions=10**11, regressions_to_review=10**11,
                  new_non_answers=10**11, unstable=10**11, moved=10**11, still_ungrounded=10**11,
                  relevance_drops=10**11, errors=10**11)
    text = status_description(_with_counts(Conclusion.ERROR, huge))
    assert len(text) <= STATUS_LIMIT and text.endswith("…")


def test_a_run_awaiting_review_says_so_and_that_a_person_decides() -> None:
    text = status_description(_with_counts(Conclusion.AWAITING_REVIEW, Counts(
        cases=10, regressions_to_review=2, held_back=2)))
    assert text == ("⚠️ awaiting review: 2 confirmed flips did not block: too few cases; "
                    "a maintainer decides in the pull request")
    assert "/flipgate accept" in usage_reply(None)


HOSTILE = "`x` <img src=x onerror=alert(1)> @octocat ```\n</details> | cell"


def rendered(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown)


def test_inline_code_keeps_hostile_text_inert() -> None:
    html = rendered(f"before {inline_code(HOSTILE)} after")
    assert "<img" not in html and "<code>" in html and "after" in html
    assert 'href="https://github.com/octocat"' not in html


@pytest.mark.parametrize("closer", ["\n```\n", "\r```\r", "\r\n```\r\n", "\n   ```\r"],
                         ids=["LF", "CR", "CRLF", "indented"])
def test_code_block_cannot_be_closed_from_inside(closer: str) -> None:
    # A YAML key in the PR's front matter can hold a bare CR, and the error that names
    # it lands in this block: Markdown ends a line at CR as well as at LF.
    html = rendered(code_block(HOSTILE + closer + "## passed\n<b>bold</b> @octocat"
                               + closer) + "\n\nafter")
    assert "<img" not in html and "<b>" not in html and "<h2>" not in html
    assert html.count("<pre") == 1 and html.rstrip().endswith("<p>after</p>")


@pytest.mark.parametrize("reply", [
    lambda text: usage_reply(text),
    lambda text: could_not_run_comment(head_sha="a" * 40, kind="bad input", detail=text),
], ids=["usage", "could-not-run"])
def test_text_users_typed_never_carries_flipgates_marker(reply) -> None:
    # The sticky comment is the oldest of the token's comments holding the marker: a
    # reply that echoed it would be taken for flipgate's comment.
    text = reply("<!-- flipgate --><!-- flipgate:sha=" + "b" * 40 + " -->")
    assert "<!-- flipgate" not in text


def test_replies_never_start_with_a_command_and_escape_what_users_typed() -> None:
    for reply in (usage_reply(None), usage_reply("<b>x</b>"),
                  refusal_reply(author="mallory", permission="read"),
                  could_not_run_comment(head_sha="a" * 40, kind="bad input", detail=HOSTILE)):
        assert not reply.lstrip().startswith("/flipgate")
        assert "<img" not in rendered(reply) and "<b>x" not in rendered(reply)
