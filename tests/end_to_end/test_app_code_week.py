"""The app-code team's day (issue 37), from the README's adopt steps, as a user and as root:
`flipgate init --command`, the setup it writes installing the application's dependency
(a wheel committed beside it: no network), the request preview, a first run that skips, and
a pull request whose code regresses, blocked. flipgate runs in a subprocess as each account:
as root from this virtualenv; as a user (an unprivileged uid) on the system's Python.

The application runs on the system's Python (Debian's is marked externally managed, PEP 668),
so `pip install --user` would fail there; the setup `init` writes does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from support.accounts import command_python, remove, shared_directory
from support.gitrepo import GitRepo
from support.wheels import REQUIREMENTS, WHEEL, wheel

PYTHON = command_python()
SITE = sysconfig.get_paths()["purelib"]      # this virtualenv's packages, flipgate's editable install
USER = 65534
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
CASES = [{"id": f"fee-{i}", "query": f"What is the fee for item {i}?",
          "context": f"The fee for item {i} is ${i}.", "category": "pricing"} for i in range(4)]
APP = """import json, sys
import feeformat
for line in sys.stdin:
    case = json.loads(line)
    print(json.dumps({"id": case["id"], "response": feeformat.say(ANSWER)}))
"""


def has_pip(python: str) -> bool:
    return subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0


def flipgate(account: str, repo: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`flipgate ARGS` in `repo`, as root from this venv, or as the user on the system Python."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "OPENAI_API_KEY": "unused-offline"}
    if account == "root":
        argv = [sys.executable, "-m", "flipgate", *args]
        return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    code = (f"import site, sys; site.addsitedir({SITE!r}); from flipgate.cli import cli; "
            "sys.argv[0] = 'flipgate'; cli()")
    return subprocess.run([PYTHON, "-c", code, *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=300, user=USER, group=USER, extra_groups=[])


@pytest.mark.skipif(not has_pip(PYTHON), reason="the system Python has no pip")
@pytest.mark.parametrize("account", ["root", "user"])
def test_the_app_code_teams_day_from_the_readme(account: str) -> None:
    if not AS_ROOT:
        pytest.skip("switching accounts needs root")
    shared = shared_directory()
    try:
        home = shared / "home"
        home.mkdir()
        repo = GitRepo.create(shared / "repo")
        repo.commit({"app/__init__.py": "", "app/answer.py": APP.replace("ANSWER", 'case["context"]'),
                     "requirements.txt": REQUIREMENTS, WHEEL: wheel()}, message="the app")
        subprocess.run(["chmod", "-R", "a+rwX", str(shared)], check=True)
        if account == "user":
            subprocess.run(["chown", "-R", f"{USER}:{USER}", str(shared)], check=True)

        def step(*args: str) -> subprocess.CompletedProcess[str]:
            return flipgate(account, repo.path, *args, home=home)

        # 1. init, as the README says for a prompt built in code.
        done = step("init", "--command", f"{PYTHON} -m app.answer")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "next:" in done.stdout and "replace OWNER/flipgate@v1" in done.stdout
        config = (repo.path / ".flipgate.yml").read_text()
        assert f"setup: \"{PYTHON} -m pip install --target .flipgate-site -q -r requirements.txt\"" in config
        # 2-3. Real cases, an offline judge, a small suite that may block.
        config = (config.replace("provider: openai", "provider: offline")
                  .replace("blocking_categories: [general]", "blocking_categories: [pricing]")
                  .replace("strict: false", "strict: true"))
        (repo.path / ".flipgate.yml").write_text(config)
        (repo.path / "eval/cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
        git = ["git", "-C", str(repo.path), "-c", f"safe.directory={repo.path}"]
        ident = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        for args in (["add", "-A"], [*ident, "commit", "-qm", "flipgate"], ["branch", "base"]):
            subprocess.run([*git, *args], check=True, capture_output=True)

        shown = step("replay", "--sample", "--case", "fee-2")
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["stdin"]["query"] == "What is the fee for item 2?"

        out, cache = str(shared / "out"), str(shared / "cache")
        first = step("run", "--base", "HEAD", "--head", "HEAD", "--out", out, "--cache", cache)
        assert first.returncode == 0, first.stderr
        assert "skipped" in Path(out, "comment.md").read_text()

        # A pull request whose code quotes a fee from memory: blocked.
        (repo.path / "app/answer.py").write_text(APP.replace("ANSWER", '"The fee is $99."'))
        subprocess.run([*git, *ident, "commit", "-qam", "from memory"], check=True, capture_output=True)
        gated = step("run", "--base", "base", "--head", "HEAD", "--out", out, "--cache", cache)
        assert gated.returncode == 1, gated.stderr
        report = json.loads(Path(out, "report.json").read_text())
        assert {row["verdict"] for row in report["rows"]} == {"regression"}
        says_account = "runs as an unprivileged account" in gated.stderr
        assert says_account is (account == "root"), gated.stderr
        assert "4 of 4 cases answered" in gated.stderr
        # The offline judge sent nothing; the application's code may have: the line says so.
        assert ("usage: no model requests from flipgate (the application's code sends its own "
                "requests, not counted here)") in gated.stderr
        assert "not counted here" not in first.stderr     # the skip ran no code
    finally:
        remove(shared)
