"""`flipgate gate`: score two response files for the same cases and gate them."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import time
from pathlib import Path

import click

from flipgate.commands.common import (
    cache_dir_or_none,
    cache_options,
    comment_links,
    concurrency_option,
    config_option,
    judge_option,
    read_config,
    report_failures,
    report_url_option,
    settings_from_env,
    shard_option,
    visible,
)
from flipgate.config.schema import DEFAULT_OUT_DIR, GateConfig


@click.command("gate")
@click.option("--cases", "cases_path", required=True, type=click.Path(dir_okay=False),
              help="The frozen cases (JSONL).")
@click.option("--baseline", "baseline_path", required=True, type=click.Path(dir_okay=False),
              help="Baseline responses (JSONL).")
@click.option("--candidate", "candidate_path", required=True, type=click.Path(dir_okay=False),
              help="Candidate responses (JSONL).")
@config_option
@judge_option
@click.option("--out", "out_dir", metavar="PATH", default=DEFAULT_OUT_DIR, show_default=True,
              type=click.Path(file_okay=False), help="Where report.json and comment.md go.")
@cache_options
@concurrency_option
@click.option("--suite", default=None, metavar="NAME",
              help="Gate with this suite's settings (blocking categories, thresholds) from the "
                   "config's `suites:`; default: the top level's.")
@shard_option
@report_url_option
@report_failures
def gate(cases_path: str, baseline_path: str, candidate_path: str, config_path: str | None,
         judge: str | None, out_dir: str, cache_dir: str, no_cache: bool,
         concurrency: int | None, suite: str | None, shard: str | None,
         report_url: str | None) -> None:
    """Score two answer sets for the same cases with a pinned judge and gate them.

    Exits 0 when the gate passes, 1 on a confirmed regression in a blocking
    category, 2 on bad input, 3 when the judge could not score every row.
    """
    from rich.console import Console

    from flipgate.config.cases import (
        empty_contexts,
        load_answer_sets,
        load_cases,
        require_blocking_categories,
        require_queries,
    )
    from flipgate.config.schema import Config
    from flipgate.errors import IncompleteError
    from flipgate.judges import make_judges
    from flipgate.llm.cache_secret import cache_secret
    from flipgate.llm.runtime import Runtime
    from flipgate.model import Conclusion
    from flipgate.output import progress
    from flipgate.output.write import write_outputs
    from flipgate.run import quota
    from flipgate.run import stopped as part_way
    from flipgate.run.scoring import Rules, Scored, build_report, score_rows, stopped_note
    from flipgate.run.shards import Part, Shard, digest, write_partial
    from flipgate.verdict import gate as gate_core

    config = read_config(config_path)
    notes: list[str] = []
    if config is None:
        config = Config(cases=cases_path)
        notes.append(NO_CONFIG_NOTE)
        click.echo(f"flipgate: {NO_CONFIG_NOTE}", err=True)
        if judge is None:
            click.echo("flipgate: no .flipgate.yml here and no --judge: using the offline "
                       "lexical judge (not an LLM)", err=True)
    suites_configured = bool(config.suites)  # then these cases may be one suite's of several
    if suite is not None:
        config = config.suite_configs([suite])[0]
    if concurrency is not None:
        config = dataclasses.replace(config, concurrency=concurrency)
    cases = load_cases(cases_path)
    require_queries(cases, source=cases_path, mode=config.judge.mode)
    require_blocking_categories([(config, cases)], every_suite=not suites_configured)
    if (empty := empty_contexts(cases)) is not None:
        notes.append(empty)
    baseline, candidate = load_answer_sets(cases, cases_path, [baseline_path, candidate_path])
    part = Shard.parse(shard) if shard else None
    all_cases = cases
    if part is not None:
        cases, positions = part.select(cases)

    settings = settings_from_env()
    links = comment_links(settings, report_url)
    cache = cache_dir_or_none(cache_dir, no_cache)
    runtime = Runtime.from_config(config, cache_dir=cache, cache_key=cache_secret(settings).key
                                  if cache is not None else None)
    the_judge = make_judges(config, runtime=runtime, settings=settings, provider=judge)
    bar = progress.for_stream(sys.stderr)
    runtime.attach(bar)

    async def score() -> Scored:
        async with contextlib.aclosing(the_judge):
            # One cheap request first: a wrong key or judge model stops here, not per row.
            await the_judge.probe()
            return await score_rows(cases=cases, baseline=baseline, candidate=candidate,
                                    config=config, judge=the_judge.first, second=the_judge.second,
                                    mode=the_judge.mode, progress=bar,
                                    category_cases=gate_core.category_sizes(
                                        c.category for c in all_cases))

    stopped = scored = None
    try:
        scored = asyncio.run(score())
    except IncompleteError as exc:
        # Exit 3 writes a report that says `error`, never leaves an older one standing; the
        # rows finished before the stop are kept, the rest are not run (run/stopped.py).
        stopped = str(exc)
        scored = Scored(rows=part_way.kept_rows(cases, exc))
        notes += [stopped_note(stopped), part_way.progress_note(scored.rows)]
        if advice := quota.rerun_advice(exc, cached=cache is not None,
                                        lifts_at=runtime.limiter.lifts_at, now=time.time()):
            notes.append(advice)
            stopped = f"{stopped}. {advice}"
    finally:
        bar.close()
    report = build_report(config=config, judge=the_judge.info, cases=len(cases), scored=scored,
                          conclusion=Conclusion.ERROR if stopped is not None else None,
                          notes=notes,
                          usage=runtime.usage_report() or None, cache=runtime.cache_stats())
    runtime.fill_report(report)
    if stopped is not None:
        click.echo(f"flipgate: error: {visible(stopped)}", err=True)
    if part is not None:
        fingerprint = {"configuration": digest(repr(config)), "cases": digest(_bytes(cases_path)),
                       "baseline": digest(_bytes(baseline_path)),
                       "candidate": digest(_bytes(candidate_path)),
                       "judge": f"{report.judge.provider}/{report.judge.model}"}
        path = write_partial(report, out_dir, shard=part, fingerprint=fingerprint,
                             parts=[Part(name=None, report=report, cases=all_cases,
                                         positions=positions,
                                         rules=Rules.of(config, mode=report.judge.rescore))],
                             stopped=stopped is not None)
        click.echo(f"wrote {path} (shard {part}: {len(cases)} of {len(all_cases)} cases); "
                   "`flipgate merge` turns the partials into the report", err=True)
        # Judge errors on rows are part of the result; only a part that stopped fails its job.
        sys.exit(3 if stopped is not None else 0)
    write_outputs(report, Path(out_dir), console=Console(), links=links)
    click.echo(f"wrote {Path(out_dir) / 'report.json'}, {Path(out_dir) / 'comment.md'} and "
               f"{Path(out_dir) / 'report.html'}", err=True)
    sys.exit(gate_core.exit_code(report.conclusion))


NO_CONFIG_NOTE = ("No configuration: no --config was given and there is no .flipgate.yml here, "
                  "so the documented defaults apply (blocking categories: "
                  f"{', '.join(GateConfig.blocking_categories)}; "
                  f"{GateConfig.min_cases_per_category} cases in a category before one judge "
                  "blocks alone).")


def _bytes(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path is not None and Path(path).is_file() else None
