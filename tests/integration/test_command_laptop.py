"""The application's own code on a laptop as in the action (issue 37): the `setup` that
`flipgate init` writes installs where the command's Python finds it, on a distribution's
Python (PEP 668) and in a virtualenv; a run as root says which account runs the code and
what to name instead of an interpreter it cannot reach; output comes unbuffered; a silent
wait says what it waits for.

Each ref's code runs for real, in an export of a commit of a real repository."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from flipgate.config.starter import command_setup
from flipgate.generator.command import CommandSpec, Outcome, answer_ref, split
from flipgate.git.repository import Git
from flipgate.model import Case

from support.accounts import command_python, remove, shared_directory
from support.gitrepo import GitRepo
from support.wheels import REQUIREMENTS, WHEEL, wheel

PYTHON = command_python()
CASES = [Case(id=f"q{i}", query=f"What is the fee for item {i}?",
              context=f"The fee for item {i} is ${i}.", category="pricing") for i in range(3)]
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

# The application imports a dependency `setup` installs (a wheel committed beside it: no network).
APP = """import json, sys
import feeformat
for line in sys.stdin:
    case = json.loads(line)
    print(json.dumps({"id": case["id"], "response": feeformat.say(case["context"])}), flush=True)
"""


def make_ref(tmp_path: Path, files: dict[str, str | bytes]) -> tuple[GitRepo, str]:
    repo = GitRepo.create(tmp_path / "repo")
    return repo, repo.commit(files, message="ref")


def spec(command: str, *, setup: str | None = None, timeout: float = 30, path: str | None = None,
         quiet_seconds: float = 30, concurrency: int = 2, startup_timeout: float = 10) -> CommandSpec:
    return CommandSpec(argv=split(command, source="t", key="generator.command"),
                       setup=split(setup, source="t", key="generator.setup") if setup else None,
                       timeout=timeout, setup_timeout=120, startup_timeout=startup_timeout,
                       concurrency=concurrency, quiet_seconds=quiet_seconds,
                       env={"PATH": path or os.environ["PATH"]})


def run(repo: GitRepo, sha: str, the_spec: CommandSpec, log: list[str]) -> Outcome:
    return asyncio.run(answer_ref(CASES, spec=the_spec, repo=repo.path, sha=sha, git=Git(),
                                  log=log.append))


def has_pip(python: str) -> bool:
    return subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0


def app_repo(tmp_path: Path) -> tuple[GitRepo, str]:
    return make_ref(tmp_path, {"app.py": APP, "requirements.txt": REQUIREMENTS, WHEEL: wheel()})


@pytest.mark.skipif(not has_pip(PYTHON), reason="this Python has no pip")
def test_inits_setup_installs_where_a_system_python_finds_it(tmp_path: Path) -> None:
    """The system Python (Debian's is marked externally managed: `pip install --user` fails
    there): the setup `init` writes installs, and the command imports what it installed."""
    command = f"{PYTHON} app.py"
    setup = command_setup(command, ["app.py", "requirements.txt"])
    assert setup is not None and "--user" not in setup and setup.startswith(PYTHON)
    repo, sha = app_repo(tmp_path)
    log: list[str] = []
    outcome = run(repo, sha, spec(command, setup=setup), log)
    assert outcome.errors == {}, (outcome.errors, log)
    assert outcome.answers["q1"].response == "Per our price list: The fee for item 1 is $1."


@pytest.mark.skipif(not has_pip(PYTHON), reason="this Python has no pip")
def test_inits_setup_installs_where_a_venvs_python_finds_it(tmp_path: Path) -> None:
    """A virtualenv (made where the command's account may reach it): the same setup works."""
    shared = shared_directory()
    try:
        venv = shared / "venv"
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                       check=True)
        for path in (shared, venv):
            path.chmod(0o755)
        python = str(venv / "bin" / "python")
        command = f"{python} app.py"
        setup = command_setup(command, ["app.py", "requirements.txt"])
        assert setup is not None and setup.startswith(python)
        repo, sha = app_repo(tmp_path)
        log: list[str] = []
        outcome = run(repo, sha, spec(command, setup=setup), log)
        assert outcome.errors == {}, (outcome.errors, log)
        assert outcome.answers["q0"].response.startswith("Per our price list:")
    finally:
        remove(shared)


@pytest.mark.skipif(not Path("/usr/lib/python3.11/EXTERNALLY-MANAGED").exists()
                    or PYTHON != "/usr/bin/python3" or not has_pip(PYTHON),
                    reason="needs Debian's Python 3.11, marked externally managed (PEP 668)")
def test_a_user_install_on_a_pep_668_python_says_the_install_that_works(tmp_path: Path) -> None:
    repo, sha = app_repo(tmp_path)
    log: list[str] = []
    outcome = run(repo, sha, spec(f"{PYTHON} app.py",
                                  setup=f"{PYTHON} -m pip install --user -q -r requirements.txt"), log)
    error = outcome.errors["q0"]
    assert error.startswith("setup exited with status 1")
    assert "pip install --target .flipgate-site" in error and "PEP 668" in error, error
    assert outcome.answers == {}


@pytest.mark.skipif(not AS_ROOT, reason="only root hands the code to another account")
def test_as_root_an_interpreter_under_a_private_directory_is_named_with_what_to_use(
        tmp_path: Path) -> None:
    """A dev container's venv under /root: the account that runs the code cannot reach it,
    and the one line says which account, why, which directory, and what to name instead."""
    shared = shared_directory()
    try:
        home = shared / "root"
        private = home / ".venv" / "bin"
        private.mkdir(parents=True)
        home.chmod(0o700)
        (private / "python").symlink_to(PYTHON)
        repo, sha = make_ref(tmp_path, {"app.py": "print('never')\n"})
        log: list[str] = []
        outcome = run(repo, sha, spec(f"{private / 'python'} -m pip --version",
                                      setup=f"{private / 'python'} -m pip --version"), log)
    finally:
        remove(shared)
    error = outcome.errors["q0"]
    assert "cannot start setup" in error and "Permission denied" in error
    assert "an unprivileged account (uid" in error and "because flipgate runs as root" in error
    assert f"which links to {Path(PYTHON).resolve()}" in error
    assert f"({home} is private to its owner)" in error, error
    assert "/usr/bin/python3" in error and f"a venv outside {home}" in error


@pytest.mark.skipif(not AS_ROOT, reason="only root hands the code to another account")
def test_as_root_a_command_found_on_path_under_a_private_directory_is_named(tmp_path: Path) -> None:
    shared = shared_directory()
    try:
        private = shared / "home" / "bin"
        private.mkdir(parents=True)
        (shared / "home").chmod(0o700)
        (private / "adapter").symlink_to(PYTHON)
        repo, sha = make_ref(tmp_path, {"app.py": "print('never')\n"})
        log: list[str] = []
        outcome = run(repo, sha, spec("adapter app.py", path=f"{private}:/nonexistent"), log)
    finally:
        remove(shared)
    error = outcome.errors["q0"]
    assert error.startswith("cannot start 'adapter': Permission denied"), error
    assert f"may not reach {private / 'adapter'}" in error and "a venv outside" in error


def test_a_command_not_on_its_path_says_so(tmp_path: Path) -> None:
    repo, sha = make_ref(tmp_path, {"app.py": "print('never')\n"})
    log: list[str] = []
    outcome = run(repo, sha, spec("no-such-adapter app.py", path="/nonexistent"), log)
    assert "not found on the PATH the command receives" in outcome.errors["q2"]


def test_an_adapter_that_never_flushes_still_answers_while_it_runs(tmp_path: Path) -> None:
    """`print` without flush, and the adapter stays up after its last answer: its answers
    arrive (its output is unbuffered), and progress shows as they do."""
    adapter = ("import json, sys, time\n"
               "for line in sys.stdin:\n"
               "    case = json.loads(line)\n"
               "    print(json.dumps({'id': case['id'], 'response': case['context']}))\n"
               "time.sleep(60)\n")
    repo, sha = make_ref(tmp_path, {"app.py": adapter})
    log: list[str] = []
    outcome = run(repo, sha, spec(f"{PYTHON} app.py", timeout=20), log)
    assert outcome.errors == {}, (outcome.errors, log)
    assert len(outcome.answers) == 3
    assert "  [flipgate] 3 of 3 cases answered" in log


def test_a_silent_wait_says_what_it_waits_for_before_the_timeout(tmp_path: Path) -> None:
    adapter = "import sys, time\nsys.stdin.read()\ntime.sleep(60)\n"
    repo, sha = make_ref(tmp_path, {"app.py": adapter})
    log: list[str] = []
    # The bounds are injected small: a 0.2 s silence is said, a case fails after 1 s.
    outcome = run(repo, sha, spec(f"{PYTHON} app.py", timeout=1, quiet_seconds=0.2,
                                  concurrency=3, startup_timeout=0.5), log)
    assert set(outcome.errors) == {"q0", "q1", "q2"}
    waits = [line for line in log if "waiting for answers" in line]
    assert waits, log
    assert "waiting for answers: 3 of 3 cases sent, 0 answered" in waits[0]
    assert "a case fails after 1 s" in waits[0]


def test_a_python_without_pip_is_named_with_what_to_install(tmp_path: Path) -> None:
    shared = shared_directory()
    try:
        venv = shared / "bare"
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
        for path in (shared, venv):
            path.chmod(0o755)
        python = str(venv / "bin" / "python")
        repo, sha = app_repo(tmp_path)
        log: list[str] = []
        outcome = run(repo, sha, spec(f"{python} app.py",
                                      setup=command_setup(f"{python} app.py", ["requirements.txt"])), log)
    finally:
        remove(shared)
    error = outcome.errors["q0"]
    assert error.startswith("setup exited with status 1: ") and "No module named pip" in error
    assert "this Python has no pip: install your distribution's python3-pip" in error
