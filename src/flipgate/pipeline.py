"""The whole PR check on a local checkout: read the refs, replay both, gate, render.

A plain sequence of steps. What the refs say (configuration, cases,
generators, what changed) comes from `refs`; nothing is sent to any model
until every check that can refuse the run has passed: change detection, the
endpoint lock, and rendering every case of both generators in the sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flipgate import gate
from flipgate.config import (
    DEFAULT_CACHE_DIR,
    DEFAULT_CONFIG,
    DEFAULT_OUT_DIR,
    GITHUB_COMMENT_LIMIT,
    Config,
)
from flipgate.e2e.run import E2ERequest, e2e_wanted
from flipgate.endpoint_lock import Generator, LockedPair, lock
from flipgate.errors import IncompleteError, InputError, Problem
from flipgate.gitrefs import Git
from flipgate.judges import Judges, make_judges
from flipgate.model import Answer, Case, Conclusion, E2EReport, Report, Row
from flipgate.outputs import write_outputs
from flipgate.prompty import Prompty, render_isolated
from flipgate.refs import (
    Inputs,
    Ref,
    Repo,
    describe,
    detect_change,
    generator_path,
    load_generator,
    load_inputs,
    require_generator,
)
from flipgate.replay import PreparedGenerator, first_failure_cancels, replay
from flipgate.runtime import Runtime
from flipgate.scoring import Scored, build_report, judge_info, score_rows, stopped_note
from flipgate.settings import Settings
from flipgate.shards import Shard, write_partial

if TYPE_CHECKING:
    from rich.console import Console

    from flipgate.progress import Progress


@dataclass
class CheckResult:
    report: Report
    markdown: str                # comment.md as written: the comment to post
    exit_code: int
    message: str | None = None   # why the run stopped early (exit 3), for stderr
    partial: Path | None = None  # a shard's partial.json, instead of report.json and comment.md


def with_concurrency(config: Config, concurrency: int | None) -> Config:
    """`--concurrency` wins over the configuration's `concurrency`."""
    return config if concurrency is None else dataclasses.replace(config, concurrency=concurrency)


def open_repo(path: Path, settings: Settings) -> Repo:
    return Repo(Path(path).resolve(), Git(settings.git_environment()))


def prepare(repo: Repo, refs: dict[str, Ref], generators: dict[str, Generator],
            cases: list[Case], *, environ: Mapping[str, str],
            strict_undefined: bool = False) -> dict[str, PreparedGenerator]:
    """Render every case of each side in the sandbox (in parallel child processes)."""
    with ThreadPoolExecutor(max_workers=len(generators)) as pool:
        futures = {side: pool.submit(render_isolated, generator.prompty, cases, repo=repo.path,
                                     sha=refs[side].sha, environ=environ,
                                     strict_undefined=strict_undefined)
                   for side, generator in generators.items()}
        return {side: PreparedGenerator(generator=generators[side], rendered=future.result())
                for side, future in futures.items()}


def undefined_notes(prepared: Mapping[str, PreparedGenerator]) -> list[str]:
    """A warning per generator whose template met undefined variables (rendered empty,
    as the reference runtime does), so a typo still shows."""
    notes = []
    for prepared_side in prepared.values():
        undefined = prepared_side.rendered.undefined
        if not undefined:
            continue
        shown = "; ".join(f"'{name}' ({len(ids)} {'case' if len(ids) == 1 else 'cases'}, "
                          f"e.g. {ids[0]})" for name, ids in sorted(undefined.items())[:10])
        notes.append(f"Warning: {prepared_side.generator.prompty.source} uses variables that were "
                     f"undefined and rendered empty: {shown}. Set generator.strict_undefined: true "
                     "to make this an error.")
    return notes


def lock_generators(repo: Repo, base: Ref, head: Ref, *, config: Config,
                    base_generator: Prompty | None, head_generator: Prompty,
                    settings: Settings) -> LockedPair:
    """The endpoint lock, with the base configuration's generator endpoint and each ref's files."""
    return lock(base_generator, head_generator, settings=settings,
                endpoint=config.generator_options.endpoint, config_source=config.source,
                read_base=repo.reader(base), read_head=repo.reader(head))


async def _replay_and_score(*, inputs: Inputs, pair: LockedPair,
                            prepared: dict[str, PreparedGenerator], runtime: Runtime,
                            settings: Settings, judge: Judges) -> Scored:
    from flipgate.llm import LazyClient

    async with contextlib.aclosing(judge):
        # One cheap request to the judge (and its embeddings model) before any
        # generation: a wrong key, endpoint or model stops the run here.
        await judge.probe()
        client = LazyClient(pair.baseline.endpoint, settings=settings)
        try:
            cases = inputs.cases
            side = {"client": client, "runtime": runtime, "debug": settings.debug}
            if pair.adopted:
                candidate = await replay(cases, prepared["candidate"], purpose="candidate", **side)
                baseline: dict[str, Answer] = dict(candidate)
            else:
                baseline, candidate = await first_failure_cancels([
                    replay(cases, prepared["baseline"], purpose="baseline", **side),
                    replay(cases, prepared["candidate"], purpose="candidate", **side),
                ])
        finally:
            await client.close()
        return await score_rows(cases=cases, baseline=baseline, candidate=candidate,
                                config=inputs.config, judge=judge.first, second=judge.second,
                                mode=judge.mode, progress=runtime.progress)


async def _end_to_end(*, repo: Repo, base: Ref, inputs: Inputs, pair: LockedPair,
                      refs: dict[str, Ref], sides: dict[str, Generator], frozen: list[Row],
                      runtime: Runtime, settings: Settings, judge: str | None,
                      request: E2ERequest, cache_dir: Path | None,
                      environ: Mapping[str, str]) -> E2EReport:
    """The end-to-end run: the same generation and judging as the frozen run, on live contexts."""
    from flipgate.e2e.run import run_e2e

    async def gate_cases(live_cases: list[Case]) -> list[Row]:
        prepared = await asyncio.to_thread(
            prepare, repo, refs, sides, live_cases, environ=environ,
            strict_undefined=inputs.config.generator_options.strict_undefined)
        live_judge = make_judges(inputs.config, runtime=runtime, settings=settings, provider=judge)
        scored = await _replay_and_score(inputs=dataclasses.replace(inputs, cases=live_cases),
                                         pair=pair, prepared=prepared, runtime=runtime,
                                         settings=settings, judge=live_judge)
        return scored.rows

    assert inputs.config.e2e is not None
    return await run_e2e(config=inputs.config.e2e, source=inputs.config.source, repo=repo.path,
                         git=repo.git, base_sha=base.sha, cases=inputs.cases, frozen=frozen,
                         request=request, cache_dir=cache_dir, limit=inputs.config.concurrency,
                         gate_cases=gate_cases, progress=runtime.progress)


async def check(*, repo: Path, base: str, head: str, settings: Settings,
                config_path: str = DEFAULT_CONFIG, out_dir: Path = Path(DEFAULT_OUT_DIR),
                cache_dir: Path | None = Path(DEFAULT_CACHE_DIR), judge: str | None = None,
                comment_limit: int = GITHUB_COMMENT_LIMIT, console: Console | None = None,
                progress: Progress | None = None, concurrency: int | None = None,
                shard: Shard | None = None, e2e: E2ERequest | None = None) -> CheckResult:
    """`run_check`, for callers that already run an event loop. `concurrency` (`--concurrency`)
    wins over the configuration's. With `shard`, only that part of the cases is evaluated and a
    partial is written for `flipgate merge`. `e2e`: also the end-to-end run (live retrieval),
    asked for at the edge; it never changes the exit code."""
    git_repo = open_repo(repo, settings)
    base_ref, head_ref = git_repo.ref(base), git_repo.ref(head)
    changed = git_repo.changed(base_ref, head_ref)
    inputs = load_inputs(git_repo, base_ref, head_ref, config_path, changed=changed)
    inputs.config = config = with_concurrency(inputs.config, concurrency)
    with_e2e = e2e_wanted(config, trusted=inputs.from_base, request=e2e)
    total = len(inputs.cases)
    positions = list(range(total))
    if shard is not None:
        inputs.cases, positions = shard.select(inputs.cases)

    def finish(report: Report, *, message: str | None = None) -> CheckResult:
        """Write report.json and comment.md, or a shard's partial.json."""
        if shard is not None:
            path = write_partial(report, out_dir, shard=shard, positions=positions, total=total,
                                 fingerprint={"base_sha": base_ref.sha, "head_sha": head_ref.sha,
                                              "configuration": config_path, "cases": total,
                                              "judge": f"{report.judge.provider}/{report.judge.model}"},
                                 stopped=message is not None)
            # Judge errors on rows are part of the result; only a part that stopped fails its job.
            return CheckResult(report=report, markdown="", message=message, partial=path,
                               exit_code=3 if message is not None else 0)
        markdown = write_outputs(report, out_dir, console=console, comment_limit=comment_limit)
        return CheckResult(report=report, markdown=markdown,
                           exit_code=gate.exit_code(report.conclusion), message=message)
    path = generator_path(config)
    environ = settings.environ
    base_generator = load_generator(git_repo, base_ref, path, environ=environ)
    head_generator = require_generator(git_repo, head_ref, path, environ=environ)

    detected = detect_change(config=config, path=path, changed=changed,
                             base_generator=base_generator, head_generator=head_generator)
    if not detected.relevant:
        note = (f"No change to the generator ({path}), the files it includes, or a watched "
                "path: nothing to gate, no model was called.")
        more = (["No end-to-end run either: with nothing to gate there is no frozen verdict to "
                 "compare with."] if with_e2e else [])
        report = build_report(config=config, judge=judge_info(config, judge),
                              cases=len(inputs.cases), conclusion=Conclusion.SKIPPED,
                              notes=[note, *inputs.notes, *detected.notes, *more], usage={},
                              cache={"hits": 0, "misses": 0}, head_sha=head_ref.sha)
        return finish(report)

    pair = lock_generators(git_repo, base_ref, head_ref, config=config,
                           base_generator=base_generator.prompty if base_generator else None,
                           head_generator=head_generator.prompty, settings=settings)
    refs = {"baseline": base_ref, "candidate": head_ref}
    sides = {"candidate": pair.candidate} if pair.adopted else \
        {"baseline": pair.baseline, "candidate": pair.candidate}
    prepared = prepare(git_repo, refs, sides, inputs.cases, environ=environ,
                       strict_undefined=config.generator_options.strict_undefined)
    loaded = frozenset().union(*(p.rendered.loaded for p in prepared.values()))
    change = describe(git_repo, base_ref, head_ref, path=path, files=detected.relevant, pair=pair,
                      inputs=inputs, includes=detected.includes | loaded)
    notes = [*inputs.notes, *detected.notes, *pair.notes, *undefined_notes(prepared)]

    runtime = Runtime.from_config(config, cache_dir=cache_dir, progress=progress)
    # The run's judges, built before any generation: a judge that cannot be
    # set up stops the run before anything is paid for.
    the_judge = make_judges(config, runtime=runtime, settings=settings, provider=judge)
    message = scored = None
    try:
        scored = await _replay_and_score(inputs=inputs, pair=pair, prepared=prepared,
                                         runtime=runtime, settings=settings, judge=the_judge)
    except IncompleteError as exc:
        message = str(exc)
        notes.append(stopped_note(message))
        if with_e2e:
            notes.append("No end-to-end run: the frozen run it is compared with could not finish.")
    live = None
    if with_e2e and scored is not None:
        assert e2e is not None
        live = await _end_to_end(repo=git_repo, base=base_ref, inputs=inputs, pair=pair, refs=refs,
                                 sides=sides, frozen=scored.rows, runtime=runtime, settings=settings,
                                 judge=judge, request=e2e, cache_dir=cache_dir, environ=environ)
    report = build_report(config=config, judge=the_judge.info, cases=len(inputs.cases),
                          scored=scored, conclusion=None if scored is not None else Conclusion.ERROR,
                          notes=notes, change=change, usage=runtime.usage_report(),
                          cache=runtime.cache_stats(), head_sha=head_ref.sha)
    report.e2e = live
    runtime.fill_report(report)
    return finish(report, message=message)


def run_check(**kwargs: Any) -> CheckResult:
    """The whole PR check: detect the change, replay both refs, gate, write the outputs
    (the keyword arguments of `check`).

    Bad input or a refused pull request raises InputError / SecurityError
    (exit 2) before any request. A run that cannot finish (an API failed
    after retries, the budget ran out) still writes a report with conclusion
    `error` and returns exit code 3 with `message` saying why.
    """
    return asyncio.run(check(**kwargs))


# --- one ref (`flipgate replay`) ----------------------------------------------------

@dataclass
class ReplayResult:
    cases: list[Case]
    answers: dict[str, Answer]
    usage: dict[str, dict[str, int]]
    cache: dict[str, int] | None
    notes: list[str] = field(default_factory=list)


async def replay_ref(*, repo: Path, ref: str, settings: Settings,
                     config_path: str = DEFAULT_CONFIG,
                     cache_dir: Path | None = Path(DEFAULT_CACHE_DIR),
                     progress: Progress | None = None,
                     concurrency: int | None = None) -> ReplayResult:
    """Every case's answer from the generator at one ref (configuration and cases of that ref)."""
    from flipgate.llm import LazyClient

    git_repo = open_repo(repo, settings)
    at = git_repo.ref(ref)
    inputs = load_inputs(git_repo, at, at, config_path)
    config = with_concurrency(inputs.config, concurrency)
    path = generator_path(config)
    generator = require_generator(git_repo, at, path, environ=settings.environ).prompty
    # One ref: its own configuration is the trusted one.
    pair = lock_generators(git_repo, at, at, config=config, base_generator=generator,
                           head_generator=generator, settings=settings)
    prepared = prepare(git_repo, {"generation": at}, {"generation": pair.baseline}, inputs.cases,
                       environ=settings.environ,
                       strict_undefined=config.generator_options.strict_undefined)
    runtime = Runtime.from_config(config, cache_dir=cache_dir, progress=progress)
    client = LazyClient(pair.baseline.endpoint, settings=settings)
    try:
        answers = await replay(inputs.cases, prepared["generation"], client=client, runtime=runtime,
                               purpose="generation", debug=settings.debug)
    finally:
        await client.close()
    return ReplayResult(cases=inputs.cases, answers=answers, usage=runtime.usage_report(),
                        cache=runtime.cache_stats(), notes=undefined_notes(prepared))


def replay_sample(*, repo: Path, ref: str, settings: Settings, config_path: str | None = None,
                  generator: str | None = None) -> dict[str, Any]:
    """`replay --sample`: the request the generator at `ref` would send for its own sample.
    The generator is `generator` (a repository path) or the configuration's."""
    from flipgate import gitrefs
    from flipgate.dryrun import sample_request
    from flipgate.refs import read_config

    git_repo = open_repo(repo, settings)
    at = git_repo.ref(ref)
    config = None
    if config_path is not None or generator is None:
        path = gitrefs.safe_path(config_path or DEFAULT_CONFIG)
        config = read_config(git_repo, at, path)
        if config is None and generator is None:
            raise InputError(Problem(path, None, f"not found at git ref {ref} (or name the "
                                     "Prompty file with --generator)"))
    if generator is not None:
        path = gitrefs.safe_path(generator)
    else:
        assert config is not None
        path = generator_path(config)
    options = config.generator_options if config is not None else None
    return sample_request(repo=git_repo, ref=at, path=path, environ=settings.environ,
                          endpoint=options.endpoint if options else None,
                          strict_undefined=options.strict_undefined if options else False)
