"""What the application's own code (a ref's `generator.command`) can reach, under the layout a
GitHub runner really gives a job: a world-readable workspace whose `.git/config` holds
actions/checkout's persisted credential, the runner's command files, a cache any account could
read, another run's confined process, the next suite's export. The code reaches none of them,
and nothing it starts outlives its ref (sixth red team, groups 1 and 2).

Run as root, as the action's container runs flipgate: only then is the code another account."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flipgate.config.schema import CommandConfig
from flipgate.generator.command import Outcome, answer_cases, make_spec
from flipgate.git.repository import Git
from flipgate.llm.cache import Cache
from flipgate.model import Case

from support.accounts import alive, command_python, remove, shared_directory
from support.openai_server import FakeOpenAI
from support.prompts import ANSWER_FROM_CONTEXT
from support.runner_layout import CREDENTIAL, RunnerLayout, runner_layout

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root can run the code as another account")

PYTHON = command_python()
CASES = [Case(id=f"q{i}", query=f"What is the fee for item {i}?", context="The fee is $5.",
              category="pricing") for i in range(2)]
APP = """import json, os, sys
{body}
for line in sys.stdin:
    case = json.loads(line)
    print(json.dumps({{"id": case["id"], "response": answer(case)}}), flush=True)
"""


@pytest.fixture
def layout() -> Iterator[RunnerLayout]:
    made = runner_layout()
    try:
        yield made
    finally:
        made.remove()


def config() -> CommandConfig:
    return CommandConfig(command=f"{PYTHON} app.py", watch=("app.py",), timeout=10)


def answer(layout: RunnerLayout, sha: str, *, cache: Cache | None = None) -> Outcome:
    spec = make_spec(config(), source=".flipgate.yml", environ=layout.environ, concurrency=2)
    return asyncio.run(answer_cases(CASES, spec=spec, repo=layout.repo.path, sha=sha, git=Git(),
                                    identity="code", cache=cache, log=lambda line: None))


def responses(outcome: Outcome) -> set[str]:
    assert not outcome.errors, outcome.errors
    return {a.response for a in outcome.answers.values()}


def modes(layout: RunnerLayout) -> dict[str, int]:
    return {str(p): p.lstat().st_mode for p in [layout.root, *layout.root.rglob("*")]}


# -- the workspace, its credential, the cache and the runner's files ------------------------

def test_the_heads_code_reaches_no_credential_cache_entry_or_runner_file(layout: RunnerLayout) -> None:
    cache = Cache(layout.cache)
    cache.put({"kind": "command-answer", "code": "another PR's", "case": {}}, "a reply another PR paid for")
    body = f"""
def answer(case):
    reached = []
    try:
        if {CREDENTIAL!r} in open({str(layout.repo.path / '.git' / 'config')!r}).read():
            reached.append('credential')
    except OSError:
        pass
    for top, dirs, files in os.walk({str(layout.cache)!r}):
        for name in files:
            try:
                open(os.path.join(top, name)).read(); reached.append('cache ' + name)
            except OSError:
                pass
    for path in ({str(layout.output)!r}, {str(layout.summary)!r}):
        try:
            open(path).read(); reached.append('read ' + path)
        except OSError:
            pass
        try:
            open(path, 'a').write('verdict=success\\n'); reached.append('wrote ' + path)
        except OSError:
            pass
    return ' '.join(reached) or 'CLEAN'
"""
    sha = layout.repo.commit({"app.py": APP.format(body=body)}, message="head")
    layout.open_up()
    before = modes(layout)
    assert responses(answer(layout, sha, cache=cache)) == {"CLEAN"}
    assert layout.output.read_text() == "" and layout.summary.read_text() == ""
    after = modes(layout)   # (and the answers it cached since)
    assert {path: after[path] for path in before} == before   # every permission given back


def test_the_workspace_is_given_back_when_the_code_cannot_even_start(layout: RunnerLayout) -> None:
    sha = layout.repo.commit({"other.py": "pass\n"}, message="head without app.py")
    layout.open_up()
    before = modes(layout)
    outcome = answer(layout, sha)
    assert set(outcome.errors) == {"q0", "q1"}
    assert modes(layout) == before


def test_sigterm_to_flipgate_gives_the_workspace_back(layout: RunnerLayout) -> None:
    """`flipgate run` stopped while the head's code runs: the workspace it closed to other
    accounts is open again as the runner left it (an exit by signal runs no `finally`)."""
    shared = shared_directory()
    try:
        repo = layout.repo
        repo.commit({".flipgate.yml": "version: 1\ncases: cases.jsonl\ngenerator:\n"
                                      f"  command: {PYTHON} app.py\n  watch: [app.py]\n",
                     "cases.jsonl": '{"id": "a", "query": "q", "context": "c"}\n',
                     "app.py": "print('never')\n"}, message="base")
        repo.git("branch", "base", "HEAD")
        repo.commit({"app.py": f"import time\nopen({str(shared / 'started')!r}, 'w').write('1')\n"
                               "time.sleep(60)\n"}, message="head")
        layout.open_up()
        before = modes(layout)
        flipgate = shutil.which("flipgate", path=str(Path(sys.executable).parent))
        assert flipgate
        process = subprocess.Popen([flipgate, "run", "--repo", str(repo.path), "--base", "base",
                                    "--head", "HEAD", "--out", str(shared / "out"), "--no-cache"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, **layout.environ})
        deadline = time.monotonic() + 30
        while not (shared / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (shared / "started").exists()
        assert layout.repo.path.stat().st_mode & 0o007 == 0   # closed while the code runs
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
        assert modes(layout) == before
    finally:
        remove(shared)


# -- another run's processes -----------------------------------------------------------------

def test_the_heads_code_cannot_read_another_runs_confined_process(layout: RunnerLayout) -> None:
    """Another job on the same machine runs its application's code as flipgate once did, as
    `nobody`, with its own key in its environment."""
    secret = "sk-another-run-" + "5e1f" * 4
    other = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)"], user=65534, group=65534,
                             extra_groups=[], env={"NEEDLE": secret}, cwd="/")
    try:
        body = f"""
def answer(case):
    try:
        return 'FOUND' if {secret!r}.encode() in open('/proc/{other.pid}/environ', 'rb').read() else 'CLEAN'
    except OSError:
        return 'CLEAN'
"""
        sha = layout.repo.commit({"app.py": APP.format(body=body)}, message="head")
        layout.open_up()
        assert responses(answer(layout, sha)) == {"CLEAN"}
    finally:
        other.kill()
        other.wait()


# -- nothing outlives its ref ----------------------------------------------------------------

DAEMON = """import glob, time
def daemon():
    if os.fork():
        os._exit(0)
    os.setsid()
    if os.fork():
        os._exit(0)
    open({pidfile!r}, 'w').write(str(os.getpid()))
    end = time.monotonic() + 30
    while time.monotonic() < end:
        for path in glob.glob({pattern!r}):
            try:
                open(path, 'w').write('The fee is waived.')
            except OSError:
                pass
        time.sleep(0.005)
    os._exit(0)
first = os.fork()
if first == 0:
    daemon()
os.waitpid(first, 0)
while not os.path.exists({pidfile!r}):
    time.sleep(0.01)
def answer(case):
    return 'support'
"""


def test_a_setsid_double_fork_daemon_dies_with_its_ref_and_never_rewrites_the_next_suites_base(
        layout: RunnerLayout) -> None:
    shared = shared_directory()
    try:
        import tempfile
        pattern = os.path.join(tempfile.gettempdir(), "flipgate-command-*", "*", "answer.txt")
        support = layout.repo.commit({"app.py": APP.format(body=DAEMON.format(
            pidfile=str(shared / "daemon"), pattern=pattern))}, message="suite support's head")
        sales = layout.repo.commit({"answer.txt": "The fee is $5.",
                                    "app.py": APP.format(body="def answer(case):\n"
                                                              "    return open('answer.txt').read()\n")},
                                   message="suite sales' base")
        layout.open_up()
        assert responses(answer(layout, support)) == {"support"}
        daemon = int((shared / "daemon").read_text())
        assert not alive(daemon)
        assert responses(answer(layout, sales)) == {"The fee is $5."}
    finally:
        remove(shared)


# -- the end-to-end retriever's command, from the base -----------------------------------------

RETRIEVER = """import sys
sys.stdin.read()
reached = []
for path in ({config!r}, {output!r}):
    try:
        text = open(path).read()
        reached.append('credential' if {credential!r} in text else 'read ' + path)
    except OSError:
        pass
print(' '.join(reached) or 'CLEAN')
"""


def test_the_retrievers_command_reaches_no_credential_or_runner_file(
        layout: RunnerLayout, openai_server: FakeOpenAI) -> None:
    from click.testing import CliRunner

    from flipgate.cli import cli

    repo = layout.repo
    retriever = RETRIEVER.format(config=str(repo.path / ".git" / "config"),
                                 output=str(layout.output), credential=CREDENTIAL)
    repo.commit({".flipgate.yml": "version: 1\ncases: cases.jsonl\ngenerator: answer.prompty\n"
                                  "judge:\n  provider: offline\ne2e:\n"
                                  f"  command: {PYTHON} retrieve.py\n  timeout: 20\n",
                 "cases.jsonl": '{"id": "a", "query": "q", "context": "c", "category": "x"}\n',
                 "answer.prompty": ANSWER_FROM_CONTEXT, "retrieve.py": retriever}, message="base")
    repo.git("branch", "base", "HEAD")
    repo.commit({"answer.prompty": ANSWER_FROM_CONTEXT.replace("gpt-4o-mini", "gpt-4.1")})
    layout.open_up()
    out = layout.root / "out"
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(out), "--no-cache", "--e2e"],
                                env=layout.environ)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert [row["live_context"] for row in report["e2e"]["rows"]] == ["CLEAN"]


def test_what_the_code_leaves_in_the_shared_temporary_directories_goes_with_its_ref(
        layout: RunnerLayout) -> None:
    """The head's code of one suite leaves a file where the next suite's base code (trusted,
    but run after it) may look: a fixed path in /tmp or /dev/shm. It is gone when its ref is."""
    import tempfile
    import uuid
    names = [os.path.join(root, f"flipgate-planted-{uuid.uuid4().hex}")
             for root in ("/tmp", "/dev/shm", "/var/tmp", tempfile.gettempdir())
             if os.path.isdir(root)]
    body = f"""
for path in {names!r}:
    try:
        open(path, 'w').write('The fee is waived.')
    except OSError:
        pass
def answer(case):
    return 'planted'
"""
    sha = layout.repo.commit({"app.py": APP.format(body=body)}, message="head")
    layout.open_up()
    try:
        assert responses(answer(layout, sha)) == {"planted"}
        assert [name for name in names if os.path.lexists(name)] == []
    finally:
        for name in names:
            if os.path.lexists(name):
                os.unlink(name)


def test_the_code_of_an_account_without_a_passwd_entry_still_finds_its_name(
        layout: RunnerLayout) -> None:
    """A fresh account is named in no /etc/passwd; code that asks who it is (getpass, as
    cache libraries do) still gets a name, and its HOME is its own."""
    body = """import getpass
def answer(case):
    home = os.environ['HOME']
    return f"{getpass.getuser()} {os.access(home, os.W_OK)} {os.getuid() != 65534}"
"""
    sha = layout.repo.commit({"app.py": APP.format(body=body)}, message="head")
    layout.open_up()
    assert responses(answer(layout, sha)) == {"flipgate-code True True"}


def test_a_workspace_that_cannot_be_closed_runs_no_code(layout: RunnerLayout,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace flipgate cannot close to other accounts (a read-only mount, say): the code
    never starts, and every case is an error row naming the path, never an answer."""
    shared = shared_directory()
    try:
        body = f"open({str(shared / 'ran')!r}, 'w').write('1')\ndef answer(case):\n    return 'ran'\n"
        sha = layout.repo.commit({"app.py": APP.format(body=body)}, message="head")
        layout.open_up()
        chmod = os.chmod

        def refuse(path: object, mode: int, **kwargs: object) -> None:
            if os.fspath(path) == str(layout.repo.path):   # type: ignore[arg-type]
                raise OSError(30, "Read-only file system")
            chmod(path, mode, **kwargs)   # type: ignore[arg-type]

        monkeypatch.setattr(os, "chmod", refuse)
        outcome = answer(layout, sha)
        monkeypatch.undo()
        assert outcome.answers == {} and set(outcome.errors) == {"q0", "q1"}
        assert all(str(layout.repo.path) in error and "Read-only file system" in error
                   for error in outcome.errors.values())
        assert not (shared / "ran").exists()
        assert layout.output.stat().st_mode & 0o777 == 0o644   # what it closed, given back
    finally:
        remove(shared)
