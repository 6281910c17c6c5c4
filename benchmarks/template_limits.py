"""How long the worst templates the size caps allow take to parse and compile.

    python benchmarks/template_limits.py

The caps in `sandbox.Limits` (`max_template_bytes`, `max_total_template_bytes`)
must keep this well inside `timeout_seconds`: every template a generator loads
is parsed for include discovery, parsed again for the sandbox's static check,
and compiled once, all in the rendering child.
"""

from __future__ import annotations

import time

from flipgate.prompts.sandbox import Limits, make_environment


def main() -> None:
    limits = Limits()
    env = make_environment(None, limits)
    shapes = {
        "plain text": "hello world {{ x }} and more\n",
        "tag-dense": "{% if a %}{{ b }}{% endif %}",
    }
    for name, unit in shapes.items():
        source = unit * (limits.max_total_template_bytes // len(unit))
        start = time.perf_counter()
        env.parse(source)
        parsed = time.perf_counter() - start
        env.parse(source)
        start = time.perf_counter()
        env.from_string(source)
        compiled = time.perf_counter() - start
        worst = 2 * parsed + compiled
        print(f"{name}: {len(source):,} bytes: parse {parsed:.2f}s, compile {compiled:.2f}s, "
              f"worst case {worst:.2f}s of the {limits.timeout_seconds:g}s limit")


if __name__ == "__main__":
    main()
