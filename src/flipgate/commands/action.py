"""`flipgate action`: the entrypoint of the Docker action (GitHub mode)."""

from __future__ import annotations

import os
import sys

import click


@click.command("action")
def action() -> None:
    """Run as the flipgate GitHub Action: read the event, check the PR, comment, set the status.

    Reads the standard Actions variables (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH,
    GITHUB_REPOSITORY, GITHUB_API_URL, ...) and the action's inputs
    (INPUT_GITHUB-TOKEN, INPUT_CONFIG, INPUT_FORK-POLICY, ...). Exits like
    `flipgate run`: 0 pass or nothing to do, 1 blocked, 2 bad input, 3 could
    not finish.
    """
    from flipgate.github.action import main

    # Files written into the workspace stay readable by its owner and by actions/cache.
    os.umask(0o022)
    sys.exit(main())
