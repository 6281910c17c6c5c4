"""report.html in headless Chromium: it loads with no console error, counts 2,000 rows
and shows them a page at a time, blocking rows first; its filters and search find what
they should, a `#case-…` link opens its row wherever it is, and hostile text stays text.
Skipped where Chromium is absent (Debian: `apt-get install -y chromium`)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from flipgate.model import Case
from flipgate.output.html import write_html
from flipgate.verdict import gate
from flipgate.verdict.evidence import find_unsupported

from support.chromium import CHROMIUM, Browser
from support.factories import make_report, make_side

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")
ROOT = Path(__file__).resolve().parents[2]

CONTEXT = ("Meal kits ship every Tuesday. Skips must be made at least 3 days before the ship "
           "date. A skipped week is not charged.")
HOSTILE = "</script><script>window.pwned = 1</script><img src=x onerror='window.pwned = 2'>"


def two_thousand_rows():
    """2,000 rows: 400 blocking regressions (policy), 100 to review (chat), 300 moved,
    the rest unchanged; two answers (a regression's, an unchanged row's) try to run a script."""
    return [one_row(n) for n in range(2_000)]


def one_row(n: int):
    """Row `n` of the 2,000."""
    category = "chat" if 400 <= n < 500 else "policy"
    before, after, rescore = ((5, 2, 1) if n < 500 else (4, 5, False) if n < 800
                              else (5, 5, False))
    answer = f"Skip up to 1 day before the ship date, case {n}." if n < 500 else f"Case {n}."
    if n in (499, 1_999):  # a full row and a quiet one
        answer += HOSTILE
    case = Case(id=f"case-{n:04d}", query=f"Can I skip box {n}?", context=CONTEXT,
                category=category)
    return gate.build_row(
        case, make_side(before, response=f"Skips need 3 days, case {n}."),
        make_side(after, response=answer, rescore=rescore, reason="judged"),
        blocking_categories=("policy",), threshold=0.7,
        find_evidence=lambda c, a: find_unsupported(c.context, a))


MATCHED = "Number(document.getElementById('rows').dataset.matched)"
RENDERED = "[...document.querySelectorAll('details.row')].map(d => d.id)"


def choose(browser: Browser, name: str, value: str) -> int:
    """Set one filter as a person would (the element's value, then its change event)."""
    browser.evaluate(
        f"(() => {{ const e = document.forms.filters.elements[{name!r}]; "
        f"if (e.type === 'checkbox') e.checked = {value!r} === 'on'; else e.value = {value!r}; "
        "e.dispatchEvent(new Event('change', {bubbles: true})); })()")
    return browser.evaluate(MATCHED)


def test_the_page_loads_clean_counts_every_row_and_filters(tmp_path: Path) -> None:
    page = write_html(make_report(two_thousand_rows()), tmp_path / "report.html")
    with Browser(width=1280) as browser:
        browser.open(page)
        assert browser.evaluate("document.body.dataset.ready") == "true"
        assert browser.problems() == []
        assert browser.evaluate(MATCHED) == 2_000
        shown = browser.evaluate(RENDERED)
        # A page of rows: the 400 blocking ones first (case order), then the rest by severity.
        assert len(shown) == 200 and shown[:3] == ["case-case-0000", "case-case-0001", "case-case-0002"]
        assert browser.evaluate("document.getElementById('shown').textContent") == (
            "showing 2,000 of 2,000 rows")
        browser.evaluate("document.querySelector('button.more').click()")
        shown = browser.evaluate(RENDERED)
        assert len(shown) == 400 and shown[-1] == "case-case-0399"
        browser.evaluate("document.querySelector('button.more').click()")
        assert browser.evaluate(RENDERED)[400:402] == ["case-case-0400", "case-case-0401"]  # review
        options = browser.evaluate(
            "[...document.forms.filters.elements.verdict.options].map(o => o.textContent)")
        assert options == ["all", "moved (300)", "regression (500)", "unchanged (1200)"]

        assert choose(browser, "verdict", "regression") == 500
        assert choose(browser, "category", "chat") == 100
        assert browser.evaluate(RENDERED)[0] == "case-case-0400"
        assert choose(browser, "blocking", "on") == 0  # chat does not block
        assert browser.evaluate(RENDERED) == []
        assert choose(browser, "category", "*") == 400
        assert choose(browser, "blocking", "off") == 500
        assert choose(browser, "verdict", "*") == 2_000
        browser.evaluate("document.forms.filters.elements.q.value = 'case-1234'; "
                         "document.forms.filters.dispatchEvent(new Event('change'))")
        assert browser.evaluate(MATCHED) == 1 and browser.evaluate(RENDERED) == ["case-case-1234"]
        browser.evaluate("document.forms.filters.elements.q.value = 'ship date, case 42.'; "
                         "document.forms.filters.dispatchEvent(new Event('change'))")
        assert browser.evaluate(MATCHED) == 1  # found in an answer's text
        browser.evaluate("document.forms.filters.elements.q.value = 'skips need 3 days, case 1998'; "
                         "document.forms.filters.dispatchEvent(new Event('change'))")
        assert browser.evaluate(RENDERED) == ["case-case-1998"]  # a quiet row's baseline answer
        assert browser.problems() == []


def test_a_case_link_opens_its_row_even_a_quiet_one_far_down(tmp_path: Path) -> None:
    page = write_html(make_report(two_thousand_rows()), tmp_path / "report.html")
    with Browser(width=1280) as browser:
        browser.open(page, "#case-case-1999")  # the last row, quiet, with the hostile answer
        assert browser.evaluate("document.body.dataset.ready") == "true"
        assert browser.evaluate("document.getElementById('case-case-1999').open") is True
        top = browser.evaluate("document.getElementById('case-case-1999').getBoundingClientRect().top")
        assert 0 <= top < 900  # scrolled into view
        body = browser.evaluate("document.getElementById('case-case-1999').textContent")
        assert HOSTILE in body  # shown as text
        assert browser.evaluate("document.querySelectorAll('#rows img, #rows script').length") == 0
        assert browser.evaluate("typeof window.pwned") == "undefined"  # the answer ran nothing
        # A link followed on the open page, to a row the filters hid.
        choose(browser, "verdict", "moved")
        browser.evaluate("location.hash = '#case-case-0042'")
        browser.evaluate("new Promise(r => setTimeout(r, 100))")
        assert browser.evaluate("document.getElementById('case-case-0042').open") is True
        assert browser.evaluate(MATCHED) == 2_000  # the filters were reset to show it
        html = browser.evaluate("document.getElementById('case-case-0042').innerHTML")
        # A full row's marks: the claim not in the context, the judge's readings.
        assert '<mark class="claim">' in html and "<td>re-score</td>" in html
        browser.evaluate("location.hash = '#case-case-0499'")  # the hostile full row
        browser.evaluate("new Promise(r => setTimeout(r, 100))")
        assert HOSTILE in browser.evaluate("document.getElementById('case-case-0499').textContent")
        assert browser.evaluate("document.querySelectorAll('#rows img, #rows script').length") == 0
        assert browser.evaluate("typeof window.pwned") == "undefined"
        assert browser.problems() == []


def test_the_screenshot_script_shoots_the_examples_page_filtered_and_clean(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts/screenshot_report.py"),
                           "--out", str(tmp_path), "--verdict", "regression"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("report.png", "report-filtered.png", "report-open.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    shown = re.search(r": (\d+) rows; filtered: (\d+) rows; 0 console problems", done.stdout)
    assert shown is not None, done.stdout
    assert 0 < int(shown.group(2)) < int(shown.group(1))  # the filter hid the other rows


# --- where the page's script cannot run (issue 32) ------------------------------------------

VISIBLE = "(id => { const e = document.getElementById(id); return !!e && e.getClientRects().length > 0; })"
STATIC_ROWS = "[...document.querySelectorAll('#static details.row')].map(d => d.id)"


def some_rows():
    """A tenth of the 2,000: 50 blocking, 10 to review (the hostile one last), 30 moved, 10 quiet."""
    return [one_row(n) for n in (*range(50), *range(490, 530), *range(1_990, 2_000))]


def served_with(page: Path, policy: str):
    """report.html served from 127.0.0.1 with a server's own Content-Security-Policy, as a
    host that serves artifacts may send it."""
    from support.loopback import LoopbackHTTP

    body = page.read_bytes()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                  ("Content-Security-Policy", policy)])
        return [body]

    return LoopbackHTTP(app)


def test_without_script_the_tabled_rows_are_there_with_their_evidence_and_say_what_is_missing(
        tmp_path: Path) -> None:
    rows = some_rows()
    page = write_html(make_report(rows), tmp_path / "report.html")
    tabled = [f"case-{row.id}" for row in rows if gate.kinds_of(row)]
    assert len(tabled) == 90
    with Browser(width=1280, scripts=False) as browser:
        for width in (1280, 390):  # a laptop, a phone
            browser.resize(width)
            browser.open("about:blank")  # the same URL again would only scroll, not load
            browser.open(page, "#case-case-0042")
            unscripted_page_reads(browser, tabled, width)


def unscripted_page_reads(browser: Browser, tabled: list[str], width: int) -> None:
    """What a reviewer sees of the page with scripts off, at `width`."""
    assert browser.evaluate("document.body.dataset.ready") is None  # report.js never ran
    assert sorted(browser.evaluate(STATIC_ROWS)) == sorted(tabled)
    assert browser.evaluate(f"{VISIBLE}('static')") and not browser.evaluate(f"{VISIBLE}('filters')")
    note = browser.evaluate("document.querySelector('#static .notice').textContent")
    assert "script did not run" in note and "Filtering, the search and the other 10 rows" in note
    # The link's row is open, in view, with its query, both answers, the claim marked.
    top = browser.evaluate("document.getElementById('case-case-0042').getBoundingClientRect().top")
    assert 0 <= top < 900
    row = browser.evaluate("document.getElementById('case-case-0042').textContent")
    assert "Can I skip box 42?" in row and "Skips need 3 days, case 42." in row
    assert "Skip up to 1 day" in row and "Meal kits ship every Tuesday." in row
    assert browser.evaluate("document.querySelectorAll('#case-case-0042 mark.claim').length") >= 2
    # Hostile text in a tabled row is text here too; nothing ran.
    assert HOSTILE in browser.evaluate("document.getElementById('case-case-0499').textContent")
    assert browser.evaluate("document.querySelectorAll('#static img, #static script').length") == 0
    assert browser.evaluate("typeof window.pwned") == "undefined"
    # Nothing is wider than the window, at a phone's width too.
    assert browser.evaluate("document.documentElement.scrollWidth") <= width


def test_a_server_that_blocks_the_script_gets_the_rows_and_with_script_they_are_gone(
        tmp_path: Path) -> None:
    page = write_html(make_report(some_rows()), tmp_path / "report.html")
    server = served_with(page, "script-src 'none'")
    root = server.start()
    try:
        with Browser(width=1280) as browser:
            browser.open(f"{root}/report.html")  # scripts on, but the server's policy blocks them
            assert browser.evaluate("document.body.dataset.ready") is None
            assert len(browser.evaluate(STATIC_ROWS)) == 90
            assert browser.evaluate(f"{VISIBLE}('static')")
            browser.open(page, "#case-case-0042")  # the same page from disk: the script runs
            assert browser.evaluate("document.body.dataset.ready") == "true"
            assert browser.evaluate("document.getElementById('static')") is None
            assert browser.evaluate("document.querySelectorAll('[id=\"case-case-0042\"]').length") == 1
            assert browser.evaluate("document.getElementById('case-case-0042').closest('#rows') !== null")
            assert browser.evaluate(MATCHED) == 100 and browser.evaluate(f"{VISIBLE}('filters')")
    finally:
        server.stop()
