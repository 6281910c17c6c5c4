"""Build the action's image with podman and run it the way the GitHub runner runs a Docker action.

The runner starts the container as root on a workspace its own user owns (uid 1001), passes
each input as `INPUT_<NAME>` with the hyphens kept (`INPUT_GITHUB-TOKEN`), by name (`-e NAME`,
the value from the environment), and mounts the event payload and the file-command files
(GITHUB_OUTPUT, GITHUB_STEP_SUMMARY). Here the GitHub REST API and the model endpoint are the
test suite's loopback servers (tests/support), reached through `--network host`.

Scenarios, in one workspace (a one-commit-deep clone of the base, so the action must fetch):
1. a pull_request event whose head invents a fee: exit 1, a blocking comment, a failure status,
   the outputs and the step summary, the key from the input sent to the model endpoint;
2. `/flipgate run` from a maintainer: exit 1 again, the same comment edited, and no new
   generation request (the cache the first run wrote is readable);
3. a `/flipgate run` comment on a plain issue: exit 0, ignored, no API call.
Then: everything in the workspace belongs to uid 1001, which can delete all of it.
In a second workspace, whose generator is the application's own code (`generator.command`):
4. a pull_request whose head's code invents the fee: exit 1, blocked, each ref's code run as an
   account of its own (confine.FRESH_IDS), which cannot read the workspace's .git/config
   without the runner's variables, and no generation request to the model endpoint;
5. the `relink` step after it: another server's URL refused (exit 2, no API call); this run's
   artifact URL edits the comment to link it (exit 0).

Usage: scripts/container-smoke [--base IMAGE] [--image TAG] [--no-build] [--keep]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.github_server import ACTIONS_BOT, FakeGitHub  # noqa: E402
from support.gitrepo import GitRepo  # noqa: E402
from support.openai_server import FakeOpenAI  # noqa: E402
from support.prompts import WITH_SYSTEM  # noqa: E402

RUNNER_UID = 1001  # the GitHub runner's user
PR, ISSUE, APP_PR = 42, 43, 44
SERVER_URL, RUN_ID = "https://github.example.com", "4242"
# The accounts flipgate, as root, runs each ref's code as: fresh ones (confine.py).
FRESH_IDS = range(0x40000000, 0x7FFF0000)
STATUS_CONTEXT = "flipgate-smoke"
# A gate's comment carries its status context's marker (interface.md, "GitHub mode, continued").
MARKER = f"<!-- flipgate:{STATUS_CONTEXT} -->"
MODEL_KEY = "sk-smoke-from-the-input"
BLOCKED = "flipgate blocked this change"
PAYLOADS = ROOT / "tests" / "fixtures" / "github"
RUN_TIMEOUT = 600
DETAIL_LIMIT = 1500  # characters of a failed check's detail shown
# Inside the container, as the runner mounts them.
WORKSPACE, WORKFLOW, FILE_COMMANDS, HOME, ORIGIN = (
    "/github/workspace", "/github/workflow", "/github/file_commands", "/github/home",
    "/github/origin")

CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [policy]
  strict: true  # two cases: let the same-judge re-score block
"""
PROMPTY = WITH_SYSTEM
CASES = "".join(json.dumps(case) + "\n" for case in [
    {"id": "refund-007", "category": "policy", "query": "How long do refunds take?",
     "context": "Refunds are issued within 30 days of the request."},
    {"id": "card-002", "category": "cards", "query": "Is a replacement card free?",
     "context": "One replacement card a year is free of charge."},
])
# The application's own code as the generator: it answers from the context, and says on stderr
# (which the log shows) which account it runs as and which of the runner's variables it got.
APP_CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator:
  command: python answer.py
  timeout: 60
  watch: [answer.py]
judge:
  provider: openai
  model: judge-pinned
gate:
  blocking_categories: [policy]
  strict: true
"""
APP = """\
import json, os, sys
leaked = sorted(k for k in os.environ if k.startswith(("INPUT_", "GITHUB_", "ACTIONS_", "OPENAI_")))
try:
    open("/github/workspace/.git/config").read()
    workspace = "read"
except OSError:
    workspace = "closed"
print(f"smoke-app uid={os.getuid()} workspace={workspace} leaked={leaked}", file=sys.stderr,
      flush=True)
for line in sys.stdin:
    case = json.loads(line)
    answer = case["context"]FEE
    print(json.dumps({"id": case["id"], "response": answer}), flush=True)
"""
BASE_APP = APP.replace("FEE", "")
HEAD_APP = APP.replace("FEE", ' + (" A $12 processing fee applies." if "Refunds" in case["context"]'
                                 ' else "")')
CAREFUL = "Answer only from the context."
GENEROUS = "Be helpful and complete; add whatever the customer may need."


def scripted_generation(body: dict[str, Any]) -> str:
    """The context, except that the generous prompt invents a fee for refunds."""
    system = body["messages"][0]["content"]
    context = body["messages"][-1]["content"].split("Context: ", 1)[1].split("\n", 1)[0]
    return context + (" A $12 processing fee applies." if "helpful" in system
                      and "Refunds" in context else "")


# -- checks ---------------------------------------------------------------------------

@dataclass
class Checks:
    failed: list[str] = field(default_factory=list)
    passed: int = 0

    def expect(self, ok: bool, what: str, detail: Any = "") -> None:
        if ok:
            self.passed += 1
            print(f"  ok    {what}")
        else:
            self.failed.append(what)
            text = str(detail)
            if len(text) > DETAIL_LIMIT:
                text = text[:DETAIL_LIMIT] + f"... ({len(text) - DETAIL_LIMIT} more characters)"
            print(f"  FAIL  {what}" + (f": {text}" if text else ""))


# -- the runner's side ----------------------------------------------------------------

@dataclass
class Workspace:
    """The runner's directories on the host: workspace, event, file commands, home."""

    top: Path
    origin: GitRepo
    base: str
    head: str

    @property
    def repo(self) -> Path:
        return self.top / "workspace"

    @property
    def output(self) -> Path:
        return self.top / "file_commands" / "output"

    @property
    def summary(self) -> Path:
        return self.top / "file_commands" / "summary"

    def reset_file_commands(self) -> None:
        for path in (self.output, self.summary):
            path.write_text("")
            os.chown(path, RUNNER_UID, RUNNER_UID)

    def write_event(self, event: Mapping[str, Any]) -> None:
        path = self.top / "workflow" / "event.json"
        path.write_text(json.dumps(event))
        os.chown(path, RUNNER_UID, RUNNER_UID)

    def outputs(self) -> dict[str, str]:
        pattern = r"^(?P<name>[\w-]+)<<(?P<delim>\S+)\n(?P<value>.*?)\n(?P=delim)$"
        return {m["name"]: m["value"]
                for m in re.finditer(pattern, self.output.read_text(), re.S | re.M)}

    def mounts(self) -> list[str]:
        pairs = [(self.repo, WORKSPACE), (self.top / "workflow", WORKFLOW),
                 (self.top / "file_commands", FILE_COMMANDS), (self.top / "home", HOME)]
        return [arg for host, inside in pairs for arg in ("-v", f"{host}:{inside}")] + [
            "-v", f"{self.origin.path}:{ORIGIN}:ro"]


def make_workspace(top: Path, base_files: Mapping[str, str] | None = None,
                   head_files: Mapping[str, str] | None = None) -> Workspace:
    """An origin with base and head; the workspace: a clone of the base, one commit deep."""
    top.mkdir(exist_ok=True)
    top.chmod(0o755)
    origin = GitRepo.create(top / "origin")
    base = origin.commit(base_files or {
        ".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES,
        "prompts/answer.prompty": PROMPTY.format(system=CAREFUL)}, message="base")
    origin.branch("base", base)
    head = origin.commit(head_files or {"prompts/answer.prompty": PROMPTY.format(system=GENEROUS)},
                         message="head: a more generous prompt")
    runner = top / "runner"
    runner.mkdir()
    runner.chmod(0o755)
    subprocess.run(["git", "clone", "-q", "--depth=1", "--branch=base", f"file://{origin.path}",
                    str(runner / "workspace")], check=True)
    # Inside the container the origin is mounted at ORIGIN.
    subprocess.run(["git", "-C", str(runner / "workspace"), "remote", "set-url", "origin",
                    f"file://{ORIGIN}"], check=True)
    for name in ("workflow", "file_commands", "home"):
        (runner / name).mkdir()
    subprocess.run(["chown", "-R", f"{RUNNER_UID}:{RUNNER_UID}", str(runner)], check=True)
    workspace = Workspace(top=runner, origin=origin, base=base, head=head)
    workspace.reset_file_commands()
    return workspace


def pull_request_event(github: FakeGitHub, ws: Workspace, number: int = PR) -> dict[str, Any]:
    event = json.loads((PAYLOADS / "pull_request.synchronize.json").read_text())
    pull = event["pull_request"]
    event["number"] = pull["number"] = number
    pull["base"]["repo"]["full_name"] = event["repository"]["full_name"] = github.repository
    # The base branch and the default branch as the loopback GitHub serves them.
    pull["base"]["ref"] = pull["base"]["repo"]["default_branch"] = "main"
    pull["base"]["sha"], pull["head"]["sha"] = ws.base, ws.head
    pull["head"]["repo"] = copy.deepcopy(pull["base"]["repo"])
    return event


def comment_event(github: FakeGitHub, *, number: int, body: str, author: str,
                  on_pull: bool) -> dict[str, Any]:
    comment = github.add_comment(number, body, user=author)
    event = json.loads((PAYLOADS / "issue_comment.created.json").read_text())
    event["issue"]["number"] = number
    event["issue"].pop("pull_request", None)
    if on_pull:
        event["issue"]["pull_request"] = {
            "url": f"{github.api_url}/repos/{github.repository}/pulls/{number}", "merged_at": None}
    event["comment"] = {**event["comment"], "id": comment["id"], "body": body,
                        "user": comment["user"], "created_at": comment["created_at"],
                        "updated_at": comment["updated_at"]}
    event["repository"]["full_name"] = github.repository
    return event


@dataclass
class Run:
    exit_code: int
    log: str


@dataclass
class Smoke:
    """What every scenario needs: the image, the runner's side, the two servers, the tally."""

    image: str
    ws: Workspace
    github: FakeGitHub
    openai: FakeOpenAI
    check: Checks

    def run(self, *, event_name: str, inputs: Mapping[str, str] | None = None) -> Run:
        return run_action(self.image, self.ws, self.github, self.openai, event_name=event_name,
                          inputs=inputs or {})


def run_action(image: str, ws: Workspace, github: FakeGitHub, openai: FakeOpenAI, *,
               event_name: str, inputs: Mapping[str, str]) -> Run:
    """`podman run` the image as the runner does: every variable passed by name, `-e NAME`."""
    variables = {
        # the action's inputs, as action.yml declares them (defaults included)
        "INPUT_GITHUB-TOKEN": github.token, "INPUT_CONFIG": ".flipgate.yml",
        "INPUT_OPENAI-API-KEY": MODEL_KEY, "INPUT_AZURE-OPENAI-API-KEY": "",
        "INPUT_STATUS-CONTEXT": STATUS_CONTEXT, "INPUT_FORK-POLICY": "require-command",
        "INPUT_RELINK": "", **inputs,
        # the runner's own
        "GITHUB_ACTIONS": "true", "CI": "true", "HOME": HOME,
        "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": f"{WORKFLOW}/event.json",
        "GITHUB_REPOSITORY": github.repository, "GITHUB_SHA": ws.base,
        "GITHUB_API_URL": github.api_url, "GITHUB_SERVER_URL": SERVER_URL,
        "GITHUB_RUN_ID": RUN_ID, "GITHUB_WORKSPACE": WORKSPACE,
        "GITHUB_OUTPUT": f"{FILE_COMMANDS}/output",
        "GITHUB_STEP_SUMMARY": f"{FILE_COMMANDS}/summary",
        # the step's `env:` (a workflow pointing at its own endpoint)
        "OPENAI_BASE_URL": openai.base_url,
    }
    command = ["podman", "run", "--rm", "--network", "host", "--workdir", WORKSPACE,
               *[arg for name in variables for arg in ("-e", name)], *ws.mounts(), image]
    environ = {"PATH": os.environ["PATH"], **variables}
    done = subprocess.run(command, env=environ, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, check=False)
    return Run(exit_code=done.returncode, log=done.stdout + done.stderr)


# -- scenarios ------------------------------------------------------------------------

def own_comments(github: FakeGitHub, number: int) -> list[dict[str, Any]]:
    return [c for c in github.comments_on(number)
            if c["user"]["login"] == ACTIONS_BOT and MARKER in c["body"]]


def scenario_pull_request(smoke: Smoke) -> None:
    print("scenario 1: a pull_request whose head invents a fee")
    check, ws, github, openai = smoke.check, smoke.ws, smoke.github, smoke.openai
    shallow_before = (ws.repo / ".git" / "shallow").read_text()
    ws.write_event(pull_request_event(github, ws))
    run = smoke.run(event_name="pull_request")
    check.expect(run.exit_code == 1, "exit code 1 (blocked)", f"{run.exit_code}\n{run.log}")
    check.expect(ws.outputs() == {"conclusion": "failure", "regressions": "1", "held-back": "0",
                                  "report": "flipgate-out/report.json"},
                 "outputs: conclusion, regressions, held-back, report", ws.outputs())
    comments = own_comments(github, PR)
    check.expect(len(comments) == 1 and BLOCKED in comments[0]["body"]
                 and "refund-007" in comments[0]["body"]
                 and f"flipgate:sha={ws.head}" in comments[0]["body"],
                 "one sticky comment: blocked on refund-007, marked with the head", comments)
    states = [(s["state"], s["context"]) for s in github.statuses_for(ws.head)]
    check.expect(states == [("pending", STATUS_CONTEXT), ("failure", STATUS_CONTEXT)],
                 f"status on the head: pending, then failure ({STATUS_CONTEXT})", states)
    check.expect(BLOCKED in ws.summary.read_text(), "step summary written")
    report = ws.repo / "flipgate-out" / "report.json"
    check.expect(report.is_file() and json.loads(report.read_text())["counts"][
        "blocking_regressions"] == 1, "flipgate-out/report.json: 1 blocking regression")
    keys = {r.headers.get("Authorization") for r in openai.requests}
    check.expect(bool(openai.requests) and keys == {f"Bearer {MODEL_KEY}"},
                 "the model endpoint got the key from INPUT_OPENAI-API-KEY only", keys)
    check.expect(f"::add-mask::{MODEL_KEY}" in run.log and MODEL_KEY not in
                 run.log.replace(f"::add-mask::{MODEL_KEY}", ""), "the key is masked, never printed")
    shallow = ws.repo / ".git" / "shallow"   # gone once the fetch reached the whole history
    check.expect(not shallow.exists() or shallow.read_text() != shallow_before,
                 "the head and the merge base were fetched into the shallow clone")


def scenario_command(smoke: Smoke) -> None:
    print("scenario 2: /flipgate run from a maintainer, on the same workspace")
    check, ws, github, openai = smoke.check, smoke.ws, smoke.github, smoke.openai
    generations = len(openai.chat_requests("generation"))
    ws.reset_file_commands()
    ws.write_event(comment_event(github, number=PR, body="/flipgate run", author="maintainer",
                                 on_pull=True))
    run = smoke.run(event_name="issue_comment")
    check.expect(run.exit_code == 1, "exit code 1 (blocked)", f"{run.exit_code}\n{run.log}")
    comments = own_comments(github, PR)
    check.expect(len(comments) == 1 and BLOCKED in comments[0]["body"],
                 "the same sticky comment, edited", len(comments))
    check.expect(github.statuses_for(ws.head)[-1]["state"] == "failure", "status: failure")
    reactions = [r["content"] for r in github.reactions]
    check.expect("eyes" in reactions and "rocket" in reactions, "reactions: eyes, rocket",
                 reactions)
    check.expect(len(openai.chat_requests("generation")) == generations,
                 "no new generation request: the first run's cache was read",
                 len(openai.chat_requests("generation")) - generations)


def scenario_plain_issue(smoke: Smoke) -> None:
    print("scenario 3: /flipgate run on a plain issue")
    check, ws, github = smoke.check, smoke.ws, smoke.github
    requests = len(github.requests)
    ws.reset_file_commands()
    ws.write_event(comment_event(github, number=ISSUE, body="/flipgate run", author="maintainer",
                                 on_pull=False))
    run = smoke.run(event_name="issue_comment")
    check.expect(run.exit_code == 0 and "is not a pull request" in run.log,
                 "exit code 0: ignored as not a pull request", f"{run.exit_code}\n{run.log}")
    check.expect(len(github.requests) == requests, "no GitHub API call",
                 github.requests[requests:])


def scenario_application_code(smoke: Smoke) -> None:
    print("scenario 4: generator.command, a pull_request whose head's code invents a fee")
    check, ws, github, openai = smoke.check, smoke.ws, smoke.github, smoke.openai
    generations = len(openai.chat_requests("generation"))
    github.add_pull(APP_PR, base_sha=ws.base, head_sha=ws.head)
    ws.write_event(pull_request_event(github, ws, APP_PR))
    run = smoke.run(event_name="pull_request")
    check.expect(run.exit_code == 1, "exit code 1 (blocked)", f"{run.exit_code}\n{run.log}")
    comments = own_comments(github, APP_PR)
    check.expect(len(comments) == 1 and BLOCKED in comments[0]["body"]
                 and "refund-007" in comments[0]["body"],
                 "one sticky comment: blocked on refund-007", comments)
    said = re.findall(r"smoke-app uid=(\d+) workspace=(\w+) leaked=(.*)", run.log)
    check.expect(len(said) == 2 and len({uid for uid, _, _ in said}) == 2
                 and all(int(uid) in FRESH_IDS for uid, _, _ in said),
                 "the base's and the head's code each ran as an account of its own",
                 said or run.log)
    check.expect(bool(said) and all(workspace == "closed" for _, workspace, _ in said),
                 "the code could not read the workspace's .git/config", said)
    check.expect(bool(said) and all(leaked.strip() == "[]" for _, _, leaked in said),
                 "the code got none of INPUT_*, GITHUB_*, ACTIONS_*, OPENAI_*", said)
    check.expect(len(openai.chat_requests("generation")) == generations,
                 "no generation request: the answers came from the code")


def scenario_relink(smoke: Smoke) -> None:
    print("scenario 5: the relink step after it, with another server's URL, then this run's")
    check, github = smoke.check, smoke.github
    requests = len(github.requests)
    foreign = f"https://evil.example/{github.repository}/actions/runs/{RUN_ID}/artifacts/9"
    run = smoke.run(event_name="pull_request", inputs={"INPUT_RELINK": foreign})
    check.expect(run.exit_code == 2 and "input relink" in run.log
                 and "Traceback" not in run.log,
                 "a foreign relink URL: exit 2, one line naming the input",
                 f"{run.exit_code}\n{run.log}")
    check.expect(len(github.requests) == requests, "no GitHub API call",
                 github.requests[requests:])
    page = f"{SERVER_URL}/{github.repository}/actions/runs/{RUN_ID}/artifacts/777"
    run = smoke.run(event_name="pull_request", inputs={"INPUT_RELINK": page})
    comments = own_comments(github, APP_PR)
    check.expect(run.exit_code == 0 and len(comments) == 1 and page in comments[0]["body"],
                 "this run's artifact URL: exit 0, the comment links it",
                 f"{run.exit_code}\n{run.log}")


def check_workspace_is_the_runners(check: Checks, ws: Workspace) -> None:
    print("afterwards: the runner user owns, and can delete, everything")
    strangers = [str(p.relative_to(ws.repo)) for p in ws.repo.rglob("*")
                 if p.lstat().st_uid != RUNNER_UID]
    check.expect(not strangers, f"every file in the workspace belongs to uid {RUNNER_UID}",
                 strangers[:10])
    caches = list((ws.repo / ".flipgate-cache").rglob("*.json"))
    modes = {oct(p.stat().st_mode & 0o777) for p in caches}
    check.expect(bool(caches) and modes == {"0o644"}, "cache files are 0644", modes)
    done = subprocess.run(["setpriv", f"--reuid={RUNNER_UID}", f"--regid={RUNNER_UID}",
                           "--clear-groups", "find", str(ws.repo), "-mindepth", "1", "-delete"],
                          capture_output=True, text=True, check=False)
    left = list(ws.repo.iterdir())
    check.expect(done.returncode == 0 and not left, f"uid {RUNNER_UID} deleted it all",
                 done.stderr.strip() or left)


# -- build and servers ----------------------------------------------------------------

def pinned_base() -> str:
    found = re.search(r"^ARG BASE_IMAGE=(\S+)", (ROOT / "Dockerfile").read_text(), re.M)
    assert found, "Dockerfile: no ARG BASE_IMAGE"
    return found.group(1)


def choose_base(requested: str | None) -> str:
    """The pinned base, or the plain tag when only that is here (a locally built stand-in)."""
    if requested:
        return requested
    pinned = pinned_base()
    tag = pinned.split("@", 1)[0]
    exists: Callable[[str], bool] = lambda ref: subprocess.run(  # noqa: E731
        ["podman", "image", "exists", ref], check=False).returncode == 0
    if not exists(pinned) and exists(tag):
        print(f"container-smoke: the pinned base is not here, {tag} is: building on it "
              "(a local stand-in; never publish the result)")
        return tag
    return pinned


def build(image: str, base: str, log: Path) -> None:
    print(f"container-smoke: building {image} on {base} (log: {log})")
    with log.open("w") as out:
        done = subprocess.run(["podman", "build", "-t", image, "--build-arg", f"BASE_IMAGE={base}",
                               str(ROOT)], stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        sys.stdout.write(log.read_text()[-4000:])
        raise SystemExit(f"container-smoke: podman build failed ({done.returncode})")


@contextmanager
def servers() -> Iterator[tuple[FakeGitHub, FakeOpenAI]]:
    github, openai = FakeGitHub(), FakeOpenAI()
    github.start()
    openai.start()
    try:
        yield github, openai
    finally:
        github.stop()
        openai.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="localhost/flipgate:smoke", help="the tag to build")
    parser.add_argument("--base", help="BASE_IMAGE build argument (default: the Dockerfile's pin, "
                                       "or its plain tag if only that is present)")
    parser.add_argument("--no-build", action="store_true", help="run an image built before")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("container-smoke: run as root (the runner's container runs as root "
                         f"on a workspace uid {RUNNER_UID} owns)")
    for tool in ("podman", "setpriv", "git"):
        if shutil.which(tool) is None:
            raise SystemExit(f"container-smoke: needs {tool}")

    top = Path(tempfile.mkdtemp(prefix="flipgate-smoke-"))
    top.chmod(0o755)
    try:
        if not args.no_build:
            build(args.image, choose_base(args.base), top / "build.log")
        check = Checks()
        ws = make_workspace(top)
        with servers() as (github, openai):
            github.add_pull(PR, base_sha=ws.base, head_sha=ws.head)
            github.grant("maintainer", "write")
            openai.on_generation(scripted_generation)
            openai.on_groundedness(lambda query, context, response, call_index:
                                   1 if "$12" in (response or "") else 5)
            smoke = Smoke(image=args.image, ws=ws, github=github, openai=openai, check=check)
            for scenario in (scenario_pull_request, scenario_command, scenario_plain_issue):
                scenario(smoke)
            check_workspace_is_the_runners(check, ws)
            app = make_workspace(top / "app", {
                ".flipgate.yml": APP_CONFIG, "eval/cases.jsonl": CASES, "answer.py": BASE_APP},
                {"answer.py": HEAD_APP})
            app_smoke = Smoke(image=args.image, ws=app, github=github, openai=openai,
                              check=check)
            scenario_application_code(app_smoke)
            scenario_relink(app_smoke)
            check_workspace_is_the_runners(check, app)
    finally:
        if args.keep:
            print(f"container-smoke: kept {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)
    if check.failed:
        print(f"container-smoke: {len(check.failed)} of {check.passed + len(check.failed)} "
              "checks FAILED")
        return 1
    print(f"container-smoke: all {check.passed} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
