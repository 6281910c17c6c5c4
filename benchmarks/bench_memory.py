"""Peak memory (RSS) of `flipgate gate` at N cases, against a loopback judge at latency 0.

Not a test. For each size it writes N cases with short answers, runs the real
CLI in a child process (`--no-cache`, so every request is sent) and reads the
child's own peak RSS from the kernel (`wait4`), with wall time per case:

    .venv/bin/python benchmarks/bench_memory.py --cases 1000 10000
    .venv/bin/python benchmarks/bench_memory.py --cases 100000 --judge offline
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gate import write_inputs  # noqa: E402

from support.openai_server import FakeOpenAI  # noqa: E402


def measure(n: int, *, judge: str, concurrency: int, env: dict[str, str]) -> tuple[int, float, int, str]:
    """(exit code, wall seconds, peak RSS in MB, what the report says) of one gate over `n` cases."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        cases, baseline, candidate, config = write_inputs(directory, n)
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "flipgate", "gate", "--cases", str(cases), "--baseline", str(baseline),
             "--candidate", str(candidate), "--config", str(config), "--out", str(directory / "out"),
             "--no-cache", "--concurrency", str(concurrency), "--judge", judge],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stderr = child.stderr.read().decode("utf-8", "replace") if child.stderr else ""
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        report = directory / "out" / "report.json"
        if report.exists():
            data = json.loads(report.read_text())
            errors = [e for row in data["rows"] for e in row.get("errors", [])]
            said = f"judge errors {data['counts'].get('errors', 0)}" + (f" (first: {errors[0]})" if errors else "")
        else:
            said = "no report: " + stderr.strip().splitlines()[-1] if stderr.strip() else "no report"
    return child.returncode, wall, usage.ru_maxrss // 1024, said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--judge", default="openai", choices=("openai", "offline"))
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()

    server = FakeOpenAI(keep_alive=True)  # connections pooled, as at a provider
    server.start()
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
    try:
        print(f"judge {args.judge}, concurrency {args.concurrency}, latency 0")
        for n in args.cases:
            server.clear()
            code, wall, peak, said = measure(n, judge=args.judge, concurrency=args.concurrency, env=env)
            print(f"cases {n:>7}  exit {code}  requests {len(server.requests):>7}  "
                  f"peak RSS {peak:>5} MB  wall {wall:7.1f}s  {1000 * wall / n:6.2f} ms/case  {said}",
                  flush=True)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
