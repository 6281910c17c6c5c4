"""Every message's advice fits the form and the file it names (issue 37, point 3): the real
CLI on real repositories, the loopback model server standing in for the provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI
from support.runs import repo_with_base

CASES = [{"id": f"c{i}", "query": f"Question {i}?", "context": f"Fact {i}.", "category": "general"}
         for i in range(3)]
TEMPLATE = "Context: {{ context }}\nQuestion: {{ question }}\n"


def config(generator: str) -> str:
    return f"version: 1\ncases: eval/cases.jsonl\n{generator}judge:\n  provider: offline\n"


def template(model: str | None = "gpt-4.1-mini", variables: str = "{question: query}",
             extra: str = "") -> str:
    return ("generator:\n  template: prompts/answer.j2\n"
            + (f"  model: {model}\n" if model else "") + f"  variables: {variables}\n" + extra)


def run(repo: GitRepo, tmp_path: Path, *head: str) -> Result:
    return CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                    *(head or ("--head", "HEAD")), "--out", str(tmp_path / "out"),
                                    "--no-cache"])


def one_line(result: Result) -> str:
    return " ".join(result.output.split())


def test_a_template_with_no_model_is_told_to_set_generator_model(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    repo = repo_with_base(tmp_path, CASES, {".flipgate.yml": config(template(model=None)),
                                            "prompts/answer.j2": TEMPLATE})
    result = CliRunner().invoke(cli, ["replay", "--sample", "--repo", str(repo.path)])
    assert result.exit_code == 2, result.output
    assert "names no model: set generator.model" in result.output
    assert "endpoint.deployment" not in result.output and openai_server.requests == []


def test_a_prompt_yml_that_reads_no_case_field_is_not_told_to_check_generator_format(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    prompt = ("model: openai/gpt-4.1-mini\nmessages:\n  - role: user\n"
              "    content: '{{question}} from {{passage}}'\n")
    generator = (f"generator:\n  path: prompts/answer.prompt.yml\n  endpoint: {{provider: github, "
                 f"base_url: '{openai_server.base_url}'}}\n")
    repo = repo_with_base(tmp_path, CASES, {".flipgate.yml": config(generator),
                                            "prompts/answer.prompt.yml": prompt})
    result = CliRunner().invoke(cli, ["replay", "--sample", "--repo", str(repo.path)])
    assert result.exit_code == 2, result.output
    said = one_line(result)
    assert "no {{name}} a case fills" in said and "generator.variables" in said
    assert "generator.format" not in said and openai_server.requests == []


def test_a_reversed_mapping_in_the_working_tree_is_blamed_on_it_with_a_did_you_mean(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    repo = repo_with_base(tmp_path, CASES, {".flipgate.yml": config(template()),
                                            "prompts/answer.j2": TEMPLATE})
    (repo.path / ".flipgate.yml").write_text(config(template(variables="{query: question}")))
    result = run(repo, tmp_path, "--worktree")
    assert result.exit_code == 2, result.output
    said = one_line(result)
    assert ".flipgate.yml@worktree: generator.variables: query <- 'question': no case has the " \
           "field 'question'" in said
    assert "did you mean {question: query} (template name: case field)?" in said
    assert openai_server.requests == []


def test_a_github_models_model_without_its_publisher_gets_the_hint_before_any_request(
        openai_server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "test-github-token")
    repo = repo_with_base(tmp_path, CASES, {
        ".flipgate.yml": config(template(extra="  endpoint: {provider: github}\n")),
        "prompts/answer.j2": TEMPLATE})
    repo.commit({"prompts/answer.j2": "Be brief.\n" + TEMPLATE})
    result = run(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "GitHub Models names a model publisher/name: openai/gpt-4.1-mini, not gpt-4.1-mini" \
        in one_line(result)
    assert openai_server.requests == []


def test_a_run_whose_request_failed_never_says_no_model_requests(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    repo = repo_with_base(tmp_path, CASES, {".flipgate.yml": config(template()),
                                            "prompts/answer.j2": TEMPLATE})
    repo.commit({"prompts/answer.j2": "Be brief.\n" + TEMPLATE})
    openai_server.fail("generation", status=400, times=100)
    result = run(repo, tmp_path)
    assert result.exit_code in (2, 3), result.output
    assert openai_server.chat_requests("generation")
    assert "no model requests" not in result.output
    assert "model requests sent, none answered" in result.output


def test_the_working_trees_role_is_said_one_way_in_the_terminal_and_the_comment(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    openai_server.on_generation(lambda body: body["messages"][-1]["content"].split("\n")[0])
    repo = repo_with_base(tmp_path, CASES, {".flipgate.yml": config(template()),
                                            "prompts/answer.j2": TEMPLATE})
    (repo.path / ".flipgate.yml").write_text(config(template(model="gpt-4.1")))
    result = run(repo, tmp_path, "--worktree")
    assert result.exit_code in (0, 1), result.output
    said = one_line(result)
    comment = " ".join((tmp_path / "out" / "comment.md").read_text().split())
    for text in (said, comment):
        assert "was not used" not in text
        assert "from the working tree's .flipgate.yml" in text or \
            "the working tree's .flipgate.yml differs" in text
    assert "as the head, only its generator.model" in said
    assert "takes generator.model from the working tree's .flipgate.yml" in comment
    assert json.loads((tmp_path / "out" / "report.json").read_text())["change"]["model"] == {
        "old": "gpt-4.1-mini", "new": "gpt-4.1"}
