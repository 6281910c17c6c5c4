"""`flipgate run`: the whole PR check on a local checkout."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from flipgate.commands.common import (
    cache_dir_or_none,
    cache_options,
    judge_option,
    report_failures,
    settings_from_env,
    shard_option,
    visible,
)
from flipgate.config import DEFAULT_CONFIG, DEFAULT_OUT_DIR


def usage_line(usage: dict[str, dict[str, int]] | None, cache: dict[str, int] | None) -> str:
    """One line for stderr: requests and tokens per purpose, and cache hits and misses."""
    parts = []
    for purpose, counts in (usage or {}).items():
        tokens = counts.get("prompt_tokens", 0) + counts.get("completion_tokens", 0)
        requests = counts.get("requests", 0) + counts.get("embedding_requests", 0)
        parts.append(f"{purpose} {requests} requests, {tokens} tokens")
    line = "usage: " + ("; ".join(parts) if parts else "no model requests")
    if cache is not None:
        line += f" | cache: {cache.get('hits', 0)} hits, {cache.get('misses', 0)} misses"
    return line


@click.command("run")
@click.option("--base", required=True, help="The base ref (the target branch), e.g. main.")
@click.option("--head", required=True, help="The head ref (the pull request), e.g. HEAD.")
@click.option("--config", "config_path", default=DEFAULT_CONFIG, show_default=True,
              help="Configuration file, a path inside the repository (read from the base ref).")
@click.option("--out", "out_dir", default=DEFAULT_OUT_DIR, show_default=True,
              type=click.Path(file_okay=False), help="Where report.json and comment.md go.")
@judge_option
@cache_options
@click.option("--repo", "repo", default=".", show_default=True,
              type=click.Path(file_okay=False, exists=True), help="The git repository.")
@click.option("--suite", "suites", multiple=True, metavar="NAME",
              help="Only this suite of the config's `suites:` (repeatable); default: every suite.")
@shard_option
@report_failures
def run(base: str, head: str, config_path: str, out_dir: str, judge: str | None,
        cache_dir: str, no_cache: bool, repo: str, suites: tuple[str, ...],
        shard: str | None) -> None:
    """The whole PR check: detect a prompt or model change, replay both refs, gate, render.

    Both refs are read from git objects (nothing is checked out); the
    configuration and cases come from the base ref. With no change to the
    generator, its includes or a watched path it exits 0 without calling any
    model. Exits 1 when the gate blocks, 2 on bad input or a refused pull
    request, 3 when it could not finish.
    """
    from rich.console import Console

    from flipgate import progress
    from flipgate.pipeline import run_check
    from flipgate.shards import Shard

    bar = progress.for_stream("replaying and judging", sys.stderr)
    try:
        result = run_check(repo=Path(repo), base=base, head=head, settings=settings_from_env(),
                           config_path=config_path,
                           out_dir=Path(out_dir), cache_dir=cache_dir_or_none(cache_dir, no_cache),
                           judge=judge, console=Console(), progress=bar, suites=suites,
                           shard=Shard.parse(shard) if shard else None)
    finally:
        bar.close()
    if result.message:
        click.echo(f"flipgate: error: {visible(result.message)}", err=True)
    click.echo(usage_line(result.report.usage, result.report.cache), err=True)
    if result.partial is not None:
        click.echo(f"wrote {result.partial} (shard {shard}); `flipgate merge` turns the partials "
                   "into the report", err=True)
    else:
        click.echo(f"wrote {Path(out_dir) / 'report.json'} and {Path(out_dir) / 'comment.md'}", err=True)
    sys.exit(result.exit_code)
