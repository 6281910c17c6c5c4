"""`flipgate gate` against two shapes of 429: a provider's token bucket (the run's own
rate) and load-independent hiccups, each beside the clients it should be measured against.

Not a test. Two shapes (`--shape`):

- `bucket`: the loopback server admits `--rate` requests a second (a bucket of
  `--rate` tokens, so one second's burst), answers 429 beyond it and sends
  `x-ratelimit-*` headers on every reply; `Retry-After` is sent or not. The
  same gate runs with flipgate's adaptive limiter and with a limiter that never
  lowers its concurrency (it still sleeps outside its slot and honours each
  429's pause for the run). Wall time is compared with the bucket's floor.
- `hiccups`: no bucket; `--share` of the requests (at random, seeded) get 429
  with `Retry-After: --retry-after`, with or without `x-ratelimit-*` headers that
  show capacity left (`--hiccup-headers`). The gate runs with flipgate's
  limiter, with `every-429-pauses` (how flipgate read every 429 before it told a
  hiccup apart: cut the limit and pause the run), and with a fixed-slot client
  that sleeps each 429's Retry-After outside its slot and pauses nothing else.

    .venv/bin/python benchmarks/bench_rate_limits.py --cases 80 --repeat 3
    .venv/bin/python benchmarks/bench_rate_limits.py --cases 500 --repeat 1
    .venv/bin/python benchmarks/bench_rate_limits.py --shape hiccups --share 0.1 --retry-after 1
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
from flipgate.llm.pacing import (  # noqa: E402
    HICCUP,
    OWN_RATE,
    RECENT_OUTCOMES,
    Throttle,
    rate_limit_pause,
)
from flipgate.llm.runtime import Runtime  # noqa: E402
from flipgate.run.scoring import score_rows  # noqa: E402
from flipgate.settings import Settings  # noqa: E402

from support.openai_server import FakeOpenAI  # noqa: E402


class FixedLimiter(Limiter):
    """The bucket's comparison: a patient client with a fixed limit. It waits outside its
    slot and honours each 429's pause for the run, but never lowers its concurrency nor
    paces from headers."""

    def throttled(self, *, sent_at: float, headers, attempt: int = 0) -> Throttle:  # type: ignore[override]
        self.rate_limited += 1
        pause = rate_limit_pause(headers, streak=0)
        self.resume_at = max(self.resume_at, self.clock() + pause)
        return Throttle(OWN_RATE, pause)

    def succeeded(self, headers=None) -> None:  # type: ignore[override]
        pass


class EveryLimiter(Limiter):
    """Every 429 read as the run's own rate, as flipgate did before it told a hiccup apart."""

    def throttled(self, *, sent_at: float, headers, attempt: int = 0) -> Throttle:  # type: ignore[override]
        self._recent.extend([False] * RECENT_OUTCOMES)  # a storm, whatever happened
        return super().throttled(sent_at=sent_at, headers=headers, attempt=attempt)


class AloneLimiter(FixedLimiter):
    """A fixed-slot client that sleeps each 429's Retry-After outside its slot, alone."""

    def throttled(self, *, sent_at: float, headers, attempt: int = 0) -> Throttle:  # type: ignore[override]
        self.rate_limited += 1
        return Throttle(HICCUP, rate_limit_pause(headers, streak=attempt))


LIMITERS = {"bucket": {"adaptive": Limiter, "fixed": FixedLimiter},
            "hiccups": {"adaptive": Limiter, "every-429-pauses": EveryLimiter,
                        "fixed-alone": AloneLimiter}}


def one_run(directory: Path, server: FakeOpenAI, *, limiter_type: type[Limiter],
            concurrency: int, seed: int) -> dict:
    cases_path, baseline_path, candidate_path, config_path = write_inputs(directory, ARGS.cases)
    config = load_config(config_path)
    cases = load_cases(cases_path)
    baseline, candidate = load_answer_sets(cases, str(cases_path), [baseline_path, candidate_path])
    limiter = limiter_type(limit=concurrency)
    runtime = Runtime(limiter=limiter, budget=Budget())
    server.clear()
    if ARGS.shape == "bucket":
        server.rate_limit(rate=ARGS.rate, burst=int(ARGS.rate), retry_after=ARGS.retry_after,
                          headers=not ARGS.no_headers)
    else:
        server.hiccups(ARGS.share, retry_after=ARGS.hiccup_wait, headers=ARGS.hiccup_headers,
                       seed=seed)
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
    # The floor: the bucket's refill time, or (hiccups) the answered requests at full
    # concurrency plus the one longest chain of waits a single request can meet.
    floor = (answered / ARGS.rate if ARGS.shape == "bucket"
             else answered * ARGS.latency / concurrency + ARGS.hiccup_wait)
    return {"wall": wall, "floor": floor, "429s": server.rate_limited,
            "answered": answered, "errors": sum(1 for row in scored.rows if row.errors),
            "hiccups": limiter.hiccups, "lowest": limiter.lowest,
            "verdicts": {row.case.id: row.verdict.value for row in scored.rows}}


def main() -> int:
    import openai  # noqa: F401 - imported before the first timed run, not inside it

    import flipgate.judges  # noqa: F401

    server = FakeOpenAI()
    server.latency = ARGS.latency
    server.start()
    os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench")
    limiters = LIMITERS[ARGS.shape]
    results: dict[str, list[dict]] = {name: [] for name in limiters}
    try:
        for seed in range(ARGS.repeat):
            for name, limiter_type in limiters.items():
                with tempfile.TemporaryDirectory() as tmp:
                    results[name].append(one_run(Path(tmp), server, limiter_type=limiter_type,
                                                 concurrency=ARGS.concurrency, seed=seed))
    finally:
        server.stop()

    if ARGS.shape == "bucket":
        print(f"bucket: cases {ARGS.cases}, {ARGS.rate:g}/s, latency {ARGS.latency}s, concurrency "
              f"{ARGS.concurrency}, Retry-After {'on' if ARGS.retry_after else 'off'}, "
              f"x-ratelimit headers {'off' if ARGS.no_headers else 'on'}, {ARGS.repeat} run(s)")
    else:
        print(f"hiccups: cases {ARGS.cases}, {ARGS.share:.0%} of requests 429 at random with "
              f"Retry-After {ARGS.hiccup_wait:g}, x-ratelimit headers "
              f"{'on (capacity left)' if ARGS.hiccup_headers else 'off'}, latency {ARGS.latency}s, "
              f"concurrency {ARGS.concurrency}, {ARGS.repeat} run(s)")
    for name, runs in results.items():
        for run in runs:
            print(f"  {name:16} wall {run['wall']:6.1f}s  floor {run['floor']:6.1f}s  "
                  f"wall/floor {run['wall'] / run['floor']:.2f}  429s {run['429s']:4} "
                  f"(hiccups {run['hiccups']:3})  lowest limit {run['lowest']}  "
                  f"answered {run['answered']}  judge errors {run['errors']}")
    first = next(iter(results))
    same = all(len({r["verdicts"].__repr__() for r in group}) == 1
               for group in zip(*results.values(), strict=True))
    for name, runs in results.items():
        print(f"median wall ({name}):{' ' * (17 - len(name))}"
              f"{statistics.median(r['wall'] for r in runs):6.2f}s, wall / floor "
              f"{statistics.median(r['wall'] / r['floor'] for r in runs):.2f}")
    if ARGS.shape == "bucket":
        fewer = statistics.median(a["429s"] / max(f["429s"], 1)
                                  for a, f in zip(results["adaptive"], results["fixed"], strict=True))
        print(f"median 429s adaptive / fixed:   {fewer:.2f}")
    print(f"same verdicts in every run:     {same}; judge errors: "
          f"{sum(r['errors'] for runs in results.values() for r in runs)} ({first} first)")
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
    parser.add_argument("--shape", choices=("bucket", "hiccups"), default="bucket")
    parser.add_argument("--share", type=float, default=0.1, help="hiccups: share of requests refused")
    parser.add_argument("--retry-after", dest="hiccup_wait", type=float, default=1.0,
                        help="hiccups: the Retry-After of each refusal, seconds")
    parser.add_argument("--hiccup-headers", action="store_true",
                        help="hiccups: send x-ratelimit-* headers showing capacity left")
    ARGS = parser.parse_args()
    sys.exit(main())
