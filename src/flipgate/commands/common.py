"""What every command shares: common options, and turning failures into exit codes.

A command never ends in a traceback: named errors become their one-line-per-
problem message and exit code; anything unexpected is reported as an
internal error with exit 3 (it could not finish), never as success.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from flipgate.config.schema import DEFAULT_CACHE_DIR, DEFAULT_CONFIG, PROVIDERS, Config, load_config
from flipgate.errors import EXIT_INCOMPLETE, FlipgateError, InputError, Problem
from flipgate.output.links import Links, run_url
from flipgate.settings import Settings
from flipgate.text.escaping import safe_url, visible

F = TypeVar("F", bound=Callable[..., Any])


def settings_from_env() -> Settings:
    """The run's settings from this process's environment: the one place a command reads it."""
    return Settings.from_environ(os.environ)


def report_failures(command: F) -> F:
    """Run a command body; map flipgate's errors to their exit code and message."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except FlipgateError as exc:
            problems = getattr(exc, "problems", None) or [str(exc)]
            kind = type(exc).__name__
            prefix = "security: " if kind == "SecurityError" else ""
            for problem in problems:
                click.echo(f"flipgate: error: {prefix}{visible(str(problem))}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("flipgate: interrupted; nothing was gated", err=True)
            sys.exit(EXIT_INCOMPLETE)
        except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
            if os.environ.get("FLIPGATE_DEBUG"):
                raise
            click.echo(f"flipgate: internal error: {type(exc).__name__}: {visible(str(exc))} "
                       "(set FLIPGATE_DEBUG=1 for a traceback)", err=True)
            sys.exit(EXIT_INCOMPLETE)

    return wrapper  # type: ignore[return-value]


def config_option(command: F) -> F:
    return click.option("--config", "config_path", type=click.Path(dir_okay=False),
                        default=None, help=f"Configuration file (default: {DEFAULT_CONFIG}).")(command)


def judge_option(command: F) -> F:
    return click.option("--judge", "judge", type=click.Choice(PROVIDERS), default=None,
                        help="Judge provider; default: the config's judge.provider.")(command)


def cache_options(command: F) -> F:
    command = click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")(command)
    return click.option("--cache", "cache_dir", type=click.Path(file_okay=False),
                        default=DEFAULT_CACHE_DIR, show_default=True,
                        help="Where model replies are cached.")(command)


def concurrency_option(command: F) -> F:
    return click.option("--concurrency", type=click.IntRange(min=1), default=None,
                        help="Model calls in flight at once (default: the config's, else 8).")(command)


def shard_option(command: F) -> F:
    return click.option(
        "--shard", default=None, metavar="I/N",
        help="Evaluate only part I of N of the cases (by case id) and write a partial "
             "(partial.json) for `flipgate merge`.")(command)


def report_url_option(command: F) -> F:
    return click.option(
        "--report-url", "report_url", default=None, metavar="URL",
        help="Where report.html will be served (e.g. a Pages site): the comment links "
             "report.html and each row id to it.")(command)


def comment_links(settings: Settings, report_url: str | None) -> Links:
    """The comment's links: the workflow run when its variables are set (a step of a
    GitHub Actions job), report.html at `--report-url`; none on a laptop."""
    if report_url is not None and safe_url(report_url) is None:
        raise InputError(Problem("--report-url", None, "expected the http(s) URL of "
                                 f"report.html, got {report_url!r}"))
    return Links(run=run_url(settings.github_server_url, settings.github_repository,
                             settings.github_run_id), report=report_url)


def cache_dir_or_none(cache_dir: str, no_cache: bool) -> Path | None:
    return None if no_cache else Path(cache_dir)


def read_config(config_path: str | None, *, required: bool = False) -> Config | None:
    """An explicit --config must exist; the default file is optional unless `required`."""
    if config_path is not None:
        return load_config(config_path)
    if Path(DEFAULT_CONFIG).is_file() or required:
        return load_config(DEFAULT_CONFIG)
    return None
