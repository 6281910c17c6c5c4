"""report.html for N rows: how long it takes, how large it is, and what memory writing it adds.

Not a test. For each size a child process builds a Report of N rows in memory
(what a run holds when it writes its outputs: 10% flipped rows with a judge's
statement list, contexts of ~500 characters, answers of ~150), then writes
report.html. The child resets its peak-RSS mark (/proc/self/clear_refs) once
the report is built, so the figure is what writing the page adds on top of
the rows, compared with the page's size (a writer that built the page as one
string would add at least that much):

    .venv/bin/python benchmarks/bench_report_html.py --rows 1000 10000 100000
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

LIMIT_MB = 64  # docs/reviewing.md: what writing the page may add, however many rows


def _kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(field)


def build_report(n: int):
    """A Report of `n` rows as a run holds it: every tenth a regression with a judge's
    statement list (those in `pricing` block), contexts of ~500 characters, answers of ~150."""
    from flipgate.model import Case, Statement, StatementLabel, Statements
    from flipgate.verdict import gate
    from flipgate.verdict.evidence import find_unsupported

    from support.factories import make_report, make_side

    rows = []
    for i in range(n):
        context = (f"Card {i}: a replacement card costs {i % 20 + 1} dollars and arrives in five "
                   "business days by standard mail. Express delivery is not offered for "
                   "replacement cards. The first replacement each calendar year is free of "
                   "charge for premier members. Lost or stolen cards must be reported at once; "
                   "the old card is blocked as soon as the report is made. A new card number "
                   "is issued for stolen cards, and recurring payments must be updated.")
        base = f"A replacement card costs {i % 20 + 1} dollars and arrives in five business days."
        flipped = i % 10 == 0
        answer = base + (" There is also a 9 dollar courier fee for express delivery." if flipped
                         else "")
        candidate = make_side(2 if flipped else 5, response=answer, rescore=1 if flipped else False,
                              reason="The courier fee is not in the context." if flipped else "")
        if flipped:
            candidate.statements = Statements((
                Statement(base, StatementLabel.SUPPORTED, context.split(". ")[0][len(f"Card {i}: "):]),
                Statement("There is also a 9 dollar courier fee for express delivery.",
                          StatementLabel.UNSUPPORTED,
                          "Express delivery is not offered for replacement cards.")))
        rows.append(gate.build_row(
            Case(id=f"case-{i:06d}", query=f"How much is replacement card {i}?", context=context,
                 category=("pricing", "policy", "general")[i % 3]),
            make_side(5, response=base), candidate, blocking_categories=("pricing",),
            threshold=0.7, find_evidence=lambda c, a: find_unsupported(c.context, a)))
    return make_report(rows)


def child(n: int, out: Path) -> dict[str, float]:
    from flipgate.output.html import write_html

    report = build_report(n)
    gc.collect()
    before = _kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # the peak mark starts again from here
    started = time.perf_counter()
    write_html(report, out)
    seconds = time.perf_counter() - started
    peak = _kb("VmHWM")
    return {"rows": n, "seconds": seconds, "rss_before_mb": before / 1024,
            "added_mb": max(peak - before, 0) / 1024, "page_mb": out.stat().st_size / 2**20}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.out)))
        return 0
    worst = 0.0
    for n in args.rows:
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run([sys.executable, __file__, "--child", str(n), "--out",
                                   str(Path(tmp) / "report.html")],
                                  capture_output=True, text=True, check=True)
        result = json.loads(done.stdout)
        worst = max(worst, result["added_mb"])
        print(f"rows {n:>7}  page {result['page_mb']:7.1f} MB  written in {result['seconds']:6.1f} s"
              f"  ({1000 * result['seconds'] / n:.2f} ms/row)  rows held {result['rss_before_mb']:6.0f} MB"
              f"  writing added {result['added_mb']:5.1f} MB peak", flush=True)
    print(f"limit: writing adds at most {LIMIT_MB} MB -> {'within' if worst <= LIMIT_MB else 'OVER'}")
    return 0 if worst <= LIMIT_MB else 1


if __name__ == "__main__":
    sys.exit(main())
