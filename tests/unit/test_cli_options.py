"""The commands' options read alike: what one command calls --out, every command does."""

from __future__ import annotations

import click
import pytest

from flipgate.cli import cli

CONTEXT = click.Context(cli)
WITH_OUT = ["gate", "run", "merge", "record", "replay", "calibrate"]


def option(command: str, flag: str) -> click.Option:
    found = cli.get_command(CONTEXT, command)
    assert found is not None
    return next(p for p in found.params if isinstance(p, click.Option) and flag in p.opts)


@pytest.mark.parametrize("command", WITH_OUT)
def test_out_has_one_metavar_everywhere(command: str) -> None:
    assert option(command, "--out").metavar == "PATH"
    assert "--out PATH" in cli.get_command(CONTEXT, command).get_help(CONTEXT)  # type: ignore[union-attr]


def test_the_action_logs_the_github_client_only_when_asked() -> None:
    assert option("action", "--verbose").is_flag
