"""Attacks on the comment's links (issue 23, item 5): case ids come from the pull request,
and each becomes the text of a link to its row of report.html. An id must not close the
link early, add a link of its own, open HTML or change where a link goes; and a URL
flipgate is handed (the run, `report-url`) is linked only when it is http(s), encoded so
nothing in it can end the destination.

Beside the attacks, the honest path: a plain id links to its anchor, and a run without
URLs (the CLI on a laptop) writes no link at all.
"""

from __future__ import annotations

import html
import re

import pytest

from flipgate.config.schema import GITHUB_COMMENT_LIMIT
from flipgate.output.anchors import row_anchor
from flipgate.output.comment import render_comment
from flipgate.output.links import Links

from support.factories import make_report, make_row
from support.gfm import consistent_tables, github_html, read, safe_html

REPORT_URL = "https://example.github.io/repo/pr-7/report.html"
RUN_URL = "https://github.com/owner/repo/actions/runs/123"
HOSTILE_IDS = [
    "a)b",
    "x](javascript:alert(1))",
    "[evil](https://evil.example)",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "line\nbreak](javascript:x)",
    "a\r\n| b | c |",
    "x)](https://evil.example",
    "`](javascript:x)`",
    "id with spaces & <b>",
    "@someone #12",
]


def links(markdown: str) -> list[tuple[str, str]]:
    """Every (href, text) in the comment as GitHub renders it."""
    return re.findall(r'<a href="([^"]*)"[^>]*>(.*?)</a>', github_html(markdown))


def blocking(case_id: str):
    return make_row(case_id, category="policy", before=5, after=2, rescore=1)


@pytest.mark.parametrize("case_id", HOSTILE_IDS)
def test_a_hostile_id_links_only_to_its_own_row(case_id: str) -> None:
    comment = render_comment(make_report([blocking(case_id)]),
                             links=Links(run=RUN_URL, report=REPORT_URL))
    anchor = row_anchor(None, case_id)
    found = links(comment)
    assert found, comment
    for href, _text in found:
        assert href in (f"{REPORT_URL}#{anchor}", REPORT_URL, RUN_URL), href
    assert sum(href == f"{REPORT_URL}#{anchor}" for href, _ in found) >= 2  # table and block
    rendered = github_html(comment)
    assert "javascript:" not in "".join(href for href, _ in found)
    assert "<script" not in rendered and "<img" not in rendered
    page = read(comment)
    assert consistent_tables(page) and len(page.tables[0]) == 2  # header and the one row
    shown = {html.unescape(re.sub(r"<[^>]+>", "", text)).replace("\u200b", "")
             for href, text in found if href.endswith(anchor)}
    assert shown == {" ".join(case_id.split())}  # the id, as text, is the link's whole text


@pytest.mark.parametrize("url", [
    "javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "//evil.example/report.html",
    "https://ok.example/a\nb",
    "",
])
def test_a_url_that_is_not_http_is_never_linked(url: str) -> None:
    comment = render_comment(make_report([blocking("fee")]), links=Links(run=url, report=url))
    assert links(comment) == []
    assert "javascript" not in github_html(comment)


def test_a_url_cannot_end_its_link_early() -> None:
    report_url = "https://ok.example/r.html?x=1) [y](javascript:alert(1)) <b>"
    comment = render_comment(make_report([blocking("fee")]), links=Links(report=report_url))
    hrefs = {href for href, _ in links(comment)}
    encoded = "https://ok.example/r.html?x=1%29%20%5By%5D%28javascript:alert%281%29%29%20%3Cb%3E"
    assert hrefs == {encoded, f"{encoded}#case-fee"}
    assert "<b>" not in github_html(comment)


def test_honest_ids_link_to_their_rows_and_report_html_links_the_page() -> None:
    comment = render_comment(make_report([blocking("refund-007")]),
                             links=Links(run=RUN_URL, report=REPORT_URL))
    found = links(comment)
    assert (f"{REPORT_URL}#case-refund-007", "refund-007") in found
    assert (REPORT_URL, "report.html") in found
    # Safe mode keeps the links too: they are Markdown, not HTML.
    assert f'href="{REPORT_URL}#case-refund-007"' in safe_html(comment)


def test_without_a_page_url_report_html_links_the_runs_artifacts_and_ids_the_run() -> None:
    comment = render_comment(make_report([blocking("refund-007")]), links=Links(run=RUN_URL))
    found = links(comment)
    assert found and {href for href, _ in found} == {f"{RUN_URL}#artifacts", RUN_URL,
                                                     f"{RUN_URL}#case-refund-007"}
    assert (f"{RUN_URL}#case-refund-007", "refund-007") in found
    assert ("this run" in dict((text, href) for href, text in found))
    assert "flipgate-report artifact of [this run]" in comment


def test_without_urls_the_comment_has_no_link() -> None:
    comment = render_comment(make_report([blocking("refund-007")]))
    assert links(comment) == [] and "](" not in comment


def test_links_still_fit_githubs_limit_with_hundreds_of_blocking_rows() -> None:
    rows = [blocking(f"case-{n:04}") for n in range(600)]
    comment = render_comment(make_report(rows), links=Links(run=RUN_URL, report=REPORT_URL * 3))
    assert len(comment.encode("utf-8")) <= GITHUB_COMMENT_LIMIT
    shown = [text for href, text in links(comment) if "#case-case-" in href]
    assert len(shown) > 100 and all(text.startswith("case-") for text in shown)
