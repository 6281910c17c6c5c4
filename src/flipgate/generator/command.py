"""The application's own code as the generator: one process a ref, spoken to in JSON lines.

The command (from the base's configuration) runs in an export of the ref's files, never
in the workspace, after `setup` if given, with only the variables `generator.env`
lists (and PATH, HOME, LANG). flipgate writes each case as a JSON object a line on its
stdin, at most `concurrency` outstanding, and reads `{"id", "response"}` lines from its
stdout in any order. Every bound ends as an error on the case it concerns, never as an
answer: a case not answered within `timeout`, a line too long or not an answer, an id it
was not asked, a second answer, an exit before answering. Its stderr goes to the log one
short, inert line at a time. Its whole process group is ended when the ref is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flipgate.config.generator_keys import COMMAND_ENV_REFUSED
from flipgate.config.schema import CommandConfig
from flipgate.confine import (
    ConfinementError,
    account_ended,
    account_variables,
    chunks,
    closed_to_others,
    command_account,
    describe_account,
    give_to,
    groups_end_on_sigterm,
    hide_this_process,
    kill_group,
    reap,
    scratch_directory,
    start,
)
from flipgate.errors import InputError, Problem
from flipgate.generator.reach import python_environment, setup_hint, start_failure
from flipgate.git import repository as gitrefs
from flipgate.git.repository import Git
from flipgate.llm.cache import Cache, canonical_json
from flipgate.model import Answer, Case
from flipgate.settings import private_paths
from flipgate.text.escaping import visible
from flipgate.verdict.changes import ChangeScope, relevant_paths

MAX_LINE_BYTES = 4 * 1024 * 1024   # one line of the command's stdout (one answer)
SETUP_SECONDS = 1800.0             # the bound of `setup` (an install may take a while)
STARTUP_SECONDS = 60.0             # more time for the first answer: the application's start
LOG_LINE_CHARS = 300               # what the log shows of one stderr line
LOG_LINES = 200                    # stderr lines shown a ref; the rest are counted
EXIT_GRACE_SECONDS = 1.0           # for the exit status and last words of a command that stopped
QUIET_SECONDS = 30.0               # a wait with no line on stdout this long is said in the log
_BASIC_ENV = ("PATH", "LANG")

Log = Callable[[str], None]


@dataclass(frozen=True)
class CommandSpec:
    """How to run one ref's code: argument lists, never a shell."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(repr=False)
    timeout: float                       # seconds a case
    setup: tuple[str, ...] | None = None
    setup_timeout: float = SETUP_SECONDS
    startup_timeout: float = STARTUP_SECONDS   # added to the first answer's `timeout`
    concurrency: int = 4                 # cases outstanding at once
    max_line_bytes: int = MAX_LINE_BYTES
    private: tuple[Path, ...] = ()       # the runner's paths it must not reach (settings)
    quiet_seconds: float = QUIET_SECONDS  # how long a silence goes unsaid


@dataclass
class Outcome:
    """Each case's answer, or why it has none."""

    answers: dict[str, Answer] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def split(line: str, *, source: str, key: str) -> tuple[str, ...]:
    """A command line split like a shell would, never run by one."""
    try:
        argv = tuple(shlex.split(line))
    except ValueError as exc:
        raise InputError(Problem(source, None, f"{key} cannot be split: {exc}")) from None
    if not argv:
        raise InputError(Problem(source, None, f"{key} is empty"))
    return argv


def command_environment(environ: Mapping[str, str], listed: Sequence[str], *,
                        home: Path) -> dict[str, str]:
    """PATH, LANG, its own HOME and the listed variables; never a runner token or input."""
    names = [*_BASIC_ENV, *(n for n in listed if not n.upper().startswith(COMMAND_ENV_REFUSED))]
    env = {name: environ[name] for name in names if name in environ}
    env["HOME"] = str(home)
    return env


def account_note() -> str | None:
    """Said once a run when the code runs as another account than flipgate's own."""
    account = command_account()
    if account is None:
        return None
    return (f"flipgate: the application's code runs as {describe_account(account)}; it can run "
            "only an interpreter that account may reach (not one under /root)")


def make_spec(config: CommandConfig, *, source: str, environ: Mapping[str, str],
              concurrency: int) -> CommandSpec:
    return CommandSpec(argv=split(config.command, source=source, key="generator.command"),
                       setup=(split(config.setup, source=source, key="generator.setup")
                              if config.setup else None),
                       env=command_environment(environ, config.env, home=Path("/nonexistent")),
                       timeout=config.timeout, concurrency=concurrency,
                       private=private_paths(environ))


def inert(text: str) -> str:
    """One line of the command's output as the log may show it: control characters and
    escapes spelled out, no workflow command (`::`, `##[`), at most `LOG_LINE_CHARS`."""
    text = visible(text)
    text = text.replace("::", ": :").replace("##[", "# #[")
    return text if len(text) <= LOG_LINE_CHARS else text[:LOG_LINE_CHARS - 1] + "…"


def code_identity(*, repo: Path, sha: str, git: Git, config: CommandConfig,
                  directory: str) -> str:
    """What the answers of a ref's code depend on, as far as flipgate can see: the watched
    files' contents and the command, setup and variables it runs with."""
    blobs = gitrefs.tree_blobs(repo, sha, git=git)
    scope = ChangeScope(generator="", watch=config.watch, watch_root=directory)
    watched = relevant_paths(sorted(blobs), scope)
    return hashlib.sha256(canonical_json({
        "files": [[path, blobs[path]] for path in watched], "command": config.command,
        "setup": config.setup, "env": sorted(config.env)}).encode("utf-8")).hexdigest()


def case_line(case: Case) -> bytes:
    return (json.dumps(case.template_vars(), ensure_ascii=False) + "\n").encode("utf-8")


def _cache_key(identity: str, case: Case) -> dict[str, Any]:
    return {"kind": "command-answer", "code": identity, "case": case.template_vars()}


async def answer_cases(cases: Sequence[Case], *, spec: CommandSpec, repo: Path, sha: str,
                       git: Git, identity: str, cache: Cache | None, log: Log) -> Outcome:
    """`answer_ref`, with answers cached by the code's identity and the case: a case
    answered before is not asked again, and a ref whose every case is cached starts nothing."""
    outcome = Outcome()
    missing = []
    for case in cases:
        hit = cache.get(_cache_key(identity, case)) if cache is not None else None
        if isinstance(hit, str):
            outcome.answers[case.id] = Answer(response=hit)
        else:
            missing.append(case)
    if missing:
        try:
            fresh = await answer_ref(missing, spec=spec, repo=repo, sha=sha, git=git, log=log,
                                     private=(cache.root,) if cache is not None else ())
        except ConfinementError as exc:   # nothing ran: every case says why
            fresh = Outcome(errors={case.id: str(exc) for case in missing})
        for case in missing:
            if case.id in fresh.answers:
                outcome.answers[case.id] = fresh.answers[case.id]
                if cache is not None:
                    cache.put(_cache_key(identity, case), fresh.answers[case.id].response)
            else:
                outcome.errors[case.id] = fresh.errors.get(case.id, "not answered")
    return outcome


async def answer_ref(cases: Sequence[Case], *, spec: CommandSpec, repo: Path, sha: str,
                     git: Git, log: Log, run_as: int | None = -1,
                     private: Sequence[Path] = ()) -> Outcome:
    """Every case's answer from the code of commit `sha`, run in an export of it that is
    removed after. `run_as`: the uid; by default a fresh account when this process is root,
    which reaches its export, HOME and TMPDIR only: the repository, `private` (the cache)
    and the runner's paths are closed to it while it runs, and every process it started is
    ended before this returns."""
    account = command_account() if run_as == -1 else run_as
    closed = (repo, *private, *spec.private) if account is not None else ()
    # Left in reverse: every process of the account ends before its copy is removed and
    # before the paths closed to it open again.
    with groups_end_on_sigterm(), closed_to_others(closed), \
            scratch_directory("flipgate-command-") as root, account_ended(account):
        work = gitrefs.export_tree(repo, sha, root / "tree", git=git)
        home, tmp = root / "home", root / "tmp"
        home.mkdir()
        tmp.mkdir()
        if account is not None:
            for given in (work, home, tmp):
                give_to(given, account)
        hide_this_process()   # the command may not read the model key from this process
        env = python_environment({**spec.env, "HOME": str(home), "TMPDIR": str(tmp),
                                  **account_variables(account)}, work)
        runner = _Runner(spec=spec, cwd=work, env=env, run_as=account, log=log)
        if spec.setup is not None:
            failure = await runner.setup(spec.setup)
            if failure is not None:
                return Outcome(errors={case.id: failure for case in cases})
        return await runner.converse(cases)


@dataclass
class _Runner:
    spec: CommandSpec
    cwd: Path
    env: Mapping[str, str]
    run_as: int | None
    log: Log
    shown: int = 0
    hidden: int = 0
    last_words: str = ""
    hint: str = ""        # advice a line of `setup`'s output called for

    async def _start(self, argv: Sequence[str], *, stdin: int | None,
                     stderr: int) -> asyncio.subprocess.Process:
        return await start(argv, cwd=self.cwd, env=self.env, run_as=self.run_as, stdin=stdin,
                           stderr=stderr, limit=self.spec.max_line_bytes + 2)

    def _show(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if text.strip():
            self.last_words = inert(text.strip())
            self.hint = self.hint or setup_hint(text)
        if self.shown < LOG_LINES:
            self.shown += 1
            self.log(f"  [generator] {inert(text)}")
        else:
            self.hidden += 1

    async def _tail(self, stream: asyncio.StreamReader) -> None:
        """Every line of `stream` to the log, each cut short, however much comes."""
        line, cut = bytearray(), False
        async for chunk in chunks(stream):
            parts = chunk.split(b"\n")
            for i, part in enumerate(parts):
                if not cut:
                    line += part[:LOG_LINE_CHARS * 4 - len(line)]
                    cut = len(line) >= LOG_LINE_CHARS * 4
                if i < len(parts) - 1:
                    self._show(bytes(line))
                    line, cut = bytearray(), False
        if line:
            self._show(bytes(line))

    def _flush_hidden(self) -> None:
        if self.hidden:
            self.log(f"  [generator] ({self.hidden} more lines not shown)")
            self.hidden = 0

    async def setup(self, argv: Sequence[str]) -> str | None:
        """Run `setup` to its end, bounded; None, or why every case of this ref fails."""
        try:
            process = await self._start(argv, stdin=asyncio.subprocess.DEVNULL,
                                        stderr=asyncio.subprocess.STDOUT)
        except OSError as exc:
            return start_failure("setup ", argv[0], exc, env=self.env, account=self.run_as)
        assert process.stdout is not None
        try:
            async with asyncio.timeout(self.spec.setup_timeout):
                await self._tail(process.stdout)
                status = await process.wait()
        except TimeoutError:
            return f"setup did not finish within {self.spec.setup_timeout:g} s"
        finally:
            kill_group(process)
            await reap(process)
            self._flush_hidden()
        if status != 0:
            return (f"setup exited with status {status}"
                    + (f": {self.last_words}" if self.last_words else "") + self.hint)
        return None

    async def converse(self, cases: Sequence[Case]) -> Outcome:
        try:
            process = await self._start(self.spec.argv, stdin=asyncio.subprocess.PIPE,
                                        stderr=asyncio.subprocess.PIPE)
        except OSError as exc:
            reason = start_failure("", self.spec.argv[0], exc, env=self.env, account=self.run_as)
            return Outcome(errors={case.id: reason for case in cases})
        self.last_words = ""
        talk = _Conversation(cases, spec=self.spec, process=process, log=self.log)
        stderr = asyncio.ensure_future(self._tail(process.stderr)) if process.stderr else None
        try:
            await talk.run()
            if talk.ended_early:
                # It stopped before answering everything: its status and last words say why.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(EXIT_GRACE_SECONDS):
                        await process.wait()
                        if stderr is not None:
                            await stderr
                talk.fail_rest(self._exit_reason(process.returncode))
        finally:
            kill_group(process)   # also whatever it left running behind it
            if stderr is not None:
                stderr.cancel()
                await asyncio.gather(stderr, return_exceptions=True)
            await reap(process)
            self._flush_hidden()
        return talk.outcome

    def _exit_reason(self, status: int | None) -> str:
        words = f": {self.last_words}" if self.last_words else ""
        if status is None:
            return f"the command closed its output before answering{words}"
        return f"the command exited with status {status} before answering{words}"


class _Conversation:
    """The cases written and the answers read, each case in one state: waiting, outstanding,
    answered or failed."""

    def __init__(self, cases: Sequence[Case], *, spec: CommandSpec,
                 process: asyncio.subprocess.Process, log: Log = lambda line: None) -> None:
        self.cases = list(cases)
        self.spec = spec
        self.process = process
        self.log = log
        self.sent = 0
        self.quiet: asyncio.TimerHandle | None = None
        self.quiet_since = 0.0
        self.outcome = Outcome()
        # A case's clock starts when it is written, or at the first answer for the cases
        # written before it (the application's start has its own bound, `startup_timeout`).
        self.outstanding: dict[str, asyncio.TimerHandle | None] = {}
        self.started = False
        self.expired: set[str] = set()
        self.slots = asyncio.Semaphore(max(1, spec.concurrency))
        self.done = asyncio.Event()
        self.ended_early = False

    @property
    def settled(self) -> int:
        return len(self.outcome.answers) + len(self.outcome.errors)

    def _check_done(self) -> None:
        if self.settled >= len(self.cases):
            self.done.set()

    def _settle(self, case_id: str, *, answer: Answer | None = None,
                error: str | None = None) -> None:
        if case_id in self.outstanding:
            timer = self.outstanding.pop(case_id)
            if timer is not None:
                timer.cancel()
            self.slots.release()
        if answer is not None:
            self.outcome.answers[case_id] = answer
            self._progress()
        else:
            self.outcome.answers.pop(case_id, None)
            self.outcome.errors[case_id] = error or "not answered"
        self._check_done()

    def _progress(self) -> None:
        """A line at every tenth of the cases answered (every answer of a small run)."""
        answered, total = len(self.outcome.answers), len(self.cases)
        if answered % max(1, total // 10) == 0 or answered == total:
            self.log(f"  [flipgate] {answered} of {total} cases answered")

    def _heard(self) -> None:
        """A line on stdout: the silence, if it was said, starts again."""
        if self.quiet is not None:
            self.quiet.cancel()
        loop = asyncio.get_running_loop()
        self.quiet_since = loop.time()
        self.quiet = loop.call_later(self.spec.quiet_seconds, self._say_quiet)

    def _say_quiet(self) -> None:
        """What a silent wait waits for, before any case's clock runs out."""
        loop = asyncio.get_running_loop()
        silent = loop.time() - self.quiet_since
        self.log(f"  [flipgate] waiting for answers: {self.sent} of {len(self.cases)} cases sent, "
                 f"{len(self.outcome.answers)} answered, its stdout silent for {silent:.0f} s "
                 f"(a case fails after {self.spec.timeout:g} s; an answer counts once its line "
                 "is flushed: Python runs unbuffered here, other languages flush each line)")
        self.quiet = loop.call_later(self.spec.quiet_seconds, self._say_quiet)

    def _expire(self, case_id: str) -> None:
        if case_id in self.outstanding:
            self.expired.add(case_id)
            self._settle(case_id, error=f"no answer within {self.spec.timeout:g} s")

    def _start_clocks(self) -> None:
        """The first answer: the application is up, and every case waiting gets `timeout`."""
        self.started = True
        loop = asyncio.get_running_loop()
        for case_id, timer in self.outstanding.items():
            if timer is None:
                self.outstanding[case_id] = loop.call_later(self.spec.timeout, self._expire, case_id)

    def _never_started(self) -> None:
        if not self.started:
            self.fail_rest(f"no answer within {self.spec.startup_timeout + self.spec.timeout:g} s "
                           "(the command's first answer, its start included)")

    def fail_rest(self, reason: str) -> None:
        """Every case not settled yet fails with `reason`: the command ended, never started
        answering, or printed what makes the rest of its output unreadable."""
        for case in self.cases:
            if case.id not in self.outcome.answers and case.id not in self.outcome.errors:
                self._settle(case.id, error=reason)

    async def _write(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        loop = asyncio.get_running_loop()
        try:
            for case in self.cases:
                await self.slots.acquire()
                if self.done.is_set():
                    return
                self.outstanding[case.id] = (loop.call_later(self.spec.timeout, self._expire, case.id)
                                             if self.started else None)
                stdin.write(case_line(case))
                await stdin.drain()
                self.sent += 1
            stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass   # it stopped reading: what it printed still counts, and the reader sees its end

    async def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while not self.done.is_set():
            try:
                line = await stdout.readline()
            except ValueError:   # the line passed the cap
                self.fail_rest(f"printed a line longer than {self.spec.max_line_bytes:,} bytes")
                return
            if not line:
                self.ended_early = not self.done.is_set()
                return
            self._take(line)

    def _take(self, line: bytes) -> None:
        self._heard()
        if not line.strip():
            return
        try:
            value = json.loads(line, parse_constant=_refuse)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            self.fail_rest(f"printed a line that is not a JSON object: {inert(_text(line))}")
            return
        case_id = value.get("id")
        if not isinstance(case_id, str):
            self.fail_rest(f"printed a line without a string \"id\": {inert(_text(line))}")
            return
        if not self.started:
            self._start_clocks()
        if case_id in self.expired:
            return   # late: the case is already an error, and stays one
        if case_id in self.outcome.answers:
            self._settle(case_id, error=f"answered id {inert(case_id)!r} twice")
            return
        if case_id not in self.outstanding:
            self.fail_rest(f"answered id {inert(case_id)!r}, which it was not asked")
            return
        response = value.get("response")
        if not isinstance(response, str):
            self._settle(case_id, error="printed a line without a string \"response\" "
                                        f"for id {inert(case_id)!r}")
            return
        try:
            response.encode("utf-8")
        except UnicodeEncodeError:
            self._settle(case_id, error="answered text with a lone surrogate (not valid Unicode)")
            return
        self._settle(case_id, answer=Answer(response=response))

    async def run(self) -> None:
        if not self.cases:
            return
        writer = asyncio.ensure_future(self._write())
        reader = asyncio.ensure_future(self._read())
        done = asyncio.ensure_future(self.done.wait())
        startup = asyncio.get_running_loop().call_later(
            self.spec.startup_timeout + self.spec.timeout, self._never_started)
        self._heard()
        try:
            await asyncio.wait([reader, done], return_when=asyncio.FIRST_COMPLETED)
        finally:
            startup.cancel()
            if self.quiet is not None:
                self.quiet.cancel()
            for task in (writer, reader, done):
                task.cancel()
            await asyncio.gather(writer, reader, done, return_exceptions=True)
            for timer in self.outstanding.values():
                if timer is not None:
                    timer.cancel()


def _refuse(value: str) -> None:
    raise ValueError(f"{value} is not a JSON number")


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace").strip()
