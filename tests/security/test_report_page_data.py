"""report.html carries its rows as JSON inside `<script type="application/json">` blocks.
An answer, id, suite, category, query, context, reason or label that tries to close its
block, open a comment or smuggle a tag must stay one string of data: the page keeps
exactly its own five script elements, every field reads back as written, and the
anchors stay plain ids. The rows written as markup for a page without script (the
`#static` section) are escaped text: the same strings read back, no tag among them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from flipgate.model import Case, SuiteReport
from flipgate.output.html import script_json, write_html
from flipgate.verdict import gate
from flipgate.verdict.evidence import find_unsupported

from support.factories import make_report, make_side
from support.pages import read_page

BREAKOUTS = [
    "</script><script>window.pwned=1</script>",
    "</SCRIPT ><img src=x onerror=window.pwned=2>",
    "<!--<script>",
    "<\u2028/script>\u2029",
    "\\u003c/script>",  # an escape written out as text stays text
    "]}</script><script type=module>window.pwned=3</script>",
]


def rows(text: str, *, quiet: bool):
    case = Case(id=f"id{text}", query=f"q{text}", context=f"Fees are $5. {text}",
                category=f"c{text}")
    after = 5 if quiet else 2
    return [gate.build_row(case, make_side(5, response=f"Fees are $5. {text}", reason=text),
                           make_side(after, response=f"Fees are $9. {text}", reason=f"r{text}",
                                     rescore=False if quiet else 1),
                           blocking_categories=(), threshold=0.7,
                           find_evidence=lambda c, a: find_unsupported(c.context, a))]


def test_a_plain_json_encoding_would_let_an_answer_close_its_block() -> None:
    """The control: what script_json guards against is real."""
    assert "</script>" in json.dumps(BREAKOUTS[0], ensure_ascii=False)
    assert "</script" not in script_json(BREAKOUTS[0]).lower()


@pytest.mark.parametrize("quiet", [False, True], ids=["full row", "quiet row"])
@pytest.mark.parametrize("text", BREAKOUTS)
def test_no_field_can_leave_its_data_block(tmp_path: Path, text: str, quiet: bool) -> None:
    part = make_report(rows(text, quiet=quiet))
    report = replace(part, suites=[SuiteReport(f"s{text}", part)])
    path = write_html(report, tmp_path / "report.html",
                      labels={(f"s{text}", f"id{text}"): [f"labelled {text}"]} if not quiet else None)
    source = path.read_text(encoding="utf-8")
    page = read_page(path)
    assert [tag for tag, _ in page.tags].count("script") == 5
    assert source.lower().count("</script") == 5 and "<!--" not in source
    assert "img" not in [tag for tag, _ in page.tags]
    ids = [attrs["id"] for _, attrs in page.tags if attrs.get("id", "").startswith("case-")]
    assert all(set(i) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_~")
               for i in ids)
    assert not any(name.startswith("on") for _, attrs in page.tags for name in attrs)
    (row,) = page.rows()
    assert (row["i"], row["s"], row["c"], row["q"]) == (f"id{text}", f"s{text}", f"c{text}", f"q{text}")
    assert set(row["a"]) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_~")
    if not quiet:
        assert f"r{text}" in [reason for _, _, reason in row["cand"]["r"]]
        assert row["l"] == [f"labelled {text}"]
        written = "".join(page.text)  # the same row, as markup for a page without script
        assert ids == [row["a"]]
        assert all(f in written for f in (f"id{text}", f"q{text}", f"Fees are $5. {text}",
                                          f"labelled {text}"))
    else:
        assert row["ca"] == f"Fees are $9. {text}"
