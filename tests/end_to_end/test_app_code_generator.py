"""The application's own code as the generator, end to end: a small real application (the
`openai` SDK against the loopback server, its prompt built in code) changed between two
commits of a real repository, through `flipgate run`. The gate finds the regression the
head's code makes, and only that; a re-run on the same head asks the code nothing again."""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

from click.testing import CliRunner

from flipgate.cli import cli

from support.accounts import command_python
from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

SITE = sysconfig.get_paths()["purelib"]   # where this interpreter's openai SDK lives
CASES = [{"id": "fee-1", "query": "What is the fee for item 1?", "context": "The fee for item 1 is $1.",
          "category": "pricing"},
         {"id": "fee-2", "query": "What is the fee for item 2?", "context": "The fee for item 2 is $2.",
          "category": "pricing"},
         {"id": "ret-1", "query": "Can I return a gift?", "context": "Gifts may be returned within 30 days.",
          "category": "policy"},
         {"id": "ret-2", "query": "Can I return a sale item?", "context": "Sale items may be returned within 14 days.",
          "category": "policy"}]
CONFIG = f"""version: 1
cases: eval/cases.jsonl
generator:
  command: {command_python()} -m app.answer
  env: [OPENAI_API_KEY, OPENAI_BASE_URL]
  timeout: 20
  watch: [app/**]
judge:
  provider: offline
gate:
  blocking_categories: [pricing]
  strict: true            # four cases: let the same judge's re-score block below the minimum
"""
# The application: its prompt in code, picked at run time, sent with the openai SDK.
APP = f"""import json, sys
sys.path.insert(0, {SITE!r})
from openai import OpenAI

GROUNDED = "Answer only from the context."
EXTRA_CODE

def messages(case):
    system = pick(case)
    return [{{"role": "system", "content": system}},
            {{"role": "user", "content": "Context: " + case["context"] + "\\nQuestion: " + case["query"]}}]

def main():
    client = OpenAI()
    for line in sys.stdin:
        case = json.loads(line)
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages(case))
        print(json.dumps({{"id": case["id"], "response": reply.choices[0].message.content}}), flush=True)

main()
"""
BASE_APP = APP.replace("EXTRA_CODE", "def pick(case):\n    return GROUNDED\n")
# The head's code sends pricing questions to a prompt that quotes from memory.
HEAD_APP = APP.replace("EXTRA_CODE", "MEMORY = 'Quote the price list from memory.'\n"
                            "def pick(case):\n    return MEMORY if 'fee' in case['query'] else GROUNDED\n")


# An application without a model SDK, which starts at once: it answers with the context.
PLAIN_APP = """import json, sys
for line in sys.stdin:
    case = json.loads(line)
    print(json.dumps({"id": case["id"], "response": case["context"]}), flush=True)
"""


def generation(body: dict) -> str:
    system = body["messages"][0]["content"]
    context = body["messages"][-1]["content"].split("Context: ", 1)[1].split("\nQuestion:")[0]
    return "The fee is $99." if "from memory" in system else context


def make_repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "app/__init__.py": "", "app/answer.py": BASE_APP,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"app/answer.py": HEAD_APP}, message="head: pricing answers from memory")
    return repo


def run(repo: GitRepo, tmp_path: Path) -> tuple[int, str, dict]:
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(tmp_path / "out"),
                                      "--cache", str(tmp_path / "cache")])
    return result.exit_code, result.output, json.loads((tmp_path / "out" / "report.json").read_text())


def test_the_gate_finds_the_regression_the_heads_code_makes_and_only_that(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    openai_server.on_generation(generation)
    repo = make_repo(tmp_path)

    code, output, report = run(repo, tmp_path)

    verdicts = {row["id"]: row["verdict"] for row in report["rows"]}
    assert code == 1, output
    assert verdicts == {"fee-1": "regression", "fee-2": "regression", "ret-1": "unchanged",
                        "ret-2": "unchanged"}, output
    sent = openai_server.chat_requests("generation")
    assert len(sent) == 8   # each ref's code asked once a case
    assert sorted(r.body["messages"][0]["content"] for r in sent).count(
        "Quote the price list from memory.") == 2

    # The same head again: every answer comes from the cache, no code runs.
    openai_server.clear()
    code, _, report = run(repo, tmp_path)
    assert code == 1
    assert openai_server.chat_requests("generation") == []

    # A watched file changes: the head's code is asked again, the base's is not.
    repo.commit({"app/answer.py": HEAD_APP + "# a comment\n"}, message="head: touch")
    openai_server.clear()
    code, _, _ = run(repo, tmp_path)
    assert code == 1
    assert len(openai_server.chat_requests("generation")) == 4


def test_a_change_outside_watch_runs_nothing(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.branch("base2", "HEAD")
    repo.commit({"README.md": "docs"}, message="docs only")
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base2",
                                      "--head", "HEAD", "--out", str(tmp_path / "out"), "--no-cache"])
    assert result.exit_code == 0, result.output
    assert openai_server.chat_requests() == []
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["conclusion"] == "skipped"


def test_init_command_writes_a_config_that_runs_the_apps_code(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    """`flipgate init --command` on a repository whose prompt is in code: the config names
    the command, what it watches and how it installs; the workflow passes actionlint's shape;
    and `flipgate run` on it gates a change of the app."""
    import yaml

    openai_server.on_generation(generation)
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"app/__init__.py": "", "app/answer.py": PLAIN_APP, "requirements.txt": "openai\n"},
                message="the app")
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo.path),
                                      "--command", f"{command_python()} -m app.answer"])
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((repo.path / ".flipgate.yml").read_text())
    assert config["generator"] == {"command": f"{command_python()} -m app.answer",
                                   "setup": f"{command_python()} -m pip install --target "
                                            ".flipgate-site -q -r requirements.txt",
                                   "env": ["OPENAI_API_KEY"], "timeout": 60,
                                   "watch": ["app/**", "requirements.txt"]}
    workflow = yaml.safe_load((repo.path / ".github/workflows/flipgate.yml").read_text())
    assert any(step.get("id") == "flipgate" for step in workflow["jobs"]["flipgate"]["steps"])

    # No network here: the test installs nothing (setup goes), and judges offline.
    text = (repo.path / ".flipgate.yml").read_text()
    text = "\n".join(line for line in text.splitlines() if "  setup: " not in line) + "\n"
    text = text.replace("provider: openai", "provider: offline").replace("strict: false", "strict: true")
    text = text.replace("blocking_categories: [general]", "blocking_categories: [pricing, policy]")
    repo.commit({".flipgate.yml": text, "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)},
                message="flipgate")
    repo.branch("base", "HEAD")
    repo.commit({"app/answer.py": PLAIN_APP.replace('case["context"]', '"The fee is $99."')},
                message="head: answers from memory")
    code, output, report = run(repo, tmp_path)
    assert code == 1, output
    assert {row["verdict"] for row in report["rows"]} == {"regression"}


def test_a_case_the_heads_code_never_answers_is_an_error_row_and_exit_3(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG.replace("timeout: 20", "timeout: 1"), "app/__init__.py": "",
                 "app/answer.py": PLAIN_APP,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)}, message="base")
    repo.branch("base", "HEAD")
    hangs = PLAIN_APP.replace('    case = json.loads(line)\n',
                              '    case = json.loads(line)\n'
                              '    if case["id"] == "ret-2":\n'
                              '        continue\n')
    assert hangs != PLAIN_APP
    hangs += "import time\ntime.sleep(60)\n"   # stays, never answering ret-2
    repo.commit({"app/answer.py": hangs}, message="head: never answers ret-2")

    code, output, report = run(repo, tmp_path)

    assert code == 3, output
    rows = {row["id"]: row for row in report["rows"]}
    assert rows["ret-2"]["verdict"] == "error"
    assert any("no answer within 1 s" in error for error in rows["ret-2"]["errors"]), rows["ret-2"]
    assert {rows[i]["verdict"] for i in ("fee-1", "fee-2", "ret-1")} == {"unchanged"}
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "no answer within 1 s" in comment
    assert "- Files compared: app/answer.py" in comment
    assert "- Model:" not in comment   # the app's model is its own business


def test_replay_of_one_ref_asks_its_own_code(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "app/__init__.py": "", "app/answer.py": PLAIN_APP,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)}, message="base")
    out = tmp_path / "answers.jsonl"
    result = CliRunner().invoke(cli, ["replay", "--repo", str(repo.path), "--ref", "HEAD",
                                      "--out", str(out), "--no-cache"])
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in out.read_text().splitlines()]
    assert answers == [{"id": c["id"], "response": c["context"]} for c in CASES]
