"""`flipgate gate`: score two response files for the same cases and gate them."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

import click

from flipgate.commands.common import (
    cache_dir_or_none,
    cache_options,
    config_option,
    judge_option,
    read_config,
    report_failures,
    visible,
)
from flipgate.outputs import DEFAULT_OUT_DIR


@click.command("gate")
@click.option("--cases", "cases_path", required=True, type=click.Path(dir_okay=False),
              help="The frozen cases (JSONL).")
@click.option("--baseline", "baseline_path", required=True, type=click.Path(dir_okay=False),
              help="Baseline responses (JSONL).")
@click.option("--candidate", "candidate_path", required=True, type=click.Path(dir_okay=False),
              help="Candidate responses (JSONL).")
@config_option
@judge_option
@click.option("--out", "out_dir", default=DEFAULT_OUT_DIR, show_default=True,
              type=click.Path(file_okay=False), help="Where report.json and comment.md go.")
@cache_options
@click.option("--concurrency", type=click.IntRange(min=1), default=None,
              help="Judge calls in flight at once (default: the config's, else 8).")
@report_failures
def gate(cases_path: str, baseline_path: str, candidate_path: str, config_path: str | None,
         judge: str | None, out_dir: str, cache_dir: str, no_cache: bool,
         concurrency: int | None) -> None:
    """Score two answer sets for the same cases with a pinned judge and gate them.

    Exits 0 when the gate passes, 1 on a confirmed regression in a blocking
    category, 2 on bad input, 3 when the judge could not score every row.
    """
    from rich.console import Console

    from flipgate import gate as gate_core
    from flipgate import progress
    from flipgate.cases import load_answer_sets, load_cases
    from flipgate.config import Config
    from flipgate.errors import IncompleteError
    from flipgate.outputs import write_outputs
    from flipgate.runtime import Runtime
    from flipgate.scoring import gate_answers, stopped_report

    config = read_config(config_path)
    if config is None:
        config = Config(cases=cases_path)
        if judge is None:
            click.echo("flipgate: no .flipgate.yml here and no --judge: using the offline "
                       "lexical judge (not an LLM)", err=True)
    if concurrency is not None:
        config = dataclasses.replace(config, concurrency=concurrency)
    cases = load_cases(cases_path)
    baseline, candidate = load_answer_sets(cases, cases_path, [baseline_path, candidate_path])

    bar = progress.for_stream("judging", sys.stderr)
    runtime = Runtime.from_config(config, cache_dir=cache_dir_or_none(cache_dir, no_cache),
                                  progress=bar)
    stopped = None
    try:
        report = asyncio.run(gate_answers(cases=cases, baseline=baseline, candidate=candidate,
                                          config=config, runtime=runtime, judge_provider=judge))
    except IncompleteError as exc:
        # Exit 3 writes a report that says `error`, never leaves an older one standing.
        stopped = str(exc)
        report = stopped_report(cases=cases, config=config, judge_provider=judge, message=stopped)
        runtime.fill_report(report)
    finally:
        bar.close()
    write_outputs(report, Path(out_dir), console=Console())
    if stopped is not None:
        click.echo(f"flipgate: error: {visible(stopped)}", err=True)
    click.echo(f"wrote {Path(out_dir) / 'report.json'} and {Path(out_dir) / 'comment.md'}",
               err=True)
    sys.exit(gate_core.exit_code(report.conclusion))
