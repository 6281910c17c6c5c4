"""A suite whose generator is the application's own code: each ref's code answers in turn,
and the rows are scored as any others; a case either side could not answer is an error row.

The base's code runs first and its export is removed before the head's code starts, so the
head's code never runs beside another ref's files.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence

from flipgate.config.schema import CommandConfig, Config
from flipgate.errors import IncompleteError
from flipgate.generator.command import (
    Log,
    Outcome,
    account_note,
    answer_cases,
    code_identity,
    make_spec,
)
from flipgate.judges import Judges
from flipgate.llm.runtime import Runtime
from flipgate.model import Answer, Case, Evidence, Row, Score
from flipgate.run.refs import Ref, Repo
from flipgate.run.scoring import Scored, score_rows
from flipgate.run.stopped import StoppedPartWay
from flipgate.settings import Settings
from flipgate.verdict import gate

SIDES = ("baseline", "candidate")


def log_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def replay_and_score(*, repo: Repo, refs: Mapping[str, Ref], config: Config,
                           command: CommandConfig, cases: Sequence[Case],
                           all_cases: Sequence[Case], runtime: Runtime, settings: Settings,
                           judge: Judges, log: Log = log_to_stderr) -> Scored:
    """Both refs' answers from their own code, then the rows. `all_cases`: the whole run's
    cases when `cases` are a shard's part (the sample-size rule counts every case)."""
    await judge.probe()
    spec = make_spec(command, source=config.source, environ=settings.environ,
                     concurrency=config.concurrency)
    _say_account(log)
    outcomes: dict[str, Outcome] = {}
    for side in SIDES:
        ref = refs[side]
        identity = await asyncio.to_thread(code_identity, repo=repo.path, sha=ref.sha,
                                           git=repo.git, config=command,
                                           directory=config.directory)
        log(f"flipgate: the {side} ({ref.label}) answers with `{command.command}`")
        outcomes[side] = withheld_hint(
            await answer_cases(cases, spec=spec, repo=repo.path, sha=ref.sha, git=repo.git,
                               identity=identity, cache=runtime.cache, log=log),
            settings.withheld(command.env))
    baseline, candidate = outcomes["baseline"].answers, outcomes["candidate"].answers
    answered = [case for case in cases if case.id in baseline and case.id in candidate]
    sizes = gate.category_sizes(case.category for case in all_cases)
    unanswered = [unanswered_row(case, outcomes, config=config, sizes=sizes, mode=judge.mode)
                  for case in cases if case.id not in baseline or case.id not in candidate]
    scored = Scored(rows=[])
    if answered:
        try:
            scored = await score_rows(cases=answered, baseline=baseline, candidate=candidate,
                                      config=config, judge=judge.first, second=judge.second,
                                      mode=judge.mode, progress=runtime.progress,
                                      category_cases=sizes)
        except StoppedPartWay as exc:  # a row the code did not answer stays a generator error
            raise exc.with_rows(unanswered) from exc.cause
    by_id = {row.id: row for row in [*scored.rows, *unanswered]}
    return Scored(rows=[by_id[case.id] for case in cases], fluency=scored.fluency)


async def answer_one_ref(*, repo: Repo, ref: Ref, config: Config, command: CommandConfig,
                         cases: Sequence[Case], runtime: Runtime, settings: Settings,
                         log: Log = log_to_stderr) -> dict[str, Answer]:
    """`flipgate replay` of a ref whose generator is its own code: every case's answer, or
    the run stops (exit 3) naming the first case it could not answer."""
    spec = make_spec(command, source=config.source, environ=settings.environ,
                     concurrency=config.concurrency)
    _say_account(log)
    identity = await asyncio.to_thread(code_identity, repo=repo.path, sha=ref.sha, git=repo.git,
                                       config=command, directory=config.directory)
    outcome = await answer_cases(cases, spec=spec, repo=repo.path, sha=ref.sha, git=repo.git,
                                 identity=identity, cache=runtime.cache, log=log)
    outcome = withheld_hint(outcome, settings.withheld(command.env))
    for case in cases:
        if case.id in outcome.errors:
            raise IncompleteError(f"the application's code gave no answer for case "
                                  f"'{case.id}': {outcome.errors[case.id]}")
    return {case.id: outcome.answers[case.id] for case in cases}


def _say_account(log: Log) -> None:
    note = account_note()
    if note is not None:
        log(note)


def withheld_hint(outcome: Outcome, withheld: Sequence[str]) -> Outcome:
    """Each failure names the model-client variables set here that the code did not get
    (names only): a dropped OPENAI_BASE_URL reads as the application's own connection error."""
    if not withheld or not outcome.errors:
        return outcome
    names = ", ".join(withheld[:5]) + (f" and {len(withheld) - 5} more" if len(withheld) > 5 else "")
    verb = "is" if len(withheld) == 1 else "are"
    hint = (f" ({names} {verb} set here but not passed to the command; add "
            f"{'it' if len(withheld) == 1 else 'them'} to generator.env if the code needs "
            f"{'it' if len(withheld) == 1 else 'them'})")
    return Outcome(answers=outcome.answers,
                   errors={case: error + hint for case, error in outcome.errors.items()})


def unanswered_row(case: Case, outcomes: Mapping[str, Outcome], *, config: Config,
                   sizes: Mapping[str, int], mode: str, what: str = "the application's code") -> Row:
    """A case a side's generator (`what`) did not answer: a generator-error row naming why,
    never a score."""
    sides = []
    for side in SIDES:
        outcome = outcomes[side]
        answer = outcome.answers.get(case.id)
        error = outcome.errors.get(case.id)
        failure = f"{what} gave no answer: {error}" if error else None
        reading = Score.failed(failure or "not judged: the other side has no answer")
        sides.append(gate.side(answer.response if answer else "", reading,
                               generator_error=failure))
    return gate.build_row(case, sides[0], sides[1],
                          blocking_categories=config.gate.blocking_categories,
                          threshold=config.relevance.threshold,
                          find_evidence=lambda case, response: Evidence(),
                          policy=gate.Policy(min_cases=config.gate.min_cases_per_category,
                                             strict=config.gate.strict, mode=mode),
                          category_cases=sizes.get(case.category))
