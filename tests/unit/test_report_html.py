"""report.html: one self-contained page with every row, its untrusted text kept as text."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from flipgate.model import Case, Score, Statement, StatementLabel, Statements, SuiteReport
from flipgate.output.html import write_html
from flipgate.output.page import page_rows
from flipgate.output.write import write_outputs
from flipgate.verdict import gate
from flipgate.verdict.evidence import find_unsupported

from support.factories import make_report, make_side, one_of_each

TEMPLATES = Path(__file__).resolve().parents[2] / "src/flipgate/output/templates"


class Page(HTMLParser):
    """Every tag and attribute of the page, its text, and its script and style bodies."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts.append(data)
        elif self._in == "style":
            self.styles.append(data)
        else:
            self.text.append(data)

    def rows(self) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs in self.tags if tag == "details" and attrs.get("class") == "row"]


def read_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


HOSTILE = [
    "</script><script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '" onmouseover="alert(1)" data-x="',
    "' autofocus onfocus='alert(1)",
    "</details></main><form action=https://evil.example>",
    "<style>body{background:url(https://evil.example/x)}</style>",
    "<!-- <meta http-equiv=refresh content=0;url=https://evil.example> -->",
    "<a href=\"javascript:alert(1)\">click</a>",
    "&lt;script&gt; &amp; &#x3C;b&#x3E;",
    "{{ 7*7 }} {% raw %}",
]


def hostile_report(text: str):
    case = Case(id=f"id-{text}", query=f"query {text}", context=f"Fees are $5. {text} Nothing else.",
                category=f"cat {text}")
    candidate = make_side(2, response=f"Fees are $9. {text}", reason=f"reason {text}", rescore=1)
    candidate.statements = Statements((
        Statement("Fees are $9.", StatementLabel.UNSUPPORTED, "Fees are $5."),
        Statement(text, StatementLabel.NOT_A_CLAIM)))
    row = gate.build_row(case, make_side(5, response=f"Fees are $5. {text}", reason=text), candidate,
                         blocking_categories=(f"cat {text}",), threshold=0.7,
                         find_evidence=lambda c, a: find_unsupported(c.context, a))
    row.errors.append(f"error {text}")
    return make_report([row], head_sha=text)


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_answers_cases_and_judge_text_stay_text(tmp_path: Path, text: str) -> None:
    path = write_html(hostile_report(text), tmp_path / "report.html", labels={
        (None, f"id-{text}"): [f"labelled grounded by @{text}"]})
    page = read_page(path)
    # The page's own tags only: one script, one style, nothing that loads or navigates.
    names = [tag for tag, _ in page.tags]
    assert names.count("script") == 1 and names.count("style") == 1
    assert "img" not in names and "a" not in names and names.count("form") == 1
    for _, attrs in page.tags:
        assert not any(name.startswith("on") for name in attrs), attrs
        assert not {"src", "href", "action"} & set(attrs), attrs
    assert page.scripts == [(TEMPLATES / "report.js").read_text(encoding="utf-8")]
    assert page.styles == [(TEMPLATES / "report.css").read_text(encoding="utf-8")]
    # Every field reads back exactly, as text, in the body and in the filters' data.
    body = "".join(page.text)
    for shown in (f"query {text}", f"reason {text}", f"error {text}",
                  f"labelled grounded by @{text}"):
        assert shown in body
    (row,) = page.rows()
    assert row["data-id"] == f"id-{text}" and row["data-category"] == f"cat {text}"


def test_the_page_loads_nothing_from_anywhere(tmp_path: Path) -> None:
    path = write_html(make_report(one_of_each()), tmp_path / "report.html")
    source = path.read_text(encoding="utf-8")
    page = read_page(path)
    (csp,) = [attrs["content"] for tag, attrs in page.tags
              if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None and csp.startswith("default-src 'none';")
    for directive in ("connect-src 'none'", "img-src 'none'", "font-src 'none'",
                      "form-action 'none'", "base-uri 'none'"):
        assert directive in csp
    # The inline style and script are allowed by their hashes, and nothing else is.
    for body, directive in ((page.styles[0], "style-src"), (page.scripts[0], "script-src")):
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}';" in csp
    assert "unsafe-inline" not in csp
    assert not re.search(r"url\(|@import|https?://", page.styles[0] + page.scripts[0])
    assert "http://" not in source and "https://" not in source


def test_each_row_shows_query_context_answers_diff_and_judge_output(tmp_path: Path) -> None:
    case = Case(id="skip-1", query="Until when can I skip?", category="policy",
                context="Skips must be made at least 3 days before the ship date. "
                        "A skipped week is not charged.")
    candidate = make_side(2, response="A skip is free. Skip up to 1 day before the ship date.",
                          reason="The 1-day window is invented.", rescore=1)
    candidate.statements = Statements((
        Statement("A skip is free.", StatementLabel.SUPPORTED, "A skipped week is not charged."),
        Statement("Skip up to 1 day before the ship date.", StatementLabel.UNSUPPORTED,
                  "Skips must be made at least 3 days before the ship date.")))
    candidate.second_opinion = replace(candidate.groundedness, value=1, reason="second says no")
    row = gate.build_row(case, make_side(5, response="A skip is free. Skip up to 3 days before the "
                                                     "ship date."), candidate,
                         blocking_categories=("policy",), threshold=0.7,
                         find_evidence=lambda c, a: find_unsupported(c.context, a))
    report = replace(make_report([row]), judge=replace(make_report().judge, second_opinion="judge-2"))
    source = write_html(report, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Until when can I skip?" in source
    assert ('<mark class="supports">A skipped week is not charged.</mark>'
            '<span class="tag">supports</span>') in source
    assert ('<mark class="claim">Skips must be made at least 3 days before the ship date.</mark>'
            '<span class="tag">[1]</span>') in source
    assert '<del>3 days</del> <ins><mark class="claim">1 day</mark></ins>' in source  # the word diff
    assert "contradicted by: “Skips must be made" in source
    for reading in ("groundedness", "re-score", "second opinion (judge-2)", "relevance",
                    "The 1-day window is invented.", "second says no"):
        assert reading in source
    assert '<li class="s-unsupported">Skip up to 1 day before the ship date.' in source


def test_several_suites_name_each_rows_suite(tmp_path: Path) -> None:
    first, second = make_report(one_of_each()), make_report(one_of_each(id_prefix="b-"))
    report = replace(make_report(first.rows + second.rows),
                     suites=[SuiteReport("support", first), SuiteReport("sales", second)])
    page = read_page(write_html(report, tmp_path / "report.html"))
    suites = [row["data-suite"] for row in page.rows()]
    assert suites == ["support"] * 9 + ["sales"] * 9


def test_rows_are_built_one_at_a_time() -> None:
    rows = page_rows(make_report(one_of_each()))
    assert next(rows).id == "blocking"  # a generator: the page is written as it is rendered


def test_write_outputs_writes_the_page_beside_the_report_and_keeps_answers_out_of_it(
        tmp_path: Path) -> None:
    report = make_report(one_of_each(answer="A very particular candidate answer."))
    write_outputs(report, tmp_path)
    assert len(read_page(tmp_path / "report.html").rows()) == 9
    assert "A very particular candidate answer." in (tmp_path / "report.html").read_text()
    assert "A very particular candidate answer." not in (tmp_path / "report.json").read_text()
    assert json.loads((tmp_path / "report.json").read_text())["counts"]["cases"] == 9


def test_an_empty_answer_says_so(tmp_path: Path) -> None:
    case = Case(id="empty", query="Anything?", context="Fees are $5.", category="policy")
    row = gate.build_row(case, make_side(5, response="Fees are $5."), make_side(3, response=""),
                         blocking_categories=("policy",), threshold=0.7,
                         find_evidence=lambda c, a: find_unsupported(c.context, a))
    source = write_html(make_report([row]), tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<h4>candidate</h4><p class=\"text\">(empty)</p>" in source


def test_a_true_false_second_opinion_shows_its_label(tmp_path: Path) -> None:
    case = Case(id="pro", query="Fees?", context="Fees are $5.", category="policy")
    candidate = make_side(2, response="Fees are $9.", rescore=1)
    candidate.second_opinion = Score(value=None, reason="not in the context", label=False)
    row = gate.build_row(case, make_side(5, response="Fees are $5."), candidate,
                         blocking_categories=("policy",), threshold=0.7,
                         find_evidence=lambda c, a: find_unsupported(c.context, a))
    source = write_html(make_report([row]), tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<td>second opinion</td><td>not grounded</td><td>not in the context</td>" in source
