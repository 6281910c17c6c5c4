"""`flipgate merge`: the report of one run from the partials of its shards."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from flipgate.commands.common import (
    comment_links,
    report_failures,
    report_url_option,
    settings_from_env,
)
from flipgate.config.schema import DEFAULT_OUT_DIR


@click.command("merge")
@click.argument("partials", nargs=-1, required=True, type=click.Path())
@click.option("--out", "out_dir", metavar="PATH", default=DEFAULT_OUT_DIR, show_default=True,
              type=click.Path(file_okay=False), help="Where report.json and comment.md go.")
@report_url_option
@report_failures
def merge(partials: tuple[str, ...], out_dir: str, report_url: str | None) -> None:
    """Combine the partial.json of every shard (`--shard i/n`) into one report.

    Each PARTIAL is a partial.json or the folder a shard wrote it to.

    Every row is decided again from its scores with the whole run's category
    sizes, so report.json, answers.jsonl and comment.md are those of the unsharded
    run (usage, cache, budget spending and scheduling are summed over the jobs),
    and it exits as that run would (0, 1 or 3). Partials are checked, not trusted:
    partials of different configurations, cases, rules, judges, answer files or
    refs, a shard given twice or missing, a row its shard does not hold, a case
    twice or not at all, a missing field or a wrong type are bad input (2).
    """
    from rich.console import Console

    from flipgate.output.write import write_outputs
    from flipgate.run.shards import PARTIAL_FILE
    from flipgate.run.shards import merge as merge_partials
    from flipgate.verdict import gate as gate_core

    links = comment_links(settings_from_env(), report_url)
    report = merge_partials([Path(p) / PARTIAL_FILE if Path(p).is_dir() else Path(p) for p in partials])
    write_outputs(report, Path(out_dir), console=Console(), links=links)
    click.echo(f"wrote {Path(out_dir) / 'report.json'}, {Path(out_dir) / 'comment.md'} and "
               f"{Path(out_dir) / 'report.html'}", err=True)
    sys.exit(gate_core.exit_code(report.conclusion))
