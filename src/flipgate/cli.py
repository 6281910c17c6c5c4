"""The `flipgate` command line: a thin group whose commands load on demand.

Each command lives in `flipgate.commands.<name>` and is imported only when
it runs (or when its help is shown), so `flipgate --help` imports neither
openai nor azure.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys

import click

from flipgate import __version__

_COMMANDS = {
    "gate": ("flipgate.commands.gate", "gate", "Score two answer sets with a pinned judge and gate them."),
    "replay": ("flipgate.commands.replay", "replay", "Render the generator at a git ref for every case."),
    "run": ("flipgate.commands.run", "run", "The whole PR check on a local checkout."),
    "record": ("flipgate.commands.record", "record", "Build or extend the cases from logged traffic."),
    "merge": ("flipgate.commands.merge", "merge", "Combine the partials of a sharded run into one report."),
    "calibrate": ("flipgate.commands.calibrate", "calibrate",
                  "Check the judge against human labels, or write a labels file to fill in."),
    "init": ("flipgate.commands.init", "init",
             "Write a starter .flipgate.yml, workflow and cases file for this repository."),
    "action": ("flipgate.commands.action", "action", "Entrypoint of the GitHub Docker action."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in _COMMANDS:
            return None
        module_name, attribute, _ = _COMMANDS[name]
        return getattr(importlib.import_module(module_name), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help from the table above, so listing commands imports nothing.
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, _, short) in _COMMANDS.items()])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="flipgate")
def cli() -> None:
    """Gate LLM prompt and model changes on groundedness flips, not fluency averages.

    Exit codes: 0 pass (or nothing to gate), 1 blocked by a confirmed
    regression in a blocking category, 2 bad input or configuration,
    3 could not finish (judge or API failed after retries).
    """


# The cycle collector's first threshold (Python's default is 700 net new objects). A run
# holds hundreds of requests in flight, each a web of live objects, and at 700 the
# collector walks them again and again: at 5,000 a 2,000-case run spends about a tenth
# less CPU (benchmarks/bench_gate.py). Not higher: at 20,000 the 100,000-case run's peak
# grew from 395 MB to 657 MB (benchmarks/bench_memory.py); at 5,000 it is 396 MB.
YOUNG_GENERATION_THRESHOLD = 5_000


def main() -> None:
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, *gc.get_threshold()[1:])
    # The optional azure-ai-evaluation engine reads PF_LOGGING_LEVEL when it is first
    # imported; unset, its loggers print tracebacks to stdout. Set once, here, for the process.
    os.environ.setdefault("PF_LOGGING_LEVEL", "CRITICAL")
    # click's own usage errors exit 2, which is the contract's "bad input" code too.
    sys.exit(cli.main(prog_name="flipgate", standalone_mode=True))
