"""Attacks from the application's own code, run as the generator: a pull request's code
(or its setup) that reads what it must not, floods the log, forges a workflow command,
leaves a child behind, hangs, or answers what it was not asked. Each ends as an error row
with its reason (never a pass) or as nothing at all; the other cases still answer.

Each ref's code runs for real, in an export of a commit of a real repository, as the
action runs it (as "nobody" when flipgate is root)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from flipgate.generator.command import CommandSpec, Outcome, answer_ref, command_environment
from flipgate.git.repository import Git
from flipgate.model import Case

from support.accounts import command_python, remove, shared_directory
from support.gitrepo import GitRepo

PYTHON = command_python()
CASES = [Case(id=f"q{i}", query=f"What is the fee for item {i}?",
              context=f"The fee for item {i} is ${i}.", category="pricing") for i in range(3)]
SECRET = "sk-flipgate-judge-secret-51c2"

# An application that answers every case with its context, after `before(case)`.
APP = """import json, os, sys
def before(case):
    pass
{body}
for line in sys.stdin:
    case = json.loads(line)
    answer = before(case)
    print(json.dumps({{"id": case["id"], "response": answer if answer is not None else case["context"]}}), flush=True)
"""


def app(body: str) -> str:
    return APP.format(body=body)


def make_ref(tmp_path: Path, files: dict[str, str]) -> tuple[GitRepo, str]:
    repo = GitRepo.create(tmp_path / "repo")
    sha = repo.commit(files, message="ref")
    return repo, sha


def spec(*, timeout: float = 5, setup: tuple[str, ...] | None = None, setup_timeout: float = 5,
         env: dict[str, str] | None = None, concurrency: int = 2,
         max_line_bytes: int = 1024 * 1024, startup_timeout: float = 5) -> CommandSpec:
    return CommandSpec(argv=(PYTHON, "app.py"), setup=setup, timeout=timeout,
                       setup_timeout=setup_timeout, concurrency=concurrency,
                       startup_timeout=startup_timeout,
                       env={"PATH": os.environ["PATH"], **(env or {})},
                       max_line_bytes=max_line_bytes)


def run(repo: GitRepo, sha: str, the_spec: CommandSpec, log: list[str] | None = None,
        cases: list[Case] = CASES) -> Outcome:
    return asyncio.run(answer_ref(cases, spec=the_spec, repo=repo.path, sha=sha, git=Git(),
                                  log=(log.append if log is not None else lambda line: None)))


def responses(outcome: Outcome) -> dict[str, str]:
    return {case_id: answer.response for case_id, answer in outcome.answers.items()}


# -- what it may read --------------------------------------------------------------------

def test_the_environment_holds_only_the_listed_variables_never_a_token() -> None:
    environ = {"PATH": "/usr/bin", "HOME": "/root", "LANG": "C.UTF-8", "OPENAI_API_KEY": SECRET,
               "GITHUB_TOKEN": "ghs_x", "INPUT_GITHUB-TOKEN": "ghs_y", "GITHUB_WORKSPACE": "/w",
               "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc", "APP_KEY": "k"}
    env = command_environment(environ, ["APP_KEY", "GITHUB_TOKEN"], home=Path("/tmp/h"))
    assert env == {"PATH": "/usr/bin", "LANG": "C.UTF-8", "HOME": "/tmp/h", "APP_KEY": "k"}


def test_a_head_reading_the_judges_key_and_the_token_finds_nothing(tmp_path: Path) -> None:
    body = ("def before(case):\n"
            "    seen = [k for k in os.environ if k.startswith(('GITHUB', 'OPENAI', 'INPUT', 'ACTIONS'))]\n"
            "    return ' '.join(sorted(seen)) or 'CLEAN'\n")
    repo, sha = make_ref(tmp_path, {"app.py": app(body)})
    environ = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": SECRET, "GITHUB_TOKEN": "ghs_x",
               "GITHUB_WORKSPACE": str(repo.path)}
    outcome = run(repo, sha, spec(env=command_environment(environ, [], home=tmp_path / "h")))
    assert responses(outcome) == {"q0": "CLEAN", "q1": "CLEAN", "q2": "CLEAN"}


def test_a_head_reading_the_workspace_or_its_git_finds_nothing(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only another account keeps the workspace out of reach")
    body = ("def before(case):\n"
            "    found = []\n"
            f"    for path in ({str(tmp_path / 'repo' / '.git' / 'config')!r}, "
            f"{str(tmp_path / 'repo' / 'app.py')!r}, '.git/config', '../.git/config'):\n"
            "        try:\n"
            "            open(path).read(); found.append(path)\n"
            "        except OSError:\n"
            "            pass\n"
            "    return ' '.join(found) or 'CLEAN'\n")
    repo, sha = make_ref(tmp_path, {"app.py": app(body)})
    assert set(responses(run(repo, sha, spec())).values()) == {"CLEAN"}


def test_a_head_cannot_reach_the_base_refs_worktree(tmp_path: Path) -> None:
    """The base's code leaves its worktree's path in a shared place; the head's code, run
    after it, looks there and tries to read and write it."""
    shared = shared_directory()
    try:
        base_body = ("def before(case):\n"
                     f"    open({str(shared / 'base-path')!r}, 'w').write(os.getcwd())\n")
        head_body = ("def before(case):\n"
                     f"    where = open({str(shared / 'base-path')!r}).read()\n"
                     "    try:\n"
                     "        os.listdir(where); open(os.path.join(where, 'app.py'), 'a').write('#')\n"
                     "        return 'REACHED ' + where\n"
                     "    except OSError:\n"
                     "        return 'CLEAN'\n")
        repo = GitRepo.create(tmp_path / "repo")
        base = repo.commit({"app.py": app(base_body)}, message="base")
        head = repo.commit({"app.py": app(head_body)}, message="head")
        assert set(responses(run(repo, base, spec())).values()) == {"The fee for item 0 is $0.",
                                                                    "The fee for item 1 is $1.",
                                                                    "The fee for item 2 is $2."}
        assert set(responses(run(repo, head, spec())).values()) == {"CLEAN"}
    finally:
        remove(shared)


# -- what it may print ---------------------------------------------------------------------

def test_a_workflow_command_or_escape_on_stderr_reaches_the_log_inert(tmp_path: Path) -> None:
    body = ("def before(case):\n"
            "    sys.stderr.write('::add-mask::x\\n::error title=pwn::forged\\n\\x1b[31mred\\x1b[0m\\n'"
            " + '##[group]g\\n' + 'x' * 10000 + '\\n'); sys.stderr.flush()\n")
    repo, sha = make_ref(tmp_path, {"app.py": app(body)})
    log: list[str] = []
    outcome = run(repo, sha, spec(), log)
    assert not outcome.errors
    assert log, "what the command prints on stderr is shown"
    for line in log:
        assert "\n" not in line and "\x1b" not in line
        assert not line.lstrip().startswith(("::", "##["))
        assert "::" not in line
        assert len(line) < 600
    assert any("forged" in line for line in log)


def test_a_100_mb_line_on_stdout_is_an_error_row_at_the_cap(tmp_path: Path) -> None:
    body = ("def before(case):\n"
            "    if case['id'] == 'q1':\n"
            "        sys.stdout.write('{\"id\": \"q1\", \"response\": \"' + 'x' * 100_000_000); sys.stdout.flush()\n")
    repo, sha = make_ref(tmp_path, {"app.py": app(body)})
    started = time.monotonic()
    outcome = run(repo, sha, spec(concurrency=1))
    assert time.monotonic() - started < 10
    assert "q1" in outcome.errors and "longer than" in outcome.errors["q1"]
    assert "q1" not in outcome.answers
    assert outcome.answers["q0"].response == "The fee for item 0 is $0."


def test_100_mb_on_stderr_keeps_the_log_short(tmp_path: Path) -> None:
    body = ("def before(case):\n"
            "    if case['id'] == 'q0':\n"
            "        chunk = 'e' * 1048576\n"
            "        for _ in range(100):\n"
            "            sys.stderr.write(chunk)\n"
            "        sys.stderr.write('\\n'); sys.stderr.flush()\n")
    repo, sha = make_ref(tmp_path, {"app.py": app(body)})
    log: list[str] = []
    outcome = run(repo, sha, spec(timeout=20), log)
    assert set(outcome.answers) == {"q0", "q1", "q2"}
    assert sum(len(line) for line in log) < 20_000


# -- what it may leave running, and how long it may take -----------------------------------

def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_a_child_that_outlives_the_command_is_ended(tmp_path: Path) -> None:
    shared = shared_directory()
    try:
        body = ("import subprocess\n"
                "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
                " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
                f"open({str(shared / 'child.pid')!r}, 'w').write(str(child.pid))\n")
        repo, sha = make_ref(tmp_path, {"app.py": app(body)})
        outcome = run(repo, sha, spec())
        assert set(outcome.answers) == {"q0", "q1", "q2"}
        pid = int((shared / "child.pid").read_text())
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        assert not _alive(pid)
    finally:
        remove(shared)


def test_a_case_never_answered_is_an_error_row_and_the_others_answer(tmp_path: Path) -> None:
    body = ("import threading\n"
            "def before(case):\n"
            "    if case['id'] == 'q1':\n"
            "        return 'SKIP'\n")
    text = app(body).replace('    print(json.dumps(',
                             '    if answer == "SKIP":\n        continue\n    print(json.dumps(')
    text += "import time\ntime.sleep(60)\n"   # and it stays, never answering
    repo, sha = make_ref(tmp_path, {"app.py": text})
    started = time.monotonic()
    outcome = run(repo, sha, spec(timeout=0.5))
    assert time.monotonic() - started < 5
    assert outcome.errors == {"q1": "no answer within 0.5 s"}
    assert sorted(outcome.answers) == ["q0", "q2"]


def test_a_command_that_never_answers_anything_stops_at_its_start_bound(tmp_path: Path) -> None:
    repo, sha = make_ref(tmp_path, {"app.py": "import sys, time\nsys.stdin.readline()\ntime.sleep(60)\n"})
    started = time.monotonic()
    outcome = run(repo, sha, spec(timeout=0.3, startup_timeout=0.4))
    assert time.monotonic() - started < 5
    assert not outcome.answers
    assert set(outcome.errors.values()) == {
        "no answer within 0.7 s (the command's first answer, its start included)"}


def test_a_slow_start_does_not_count_against_the_first_cases(tmp_path: Path) -> None:
    """Importing a model SDK may take longer than a case's `timeout`: the first answer
    has `startup_timeout` more, and every case still gets its whole `timeout` after it."""
    repo, sha = make_ref(tmp_path, {"app.py": "import time\ntime.sleep(0.8)\n" + app("")})
    outcome = run(repo, sha, spec(timeout=0.5, startup_timeout=3))
    assert sorted(outcome.answers) == ["q0", "q1", "q2"] and not outcome.errors


def test_a_setup_that_never_ends_stops_at_its_bound_and_nothing_runs(tmp_path: Path) -> None:
    shared = shared_directory()
    try:
        body = f"open({str(shared / 'ran')!r}, 'w').write('ran')\n"
        repo, sha = make_ref(tmp_path, {"app.py": app(body),
                                        "setup.py": "import time\ntime.sleep(60)\n"})
        started = time.monotonic()
        outcome = run(repo, sha, spec(setup=(PYTHON, "setup.py"), setup_timeout=0.5))
        assert time.monotonic() - started < 8
        assert not outcome.answers
        assert set(outcome.errors.values()) == {"setup did not finish within 0.5 s"}
        assert set(outcome.errors) == {"q0", "q1", "q2"}
        assert not (shared / "ran").exists()
    finally:
        remove(shared)


def test_a_failing_setup_is_every_cases_error_with_its_last_words(tmp_path: Path) -> None:
    repo, sha = make_ref(tmp_path, {"app.py": app(""),
                                    "setup.py": "import sys\nprint('no such package', file=sys.stderr)\nsys.exit(3)\n"})
    outcome = run(repo, sha, spec(setup=(PYTHON, "setup.py")))
    assert not outcome.answers
    assert set(outcome.errors.values()) == {"setup exited with status 3: no such package"}


# -- what it may answer --------------------------------------------------------------------

@pytest.mark.parametrize(("line", "reason"), [
    ("not json at all", "printed a line that is not a JSON object"),
    ('{"id": "q9", "response": "x"}', "answered id 'q9', which it was not asked"),
    ('{"id": "q1", "response": 7}', "printed a line without a string \"response\""),
    ('["q1", "x"]', "printed a line that is not a JSON object"),
], ids=["not-json", "unknown-id", "not-text", "array"])
def test_a_line_that_is_not_an_answer_is_an_error_row_never_a_pass(
        tmp_path: Path, line: str, reason: str) -> None:
    body = ("def before(case):\n"
            "    if case['id'] == 'q1':\n"
            f"        print({line!r}, flush=True)\n"
            "        sys.exit(0)\n")
    repo, sha = make_ref(tmp_path, {"app.py": app(body)})
    outcome = run(repo, sha, spec(concurrency=1))
    assert outcome.answers["q0"].response == "The fee for item 0 is $0."
    assert "q1" in outcome.errors and outcome.errors["q1"].startswith(reason)
    assert "q1" not in outcome.answers


def test_a_duplicate_answer_makes_the_case_an_error(tmp_path: Path) -> None:
    body = ("def before(case):\n"
            "    if case['id'] == 'q0':\n"
            "        print(json.dumps({'id': 'q0', 'response': 'first'}), flush=True)\n")
    repo, sha = make_ref(tmp_path, {"app.py": app(body)})
    outcome = run(repo, sha, spec(concurrency=1))
    assert outcome.errors["q0"] == "answered id 'q0' twice"
    assert "q0" not in outcome.answers
    assert sorted(outcome.answers) == ["q1", "q2"]


def test_a_crash_is_an_error_row_for_every_case_not_answered(tmp_path: Path) -> None:
    body = ("def before(case):\n"
            "    if case['id'] == 'q1':\n"
            "        raise SystemExit('boom: the model client is missing')\n")
    repo, sha = make_ref(tmp_path, {"app.py": app(body)})
    outcome = run(repo, sha, spec(concurrency=1))
    assert sorted(outcome.answers) == ["q0"]
    assert outcome.errors == {
        "q1": "the command exited with status 1 before answering: boom: the model client is missing",
        "q2": "the command exited with status 1 before answering: boom: the model client is missing"}


def test_answers_may_come_in_any_order_and_concurrency_bounds_what_is_outstanding(
        tmp_path: Path) -> None:
    text = ("import json, sys\n"
            "pending, most = [], 0\n"
            "for line in sys.stdin:\n"
            "    pending.append(json.loads(line))\n"
            "    most = max(most, len(pending))\n"
            "    if len(pending) == 2:\n"
            "        for case in reversed(pending):\n"
            "            print(json.dumps({'id': case['id'], 'response': f\"{case['id']} most={most}\"}), flush=True)\n"
            "        pending = []\n"
            "for case in pending:\n"
            "    print(json.dumps({'id': case['id'], 'response': 'late'}), flush=True)\n")
    cases = [Case(id=f"c{i}", query="q", context="c") for i in range(5)]
    repo, sha = make_ref(tmp_path, {"app.py": text})
    outcome = run(repo, sha, spec(concurrency=2, timeout=2), cases=cases)
    assert responses(outcome) == {"c0": "c0 most=2", "c1": "c1 most=2", "c2": "c2 most=2",
                                  "c3": "c3 most=2", "c4": "late"}
    assert outcome.errors == {}


def test_every_case_field_reaches_the_command(tmp_path: Path) -> None:
    text = ("import json, sys\n"
            "for line in sys.stdin:\n"
            "    case = json.loads(line)\n"
            "    print(json.dumps({'id': case['id'], 'response': json.dumps(case, sort_keys=True)}), flush=True)\n")
    case = Case(id="x", query="Q", context="C", category="policy", ground_truth="G",
                extra={"lang": "fr"})
    repo, sha = make_ref(tmp_path, {"app.py": text})
    outcome = run(repo, sha, spec(), cases=[case])
    assert json.loads(outcome.answers["x"].response) == {
        "id": "x", "query": "Q", "context": "C", "category": "policy", "ground_truth": "G",
        "lang": "fr"}


# -- flipgate stopped while the code runs --------------------------------------------------

def test_sigterm_to_flipgate_ends_the_commands_group(tmp_path: Path) -> None:
    """`flipgate run` in a terminal or CI, stopped (SIGTERM) while the head's code is running:
    the code and the child it forked end too, though they run in a session of their own."""
    import shutil
    import signal
    import subprocess
    import sys

    shared = shared_directory()
    try:
        body = ("import subprocess\n"
                "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                f"open({str(shared / 'pids')!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
                "import time\ntime.sleep(60)\n")
        repo = GitRepo.create(tmp_path / "repo")
        repo.commit({".flipgate.yml": "version: 1\ncases: cases.jsonl\ngenerator:\n"
                                      f"  command: {PYTHON} app.py\n  watch: [app.py]\n",
                     "cases.jsonl": '{"id": "a", "query": "q", "context": "c"}\n',
                     "app.py": app("")}, message="base")
        repo.branch("base", "HEAD")
        repo.commit({"app.py": app(body)}, message="head")
        flipgate = shutil.which("flipgate", path=str(Path(sys.executable).parent))
        assert flipgate
        scratch = shared_directory()   # flipgate's TMPDIR: where it exports each ref's code
        process = subprocess.Popen([flipgate, "run", "--repo", str(repo.path), "--base", "base",
                                    "--head", "HEAD", "--out", str(tmp_path / "out"), "--no-cache"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, "TMPDIR": str(scratch)})
        deadline = time.monotonic() + 30
        while not (shared / "pids").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        pids = [int(p) for p in (shared / "pids").read_text().split()]
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=10)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in pids)
        # ... and the export of the ref's code is removed, as at a normal end.
        assert not [p.name for p in scratch.iterdir() if p.name.startswith("flipgate-command-")]
    finally:
        remove(shared)
        remove(scratch)


SNOOP = r"""import json, os, sys
secret = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "needle")).read()[::-1]
found = []
def look(pid):
    for name in ("environ", "cmdline", "mem"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                data = f.read(1 << 20) if name != "mem" else b"opened"
        except OSError:
            continue
        if name == "mem" or secret.encode() in data:
            found.append(f"{pid}/{name}")
def parent(pid):
    try:
        return int(open(f"/proc/{pid}/status").read().split("PPid:")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return 0
def runs_flipgate(pid):
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        return False
    return any(os.path.basename(arg) == b"flipgate" for arg in argv)
ancestors = []
pid = os.getppid()
while pid > 1:
    look(pid)
    ancestors.append(pid)
    pid = parent(pid)
# Every process of this run: flipgate's and all it started (the other ref's code, git, the
# Prompty child). Another job's processes on the machine are not this run's to judge.
flipgate = next((pid for pid in ancestors if runs_flipgate(pid)), os.getppid())
def of_this_run(pid):
    while pid > 1:
        if pid == flipgate:
            return True
        pid = parent(pid)
    return False
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) != os.getpid() and of_this_run(int(entry)):
        look(entry)
leaked = [k for k in os.environ if os.environ[k] == secret]
answer = "FOUND " + " ".join(sorted(set(found + leaked))) if found or leaked else "CLEAN"
for line in sys.stdin:
    print(json.dumps({"id": json.loads(line)["id"], "response": answer}), flush=True)
"""


def test_a_heads_code_cannot_read_the_judges_key_from_flipgates_process(tmp_path: Path) -> None:
    """flipgate runs as a real process with the judge's key and a GitHub token in its
    initial environment; the head's code walks up its parents and every process of the run
    (flipgate's and all it started: not another job's, which the machine may be running)."""
    import shutil
    import subprocess
    import sys

    secret = "sk-flipgate-judge-" + "7f3a9c" * 3
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": "version: 1\ncases: cases.jsonl\ngenerator:\n"
                                  f"  command: {PYTHON} app.py\n  watch: [app.py]\n",
                 "cases.jsonl": '{"id": "a", "query": "q", "context": "CLEAN"}\n',
                 "needle": secret[::-1], "app.py": app("")}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"app.py": SNOOP}, message="head")
    flipgate = shutil.which("flipgate", path=str(Path(sys.executable).parent))
    assert flipgate
    env = {**os.environ, "OPENAI_API_KEY": secret, "GITHUB_TOKEN": secret}
    subprocess.run([flipgate, "run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                    "--out", str(tmp_path / "out"), "--no-cache"], env=env, capture_output=True,
                   timeout=60, check=False)
    answers = [json.loads(line) for line in (tmp_path / "out" / "answers.jsonl").read_text().splitlines()]
    assert [answer["candidate"] for answer in answers] == ["CLEAN"]
