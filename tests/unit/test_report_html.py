"""report.html: one self-contained page with every row, its untrusted text kept as data."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from flipgate.model import Case, Score, Statement, StatementLabel, Statements, SuiteReport
from flipgate.output.anchors import row_anchor
from flipgate.output.html import SCRIPTED_MARK, script_json, write_html
from flipgate.output.page import QUIET_ROW_CHARS, page_rows, quiet_rows, row_chars
from flipgate.output.write import write_outputs
from flipgate.verdict import gate
from flipgate.verdict.evidence import find_unsupported

from support.factories import make_report, make_row, make_side, one_of_each
from support.pages import read_page

TEMPLATES = Path(__file__).resolve().parents[2] / "src/flipgate/output/templates"


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
    source = path.read_text(encoding="utf-8")
    page = read_page(path)
    # The page's own tags only: its two scripts (the `js` mark, the page's), three data
    # blocks, one style, nothing that loads.
    names = [tag for tag, _ in page.tags]
    assert names.count("script") == 5 and names.count("style") == 1
    assert source.count("</script") == 5  # no text closed a block early
    assert "img" not in names and "a" not in names and names.count("form") == 1
    for _, attrs in page.tags:
        assert not any(name.startswith("on") for name in attrs), attrs
        assert not {"src", "href", "action"} & set(attrs), attrs
    assert [attrs.get("type") for attrs, _ in page.scripts] == [None] + ["application/json"] * 3 + [None]
    assert page.code() == [SCRIPTED_MARK, (TEMPLATES / "report.js").read_text(encoding="utf-8")]
    # The rows written for a page without script hold the same text, escaped as text.
    static = "".join(page.text)
    for shown in (f"id-{text}", f"query {text}", f"Fees are $5. {text}", f"error {text}"):
        assert shown in static
    assert page.styles == [(TEMPLATES / "report.css").read_text(encoding="utf-8")]
    # Every field reads back exactly, as data for the script, which sets it as text.
    (row,) = page.rows()
    assert row["i"] == f"id-{text}" and row["c"] == f"cat {text}" and row["q"] == f"query {text}"
    assert row["a"] == row_anchor(None, f"id-{text}")
    assert f"reason {text}" in [reason for _, _, reason in row["cand"]["r"]]
    assert row["e"] == [f"error {text}"] and row["l"] == [f"labelled grounded by @{text}"]
    assert head_sha_shown(page, text)


def head_sha_shown(page, text: str) -> bool:
    return f"commit {text}" in "".join(page.text)  # the header's text, escaped by the template


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
    for body, directive in ((page.styles[0], "style-src"), *((code, "script-src") for code in page.code())):
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp.split(f"{directive} ", 1)[1].split(";", 1)[0]
    assert "unsafe-inline" not in csp
    assert not re.search(r"url\(|@import|https?://", page.styles[0] + "".join(page.code()))
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
    (shown,) = read_page(write_html(report, tmp_path / "report.html")).rows()
    assert shown["q"] == "Until when can I skip?"
    assert ["A skipped week is not charged.", True, []] in shown["x"]
    assert ["Skips must be made at least 3 days before the ship date.", False, [1]] in shown["x"]
    diff = shown["d"]
    at = diff.index(["del", "3 days", None])
    assert diff[at + 1] == ["ins", "1 day", 1]  # the word diff, the claim marked inside it
    assert shown["cl"] == [[1, "Skips must be made at least 3 days before the ship date.", True]]
    names = [name for name, _, _ in shown["cand"]["r"]]
    assert names == ["groundedness", "re-score", "second opinion (judge-2)", "relevance"]
    reasons = [reason for _, _, reason in shown["cand"]["r"]]
    assert "The 1-day window is invented." in reasons and "second says no" in reasons
    assert ["Skip up to 1 day before the ship date.", "unsupported",
            "Skips must be made at least 3 days before the ship date."] in shown["st"]


def test_several_suites_name_each_rows_suite(tmp_path: Path) -> None:
    first, second = make_report(one_of_each()), make_report(one_of_each(id_prefix="b-"))
    report = replace(make_report(first.rows + second.rows),
                     suites=[SuiteReport("support", first), SuiteReport("sales", second)])
    page = read_page(write_html(report, tmp_path / "report.html"))
    shown = {(row["s"], row["i"]): row["a"] for row in page.rows()}
    assert len(shown) == 18
    assert shown[("support", "blocking")] == "case-support~blocking"
    assert shown[("sales", "b-unchanged")] == "case-sales~b-unchanged"


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
    (shown,) = read_page(write_html(make_report([row]), tmp_path / "report.html")).rows()
    assert shown["ans"] == [["", None]]  # the page says "(empty)"


def test_a_true_false_second_opinion_shows_its_label(tmp_path: Path) -> None:
    case = Case(id="pro", query="Fees?", context="Fees are $5.", category="policy")
    candidate = make_side(2, response="Fees are $9.", rescore=1)
    candidate.second_opinion = Score(value=None, reason="not in the context", label=False)
    row = gate.build_row(case, make_side(5, response="Fees are $5."), candidate,
                         blocking_categories=("policy",), threshold=0.7,
                         find_evidence=lambda c, a: find_unsupported(c.context, a))
    (shown,) = read_page(write_html(make_report([row]), tmp_path / "report.html")).rows()
    assert ["second opinion", "not grounded", "not in the context"] in shown["cand"]["r"]


def test_blocking_rows_come_first_then_by_severity_then_in_case_order(tmp_path: Path) -> None:
    rows = list(reversed(one_of_each())) + [make_row("blocking-2", before=5, after=2, rescore=1,
                                                     blocking_categories=("policy",))]
    page = read_page(write_html(make_report(rows), tmp_path / "report.html"))
    order = [row["i"] for row in page.rows()]
    # One kind a row, in gate.KINDS's order; two blocking rows in case order; the unchanged
    # row, in no kind, last (a quiet row).
    assert order == ["blocking", "blocking-2", "error", "review", "non-answer", "unstable",
                     "relevance", "moved", "still", "unchanged"]
    assert [row["i"] for row in page.quiet()] == ["unchanged"]
    assert all(row["a"] == row_anchor(None, row["i"]) for row in page.rows())


def test_a_labelled_row_is_shown_in_full(tmp_path: Path) -> None:
    page = read_page(write_html(make_report(one_of_each()), tmp_path / "report.html",
                                labels={(None, "unchanged"): ["labelled grounded by @ann"]}))
    assert page.quiet() == [] and page.full()[-1]["l"] == ["labelled grounded by @ann"]


def test_quiet_rows_share_a_text_budget_and_say_when_they_were_cut(tmp_path: Path) -> None:
    long, answer = "Skips must be made three days ahead. " * 40, "Same answer. " * 30

    def rows(n: int):
        return make_report([make_row(f"q-{i}", before=5, after=5, answer=answer,
                                     baseline_answer=answer, context=long) for i in range(n)])

    (whole, *_) = read_page(write_html(rows(3), tmp_path / "few.html")).quiet()
    assert whole["cx"] == long and whole["ca"] == answer and whole["cut"] is False  # all of it
    assert whole["ba"] is None  # the same answer, shown once
    low, _ = QUIET_ROW_CHARS
    cut = list(quiet_rows(rows(50), budget=50 * 100))  # 100 a row: below the floor
    assert len(cut) == 50 and all(row.cut for row in cut)
    first = cut[0]
    assert len(first.query) + len(first.candidate) + len(first.context) <= low
    assert first.candidate.endswith("…") and first.context.endswith("…")
    assert first.query == "How long do refunds take?"  # short enough to stay whole


@pytest.mark.parametrize("text", HOSTILE + ["\u2028\u2029", "<!--<script>"])
def test_script_json_keeps_text_data_inside_a_script_element(text: str) -> None:
    written = script_json({"t": text})
    assert not set("<>&\u2028\u2029") & set(written)
    assert json.loads(written) == {"t": text}


def static_section(path: Path) -> str:
    source = path.read_text(encoding="utf-8")
    return source[source.index('<section id="static">'):source.index("</section>")]


def test_without_script_every_row_the_comment_tables_is_written_with_its_evidence(tmp_path: Path) -> None:
    report = make_report(one_of_each())
    path = write_html(report, tmp_path / "report.html")
    static = static_section(path)
    tabled = [row for row in report.rows if gate.kinds_of(row)]
    assert tabled and len(tabled) < len(report.rows)
    for row in tabled:
        assert f'<details class="row" id="{row_anchor(None, row.id)}" open>' in static
    quiet = [row for row in report.rows if not gate.kinds_of(row)]
    assert all(f'id="{row_anchor(None, row.id)}"' not in static for row in quiet)
    # The blocking row: its query, both answers, its claim marked in the answer and the
    # context, the claims list; and a plain word on what needs the script.
    blocking = static.split('id="case-blocking"', 1)[1].split("</details>", 1)[0]
    assert "How long do refunds take?" in blocking
    assert "Refunds are issued within 30 days." in blocking  # the baseline's answer
    assert '<mark class="claim">cost a $12 fee</mark><span class="tag">[1]</span>' in blocking
    assert '<div class="context text"><mark class="claim">Refunds are issued' in blocking
    assert "[1] closest in the context" in blocking
    assert "script did not run" in static
    assert f"the {len(tabled)} rows the comment tables" in static
    assert f"Filtering, the search and the other {len(quiet)} row" in static


def test_past_its_budget_the_unscripted_rows_are_listed_by_id_and_still_anchored(tmp_path: Path) -> None:
    rows = [make_row(f"r{n}", category="policy", before=5, after=2, rescore=1) for n in range(5)]
    one = row_chars(next(page_rows(make_report(rows[:1]))))
    path = write_html(make_report(rows), tmp_path / "report.html", unscripted_budget=3 * one)
    static = static_section(path)
    assert [f'<details class="row" id="case-r{n}" open>' in static for n in range(5)] == [
        True, True, True, False, False]
    listed = static.split('<ul class="listed">', 1)[1]
    assert '<li id="case-r3">r3 · regression</li>' in listed and '<li id="case-r4">' in listed
    assert "How long" not in listed  # no text of theirs
    assert "the first 3 with its query" in static and "the evidence of the last 2" in static
