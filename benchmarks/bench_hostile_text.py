"""Time the text analysis on hostile answers: is it linear and bounded?

Not a test: it prints, for each hostile answer at a few sizes, how long
`evidence.analyse`, the offline judge's grading and the manipulation check take, so a reader sees
both the absolute time and how it grows (linear work doubles with the size;
work bounded by the evidence cut stops growing once the cut is reached).

    .venv/bin/python benchmarks/bench_hostile_text.py
    .venv/bin/python benchmarks/bench_hostile_text.py --sizes 40000 1000000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from flipgate.judges.offline import fluency_heuristic, grade_groundedness
from flipgate.model import Case
from flipgate.verdict.evidence import analyse, split_statements
from flipgate.verdict.manipulation import find_manipulation

CONTEXT = "Refunds are issued within 30 days of the request. A replacement card costs $12."
CASE = Case(id="hostile", query="How long do refunds take?", context=CONTEXT, category="policy")

# Each maker returns an answer of about `size` characters.
HOSTILE: dict[str, Callable[[int], str]] = {
    "digits": lambda size: "9" * size,
    "digits-in-sentence": lambda size: "The fee is $" + "7" * size + ".",
    "e.g.": lambda size: "e.g. " * (size // 5),
    "nested-parens": lambda size: "(" * (size // 2) + ")" * (size // 2),
    "parens-and-stops": lambda size: "(a.) " * (size // 4),
    "closing-after-stop": lambda size: "x." + ")" * size + "y",
    "number-words": lambda size: "twenty-one " * (size // 11),
    "let-me-know": lambda size: "let me know if " + "a" * size,
    "many-figures": lambda size: " ".join(str(i) for i in range(size // 6)),
    "many-dates": lambda size: "March 5 2024, " * (size // 14),
}
# Answers for the manipulation check's views: zero-width characters (read twice, as breaks
# and removed) and digits inside words (read once more as letters), against plain prose.
MANIPULATION: dict[str, Callable[[int], str]] = {
    "prose": lambda size: "Refunds are issued within thirty days. " * (size // 39),
    "zero-width": lambda size: "Refunds\u200bare\u200bissued\u200bin\u200bdays. " * (size // 32),
    "digits-in-words": lambda size: "The X100 and RTX4090 ship on 2024-03-15 at 7am. " * (size // 48),
    "leet-words": lambda size: "pr3v10us 1nstruct10ns r3v13w3d " * (size // 31),
    "one-long-line": lambda size: "a1" * (size // 2),
}
# A context with thousands of figures, against which figure-dense answers are checked
# (each answer figure must cost constant time, not one pass over the context's).
BIG_CONTEXT = " ".join(f"Plan {i} costs ${i}.{i % 100:02d} a month from June {i % 28 + 1}."
                       for i in range(3000))


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    print(f"{'answer':<20} {'size':>9} {'split':>8} {'analyse':>8} {'grade':>8} {'fluency':>8}")
    worst = 0.0
    for name, make in HOSTILE.items():
        for size in args.sizes:
            answer = make(size)
            steps: list[Callable[[], object]] = [
                lambda text=answer: split_statements(text),
                lambda text=answer: analyse(CONTEXT, text, query=CASE.query),
                lambda text=answer: grade_groundedness(CASE, text),
                lambda text=answer: fluency_heuristic(text)]
            times = [timed(step) for step in steps]
            worst = max(worst, *times)
            print(f"{name:<20} {len(answer):>9} " + " ".join(f"{t:>7.3f}s" for t in times))
    for name in ("many-figures", "many-dates"):
        answer = HOSTILE[name](100_000)
        took = timed(lambda text=answer: analyse(BIG_CONTEXT, text))
        worst = max(worst, took)
        print(f"{name} vs a context of {len(BIG_CONTEXT):,} characters: analyse {took:.3f}s")
    print(f"{'manipulation check':<20} {'size':>9} {'time':>8} {'vs prose':>8}")
    for size in args.sizes:
        prose = timed(lambda text=MANIPULATION["prose"](size): find_manipulation(text))
        for name, make in MANIPULATION.items():
            answer = make(size)
            took = timed(lambda text=answer: find_manipulation(text))
            worst = max(worst, took)
            print(f"{name:<20} {len(answer):>9} {took:>7.3f}s {took / prose:>7.1f}x")
    print(f"slowest single step: {worst:.3f}s")


if __name__ == "__main__":
    main()
