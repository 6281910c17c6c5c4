"""`flipgate run`: the whole PR check on a local checkout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flipgate.commands.common import (
    cache_dir_or_none,
    cache_options,
    comment_links,
    concurrency_option,
    judge_option,
    report_failures,
    report_url_option,
    settings_from_env,
    shard_option,
    visible,
)
from flipgate.config.schema import DEFAULT_CONFIG, DEFAULT_OUT_DIR

if TYPE_CHECKING:
    from flipgate.model import E2EReport


def usage_line(usage: dict[str, dict[str, int]] | None, cache: dict[str, int] | None, *,
               sent: int = 0, own_code: bool = False) -> str:
    """One line for stderr: requests and tokens per purpose, and cache hits, misses and rejected
    entries. `sent`: requests that went out, answered or not (the budget's count); `own_code`:
    the application's code asked its model itself, which flipgate does not count."""
    parts = []
    for purpose, counts in (usage or {}).items():
        tokens = counts.get("prompt_tokens", 0) + counts.get("completion_tokens", 0)
        requests = counts.get("requests", 0) + counts.get("embedding_requests", 0)
        if requests or tokens:  # a purpose that sent nothing says nothing
            parts.append(f"{purpose} {requests:,} requests, {tokens:,} tokens")
    if parts:
        line = "usage: " + "; ".join(parts)
    elif sent:
        line = f"usage: {sent:,} model requests sent, none answered"
    else:
        line = "usage: no model requests" + (" from flipgate" if own_code else "")
    if own_code:
        line += " (the application's code sends its own requests, not counted here)"
    if cache is not None and (cache.get("hits") or cache.get("misses")):
        line += f" | cache: {cache.get('hits', 0):,} hits, {cache.get('misses', 0):,} misses"
        if cache.get("rejected"):
            line += (f", {cache['rejected']:,} rejected (not signed with this run's key: "
                     "ignored and asked again)")
    return line


def e2e_line(e2e: E2EReport) -> str:
    """One line for stderr on the end-to-end run."""
    if e2e.stopped and not e2e.rows:
        return f"end-to-end: did not run ({e2e.stopped})"
    drift = e2e.drift
    line = (f"end-to-end: {len(e2e.rows)} rows, {e2e.changed_contexts} live contexts differ, "
            f"{len(drift)} retrieval drift" + (f" ({', '.join(r.id for r in drift[:5])})" if drift else ""))
    if e2e.retrieval_errors:
        line += f", {e2e.retrieval_errors} retrieval errors"
    if e2e.stopped:
        line += f"; stopped: {e2e.stopped}"
    return line + " (never blocks)"


@click.command("run")
@click.option("--base", required=True, help="The base ref (the target branch), e.g. main.")
@click.option("--head", default=None,
              help="The head ref (the pull request), e.g. HEAD. Either this or --worktree.")
@click.option("--worktree", is_flag=True,
              help="The head is the working tree, uncommitted edits and new (not ignored) files "
                   "included: edit, run, edit again without a commit. The index, HEAD and "
                   "branches are not changed.")
@click.option("--config", "config_path", default=DEFAULT_CONFIG, show_default=True,
              help="Configuration file, a path inside the repository (read from the base ref).")
@click.option("--out", "out_dir", metavar="PATH", default=DEFAULT_OUT_DIR, show_default=True,
              type=click.Path(file_okay=False), help="Where report.json and comment.md go.")
@judge_option
@cache_options
@concurrency_option
@click.option("--repo", "repo", default=".", show_default=True,
              type=click.Path(file_okay=False, exists=True), help="The git repository.")
@click.option("--suite", "suites", multiple=True, metavar="NAME",
              help="Only this suite of the config's `suites:` (repeatable); default: every suite.")
@shard_option
@click.option("--e2e", is_flag=True,
              help="Also the end-to-end run: live retrieval (the base config's e2e:) for both "
                   "versions, compared with the frozen run. It never changes the exit code.")
@report_url_option
@report_failures
def run(base: str, head: str | None, worktree: bool, config_path: str, out_dir: str, judge: str | None,
        cache_dir: str, no_cache: bool, concurrency: int | None, repo: str,
        suites: tuple[str, ...], shard: str | None, e2e: bool, report_url: str | None) -> None:
    """The whole PR check: detect a prompt or model change, replay both refs, gate, render.

    Both refs are read from git objects (nothing is checked out); the
    configuration and cases come from the base ref. --worktree evaluates the
    working tree as the head, uncommitted edits included. With no change to the
    generator, its includes or a watched path it exits 0 without calling any
    model. Exits 1 when the gate blocks, 2 on bad input or a refused pull
    request, 3 when it could not finish.
    """
    from datetime import UTC, datetime

    from rich.console import Console

    from flipgate.e2e.run import E2ERequest
    from flipgate.errors import InputError
    from flipgate.output import progress
    from flipgate.run.pipeline import run_check
    from flipgate.run.shards import Shard

    if (head is None) == (not worktree):
        raise InputError("name the head with exactly one of --head REF (a commit) and "
                         "--worktree (the working tree, uncommitted edits included)")
    # With --shard, each shard's end-to-end run covers its own cases; merge puts the rows
    # back together and compares them with the merged frozen verdicts.
    settings = settings_from_env()
    links = comment_links(settings, report_url)
    # The retrieval's listed variables come from the same snapshot of the environment.
    request = (E2ERequest(environ=settings.environ, date=datetime.now(UTC).date().isoformat())
               if e2e else None)
    bar = progress.for_stream(sys.stderr)
    try:
        result = run_check(repo=Path(repo), base=base, head=head or "HEAD", settings=settings,
                           worktree=worktree, local=True,
                           config_path=config_path,
                           out_dir=Path(out_dir), cache_dir=cache_dir_or_none(cache_dir, no_cache),
                           judge=judge, console=Console(), progress=bar, concurrency=concurrency,
                           suites=suites,
                           shard=Shard.parse(shard) if shard else None, e2e=request,
                           links=links)
    finally:
        bar.close()
    click.echo(f"flipgate: configuration: {visible(result.config_from)}", err=True)
    if result.merge_base:
        click.echo(f"flipgate: {visible(result.merge_base)}", err=True)
    if result.message:
        click.echo(f"flipgate: error: {visible(result.message)}", err=True)
    if result.report.e2e is not None:
        click.echo(visible(e2e_line(result.report.e2e)), err=True)
    click.echo(usage_line(result.report.usage, result.report.cache,
                          sent=int((result.report.budget or {}).get("spent_requests") or 0),
                          own_code=result.own_code),
               err=True)
    if result.partial is not None:
        click.echo(f"wrote {result.partial} (shard {shard}); `flipgate merge` turns the partials "
                   "into the report", err=True)
    else:
        click.echo(f"wrote {Path(out_dir) / 'report.json'}, {Path(out_dir) / 'comment.md'} and "
                   f"{Path(out_dir) / 'report.html'}", err=True)
    sys.exit(result.exit_code)
