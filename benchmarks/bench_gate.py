"""Time `flipgate gate` on N generated cases against a loopback judge with a fixed latency.

Not a test: it prints what a reader needs to judge the concurrency —
requests sent (by kind: on a run that blocks no fluency request is sent),
the peak in flight (measured by the server), the wall time, and the ideal
(requests x latency / concurrency) beside it.

    .venv/bin/python benchmarks/bench_gate.py --cases 200 --latency 0.05 --concurrency 8
    .venv/bin/python benchmarks/bench_gate.py --cases 80 --unblocked   # nothing blocks: fluency asked

The loopback judge keeps connections open as providers do (`--close`: one that closes
each connection after its response). It runs in this process and flipgate in a child, so
the two CPU figures printed (the server's, flipgate's) say whether the span is waiting on
the network or on a processor: on a 2-core machine both share the two cores.

Every tenth candidate invents a fee in the `pricing` category (a blocking one),
so by default the run blocks; `--unblocked` files those cases under `general`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.openai_server import FakeOpenAI  # noqa: E402  (the tests' loopback server)


def write_inputs(directory: Path, n: int, *, category: str = "pricing") -> tuple[Path, Path, Path, Path]:
    cases, baseline, candidate = (directory / name for name in ("cases.jsonl", "b.jsonl", "c.jsonl"))
    with cases.open("w") as c, baseline.open("w") as b, candidate.open("w") as d:
        for i in range(n):
            context = f"Card {i}: a replacement costs {i % 20 + 1} dollars and arrives in 5 days."
            # Every tenth candidate invents a fee, so re-scores are part of the load.
            invents = i % 10 == 0
            c.write(json.dumps({"id": f"case-{i}", "query": f"How much is replacement card {i}?",
                                "context": context,
                                "category": category if invents else "pricing"}) + "\n")
            b.write(json.dumps({"id": f"case-{i}", "response": context}) + "\n")
            extra = " There is also a 9 dollar courier fee." if invents else ""
            d.write(json.dumps({"id": f"case-{i}", "response": context + extra}) + "\n")
    config = directory / "flipgate.yml"
    config.write_text("version: 1\ncases: cases.jsonl\njudge:\n  provider: openai\n  model: judge-1\n")
    return cases, baseline, candidate, config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--close", action="store_true",
                        help="the judge closes each connection after its response")
    parser.add_argument("--unblocked", action="store_true",
                        help="file the invented fees under a non-blocking category")
    args = parser.parse_args()

    server = FakeOpenAI(keep_alive=not args.close)
    server.latency = args.latency
    server.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            cases, baseline, candidate, config = write_inputs(
                directory, args.cases, category="general" if args.unblocked else "pricing")
            env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
            started, server_cpu = time.perf_counter(), time.process_time()
            done = subprocess.run(
                [sys.executable, "-m", "flipgate", "gate", "--cases", str(cases),
                 "--baseline", str(baseline), "--candidate", str(candidate),
                 "--config", str(config), "--out", str(directory / "out"), "--no-cache",
                 "--concurrency", str(args.concurrency)],
                env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
            server_cpu = time.process_time() - server_cpu
            child = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        server.stop()

    requests = len(server.requests)
    ideal = requests * args.latency / args.concurrency
    # The requests' own span, as the server saw it (first arrival to last answer): the
    # wall time without the interpreter's start-up and the writing of the outputs.
    arrivals = [r.received_at for r in server.requests]
    span = max(arrivals) + args.latency - min(arrivals) if arrivals else 0.0
    print(f"cases            {args.cases}")
    print(f"exit code        {done.returncode}")
    kinds = Counter(r.kind for r in server.requests)
    print(f"requests         {requests} (chat {len(server.chat_requests())}, "
          f"embeddings {len(server.embedding_requests())})")
    print("by kind          " + ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())))
    print(f"fluency          {kinds['fluency']} of {requests} requests")
    print(f"peak concurrency {server.peak_concurrency} (limit {args.concurrency})")
    print(f"wall time        {wall:.2f}s (includes interpreter start-up)")
    print(f"ideal            {ideal:.2f}s = {requests} x {args.latency}s / {args.concurrency}")
    print(f"wall / ideal     {wall / ideal:.2f}x")
    print(f"requests' span   {span:.2f}s (first arrival to last answer), {span / ideal:.2f}x ideal")
    print(f"CPU              flipgate {child.ru_utime + child.ru_stime:.2f}s (start-up and outputs "
          f"included), loopback judge {server_cpu:.2f}s; "
          f"{'closes each connection' if args.close else 'keeps connections'}"
          + (f", {server.connections} opened" if not args.close else ""))
    if done.returncode not in (0, 1):
        print(done.stderr, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
