"""The end-to-end run as a few steps: fetch live contexts, gate both versions on them, compare.

Generation and judging are passed in (`gate_cases`), so this module knows
nothing of refs, templates or judges, and the pipeline keeps one way of doing
them.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from flipgate.config.schema import Config, E2EConfig
from flipgate.confine import (
    account_ended,
    closed_to_others,
    command_account,
    give_to,
    groups_end_on_sigterm,
    hide_this_process,
)
from flipgate.e2e.compare import compare
from flipgate.e2e.retrieval import check_retriever, fetch_all, make_retriever
from flipgate.errors import FlipgateError, InputError, Problem
from flipgate.git import repository as gitrefs
from flipgate.git.repository import Git
from flipgate.llm.cache import Cache
from flipgate.model import Case, E2EReport, Row
from flipgate.output.progress import Progress
from flipgate.settings import private_paths

GateCases = Callable[[list[Case]], Awaitable[list[Row]]]   # generate and judge both versions
CACHE_SUBDIR = "live-contexts"


@dataclass(frozen=True)
class E2ERequest:
    """Asked for at the edge: by `flipgate run --e2e` (required: no `e2e:` is an error) or by
    the action (only when the base configuration enables it)."""

    environ: Mapping[str, str]    # where the variables `e2e.env` lists come from
    date: str                     # today, UTC (YYYY-MM-DD): the live contexts' cache day
    required: bool = True


def e2e_wanted(config: Config, *, trusted: bool, request: E2ERequest | None) -> bool:
    """Whether a run includes the end-to-end run. `trusted`: `config` is the base's (not the
    head's, when adopting). `flipgate run --e2e` without a trusted `e2e:` section is an error
    (exit 2, before anything is spent); the action just goes without."""
    if request is None:
        return False
    e2e = config.e2e if trusted else None
    if e2e is None:
        if request.required:
            why = "the base has no configuration yet" if not trusted else "it has no 'e2e:' section"
            raise InputError(Problem(config.source, None, "--e2e needs the live retrieval named in "
                                                          f"the base's configuration, and {why}"))
        return False
    if not e2e.enabled and not request.required:
        return False
    check_retriever(e2e, source=config.source, environ=request.environ)
    return True


async def run_e2e(*, config: E2EConfig, source: str, repo: Path, git: Git, base_sha: str,
                  cases: Sequence[Case], frozen: Sequence[Row], request: E2ERequest,
                  cache: Cache | None, limit: int, gate_cases: GateCases,
                  progress: Progress | None = None) -> E2EReport:
    """Fetch every case's live context with the base's retriever, gate both versions on them,
    and compare each row with the frozen run. Never raises for a failure of its own: a
    stopped end-to-end run is reported as such, since it never blocks."""
    import httpx

    # The run's cache (signed with its key, counted with it), in a folder of its own.
    cache = cache.child(CACHE_SUBDIR) if cache is not None else None
    description = f"command `{config.command}`" if config.command is not None else f"POST {config.url}"
    # A command runs as a fresh account when we are root, which reaches its export only:
    # the repository, the cache and the runner's paths are closed to it while it runs, and
    # every process of that account is ended before the run goes on.
    run_as = command_account() if config.command is not None else None
    closed = ((repo, *private_paths(request.environ), *([cache.root.parent] if cache else []))
              if run_as is not None else ())
    try:
        # Left in reverse: every process of the account ends before the paths open again.
        with groups_end_on_sigterm(), closed_to_others(closed), \
                tempfile.TemporaryDirectory(prefix="flipgate-e2e-") as scratch, account_ended(run_as):
            workdir = None
            if config.command is not None:
                workdir = gitrefs.export_tree(repo, base_sha, Path(scratch) / "base", git=git)
                if run_as is not None:
                    give_to(workdir, run_as)
                hide_this_process()   # the command may not read the model key from here
            async with httpx.AsyncClient(follow_redirects=False) as client:
                retriever = make_retriever(config, source=source, workdir=workdir,
                                           environ=request.environ, http_client=client, run_as=run_as)
                live = await fetch_all(cases, retriever, cache=cache, date=request.date, limit=limit,
                                       progress=progress)
    except FlipgateError as exc:
        return E2EReport(rows=[], date=request.date, retrieval=description,
                         stopped=f"live retrieval could not start: {exc}")
    except Exception as exc:  # noqa: BLE001 - the end-to-end run never costs the frozen verdict
        return E2EReport(rows=[], date=request.date, retrieval=description,
                         stopped=f"live retrieval could not start: {type(exc).__name__}: {exc}")
    live_cases = [dataclasses.replace(case, context=context)
                  for case in cases if (context := live[case.id].context) is not None]
    stopped = None
    e2e_rows = {}
    if live_cases:
        try:
            e2e_rows = {row.id: row for row in await gate_cases(live_cases)}
        except FlipgateError as exc:
            stopped = str(exc)
        except Exception as exc:  # noqa: BLE001 - as above: reported, never the run's end
            stopped = f"{type(exc).__name__}: {exc}"
    rows = compare(cases, frozen={row.id: row for row in frozen}, live=live, e2e=e2e_rows,
                   date=request.date, not_judged=f"the end-to-end run stopped: {stopped}" if stopped else None)
    cached = sum(context.cached for context in live.values())
    notes = [f"{cached} of {len(cases)} live contexts came from today's cache."] if cached else []
    return E2EReport(rows=rows, date=request.date, retrieval=description, stopped=stopped,
                     notes=notes)
