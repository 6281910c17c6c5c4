"""`flipgate replay`: render the generator at a git ref for every case and record the answers."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click

from flipgate.commands.common import (
    cache_dir_or_none,
    cache_options,
    report_failures,
    settings_from_env,
)
from flipgate.config import DEFAULT_CONFIG


@click.command("replay")
@click.option("--ref", required=True, help="The git ref whose generator answers, e.g. main.")
@click.option("--config", "config_path", default=DEFAULT_CONFIG, show_default=True,
              help="Configuration file, a path inside the repository (read from the ref).")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="Where the responses JSONL goes.")
@cache_options
@click.option("--repo", "repo", default=".", show_default=True,
              type=click.Path(file_okay=False, exists=True), help="The git repository.")
@click.option("--suite", default=None, metavar="NAME",
              help="Which suite's generator and cases, when the config has several suites.")
@report_failures
def replay(ref: str, config_path: str, out_path: str, cache_dir: str, no_cache: bool,
           repo: str, suite: str | None) -> None:
    """Render the generator at REF for every case, ask its model, write the responses JSONL.

    Everything is read from git objects at REF (nothing is checked out).
    Exits 2 on bad input, 3 when a generation failed after retries or the
    budget ran out.
    """
    from flipgate import progress
    from flipgate.commands.run import usage_line
    from flipgate.pipeline import replay_ref
    from flipgate.replay import write_answers

    bar = progress.for_stream("generating", sys.stderr)
    try:
        result = asyncio.run(replay_ref(repo=Path(repo), ref=ref, settings=settings_from_env(),
                                        config_path=config_path,
                                        cache_dir=cache_dir_or_none(cache_dir, no_cache),
                                        progress=bar, suite=suite))
    finally:
        bar.close()
    write_answers(out_path, result.answers, result.cases)
    truncated = [case_id for case_id, answer in result.answers.items()
                 if answer.finish_reason == "length"]
    if truncated:
        click.echo(f"flipgate: warning: {len(truncated)} answers were cut off at the token limit "
                   f"(finish_reason length): {', '.join(truncated[:5])}", err=True)
    click.echo(usage_line(result.usage, result.cache), err=True)
    click.echo(f"wrote {len(result.answers)} responses to {out_path}", err=True)
