"""`flipgate action`: the entrypoint of the Docker action (GitHub mode)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from flipgate.commands.common import concurrency_option


@click.command("action")
@click.option("--cache", "cache_dir", default=".flipgate-cache", show_default=True,
              type=click.Path(file_okay=False),
              help="Where model replies are cached, relative to the workspace.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@concurrency_option
@click.option("--verbose", is_flag=True, help="Also log the GitHub client's own messages "
              "(each request it retried or that was refused).")
def action(cache_dir: str, no_cache: bool, concurrency: int | None, verbose: bool) -> None:
    """Run as the flipgate GitHub Action: read the event, check the PR, comment, set the status.

    Reads the standard Actions variables (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH,
    GITHUB_REPOSITORY, GITHUB_API_URL, ...) and the action's inputs
    (INPUT_GITHUB-TOKEN, INPUT_CONFIG, INPUT_FORK-POLICY, ...). Exits like
    `flipgate run`: 0 pass or nothing to do, 1 blocked, 2 bad input, 3 could
    not finish.
    """
    from flipgate.github.action import CheckOptions, main
    from flipgate.github.api import github_logging

    github_logging(verbose=verbose)
    # Files written into the workspace stay readable by its owner and by actions/cache.
    os.umask(0o022)
    options = CheckOptions(cache=None if no_cache else Path(cache_dir), concurrency=concurrency)
    sys.exit(main(os.environ, options=options))
