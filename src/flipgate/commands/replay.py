"""`flipgate replay`: render the generator at a git ref for every case and record the answers."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import click

from flipgate.commands.common import (
    cache_dir_or_none,
    cache_options,
    concurrency_option,
    report_failures,
    settings_from_env,
    visible,
)
from flipgate.config.schema import DEFAULT_CONFIG


@click.command("replay")
@click.option("--ref", default=None,
              help="The git ref whose generator answers, e.g. main (with --sample: default HEAD).")
@click.option("--config", "config_path", default=None,
              help=f"Configuration file, a path inside the repository (read from the ref; "
                   f"default {DEFAULT_CONFIG}).")
@click.option("--out", "out_path", metavar="PATH", type=click.Path(dir_okay=False),
              help="Where the responses JSONL goes (required unless --sample).")
@click.option("--sample", is_flag=True,
              help="Send nothing: print the request one case would send (model, parameters, "
                   "messages), for every form.")
@click.option("--case", "case_id", default=None, metavar="ID",
              help="With --sample: the case to preview (default: the first).")
@click.option("--generator", "generator", default=None,
              help="With --sample: a Prompty file of the ref, rendered with its own sample:.")
@cache_options
@concurrency_option
@click.option("--repo", "repo", default=".", show_default=True,
              type=click.Path(file_okay=False, exists=True), help="The git repository.")
@click.option("--suite", default=None, metavar="NAME",
              help="Which suite's generator and cases, when the config has several suites.")
@report_failures
def replay(ref: str | None, config_path: str | None, out_path: str | None, sample: bool,
           case_id: str | None, generator: str | None, cache_dir: str, no_cache: bool,
           concurrency: int | None, repo: str, suite: str | None) -> None:
    """Render the generator at REF for every case, ask its model, write the responses JSONL.

    With --sample, ask nothing: print the request one case (--case ID, default
    the first) would send. Everything is read from git objects at REF (nothing
    is checked out). Exits 2 on bad input, 3 when a generation failed after
    retries or the budget ran out.
    """
    from flipgate.commands.run import usage_line
    from flipgate.errors import InputError
    from flipgate.generator.replay import write_answers
    from flipgate.output import progress
    from flipgate.run.pipeline import replay_ref
    from flipgate.run.preview import preview

    if sample:
        request = preview(repo=Path(repo), ref=ref or "HEAD", settings=settings_from_env(),
                          config_path=config_path, generator=generator, suite=suite,
                          case_id=case_id,
                          warn=lambda text: click.echo(f"flipgate: warning: {visible(text)}", err=True))
        click.echo(json.dumps(request, indent=2, ensure_ascii=False))
        return
    if ref is None:
        raise InputError("replay needs --ref (the git ref whose generator answers)")
    if out_path is None:
        raise InputError("replay needs --out (where the responses go), or --sample for a dry run")
    if generator is not None or case_id is not None:
        raise InputError("--generator and --case go with --sample; a replay uses the "
                         "configuration's generator for every case")
    bar = progress.for_stream(sys.stderr)
    try:
        result = asyncio.run(replay_ref(repo=Path(repo), ref=ref, settings=settings_from_env(),
                                        config_path=config_path or DEFAULT_CONFIG,
                                        cache_dir=cache_dir_or_none(cache_dir, no_cache),
                                        progress=bar, concurrency=concurrency, suite=suite))
    finally:
        bar.close()
    for note in result.notes:
        click.echo(f"flipgate: {visible(note)}", err=True)
    write_answers(out_path, result.answers, result.cases)
    truncated = [case_id for case_id, answer in result.answers.items()
                 if answer.finish_reason == "length"]
    if truncated:
        click.echo(f"flipgate: warning: {len(truncated)} answers were cut off at the token limit "
                   f"(finish_reason length): {', '.join(truncated[:5])}", err=True)
    click.echo(usage_line(result.usage, result.cache, own_code=result.own_code), err=True)
    click.echo(f"wrote {len(result.answers)} responses to {out_path}", err=True)
