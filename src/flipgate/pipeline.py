"""The whole PR check on a local checkout: detect, replay both refs, gate, render.

A plain sequence of steps. Everything of both refs is read from git objects;
the configuration and the cases come from the base ref (the head's only when
the base has none yet), so a pull request never weakens the gate that judges
it. Nothing is sent to any model until every check that can refuse the run
has passed: change detection, the endpoint lock, and rendering every case of
both generators in the sandbox.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flipgate import changes, gitrefs
from flipgate.config import DEFAULT_CONFIG, Config, parse_config
from flipgate.e2e.run import E2ERequest, e2e_wanted
from flipgate.endpoint_lock import Generator, LockedPair, check_adopted_config, lock
from flipgate.errors import IncompleteError, InputError, Problem
from flipgate.model import Answer, Case, Conclusion, Counts, E2EReport, Report
from flipgate.prompty import Prompty, parse_prompty, referenced_files, render_isolated
from flipgate.replay import PreparedGenerator, first_failure_cancels, replay
from flipgate.runtime import Runtime
from flipgate.scoring import judge_info, stopped_report
from flipgate.textinput import decode_utf8

if TYPE_CHECKING:
    from rich.console import Console

    from flipgate.progress import Progress

DEFAULT_CACHE = Path(".flipgate-cache")
DEFAULT_OUT = Path("flipgate-out")


@dataclass
class CheckResult:
    report: Report
    markdown: str
    exit_code: int
    message: str | None = None   # why the run stopped early (exit 3), for stderr


@dataclass(frozen=True)
class Ref:
    """A resolved ref: what the user typed and the commit it names."""

    name: str
    sha: str

    @property
    def label(self) -> str:
        return gitrefs.short(self.sha)


@dataclass
class Inputs:
    """What the run reads from the refs, and what it noticed on the way."""

    config: Config
    cases: list[Case]
    notes: list[str] = field(default_factory=list)
    config_diff: str | None = None
    cases_diff: str | None = None
    from_base: bool = True   # False when adopting: the head's configuration, never trusted to run


def _read_config(repo: Path, ref: Ref, config_path: str) -> tuple[Config, str] | None:
    data = gitrefs.read(repo, ref.sha, config_path)
    if data is None:
        return None
    source = f"{config_path}@{ref.label}"
    text = decode_utf8(data, source)
    directory = posixpath.dirname(config_path) or "."
    return parse_config(text, source=source, directory=directory), text


def _head_cases_description(repo: Path, head: Ref, path: str, base_cases: list[Case]) -> str:
    from flipgate.cases import parse_cases

    data = gitrefs.read(repo, head.sha, path)
    if data is None:
        return "the cases file is removed"
    try:
        head_cases = parse_cases(data, source=f"{path}@{head.label}")
    except InputError as exc:
        return f"the head's cases do not parse ({exc.problems[0]})"
    return changes.describe_cases_change(base_cases, head_cases) or "only formatting changed"


def load_inputs(repo: Path, base: Ref, head: Ref, config_path: str, *,
                changed: Collection[str] = ()) -> Inputs:
    """Configuration and cases from the base ref; notes and diffs when the PR changes them
    (`changed`: the paths that differ between the refs)."""
    from flipgate.cases import parse_cases

    config_path = gitrefs.safe_path(config_path)
    trusted = _read_config(repo, base, config_path)
    notes: list[str] = []
    config_diff = None
    source_ref = base
    if trusted is None:
        trusted = _read_config(repo, head, config_path)
        if trusted is None:
            where = (f"git ref {base.name}" if base.sha == head.sha
                     else f"the base ({base.name}) or the head ({head.name})")
            raise InputError(Problem(config_path, None, f"not found at {where}"))
        source_ref = head
        check_adopted_config(*trusted)
        notes.append(f"The base has no {config_path}: this run uses the pull request's own "
                     "configuration and cases (adopting flipgate).")
    else:
        head_data = gitrefs.read(repo, head.sha, config_path)
        head_text = None if head_data is None else head_data.decode("utf-8", "replace")
        if head_text != trusted[1]:
            config_diff = changes.unified(trusted[1], head_text, before_label=f"{config_path}@{base.label}",
                                          after_label=f"{config_path}@{head.label}")
            notes.append(f"This pull request changes {config_path}; the base's configuration "
                         "judges it (a pull request cannot change the gate that judges it).")
    config = trusted[0]
    cases_path = gitrefs.safe_path(config.path_of(config.cases), source=config.source)
    cases_data = gitrefs.read_required(repo, source_ref.sha, cases_path, ref=source_ref.name)
    cases = parse_cases(cases_data, source=f"{cases_path}@{source_ref.label}")
    cases_diff = None
    if source_ref is base and cases_path in changed:
        cases_diff = _head_cases_description(repo, head, cases_path, cases)
        notes.append(f"This pull request changes {cases_path} ({cases_diff}); the base's cases "
                     "are replayed.")
    return Inputs(config=config, cases=cases, notes=notes, config_diff=config_diff,
                  cases_diff=cases_diff, from_base=source_ref is base)


def generator_path(config: Config) -> str:
    if not config.generator:
        raise InputError(Problem(config.source, None, "'generator' is required to replay "
                                 "(the Prompty file of the prompt under test)"))
    return gitrefs.safe_path(config.path_of(config.generator), source=config.source)


def load_generator(repo: Path, ref: Ref, path: str) -> Prompty | None:
    """The generator at a ref, or None when the ref has none (the base, before adoption)."""
    data = gitrefs.read(repo, ref.sha, path)
    return None if data is None else parse_prompty(data, path=path, source=f"{path}@{ref.label}")


def require_generator(repo: Path, ref: Ref, path: str) -> Prompty:
    data = gitrefs.read_required(repo, ref.sha, path, ref=ref.name)
    return parse_prompty(data, path=path, source=f"{path}@{ref.label}")


def _reader(repo: Path, ref: Ref):
    return lambda path: gitrefs.read(repo, ref.sha, path)


def detect_change(repo: Path, base: Ref, head: Ref, *, config: Config, path: str,
                  changed: Sequence[str], base_generator: Prompty | None,
                  head_generator: Prompty) -> tuple[list[str], frozenset[str], list[str]]:
    """(relevant changed paths, files the generators include, notes). No paths: nothing to gate."""
    base_files, base_complete = (referenced_files(base_generator, read=_reader(repo, base))
                                 if base_generator is not None else (frozenset(), True))
    head_files, head_complete = referenced_files(head_generator, read=_reader(repo, head))
    scope = changes.ChangeScope(generator=path, includes=(base_files | head_files) - {path},
                                includes_complete=base_complete and head_complete,
                                watch=config.watch, watch_root=config.directory)
    relevant = changes.relevant_paths(changed, scope)
    notes = []
    if relevant and not scope.includes_complete:
        notes.append("The generator includes a template whose name is computed, so every "
                     "changed file counts as a prompt change.")
    return relevant, scope.includes, notes


def describe(repo: Path, base: Ref, head: Ref, *, path: str, files: list[str], pair: LockedPair,
             inputs: Inputs, includes: frozenset[str]) -> dict[str, Any]:
    base_prompty = None if pair.adopted else pair.baseline.prompty
    templates: list[tuple[str, str | None, str | None]] = [
        (path, base_prompty.body if base_prompty else None, pair.candidate.prompty.body)]
    for include in sorted((includes & set(files)) - {path}):
        before, after = (gitrefs.read(repo, ref.sha, include) for ref in (base, head))
        templates.append((include, None if before is None else before.decode("utf-8", "replace"),
                          None if after is None else after.decode("utf-8", "replace")))
    return changes.describe_change(
        generator=path, files=files,
        model=(None if pair.adopted else pair.baseline.model, pair.candidate.model),
        parameters=({} if pair.adopted else pair.baseline.parameters, pair.candidate.parameters),
        templates=templates, labels=(base.label, head.label),
        config_diff=inputs.config_diff, cases_diff=inputs.cases_diff)


def prepare(repo: Path, refs: dict[str, Ref], generators: dict[str, Generator],
            cases: list[Case]) -> dict[str, PreparedGenerator]:
    """Render every case of each side in the sandbox (in parallel child processes)."""
    with ThreadPoolExecutor(max_workers=len(generators)) as pool:
        futures = {side: pool.submit(render_isolated, generator.prompty, cases, repo=repo,
                                     sha=refs[side].sha)
                   for side, generator in generators.items()}
        return {side: PreparedGenerator(generator=generators[side], rendered=future.result())
                for side, future in futures.items()}


def _skipped_report(*, inputs: Inputs, judge: str | None, head: Ref) -> Report:
    return Report(conclusion=Conclusion.SKIPPED, judge=judge_info(inputs.config, judge),
                  counts=Counts(cases=len(inputs.cases)), rows=[],
                  relevance_threshold=inputs.config.relevance.threshold,
                  notes=list(inputs.notes), head_sha=head.sha)


async def _replay_and_gate(*, inputs: Inputs, pair: LockedPair,
                           prepared: dict[str, PreparedGenerator], runtime: Runtime,
                           judge: str | None) -> Report:
    from flipgate.judges import make_judge
    from flipgate.llm import make_client
    from flipgate.scoring import gate_answers

    # Build (and drop) the judge first: a judge that cannot be set up should
    # stop the run before any generation is paid for.
    await make_judge(inputs.config, runtime=runtime, provider=judge).aclose()
    client = make_client(pair.baseline.endpoint)
    try:
        cases = inputs.cases
        if pair.adopted:
            candidate = await replay(cases, prepared["candidate"], client=client, runtime=runtime,
                                     purpose="candidate")
            baseline: dict[str, Answer] = dict(candidate)
        else:
            baseline, candidate = await first_failure_cancels([
                replay(cases, prepared["baseline"], client=client, runtime=runtime, purpose="baseline"),
                replay(cases, prepared["candidate"], client=client, runtime=runtime,
                       purpose="candidate"),
            ])
    finally:
        await client.close()
    return await gate_answers(cases=cases, baseline=baseline, candidate=candidate,
                              config=inputs.config, runtime=runtime, judge_provider=judge)


async def _end_to_end(*, repo: Path, base: Ref, inputs: Inputs, pair: LockedPair,
                      refs: dict[str, Ref], sides: dict[str, Generator], frozen: Report,
                      runtime: Runtime, judge: str | None, request: E2ERequest,
                      cache_dir: Path | None) -> E2EReport:
    """The end-to-end run: the same generation and judging as the frozen run, on live contexts."""
    from flipgate.e2e.run import run_e2e

    async def gate_cases(live_cases: list[Case]) -> Report:
        prepared = await asyncio.to_thread(prepare, repo, refs, sides, live_cases)
        return await _replay_and_gate(inputs=Inputs(config=inputs.config, cases=live_cases),
                                      pair=pair, prepared=prepared, runtime=runtime, judge=judge)

    assert inputs.config.e2e is not None
    return await run_e2e(config=inputs.config.e2e, source=inputs.config.source, repo=repo,
                         base_sha=base.sha, cases=inputs.cases, frozen=frozen, request=request,
                         cache_dir=cache_dir, limit=inputs.config.concurrency, gate_cases=gate_cases,
                         progress=runtime.progress)


async def check(*, repo: Path, base: str, head: str, config_path: str = DEFAULT_CONFIG,
                out_dir: Path = DEFAULT_OUT, cache_dir: Path | None = DEFAULT_CACHE,
                judge: str | None = None, console: Console | None = None,
                progress: Progress | None = None, e2e: E2ERequest | None = None) -> CheckResult:
    """`run_check`, for callers that already run an event loop."""
    from flipgate import gate
    from flipgate.outputs import write_outputs

    repo = Path(repo).resolve()
    base_ref = Ref(base, gitrefs.resolve(repo, base))
    head_ref = Ref(head, gitrefs.resolve(repo, head))
    changed = gitrefs.changed_paths(repo, base_ref.sha, head_ref.sha)
    inputs = load_inputs(repo, base_ref, head_ref, config_path, changed=changed)
    with_e2e = e2e_wanted(inputs.config, trusted=inputs.from_base, request=e2e)
    path = generator_path(inputs.config)
    base_generator = load_generator(repo, base_ref, path)
    head_generator = require_generator(repo, head_ref, path)

    relevant, includes, notes = detect_change(repo, base_ref, head_ref, config=inputs.config,
                                              path=path, changed=changed,
                                              base_generator=base_generator,
                                              head_generator=head_generator)
    inputs.notes.extend(notes)
    if not relevant:
        inputs.notes.insert(0, f"No change to the generator ({path}), the files it includes, or "
                               "a watched path: nothing to gate, no model was called.")
        if with_e2e:
            inputs.notes.append("No end-to-end run either: with nothing to gate there is no "
                                "frozen verdict to compare with.")
        report = _skipped_report(inputs=inputs, judge=judge, head=head_ref)
        report.usage, report.cache = {}, {"hits": 0, "misses": 0}
        markdown = write_outputs(report, out_dir, console=console)
        return CheckResult(report=report, markdown=markdown, exit_code=0)

    pair = lock(base_generator, head_generator)
    inputs.notes.extend(pair.notes)
    refs = {"baseline": base_ref, "candidate": head_ref}
    sides = {"candidate": pair.candidate} if pair.adopted else \
        {"baseline": pair.baseline, "candidate": pair.candidate}
    prepared = prepare(repo, refs, sides, inputs.cases)
    loaded = frozenset().union(*(p.rendered.loaded for p in prepared.values()))
    change = describe(repo, base_ref, head_ref, path=path, files=relevant, pair=pair,
                      inputs=inputs, includes=includes | loaded)

    runtime = Runtime.from_config(inputs.config, cache_dir=cache_dir, progress=progress)
    message = None
    try:
        report = await _replay_and_gate(inputs=inputs, pair=pair, prepared=prepared,
                                        runtime=runtime, judge=judge)
        report.notes = [*inputs.notes, *report.notes]
        report.head_sha = head_ref.sha
        if with_e2e:
            assert e2e is not None
            report.e2e = await _end_to_end(repo=repo, base=base_ref, inputs=inputs, pair=pair,
                                           refs=refs, sides=sides, frozen=report, runtime=runtime,
                                           judge=judge, request=e2e, cache_dir=cache_dir)
    except IncompleteError as exc:
        message = str(exc)
        report = stopped_report(cases=inputs.cases, config=inputs.config, judge_provider=judge,
                                message=message)
        report.notes = [*inputs.notes, *report.notes]
        report.head_sha = head_ref.sha
        if with_e2e:
            report.notes.append("No end-to-end run: the frozen run it is compared with could not "
                                "finish.")
    report.change = change
    report.usage = runtime.usage_report()
    report.cache = runtime.cache.stats() if runtime.cache is not None else None
    markdown = write_outputs(report, out_dir, console=console)
    return CheckResult(report=report, markdown=markdown, exit_code=gate.exit_code(report.conclusion),
                       message=message)


def run_check(*, repo: Path, base: str, head: str, config_path: str = DEFAULT_CONFIG,
              out_dir: Path = DEFAULT_OUT, cache_dir: Path | None = DEFAULT_CACHE,
              judge: str | None = None, console: Console | None = None,
              progress: Progress | None = None, e2e: E2ERequest | None = None) -> CheckResult:
    """The whole PR check: detect the change, replay both refs, gate, write the outputs.

    Bad input or a refused pull request raises InputError / SecurityError
    (exit 2) before any request. A run that cannot finish (an API failed
    after retries, the budget ran out) still writes a report with conclusion
    `error` and returns exit code 3 with `message` saying why.
    """
    return asyncio.run(check(repo=repo, base=base, head=head, config_path=config_path,
                             out_dir=out_dir, cache_dir=cache_dir, judge=judge, console=console,
                             progress=progress, e2e=e2e))


# --- one ref (`flipgate replay`) ----------------------------------------------------

@dataclass
class ReplayResult:
    cases: list[Case]
    answers: dict[str, Answer]
    usage: dict[str, dict[str, int]]
    cache: dict[str, int] | None


async def replay_ref(*, repo: Path, ref: str, config_path: str = DEFAULT_CONFIG,
                     cache_dir: Path | None = DEFAULT_CACHE,
                     progress: Progress | None = None) -> ReplayResult:
    """Every case's answer from the generator at one ref (configuration and cases of that ref)."""
    from flipgate.llm import make_client

    repo = Path(repo).resolve()
    at = Ref(ref, gitrefs.resolve(repo, ref))
    inputs = load_inputs(repo, at, at, config_path)
    config = inputs.config
    path = generator_path(config)
    generator = require_generator(repo, at, path)
    pair = lock(generator, generator)  # one ref: its own configuration is the trusted one
    prepared = prepare(repo, {"generation": at}, {"generation": pair.baseline}, inputs.cases)
    runtime = Runtime.from_config(config, cache_dir=cache_dir, progress=progress)
    client = make_client(pair.baseline.endpoint)
    try:
        answers = await replay(inputs.cases, prepared["generation"], client=client, runtime=runtime,
                               purpose="generation")
    finally:
        await client.close()
    return ReplayResult(cases=inputs.cases, answers=answers, usage=runtime.usage_report(),
                        cache=runtime.cache.stats() if runtime.cache is not None else None)
