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
    assert config["generator"] == {"path": "prompts/answer.prompt.yml",
                                   "variables": {"question": "query"}}
    assert "guess: guessed variables {question: query} from the names prompts/answer.prompt.yml reads" \
        in result.output
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


TESTED_PROMPT = PROMPT_YML + """testData:
  - question: Can I return a kettle?
    context: Kettles may be returned within 30 days.
    expected: Yes, within 30 days.
  - question: Is there a fee?
    context: Returns are free.
"""


def test_a_prompt_yml_s_test_data_are_the_first_cases_and_they_render(tmp_path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"prompts/answer.prompt.yml": TESTED_PROMPT})
    result = init(repo)
    assert result.exit_code == 0, result.output
    cases = [json.loads(line) for line in (repo.path / "eval/cases.jsonl").read_text().splitlines()]
    assert [(c["id"], c["query"], c["context"]) for c in cases] == [
        ("example-001", "Can I return a kettle?", "Kettles may be returned within 30 days."),
        ("example-002", "Is there a fee?", "Returns are free.")]
    assert cases[0]["ground_truth"] == "Yes, within 30 days."
    assert "cases: 2 from its testData in eval/cases.jsonl" in result.output
    repo.commit({".flipgate.yml": (repo.path / ".flipgate.yml").read_text(),
                 "eval/cases.jsonl": (repo.path / "eval/cases.jsonl").read_text()})
    shown = CliRunner().invoke(cli, ["replay", "--sample", "--repo", str(repo.path), "--case",
                                     "example-002"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["messages"] == [
        {"role": "system", "content": "Context: Returns are free."},
        {"role": "user", "content": "Is there a fee?"}]


def test_model_sets_the_model_under_test_and_a_guess_is_said_as_one(tmp_path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"app/prompts.py": CONSTANT})
    guessed = init(repo, "--generator", "app/prompts.py:QA_PROMPT")
    assert "guess: guessed model gpt-4.1-mini (the model your application calls); pass --model NAME" \
        in guessed.output
    chosen = init(repo, "--generator", "app/prompts.py:QA_PROMPT", "--model", "gpt-4o", "--force")
    assert chosen.exit_code == 0, chosen.output
    config, _ = written(repo)
    assert config["generator"]["model"] == "gpt-4o"
    assert "guessed model" not in chosen.output
    assert "guess: guessed the judge's provider openai" in chosen.output
    steps = chosen.output.split("next:\n", 1)[1]
    assert "1. replace OWNER/flipgate@v1 in .github/workflows/flipgate.yml" in steps
    assert "add the repository secret OPENAI_API_KEY" in steps
    assert "`flipgate replay --sample`" in steps


def test_provider_github_guesses_a_publisher_prefixed_model(tmp_path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"prompts/answer.j2": "Context: {{ context }}\nQ: {{ question }}\n"})
    result = init(repo, "--generator", "prompts/answer.j2", "--provider", "github")
    assert result.exit_code == 0, result.output
    config, _ = written(repo)
    assert config["generator"]["model"] == "openai/gpt-4.1-mini"
    assert config["generator"]["variables"] == {"question": "query"}
    assert "secret" not in result.output.split("next:", 1)[1]


def test_the_app_code_path_prints_its_guesses_and_every_step_left(tmp_path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"app/__init__.py": "", "app/answer.py": "", "requirements.txt": "openai\n"})
    result = init(repo, "--command", "python3 -m app.answer")
    assert result.exit_code == 0, result.output
    assert "guess: guessed generator.watch app/**, requirements.txt" in result.output
    assert ("guess: guessed generator.setup `python3 -m pip install --target .flipgate-site -q "
            "-r requirements.txt`") in result.output
    steps = result.output.split("next:\n", 1)[1]
    assert "1. write the adapter the command runs (docs/generator-command.md)" in steps
    assert "2. replace OWNER/flipgate@v1 in .github/workflows/flipgate.yml" in steps
    assert "commit, then `flipgate run --base HEAD --head HEAD`" in steps
