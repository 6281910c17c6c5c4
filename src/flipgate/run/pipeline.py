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
import functools
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flipgate.config.cases import require_blocking_categories
from flipgate.config.schema import (
    AUTH_ENTRA,
    DEFAULT_CACHE_DIR,
    DEFAULT_CONFIG,
    DEFAULT_OUT_DIR,
    FORM_GITHUB,
    FORM_MESSAGES,
    FORM_PYTHON,
    FORMS_CONFIGURED,
    GITHUB_COMMENT_LIMIT,
    HEAD_GENERATOR_KEYS,
    PROVIDER_GITHUB,
    STATUS_PER_SUITE,
    CommandConfig,
    Config,
    EndpointConfig,
)
from flipgate.e2e.run import E2ERequest, e2e_wanted
from flipgate.errors import IncompleteError, InputError, Problem
from flipgate.generator.command import Outcome
from flipgate.generator.endpoint_lock import Generator, LockedPair, lock
from flipgate.generator.replay import PreparedGenerator, first_failure_cancels, replay
from flipgate.git.repository import Git
from flipgate.judges import Judges, make_judges
from flipgate.llm.cache_secret import cache_secret
from flipgate.llm.endpoints import Endpoint, LazyClient
from flipgate.llm.runtime import Runtime
from flipgate.model import Answer, Case, Change, Conclusion, E2EReport, Report, Row, SuiteReport
from flipgate.output.links import NO_LINKS, Links
from flipgate.output.page import Labels
from flipgate.output.write import write_outputs
from flipgate.prompts import Inspected, Prompt, render_isolated
from flipgate.prompts.forms.github_models import spaced_placeholder_warnings
from flipgate.run import commanded, quota, shards, stopped
from flipgate.run.landing import Landing, land, merge_base_line, refuse_conflicts
from flipgate.run.refs import (
    Detected,
    Inputs,
    Ref,
    Repo,
    TrustedConfig,
    describe,
    detect_change,
    generator_path,
    head_config_owner,
    head_options,
    load_cases_for,
    load_config_at,
    load_generator,
    refuse_unmatched_watch,
    refuse_unusable,
    require_generator,
    uncommitted_note,
    unused_config_notes,
    worktree_note,
)
from flipgate.run.scoring import (
    Rules,
    Scored,
    build_report,
    build_suites_report,
    judge_info,
    score_rows,
    stopped_note,
)
from flipgate.run.shards import Part, Shard, write_partial
from flipgate.settings import Settings
from flipgate.verdict import changes, gate

if TYPE_CHECKING:
    from rich.console import Console

    from flipgate.output.progress import Progress


@dataclass
class CheckResult:
    report: Report
    markdown: str                # comment.md as written: the comment to post
    exit_code: int
    message: str | None = None   # why the run stopped early (exit 3), for stderr
    partial: Path | None = None  # a shard's partial.json, instead of report.json and comment.md
    config_from: str = ""        # where the configuration was read: `.flipgate.yml from main@abc1234`
    own_code: bool = False       # the application's code answered (its own requests are not counted)
    merge_base: str = ""         # which merge base the run used, and what it compared (a line)


def with_concurrency(config: Config, concurrency: int | None) -> Config:
    """`--concurrency` wins over the configuration's `concurrency`."""
    return config if concurrency is None else dataclasses.replace(config, concurrency=concurrency)


def open_repo(path: Path, settings: Settings) -> Repo:
    return Repo(Path(path).resolve(), Git(settings.git_environment()))


def generator_client(endpoint: Endpoint, settings: Settings, runtime: Runtime) -> LazyClient:
    """The client the generators' requests go through (built on first use): to the base's
    endpoint (the head is held to it), signed in with the run's Entra ID credential when
    the base's configuration says `auth: entra`."""
    return LazyClient(endpoint, settings=settings,
                      sign_in=runtime.sign_in(settings) if endpoint.auth == AUTH_ENTRA else None)


@dataclass(frozen=True)
class Wiring:
    """The outside worlds a check talks to, passed in: git, the model runtime, the judges
    and the generators' client. `run_check` (the edge) builds the real ones; tests may
    hand in their own."""

    open_git: Callable[[Path, Settings], Repo] = open_repo
    runtime: Callable[..., Runtime] = Runtime.from_config
    judges: Callable[..., Judges] = make_judges
    client: Callable[[Endpoint, Settings, Runtime], LazyClient] = generator_client


def prepare(repo: Repo, refs: dict[str, Ref], generators: dict[str, Generator],
            cases: list[Case], *, environ: Mapping[str, str], strict_undefined: bool = True,
            cases_source: str = "cases") -> dict[str, PreparedGenerator]:
    """Render every case of each side in the sandbox (in parallel child processes); strict,
    a case lacking a variable either side's template uses stops the run (exit 2) here,
    before any model call. A case whose render fails otherwise is in the side's
    `rendered.failed`: its row is a generator error."""
    with ThreadPoolExecutor(max_workers=len(generators)) as pool:
        futures = {side: pool.submit(render_isolated, generator.prompt, cases, repo=repo.path,
                                     sha=refs[side].sha, environ=environ,
                                     strict_undefined=strict_undefined, cases_source=cases_source,
                                     per_case=True)
                   for side, generator in generators.items()}
        return {side: PreparedGenerator(generator=generators[side], rendered=future.result())
                for side, future in futures.items()}


def cases_source(config: Config) -> str:
    """The cases file as messages name it."""
    return config.path_of(config.cases)


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
        notes.append(f"Warning: {prepared_side.generator.prompt.source} uses variables that were "
                     f"undefined and rendered empty: {shown} (generator.strict_undefined is "
                     "false; true, the default, makes this an error).")
    return notes


def lock_generators(repo: Repo, base: Ref, head: Ref, *, config: Config,
                    base_generator: Prompt | None, head_generator: Prompt,
                    settings: Settings) -> LockedPair:
    """The endpoint lock, with the base configuration's generator endpoint and each ref's files."""
    endpoint = config.generator_options.endpoint
    if endpoint is None and config.generator_options.form == FORM_GITHUB:
        endpoint = EndpointConfig(provider="github")  # a GitHub Models prompt file's own endpoint
    return lock(base_generator, head_generator, settings=settings,
                endpoint=endpoint, config_source=config.source,
                read_base=repo.reader(base), read_head=repo.reader(head))


async def _replay_and_score(*, inputs: Inputs, pair: LockedPair,
                            prepared: dict[str, PreparedGenerator], runtime: Runtime,
                            settings: Settings, judge: Judges, wiring: Wiring,
                            all_cases: Sequence[Case] | None = None) -> Scored:
    """Replay both sides and score them. `all_cases`: the run's cases when `inputs` holds
    a shard's part (the sample-size rule sizes each category by the whole run)."""
    # One cheap request to the judge (and its embeddings model) before any
    # generation: a wrong key, endpoint or model stops the run here. Cached like
    # any reply, so a later suite's probe sends nothing again.
    await judge.probe()
    client = wiring.client(pair.baseline.endpoint, settings, runtime)
    failed = {case_id for one in prepared.values() for case_id in one.rendered.failed}
    try:
        cases = [case for case in inputs.cases if case.id not in failed]
        side = functools.partial(replay, cases, client=client, runtime=runtime, debug=settings.debug)
        if pair.adopted:
            candidate = await side(prepared["candidate"], purpose="candidate")
            baseline: dict[str, Answer] = dict(candidate)
        else:
            baseline, candidate = await first_failure_cancels([
                side(prepared["baseline"], purpose="baseline"),
                side(prepared["candidate"], purpose="candidate"),
            ])
    finally:
        await client.close()
    sizes = gate.category_sizes(c.category for c in (inputs.cases if all_cases is None
                                                      else all_cases))
    # A case a side's template could not render is a generator error, never judged.
    outcomes = {name: Outcome(errors=dict(one.rendered.failed))
                for name, one in prepared.items()}
    outcomes.setdefault("baseline", outcomes["candidate"])  # adopting: one side
    unrendered = [commanded.unanswered_row(case, outcomes, config=inputs.config, sizes=sizes,
                                           mode=judge.mode, what="the template")
                  for case in inputs.cases if case.id in failed]
    try:
        scored = await score_rows(cases=cases, baseline=baseline, candidate=candidate,
                                  config=inputs.config, judge=judge.first, second=judge.second,
                                  mode=judge.mode, progress=runtime.progress, category_cases=sizes)
    except stopped.StoppedPartWay as exc:
        raise exc.with_rows(unrendered) from exc.cause
    if not failed:
        return scored
    by_id = {row.id: row for row in [*scored.rows, *unrendered]}
    return Scored(rows=[by_id[case.id] for case in inputs.cases], fluency=scored.fluency)


async def _end_to_end(*, repo: Repo, base: Ref, inputs: Inputs, pair: LockedPair,
                      refs: dict[str, Ref], sides: dict[str, Generator], frozen: list[Row],
                      runtime: Runtime, settings: Settings, judge: str | None,
                      request: E2ERequest, environ: Mapping[str, str],
                      wiring: Wiring) -> E2EReport:
    """The end-to-end run: the same generation and judging as the frozen run, on live contexts."""
    from flipgate.e2e.run import run_e2e

    async def gate_cases(live_cases: list[Case]) -> list[Row]:
        prepared = await asyncio.to_thread(
            prepare, repo, refs, sides, live_cases, environ=environ,
            strict_undefined=inputs.config.generator_options.strict_undefined,
            cases_source=cases_source(inputs.config))
        live_judge = wiring.judges(inputs.config, runtime=runtime, settings=settings, provider=judge)
        scored = await _replay_and_score(inputs=dataclasses.replace(inputs, cases=live_cases),
                                         pair=pair, prepared=prepared, runtime=runtime,
                                         settings=settings, judge=live_judge, wiring=wiring)
        return scored.rows

    assert inputs.config.e2e is not None
    return await run_e2e(config=inputs.config.e2e, source=inputs.config.source, repo=repo.path,
                         git=repo.git, base_sha=base.sha, cases=inputs.cases, frozen=frozen,
                         request=request, cache=runtime.cache, limit=inputs.config.concurrency,
                         gate_cases=gate_cases, progress=runtime.progress)


def cache_key_for(settings: Settings, *, repo: Path, cache_dir: Path | None) -> bytes | None:
    """The key that signs the run's cache: one the repository's files cannot hold."""
    return cache_secret(settings, outside=[repo]).key if cache_dir is not None else None


@dataclass
class Planned:
    """One suite after every check that can refuse the run: skipped (`pair` None) or
    ready to replay."""

    inputs: Inputs
    path: str
    notes: list[str]
    all_cases: list[Case] = field(default_factory=list)  # before a shard took its part
    positions: list[int] = field(default_factory=list)  # where the part's cases stood
    pair: LockedPair | None = None
    prepared: dict[str, PreparedGenerator] | None = None
    change: Change | None = None
    refs: dict[str, Ref] = field(default_factory=dict)
    sides: dict[str, Generator] = field(default_factory=dict)
    command: CommandConfig | None = None   # the application's own code answers (`repo` reads it)
    repo: Repo | None = None


def plan_suite(git_repo: Repo, base_ref: Ref, head_ref: Ref, inputs: Inputs, *,
               changed: list[str], settings: Settings, shard: Shard | None = None,
               with_e2e: bool = False, uncommitted: Sequence[str] = (),
               config_path: str = DEFAULT_CONFIG, landing: Landing | None = None) -> Planned:
    """Detect the suite's change; when it has one, lock its endpoint and render every case
    (with `shard`, only the shard's part of the suite's cases). `uncommitted`: paths the
    working tree changes on top of the head commit, said when the generator reads them.
    `head_ref` is the candidate (what would land); `landing` says where the PR's change
    conflicts with the base, refused when the generator reads it."""
    config = inputs.config
    all_cases = list(inputs.cases)
    positions = list(range(len(all_cases)))
    if shard is not None:
        inputs.cases, positions = shard.select(inputs.cases)
    if config.generator_options.command is not None:
        return _plan_command(git_repo, base_ref, head_ref, inputs, changed=changed,
                             all_cases=all_cases, positions=positions, landing=landing)
    path = generator_path(config)
    environ = settings.environ
    refuse_unmatched_watch(git_repo, (base_ref, head_ref), config.watch, config=config)
    base_generator = load_generator(git_repo, base_ref, path, environ=environ, config=config)
    if landing is not None and landing.conflicts:  # before the merged files are read
        refuse_conflicts(landing, changes.relevant_paths(landing.conflicts, changes.ChangeScope(
            generator=path, watch=config.watch, watch_root=config.directory,
            includes=base_generator.files if base_generator else frozenset(),
            includes_complete=base_generator.complete if base_generator else True,
        )) + ([config_path] if config.generator_options.form in FORMS_CONFIGURED else []))
    theirs = (head_options(git_repo, head_ref, config_path, config) if inputs.from_base
              else config.generator_options)
    head_generator = require_generator(git_repo, head_ref, path, environ=environ, config=config,
                                       options=theirs)
    if base_generator is not None:
        refuse_unusable(config, base_generator, all_cases)
    refuse_unusable(config, head_generator, all_cases,
                    variables_source=(f"{config_path}@{head_ref.label}"
                                      if theirs.variables != config.generator_options.variables
                                      else None))
    unseen = (spaced_placeholder_warnings(head_generator.prompt)
              if config.generator_options.form == FORM_GITHUB else [])
    detected = detect_change(config=config, path=path, changed=changed,
                             base_generator=base_generator, head_generator=head_generator)
    if landing is not None:
        refuse_conflicts(landing, detected.relevant)
    left_out = detect_change(config=config, path=path, changed=list(uncommitted),
                             base_generator=base_generator,
                             head_generator=head_generator).relevant if uncommitted else []
    unseen += [uncommitted_note(left_out, head_ref)] if left_out else []
    head_keys = [key for key in HEAD_GENERATOR_KEYS
                 if getattr(config.generator_options, key) != getattr(theirs, key)]
    detected = _form_change(detected, config=config, config_path=config_path, head_keys=head_keys,
                            base_generator=base_generator, head_generator=head_generator)
    if head_keys:
        inputs.notes.append(f"The generator under test takes generator.{', generator.'.join(head_keys)} "
                            f"from {head_config_owner(head_ref)} {config_path}; nothing else of it "
                            "is read.")
    if not detected.relevant:
        note = (f"No change to the generator ({path}), the files it includes, or a watched "
                "path: nothing to gate, no model was called.")
        more = (["No end-to-end run either: with nothing to gate there is no frozen verdict to "
                 "compare with."] if with_e2e else [])
        return Planned(inputs=inputs, path=path,
                       notes=[note, *unseen, *inputs.notes, *detected.notes, *more],
                       all_cases=all_cases, positions=positions)
    pair = lock_generators(git_repo, base_ref, head_ref, config=config,
                           base_generator=base_generator.prompt if base_generator else None,
                           head_generator=head_generator.prompt, settings=settings)
    refs = {"baseline": base_ref, "candidate": head_ref}
    sides = {"candidate": pair.candidate} if pair.adopted else \
        {"baseline": pair.baseline, "candidate": pair.candidate}
    prepared = prepare(git_repo, refs, sides, inputs.cases, environ=environ,
                       strict_undefined=config.generator_options.strict_undefined,
                       cases_source=cases_source(config))
    loaded = frozenset().union(*(p.rendered.loaded for p in prepared.values()))
    change = describe(git_repo, base_ref, head_ref, path=path, files=detected.relevant, pair=pair,
                      inputs=inputs, includes=detected.includes | loaded)
    notes = [*unseen, *inputs.notes, *detected.notes, *pair.notes, *undefined_notes(prepared)]
    return Planned(inputs=inputs, path=path, notes=notes, pair=pair, prepared=prepared,
                   change=change, all_cases=all_cases, positions=positions, refs=refs,
                   sides=sides)


def _form_change(detected: Detected, *, config: Config, config_path: str, head_keys: list[str],
                 base_generator: Inspected | None, head_generator: Inspected) -> Detected:
    """What counts as a change beyond changed files: the head's generator keys that differ
    (`head_keys`: a template's or a constant's model, parameters, format, system, variables)
    count as a change of `.flipgate.yml`; a Python file counts only when the values read from it
    differ (a constant, a prompt object, the messages' constants)."""
    relevant = list(detected.relevant)
    if head_keys and config_path not in relevant:
        relevant.append(config_path)
    if config.generator_options.form in (FORM_PYTHON, FORM_MESSAGES) and base_generator is not None:
        before, after = base_generator.prompt, head_generator.prompt
        if _values_read(before) == _values_read(after):
            files = {after.path, *([after.system_path] if after.system_path else []),
                     *(part.path for part in after.chat if part.path.endswith(".py"))}
            relevant = [p for p in relevant if p not in files]
    return dataclasses.replace(detected, relevant=relevant)


def _values_read(prompt: Prompt) -> tuple[object, ...]:
    """What a Python generator reads from its files: the texts, roles and formats (not where
    in the file they stand)."""
    return (prompt.template, prompt.system, tuple((p.role, p.text, p.format, p.path, p.placeholder,
                                                     p.optional) for p in prompt.chat))


def _plan_command(git_repo: Repo, base_ref: Ref, head_ref: Ref, inputs: Inputs, *,
                  changed: list[str], all_cases: list[Case], positions: list[int],
                  landing: Landing | None = None) -> Planned:
    """A suite whose generator is the application's own code: a change is a change of a
    `watch` path, and the command, setup, env and watch are the base's alone."""
    config = inputs.config
    command = config.generator_options.command
    assert command is not None
    if not inputs.from_base:
        raise InputError(Problem(config.source, None, "generator.command runs code, so it is read "
                                 "only from the base's configuration, and the base has none yet: "
                                 "merge .flipgate.yml first"))
    refuse_unmatched_watch(git_repo, (base_ref, head_ref), command.watch, config=config,
                           key="generator.watch")
    scope = changes.ChangeScope(generator="", watch=command.watch, watch_root=config.directory)
    relevant = changes.relevant_paths(changed, scope)
    if landing is not None:
        refuse_conflicts(landing, relevant)
    path = f"{command.command} (the application's own code, generator.command)"
    if not relevant:
        return Planned(inputs=inputs, path=path, all_cases=all_cases, positions=positions,
                       notes=[f"No change to a path generator.watch names ({', '.join(command.watch)}): "
                              "nothing to gate, no code was run and no model was called.",
                              *inputs.notes])
    change = Change(generator=path, files=tuple(relevant), config_diff=inputs.config_diff,
                    cases_diff=inputs.cases_diff)
    return Planned(inputs=inputs, path=path, notes=list(inputs.notes), all_cases=all_cases,
                   positions=positions, change=change, command=command, repo=git_repo,
                   refs={"baseline": base_ref, "candidate": head_ref})


async def check(*, repo: Path, base: str, head: str, settings: Settings,
                config_path: str = DEFAULT_CONFIG, out_dir: Path = Path(DEFAULT_OUT_DIR),
                cache_dir: Path | None = Path(DEFAULT_CACHE_DIR), judge: str | None = None,
                comment_limit: int = GITHUB_COMMENT_LIMIT, console: Console | None = None,
                progress: Progress | None = None, concurrency: int | None = None,
                suites: Sequence[str] = (), shard: Shard | None = None,
                e2e: E2ERequest | None = None, wiring: Wiring,
                labels: Labels | None = None, links: Links = NO_LINKS,
                worktree: bool = False, local: bool = False,
                say: Callable[[str], None] = commanded.log_to_stderr) -> CheckResult:
    """`run_check`, for callers that already run an event loop. `concurrency` (`--concurrency`)
    wins over the configuration's. `suites`: only those of the config's suites. With `shard`,
    only that part of the cases is evaluated and a partial is written for `flipgate merge`.
    `e2e`: also the end-to-end run (live retrieval), asked for at the edge; it never changes
    the exit code (a configuration without suites only). `wiring`: git, the runtime, the
    judges and the generators' client. `labels`: people's labels, shown on their rows.
    `links`: where the comment links the run and report.html. `worktree`: the head is the
    working tree (uncommitted edits included), not `head`. `local`: `repo` is the user's own
    checkout, so the run says what of its working tree it leaves out. `say`: where the lines
    said before the first request go (GitHub Models' quota)."""
    git_repo = wiring.open_git(repo, settings)
    base_ref = git_repo.ref(base)
    head_ref = git_repo.worktree() if worktree else git_repo.ref(head)
    # The PR's own change (merge base -> head) is detected; what would land is judged.
    landing = land(git_repo, base_ref, head_ref)
    changed, candidate = landing.changed, landing.candidate
    trusted = load_config_at(git_repo, base_ref, candidate, config_path)
    config_from = f"{config_path} from {trusted.source_ref.where}"
    uncommitted: list[str] = []
    if worktree:
        trusted.notes.append(worktree_note(git_repo, head_ref))
    if local:
        trusted.notes.extend(unused_config_notes(git_repo.path, config_path, trusted, config_from,
                                                 head_is_worktree=worktree))
        if not worktree and head_ref.sha == git_repo.checked_out():
            uncommitted = git_repo.uncommitted()
    config = with_concurrency(trusted.config, concurrency)
    with_e2e = e2e_wanted(config, trusted=trusted.from_base, request=e2e) and not config.suites
    environ = settings.environ
    # Every suite is read, detected, locked and rendered before any request.
    loaded = [load_cases_for(git_repo, trusted, narrowed, candidate, changed=changed)
              for narrowed in config.suite_configs(suites)]
    require_blocking_categories([(one.config, one.cases) for one in loaded],
                                every_suite=len(loaded) == max(len(config.suites), 1))
    planned = [plan_suite(git_repo, base_ref, candidate, inputs, changed=changed,
                          settings=settings, shard=shard, with_e2e=with_e2e,
                          uncommitted=uncommitted, config_path=config_path,
                          landing=landing)
               for inputs in loaded]

    async def end_to_end(one: Planned, frozen: list[Row]) -> E2EReport:
        assert e2e is not None and one.pair is not None
        return await _end_to_end(repo=git_repo, base=base_ref, inputs=one.inputs, pair=one.pair,
                                 refs=one.refs, sides=one.sides, frozen=frozen, runtime=runtime,
                                 settings=settings, judge=judge, request=e2e, environ=environ,
                                 wiring=wiring)

    runtime = wiring.runtime(config, cache_dir=cache_dir, progress=progress,
                             cache_key=cache_key_for(settings, repo=repo, cache_dir=cache_dir))
    reports: list[Report] = []
    messages: list[str] = []
    if all(one.pair is None and one.command is None for one in planned):
        info = judge_info(config, judge)
        reports = [build_report(config=one.inputs.config, judge=info, cases=len(one.inputs.cases),
                                conclusion=Conclusion.SKIPPED, notes=one.notes, usage={},
                                cache={"hits": 0, "misses": 0}, head_sha=head_ref.sha)
                   for one in planned]
    else:
        for line in quota.quota_lines(_github_models_plan(planned, config, judge)):
            say(f"flipgate: {line}")
        # The run's judges, built before any generation: a judge that cannot be
        # set up stops the run before anything is paid for. One set for every suite.
        the_judge = wiring.judges(config, runtime=runtime, settings=settings, provider=judge)
        async with contextlib.aclosing(the_judge):
            for one in planned:
                report, message = await _evaluate(one, runtime=runtime, settings=settings,
                                                  judge=the_judge, head_sha=head_ref.sha, wiring=wiring,
                                                  end_to_end=end_to_end if with_e2e else None)
                reports.append(report)
                if message:
                    messages.append(message)
    if config.suites:
        report = build_suites_report(
            [SuiteReport(name=one.inputs.config.suite or "", report=part)
             for one, part in zip(planned, reports, strict=True)],
            notes=trusted.notes, usage=runtime.usage_report(), cache=runtime.cache_stats(),
            head_sha=head_ref.sha, relevance_threshold=config.relevance.threshold,
            strict=config.gate.strict, per_suite_status=config.status == STATUS_PER_SUITE)
    else:
        report = reports[0]
    report.merge_base = landing.merge_base
    runtime.fill_report(report)
    message = "; ".join(messages) or None
    own_code = any(one.command is not None for one in planned)
    if shard is not None:
        # Each suite's cases are split alike; a partial keeps the suites apart.
        fingerprint: dict[str, Any] = {"base_sha": base_ref.sha, "head_sha": head_ref.sha,
                                       "configuration": config_path}
        if config.suites:  # the suites selected (--suite): a merge needs the same ones
            fingerprint["suites"] = [one.inputs.config.suite for one in planned]
        fingerprint.update(cases=sum(len(one.all_cases) for one in planned),
                           judge=f"{report.judge.provider}/{report.judge.model}")
        parts = [Part(name=one.inputs.config.suite if config.suites else None, report=part,
                      cases=one.all_cases, positions=one.positions,
                      rules=Rules.of(one.inputs.config, mode=report.judge.rescore))
                 for one, part in zip(planned, [s.report for s in report.suites] or [report],
                                      strict=True)]
        path = write_partial(report, out_dir, shard=shard, fingerprint=fingerprint, parts=parts,
                             stopped=message is not None)
        # Judge errors on rows are part of the result; only a part that stopped fails its job.
        return CheckResult(report=report, markdown="", message=message, partial=path,
                           exit_code=3 if message is not None else 0, config_from=config_from,
                           own_code=own_code, merge_base=merge_base_line(landing))
    markdown = write_outputs(report, out_dir, console=console, comment_limit=comment_limit,
                             labels=labels, links=links)
    return CheckResult(report=report, markdown=markdown, exit_code=gate.exit_code(report.conclusion),
                       message=message, config_from=config_from, own_code=own_code,
                       merge_base=merge_base_line(landing))


def _github_models_plan(planned: Sequence[Planned], config: Config,
                        judge: str | None) -> quota.Plan:
    """What the planned suites will ask GitHub Models: generations of the sides it serves,
    and the judge's and the embeddings' requests when the judge is on it."""
    generations: dict[str, int] = {}
    judged = 0
    for one in planned:
        if one.pair is None and one.command is None:
            continue
        judged += len(one.inputs.cases)
        for generator in one.sides.values():
            if generator.endpoint.kind == PROVIDER_GITHUB:
                generations[generator.model] = generations.get(generator.model, 0) + len(one.inputs.cases)
    on_github = (judge or config.judge.provider) == PROVIDER_GITHUB
    relevance = config.relevance
    return quota.Plan(generations=generations, judge_model=config.judge.model if on_github else None,
                      judged_cases=judged,
                      embedding_model=relevance.embedding_model if on_github else None,
                      embedding_texts=judged * (1 + 2 * relevance.questions),
                      embedding_batch=relevance.embedding_batch)


async def _evaluate(one: Planned, *, runtime: Runtime, settings: Settings, judge: Judges,
                    head_sha: str, wiring: Wiring,
                    end_to_end: Callable[[Planned, list[Row]], Awaitable[E2EReport]] | None = None,
                    ) -> tuple[Report, str | None]:
    """One suite's report: skipped, or replayed and scored (or stopped: `error`)."""
    config = one.inputs.config
    cases = len(one.inputs.cases)
    if one.command is None and (one.pair is None or one.prepared is None):
        return build_report(config=config, judge=judge.info, cases=cases,
                            conclusion=Conclusion.SKIPPED, notes=one.notes, usage={},
                            cache={"hits": 0, "misses": 0}, head_sha=head_sha), None
    notes = list(one.notes)
    message = scored = None
    finished = True
    try:
        if one.command is not None:
            assert one.repo is not None
            scored = await commanded.replay_and_score(
                repo=one.repo, refs=one.refs, config=config, command=one.command,
                cases=one.inputs.cases, all_cases=one.all_cases, runtime=runtime,
                settings=settings, judge=judge)
        else:
            assert one.pair is not None and one.prepared is not None
            scored = await _replay_and_score(inputs=one.inputs, pair=one.pair,
                                             prepared=one.prepared, runtime=runtime,
                                             settings=settings, judge=judge, wiring=wiring,
                                             all_cases=one.all_cases)
    except IncompleteError as exc:
        message, finished = str(exc), False
        # Every finished row is kept as scored; the rest are `not_run` (run/stopped.py).
        scored = Scored(rows=stopped.kept_rows(one.inputs.cases, exc))
        notes += [stopped_note(message), stopped.progress_note(scored.rows)]
        if advice := quota.rerun_advice(exc, cached=runtime.cache is not None,
                                        lifts_at=runtime.limiter.lifts_at, now=time.time()):
            notes.append(advice)
            message = f"{message}. {advice}"
        if end_to_end is not None:
            notes.append("No end-to-end run: the frozen run it is compared with could not finish.")
    live = None
    if end_to_end is not None and finished and scored is not None and one.pair is not None:
        live = await end_to_end(one, scored.rows)
    report = build_report(config=config, judge=judge.info, cases=cases, scored=scored,
                          conclusion=None if finished else Conclusion.ERROR,
                          notes=notes, change=one.change, usage=runtime.usage_report(),
                          cache=runtime.cache_stats(), head_sha=head_sha)
    report.e2e = live
    return report, message


def run_check(*, wiring: Wiring | None = None, **kwargs: Any) -> CheckResult:
    """The whole PR check: detect the change, replay both refs, gate, write the outputs
    (the keyword arguments of `check`), with the real git, runtime, judges and client
    unless `wiring` says otherwise.

    Bad input or a refused pull request raises InputError / SecurityError
    (exit 2) before any request. A run that cannot finish (an API failed
    after retries, the budget ran out) still writes a report with conclusion
    `error` and returns exit code 3 with `message` saying why.
    """
    return asyncio.run(check(wiring=wiring or Wiring(), **kwargs))


def merged_check(folder: str | os.PathLike[str]) -> Callable[..., CheckResult]:
    """A stand-in for `run_check` that merges the partials found under `folder`
    (any depth, as downloaded artifacts land) instead of evaluating. The partials are held
    to what the checkout says the run is: the commits being checked, the base's cases
    (their digest) and the rules of its configuration; nothing else is taken on trust."""
    def check(*, repo: Path, base: str, head: str, out_dir: Path, settings: Settings,
              config_path: str = DEFAULT_CONFIG, comment_limit: int | None = None,
              judge: str | None = None, labels: Labels | None = None, links: Links = NO_LINKS,
              **_: Any) -> CheckResult:
        paths = sorted(Path(folder).rglob(shards.PARTIAL_FILE))
        if not paths:
            raise InputError(Problem(str(folder), None, f"no {shards.PARTIAL_FILE} found (download the "
                                                        "shards' artifacts here)"))
        suites = shards.read_partial(paths[0]).fingerprint.model_dump().get("suites") or ()
        pinned = run_pins(repo=repo, base=base, head=head, settings=settings,
                          config_path=config_path, judge=judge, suites=suites)
        report = shards.merge(paths, pinned=pinned)
        markdown = (write_outputs(report, out_dir, labels=labels, links=links)
                    if comment_limit is None
                    else write_outputs(report, out_dir, comment_limit=comment_limit, labels=labels,
                                       links=links))
        return CheckResult(report=report, markdown=markdown, exit_code=gate.exit_code(report.conclusion))

    return check


def _suite_inputs(*, repo: Path, base: str, head: str, settings: Settings, config_path: str,
                  suites: Sequence[str] = ()) -> tuple[TrustedConfig, Ref, Ref, list[Inputs]]:
    """Each suite's cases as the run reads them (the trusted configuration's), no model."""
    git_repo = open_repo(repo, settings)
    base_ref, head_ref = git_repo.ref(base), git_repo.ref(head)
    landing = land(git_repo, base_ref, head_ref)
    trusted = load_config_at(git_repo, base_ref, landing.candidate, config_path)
    return trusted, base_ref, head_ref, [
        load_cases_for(git_repo, trusted, narrowed, landing.candidate, changed=landing.changed)
        for narrowed in trusted.config.suite_configs(suites)]


def run_pins(*, repo: Path, base: str, head: str, settings: Settings, config_path: str,
             judge: str | None, suites: Sequence[str]) -> dict[str, Any]:
    """The fingerprint fields a run of these commits must have, read from the checkout as
    the run reads them: the refs, each suite's cases (their digest) and its rules."""
    trusted, base_ref, head_ref, parts = _suite_inputs(repo=repo, base=base, head=head,
                                                       settings=settings, config_path=config_path,
                                                       suites=suites)
    mode = judge_info(trusted.config, judge).rescore
    digests, rules = {}, {}
    for inputs in parts:
        name = (inputs.config.suite if trusted.config.suites else None) or ""
        digests[name] = shards.cases_digest(inputs.cases)
        rules[name] = shards.rules_dict(Rules.of(inputs.config, mode=mode))
    return {"base_sha": base_ref.sha, "head_sha": head_ref.sha, "cases_digest": digests,
            "rules": rules}


def case_ids(*, repo: Path, base: str, head: str, settings: Settings,
             config_path: str = DEFAULT_CONFIG) -> dict[str | None, list[str]]:
    """The ids of the cases a run of these commits gates, by suite (None: no suites): what a
    label may name."""
    trusted, _, _, parts = _suite_inputs(repo=repo, base=base, head=head, settings=settings,
                                         config_path=config_path)
    return {(inputs.config.suite if trusted.config.suites else None): [c.id for c in inputs.cases]
            for inputs in parts}


# --- one ref (`flipgate replay`) ----------------------------------------------------

@dataclass
class ReplayResult:
    cases: list[Case]
    answers: dict[str, Answer]
    usage: dict[str, dict[str, int]]
    cache: dict[str, int] | None
    notes: list[str] = field(default_factory=list)
    own_code: bool = False   # the application's code answered, asking its model itself


async def replay_ref(*, repo: Path, ref: str, settings: Settings,
                     config_path: str = DEFAULT_CONFIG,
                     cache_dir: Path | None = Path(DEFAULT_CACHE_DIR),
                     progress: Progress | None = None, suite: str | None = None,
                     concurrency: int | None = None, wiring: Wiring | None = None) -> ReplayResult:
    """Every case's answer from the generator at one ref (configuration and cases of that ref);
    with several suites, the one named `suite` (needed unless there is only one)."""
    wiring = wiring or Wiring()
    git_repo = wiring.open_git(repo, settings)
    at = git_repo.ref(ref)
    trusted = load_config_at(git_repo, at, at, config_path)
    inputs = load_cases_for(git_repo, trusted,
                            with_concurrency(one_suite(trusted.config, suite), concurrency), at)
    config = inputs.config
    if config.generator_options.command is not None:
        runtime = wiring.runtime(config, cache_dir=cache_dir, progress=progress,
                                 cache_key=cache_key_for(settings, repo=repo, cache_dir=cache_dir))
        answers = await commanded.answer_one_ref(repo=git_repo, ref=at, config=config,
                                                 command=config.generator_options.command,
                                                 cases=inputs.cases, runtime=runtime,
                                                 settings=settings)
        return ReplayResult(cases=inputs.cases, answers=answers, usage=runtime.usage_report(),
                            cache=runtime.cache_stats(), own_code=True)
    path = generator_path(config)
    inspected = require_generator(git_repo, at, path, environ=settings.environ, config=config)
    refuse_unusable(config, inspected, inputs.cases)
    generator = inspected.prompt
    # One ref: its own configuration is the trusted one.
    pair = lock_generators(git_repo, at, at, config=config, base_generator=generator,
                           head_generator=generator, settings=settings)
    prepared = prepare(git_repo, {"generation": at}, {"generation": pair.baseline}, inputs.cases,
                       environ=settings.environ,
                       strict_undefined=config.generator_options.strict_undefined,
                       cases_source=cases_source(config))
    if failed := prepared["generation"].rendered.failed:  # one ref: no row to hold it
        raise InputError([Problem(config.source, None, f"case {case_id}: {why}")
                          for case_id, why in list(failed.items())[:10]])
    runtime = wiring.runtime(config, cache_dir=cache_dir, progress=progress,
                             cache_key=cache_key_for(settings, repo=repo, cache_dir=cache_dir))
    client = wiring.client(pair.baseline.endpoint, settings, runtime)
    try:
        answers = await replay(inputs.cases, prepared["generation"], client=client, runtime=runtime,
                               purpose="generation", debug=settings.debug)
    finally:
        await client.close()
    return ReplayResult(cases=inputs.cases, answers=answers, usage=runtime.usage_report(),
                        cache=runtime.cache_stats(), notes=undefined_notes(prepared))


def one_suite(config: Config, suite: str | None) -> Config:
    """The configuration narrowed to the suite named (to its only suite, or itself without
    `suites:`); several suites and no name is bad input."""
    narrowed = config.suite_configs([suite] if suite else [])
    if len(narrowed) > 1:
        raise InputError(Problem(config.source, None, "several suites: name one with "
                                 f"--suite ({', '.join(c.suite or '' for c in narrowed)})"))
    return narrowed[0]
