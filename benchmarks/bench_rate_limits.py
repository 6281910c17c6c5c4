"""`flipgate gate` against a provider's token bucket: wall time against the bucket's floor,
and 429s against a fixed-concurrency client that also waits outside its slot.

Not a test. The loopback server admits `--rate` requests a second (a bucket of
`--rate` tokens, so one second's burst), answers 429 beyond it and sends
`x-ratelimit-*` headers on every reply; `Retry-After` is sent or not. Each
scenario runs the same gate twice in this process, once with flipgate's
adaptive limiter and once with a limiter that never lowers its concurrency
(it still sleeps outside its slot and honours each 429's pause), and prints
the ratios a reader needs:

    .venv/bin/python benchmarks/bench_rate_limits.py --cases 80 --repeat 3
    .venv/bin/python benchmarks/bench_rate_limits.py --cases 500 --repeat 1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_gate import write_inputs  # noqa: E402

from flipgate.config.cases import load_answer_sets, load_cases  # noqa: E402
from flipgate.config.schema import load_config  # noqa: E402
from flipgate.llm.client import Budget, Limiter  # noqa: E402
from flipgate.llm.pacing import rate_limit_pause  # noqa: E402
from flipgate.llm.runtime import Runtime  # noqa: E402
from flipgate.run.scoring import score_rows  # noqa: E402
from flipgate.settings import Settings  # noqa: E402

from support.openai_server import FakeOpenAI  # noqa: E402


class FixedLimiter(Limiter):
    """The comparison: a patient client with a fixed limit. It waits outside its slot and
    honours each 429's pause, but never lowers its concurrency nor paces from headers."""

    def throttled(self, *, sent_at: float, headers) -> float:  # type: ignore[override]
        self.rate_limited += 1
        pause = rate_limit_pause(headers, streak=0)
        self.resume_at = max(self.resume_at, self.clock() + pause)
        return pause

    def succeeded(self, headers=None) -> None:  # type: ignore[override]
        pass


def one_run(directory: Path, server: FakeOpenAI, *, adaptive: bool, concurrency: int) -> dict:
    cases_path, baseline_path, candidate_path, config_path = write_inputs(directory, ARGS.cases)
    config = load_config(config_path)
    cases = load_cases(cases_path)
    baseline, candidate = load_answer_sets(cases, str(cases_path), [baseline_path, candidate_path])
    limiter = (Limiter if adaptive else FixedLimiter)(limit=concurrency)
    runtime = Runtime(limiter=limiter, budget=Budget())
    server.clear()
    server.rate_limit(rate=ARGS.rate, burst=int(ARGS.rate), retry_after=ARGS.retry_after,
                      headers=not ARGS.no_headers)
    started = time.perf_counter()
    async def score():
        from flipgate.judges import make_judge

        judge = make_judge(config, runtime=runtime, settings=Settings.from_environ(os.environ))
        try:
            return await score_rows(cases=cases, baseline=baseline, candidate=candidate,
                                    config=config, judge=judge, progress=runtime.progress)
        finally:
            await judge.aclose()

    scored = asyncio.run(score())
    wall = time.perf_counter() - started
    answered = len(server.requests) - server.rate_limited
    return {"wall": wall, "floor": answered / ARGS.rate, "429s": server.rate_limited,
            "answered": answered, "errors": sum(1 for row in scored.rows if row.errors),
            "verdicts": {row.case.id: row.verdict.value for row in scored.rows}}


def main() -> int:
    server = FakeOpenAI()
    server.latency = ARGS.latency
    server.start()
    os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench")
    results: dict[str, list[dict]] = {"adaptive": [], "fixed": []}
    try:
        for _ in range(ARGS.repeat):
            for name in ("adaptive", "fixed"):
                with tempfile.TemporaryDirectory() as tmp:
                    results[name].append(one_run(Path(tmp), server, adaptive=name == "adaptive",
                                                 concurrency=ARGS.concurrency))
    finally:
        server.stop()

    print(f"cases {ARGS.cases}, bucket {ARGS.rate:g}/s, latency {ARGS.latency}s, concurrency "
          f"{ARGS.concurrency}, Retry-After {'on' if ARGS.retry_after else 'off'}, "
          f"x-ratelimit headers {'off' if ARGS.no_headers else 'on'}, {ARGS.repeat} run(s)")
    for name, runs in results.items():
        for run in runs:
            print(f"  {name:8} wall {run['wall']:6.1f}s  floor {run['floor']:6.1f}s  "
                  f"wall/floor {run['wall'] / run['floor']:.2f}  429s {run['429s']:4}  "
                  f"answered {run['answered']}  judge errors {run['errors']}")
    adaptive, fixed = results["adaptive"], results["fixed"]
    same = all(a["verdicts"] == f["verdicts"] for a, f in zip(adaptive, fixed, strict=True))
    ratio = statistics.median(r["wall"] / r["floor"] for r in adaptive)
    fewer = statistics.median(a["429s"] / max(f["429s"], 1) for a, f in zip(adaptive, fixed, strict=True))
    print(f"median wall / floor (adaptive): {ratio:.2f}")
    print(f"median 429s adaptive / fixed:   {fewer:.2f}")
    print(f"same verdicts in every run:     {same}; judge errors: "
          f"{sum(r['errors'] for r in adaptive + fixed)}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=80)
    parser.add_argument("--rate", type=float, default=20.0, help="bucket refill, requests a second")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per answered request")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-retry-after", dest="retry_after", action="store_false")
    parser.add_argument("--no-headers", action="store_true", help="send no x-ratelimit-* headers")
    ARGS = parser.parse_args()
    sys.exit(main())
