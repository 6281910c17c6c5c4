"""report.html of N rows in headless Chromium: its size, how long until it is interactive,
and whether its filters, search and a `#case-…` link work there.

Not a test (a test checks the page works at 2,000 rows:
tests/end_to_end/test_report_page_browser.py). For each size it builds the rows of
bench_report_html.py (every tenth a regression with its statements, ~500-character
contexts), writes report.html, then opens it in Chromium at 1280 px and measures:
load (navigation to the load event, after which the page's script has run: the page
is interactive), one filter change, one search, and a link to the last row. It fails
(exit 1) on a console error or CSP violation, a filter that counts wrong, or a page
over the limits (40 MB, 5 s to interactive):

    .venv/bin/python benchmarks/bench_report_page.py --rows 10000 100000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_report_html import build_report  # noqa: E402

from support.chromium import Browser  # noqa: E402

MAX_MB, MAX_SECONDS = 40, 5.0
MATCHED = "Number(document.getElementById('rows').dataset.matched)"


def timed(browser: Browser, expression: str) -> tuple[float, object]:
    started = time.perf_counter()
    value = browser.evaluate(expression)
    return time.perf_counter() - started, value


def measure(n: int, directory: Path) -> bool:
    from flipgate.output.html import write_html

    report = build_report(n)
    regressions = sum(1 for row in report.rows if row.verdict.value == "regression")
    last = f"case-case-{n - 1:06d}"
    page = write_html(report, directory / "report.html")
    del report
    size = page.stat().st_size / 2**20
    with Browser(width=1280, height=900) as browser:
        started = time.perf_counter()
        browser.open(page)
        load = time.perf_counter() - started
        ready = browser.evaluate("document.body.dataset.ready") == "true"
        matched = browser.evaluate(MATCHED)
        rendered = browser.evaluate("document.querySelectorAll('details.row').length")
        verdict, filtered = timed(browser, "(() => { const e = document.forms.filters.elements"
                                           ".verdict; e.value = 'regression'; e.dispatchEvent("
                                           "new Event('change', {bubbles: true})); return "
                                           f"{MATCHED}; }})()")
        search, found = timed(browser, "(() => { const f = document.forms.filters; "
                                       "f.elements.verdict.value = '*'; f.elements.q.value = "
                                       f"'replacement card {n // 2 + 1}?'; f.dispatchEvent("
                                       f"new Event('change')); return {MATCHED}; }})()")
        link, opened = timed(browser, f"(() => {{ location.hash = '#{last}'; return new Promise("
                                      "r => setTimeout(() => r(document.getElementById("
                                      f"'{last}')?.open === true), 0)); }})()")
        problems = browser.problems()
    right = (ready and matched == n and filtered == regressions and found == 1 and opened
             and not problems and rendered <= 200)
    print(f"rows {n:>7}  page {size:5.1f} MB  interactive {load:5.2f} s  filter {verdict:5.2f} s"
          f"  search {search:5.2f} s  link {link:5.2f} s  rendered {rendered}  "
          + ("filters right" if right else f"WRONG ({matched}, {filtered}, {found}, {opened})")
          + f"  {len(problems)} console problems",
          flush=True)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    return right and size <= MAX_MB and load <= MAX_SECONDS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    ok = True
    for n in args.rows:
        with tempfile.TemporaryDirectory() as tmp:
            ok = measure(n, Path(tmp)) and ok
    print(f"limits: {MAX_MB} MB, {MAX_SECONDS:.0f} s to interactive -> {'within' if ok else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
