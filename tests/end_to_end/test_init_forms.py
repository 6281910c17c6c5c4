"""`flipgate init` for the generator's other forms: it finds a GitHub Models prompt file as
it finds a Prompty file, and `--generator FILE[:NAME]` names a template file or a string
constant; what it writes is a configuration `flipgate run` accepts."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo

PROMPT_YML = ("model: openai/gpt-4o-mini\nmessages:\n  - role: system\n    content: 'Context: {{context}}'\n"
              "  - role: user\n    content: '{{question}}'\n")
CONSTANT = ('"""The app\'s prompts."""\nQA_PROMPT = (\n    "Answer in {lang} from the context.\\n"\n'
            '    "{context_str}\\nQuestion: {query_str}\\n"\n)\n')


def init(repo: GitRepo, *args: str):
    return CliRunner().invoke(cli, ["init", "--repo", str(repo.path), *args])


def written(repo: GitRepo) -> tuple[dict, dict]:
    config = yaml.safe_load((repo.path / ".flipgate.yml").read_text())
    case = json.loads((repo.path / "eval/cases.jsonl").read_text())
    return config, case


def test_init_finds_a_github_models_prompt_file(tmp_path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"prompts/answer.prompt.yml": PROMPT_YML})
    result = init(repo)
    assert result.exit_code == 0, result.output
    config, _ = written(repo)
    assert config["generator"] == "prompts/answer.prompt.yml"
    repo.commit({".flipgate.yml": (repo.path / ".flipgate.yml").read_text(),
                 "eval/cases.jsonl": (repo.path / "eval/cases.jsonl").read_text()})
    ran = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "HEAD", "--head", "HEAD",
                                   "--out", str(tmp_path / "out")])
    assert ran.exit_code == 0, ran.output + ran.stderr      # nothing changed: skipped, no model


def test_init_names_a_string_constant_and_maps_its_names_to_case_fields(tmp_path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"app/prompts.py": CONSTANT})
    result = init(repo, "--generator", "app/prompts.py:QA_PROMPT")
    assert result.exit_code == 0, result.output
    config, case = written(repo)
    assert config["generator"] == {"python": "app/prompts.py:QA_PROMPT", "format": "fstring",
                                   "model": "gpt-4.1-mini",
                                   "variables": {"context_str": "context", "query_str": "query"}}
    assert case["lang"] == "<lang>"                     # a name the cases must carry
    repo.commit({".flipgate.yml": (repo.path / ".flipgate.yml").read_text(),
                 "eval/cases.jsonl": (repo.path / "eval/cases.jsonl").read_text()})
    ran = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "HEAD", "--head", "HEAD",
                                   "--out", str(tmp_path / "out")])
    assert ran.exit_code == 0, ran.output + ran.stderr


def test_init_refuses_a_python_file_without_a_name_and_an_untracked_template(tmp_path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"app/prompts.py": CONSTANT})
    for wanted in ("app/prompts.py", "prompts/missing.txt"):
        result = init(repo, "--generator", wanted)
        assert result.exit_code == 2 and "is not a tracked .prompty file" in result.stderr
        assert "FILE.py:NAME" in result.stderr
    assert not (repo.path / ".flipgate.yml").exists()


CHAIN = ('from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder\n'
         'QA_CHAT = ChatPromptTemplate.from_messages([("system", "Context: {context}"),\n'
         '    MessagesPlaceholder("chat_history"), ("human", "{question}")])\n')


def test_init_names_a_langchain_chat_prompt_without_a_format_it_would_refuse(tmp_path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"app/chain.py": CHAIN})
    result = init(repo, "--generator", "app/chain.py:QA_CHAT")
    assert result.exit_code == 0, result.output
    config, case = written(repo)
    assert "format" not in config["generator"] and case["chat_history"] == []
    repo.commit({".flipgate.yml": (repo.path / ".flipgate.yml").read_text(),
                 "eval/cases.jsonl": (repo.path / "eval/cases.jsonl").read_text()})
    ran = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "HEAD", "--head", "HEAD",
                                   "--out", str(tmp_path / "out")])
    assert ran.exit_code == 0, ran.output + ran.stderr
