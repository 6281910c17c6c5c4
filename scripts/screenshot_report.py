"""Screenshot report.html as a reviewer sees it, in headless Chromium, with a filter applied.

    .venv/bin/python scripts/screenshot_report.py [REPORT.html] [--out DIR] [--width 1280]
        [--verdict regression] [--category NAME] [--search TEXT] [--blocking] [--no-script]

Without REPORT.html it runs the bundled example (examples/cards, offline judge)
first. It writes `report.png` (the page as it opens), `report-filtered.png`
(the filters applied) and `report-open.png` (the first row shown, opened; the page lists blocking rows first), and
prints how many rows each shows and any console error or CSP violation; it
exits 1 when there was one. Needs Chromium (Debian: `apt-get install -y
chromium`); it talks to it over the DevTools pipe (tests/support/chromium.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.chromium import Browser  # noqa: E402

VISIBLE = "Number(document.getElementById('rows').dataset.matched)"  # rows the filters match


def run_example(out: Path) -> Path:
    """The bundled example's report.html, written by the real CLI (offline judge)."""
    subprocess.run([sys.executable, "-m", "flipgate", "gate",
                    "--cases", str(ROOT / "examples/cards/cases.jsonl"),
                    "--baseline", str(ROOT / "examples/cards/baseline.jsonl"),
                    "--candidate", str(ROOT / "examples/cards/candidate.jsonl"),
                    "--config", str(ROOT / "examples/cards/.flipgate.yml"),
                    "--judge", "offline", "--no-cache", "--out", str(out)],
                   check=False, capture_output=True, text=True)
    page = out / "report.html"
    if not page.is_file():
        raise SystemExit("the example run wrote no report.html")
    return page


def apply_filters(browser: Browser, args: argparse.Namespace) -> None:
    values = {"verdict": args.verdict, "category": args.category, "q": args.search}
    for name, value in values.items():
        if value is not None:
            browser.evaluate(f"document.forms.filters.elements[{json.dumps(name)}].value = "
                             f"{json.dumps(value)}")
    if args.blocking:
        browser.evaluate("document.forms.filters.elements.blocking.checked = true")
    browser.evaluate("document.forms.filters.dispatchEvent(new Event('change'))")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", nargs="?", type=Path, help="a report.html (default: the example's)")
    parser.add_argument("--out", type=Path, default=ROOT / "flipgate-out" / "screenshots")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--verdict", default="regression")
    parser.add_argument("--category")
    parser.add_argument("--search")
    parser.add_argument("--blocking", action="store_true")
    parser.add_argument("--no-script", action="store_true",
                        help="scripts off, as where the page's script cannot run: writes "
                             "report-noscript.png (the page as it opens) only")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flipgate-shot-") as tmp:
        page = args.page or run_example(Path(tmp) / "example")
        if args.no_script:
            return unscripted(page, args)
        with Browser(width=args.width, height=args.height) as browser:
            browser.open(page)
            total = browser.evaluate(VISIBLE)
            browser.screenshot(args.out / "report.png", full_page=False)
            apply_filters(browser, args)
            shown = browser.evaluate(VISIBLE)
            browser.screenshot(args.out / "report-filtered.png", full_page=False)
            browser.evaluate("(() => { const row = document.querySelector("
                             "'details.row:not([hidden])'); if (row) { row.open = true; "
                             "row.scrollIntoView(); } })()")
            browser.screenshot(args.out / "report-open.png", full_page=False)
            problems = browser.problems()
    print(f"{args.out / 'report.png'}: {total} rows; filtered: {shown} rows; "
          f"{len(problems)} console problems")
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    return 1 if problems else 0


def unscripted(page: Path, args: argparse.Namespace) -> int:
    """The page with scripts off: the rows it writes as markup, and its note."""
    with Browser(width=args.width, height=args.height, scripts=False) as browser:
        browser.open(page)
        rows = browser.evaluate("document.querySelectorAll('#static details.row').length")
        browser.screenshot(args.out / "report-noscript.png", full_page=False)
    print(f"{args.out / 'report-noscript.png'}: scripts off, {rows} rows written as markup")
    return 0 if rows is not None else 1


if __name__ == "__main__":
    sys.exit(main())
