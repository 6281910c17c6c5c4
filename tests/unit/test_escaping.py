"""Untrusted text can't change the comment's structure, run HTML, link or mention anyone.

Every check renders with cmark-gfm (raw HTML let through, stricter than
GitHub) and reads back the HTML.
"""

from __future__ import annotations

import html
import re

import pytest

from flipgate.output.comment import MARKER, render_comment
from flipgate.text.escaping import cell, cell_list, escape_md, fence, one_line

from support.factories import fluency, make_change, make_judge, make_report, one_of_each
from support.gfm import ISSUE_REFERENCE, MENTION, consistent_tables, outside_fences, read, to_html

ZWSP = "\u200b"

# Strings an answer, a reason, an id or a diff might carry. Each must read
# back as the same plain text (on one line), and change nothing else.
NASTY = {
    "pipe": "refunds | fees | 30 days",
    "newlines": "first line\nsecond line\r\nthird\rfourth\u2028fifth",
    "fence": "```\nrm -rf /\n```",
    "long fence": "````` five ticks ``` three",
    "code span": "`` `x` ``",
    "script": "<script>alert(1)</script>",
    "img onerror": '<img src=x onerror="alert(1)">',
    "close details": "</details></details>",
    "open details": "<details><summary>open",
    "html comment": "<!-- flipgate --> hidden <!--",
    "marker": MARKER,
    "mention": "ping @someone and @org/team",
    "email": "write to help@bank.example",
    "markdown link": "[click](javascript:alert(1))",
    "image": "![x](https://evil.example/x.png)",
    "angle autolink": "<https://evil.example>",
    "bare url": "see https://evil.example/a?b=c",
    "www": "go to www.evil.example now",
    "issue reference": "closes #1 and owner/repo#2",
    "heading": "# Heading",
    "list": "- item",
    "ordered list": "1. first",
    "rule": "---",
    "quote": "> quoted",
    "emphasis": "**bold** _it_ ~~gone~~",
    "entities": "&lt;script&gt; &#124; &amp;",
    "backslashes": "a\\|b \\ c\\\\",
    "table row": "| --- | --- |",
    "only pipes": "||||",
    "escape sequence": "\x1b[31mred\x1b[0m",
    "bidi override": "abc\u202edcba\u202c",
}
CASES = [pytest.param(text, id=name) for name, text in NASTY.items()]


def shown(text: str) -> str:
    """What a reader should see: the text on one line, without invisible characters."""
    return one_line(text)


def visible(page_text: str) -> str:
    return page_text.replace(ZWSP, "").strip()


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize("context", ["paragraph", "list item", "table cell"])
def test_escaped_text_renders_as_itself_and_nothing_else(text: str, context: str) -> None:
    escaped = escape_md(text)
    markdown, structure = {
        "paragraph": (escaped, ["p", "/p"]),
        "list item": (f"- {escaped}", ["ul", "li", "/li", "/ul"]),
        "table cell": (f"| h |\n|---|\n| {escaped} |\n",
                       ["table", "thead", "tr", "th", "/th", "/tr", "/thead",
                        "tbody", "tr", "td", "/td", "/tr", "/tbody", "/table"]),
    }[context]
    page = read(markdown)
    assert page.tags == structure  # no link, image, code, emphasis, heading, HTML...
    body = page.tables[0][1][0] if context == "table cell" else page.text
    assert visible(body) == shown(text)


@pytest.mark.parametrize("text", CASES)
def test_escaped_text_mentions_and_references_nobody(text: str) -> None:
    escaped = escape_md(text)
    assert not MENTION.search(escaped)  # GitHub reads mentions from the raw text
    rendered = html.unescape(re.sub(r"<[^>]+>", "", to_html(escaped)))
    assert not MENTION.search(rendered)
    assert not ISSUE_REFERENCE.search(rendered)


@pytest.mark.parametrize("raw, expected", [
    ("a\nb\r\nc\rd", "a b c d"),
    ("  lots   of\t\tspace  ", "lots of space"),
    ("bell\x07 nul\x00 esc\x1b[0m", "bell nul esc[0m"),
    ("line\u2028sep\u2029para\x85next", "line sep para next"),
    ("bidi\u202e override\u2066", "bidi override"),
])
def test_one_line_flattens_and_drops_control_characters(raw: str, expected: str) -> None:
    assert one_line(raw) == expected


@pytest.mark.parametrize("text, limit, expected", [
    ("short", 10, "short"),
    ("exactly10!", 10, "exactly10!"),
    ("a longer answer than the cell allows", 10, "a longer…"),
    ("<<<<<<<<<<<<", 4, "&lt;&lt;&lt;…"),        # cut first, escaped after: no torn entity
    ("@@@@@@", 3, "@&#8203;@&#8203;…"),
    ("a\n\n\nb", 10, "a b"),
    ("anything", 0, ""),
    (None, 10, ""),
])
def test_cell_shortens_before_escaping(text: str | None, limit: int, expected: str) -> None:
    assert cell(text, limit) == expected


def test_cell_of_a_huge_answer_stays_short() -> None:
    huge = "word " * 500_000 + "| <script>"
    assert cell(huge, 50) == ("word " * 10).strip()[:49].rstrip() + "…"


@pytest.mark.parametrize("items, limit, most, expected", [
    (["$12", "30 days"], 20, 5, "$12; 30 days"),
    (["a", "", "  ", "b"], 20, 5, "a; b"),
    (["one", "two", "three", "four"], 20, 2, "one; two; (+2 more)"),
    (["x | y"], 20, 5, "x \\| y"),
])
def test_cell_list_escapes_each_item_and_counts_the_rest(
        items: list[str], limit: int, most: int, expected: str) -> None:
    assert cell_list(items, limit, most) == expected


DIFFS = {
    "three ticks": "-old\n+```\n+new\n+```",
    "many ticks": "+``````\n+`` x ``",
    "tildes": "+~~~\n+x",
    "closing details": "+</details>\n+<script>alert(1)</script>",
    "marker": f"+{MARKER}",
    "mention": "+ask @someone",
    "blank lines": "+a\n\n\n+b",
    "crlf": "+a\r\n+b\r\n",
    "indented fence": "   ````\n+x",
}


@pytest.mark.parametrize("diff", [pytest.param(d, id=n) for n, d in DIFFS.items()])
def test_a_diff_cannot_break_out_of_its_fence(diff: str) -> None:
    markdown = f"<details><summary>diff</summary>\n\n{fence(diff, 10_000)}\n\n</details>\nafter\n"
    page = read(markdown)
    assert page.count("details") == page.count("/details") == 1
    assert page.count("pre") == 1 and "script" not in page.tags
    expected = "\n".join(diff.replace("\r\n", "\n").rstrip("\n").split("\n"))
    assert page.pre[0].rstrip("\n") == expected.replace("<!--", "<\\!--")
    assert ZWSP not in markdown  # what a reader copies out of the fence is what they see
    assert page.text.rstrip().endswith("after")
    assert not MENTION.search(outside_fences(markdown)) and MARKER not in markdown


def test_a_long_diff_is_cut_at_a_line_and_says_so() -> None:
    diff = "\n".join(f"+line {n}" for n in range(10_000))
    block = fence(diff, 2_000)
    page = read(block)
    assert page.count("pre") == 1
    kept = page.pre[0].rstrip("\n").split("\n")
    assert kept == [f"+line {n}" for n in range(len(kept))]
    assert f"{10_000 - len(kept):,} more lines not shown" in block


def nasty_report(text: str):
    """A report with `text` in every field that comes from the PR or a model."""
    rows = one_of_each(
        id_prefix=text, blocking_category=text, other_category=text + " other",
        answer=text, reason=text, figures=(text,), statements=(text, text),
        questions=(text,), query=text, error=text, finish_reason="length",
        # No word in common with any answer: no passage is marked, in either version.
        context="Zyxwv qqq.",
    )
    return make_report(
        rows,
        judge=make_judge(provider=text, model=text, engine=text, embedding_model=text),
        notes=[text, text],
        head_sha=text,
        fluency=fluency(),
        change=make_change(generator=text, files=(text, text), model=(text, text + "2"),
                           parameters=((text, text, text),),
                           template_diff=f"--- a\n+++ b\n-{text}\n+{text}", config_diff=text,
                           cases_diff=text),
        usage={text: {text: 1, "requests": 2}},
        cache={"hits": 1, "misses": 2},
    )


@pytest.mark.parametrize("text", CASES)
def test_the_whole_comment_keeps_its_structure_whatever_the_text(text: str) -> None:
    """Same report shape, plain text vs nasty text: the same HTML skeleton."""
    plain = read(render_comment(nasty_report("plain words")))
    comment = render_comment(nasty_report(text + " end"))
    nasty = read(comment)
    assert nasty.tags == plain.tags
    assert [len(table) for table in nasty.tables] == [len(table) for table in plain.tables]
    assert consistent_tables(nasty)
    assert comment.count(MARKER) == 1 and comment.count("<!--") == 1
    assert nasty.comments == [" flipgate "]
    assert not MENTION.search(outside_fences(comment))  # code blocks are inert: mentions too
    assert not MENTION.search(nasty.outside_code)  # what GitHub's mention filter reads


@pytest.mark.parametrize("text", CASES)
def test_the_answer_reads_back_in_its_evidence_block(text: str) -> None:
    rendered = to_html(render_comment(nasty_report(text + " end")))
    block = rendered.split("Blocking regressions", 1)[1].split("<details>", 1)[1]
    block = block.split("</details>", 1)[0]
    tags = re.findall(r"</?([a-z]+)", block)
    # The claim is a code span (flipgate's one mark for "not in the context"); no <b>.
    assert set(tags) <= {"summary", "p", "strong", "code", "sup", "br", "sub", "em",
                         "details"}, tags
    readable = visible(html.unescape(re.sub(r"<[^>]+>", "", block)))
    assert shown(text + " end") in readable and "cut off at max tokens" in readable
