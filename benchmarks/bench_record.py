"""Time `flipgate record` on an OpenTelemetry GenAI export of N traces (2 spans each).

Not a test: it prints the spans read, the cases written and the wall time of
the real command (a fresh process, so start-up is included).

    .venv/bin/python benchmarks/bench_record.py --traces 50000 --categories 8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.otel_export import Trace, export  # noqa: E402  (the tests' export builder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=50_000)
    parser.add_argument("--categories", type=int, default=8)
    parser.add_argument("--per-category", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        traces = [Trace(query=f"Question {i % (args.traces // 2)} about topic {i % 97}? mail me at u{i}@ex.com",
                        documents=[f"Document {i} says the fee is {i % 50} dollars.", f"Second passage {i}."],
                        category=f"cat-{i % args.categories}", start_ns=1_767_225_600 * 10**9 + i * 10**9,
                        structured=i % 2 == 0)
                  for i in range(args.traces)]
        source = directory / "traces.jsonl"
        # One export per 1,000 traces a line, as a collector's file exporter batches them.
        with source.open("w", encoding="utf-8") as out:
            for start in range(0, len(traces), 1000):
                out.write(json.dumps(export(traces[start:start + 1000])) + "\n")
        size = source.stat().st_size
        began = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "flipgate", "record", str(source),
                                 "--out", str(directory / "cases.jsonl"), "--field", "category=app.category",
                                 "--per-category", str(args.per_category)],
                                capture_output=True, text=True, check=False)
        wall = time.perf_counter() - began
        written = sum(1 for _ in (directory / "cases.jsonl").open()) if result.returncode == 0 else 0
        print(f"spans {2 * args.traces:,} ({size / 1e6:.1f} MB) -> {written:,} cases "
              f"in {wall:.1f} s (exit {result.returncode})")
        if result.returncode:
            print(result.stderr)


if __name__ == "__main__":
    main()
