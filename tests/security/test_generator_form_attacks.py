"""Attacks through the generator's forms (a template file, a Python constant, a GitHub
Models prompt file), each refused before any request: what a pull request's own
`.flipgate.yml` may set for its generator, where a constant or a system file may be read
from, and templates that would send their placeholders as they are."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

CASES = [{"id": "refund-007", "query": "How long for a refund?",
          "context": "Refunds are accepted within 30 days.", "category": "policy"}]
CONSTANT = 'ANSWER = "Context: {context}\\nQuestion: {query}\\n"\n'


def config(generator: str) -> str:
    return f"version: 1\ncases: eval/cases.jsonl\n{generator}judge:\n  provider: offline\n"


def make_repo(tmp_path: Path, files: dict[str, str | bytes]) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES), **files}, message="base")
    repo.branch("base", "HEAD")
    return repo


def run(repo: GitRepo, tmp_path: Path):
    return CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                                    "--out", str(tmp_path / "out"), "--no-cache"])


def test_a_head_cannot_send_the_key_elsewhere_through_its_generator_settings(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    head_endpoint = ("  endpoint: {provider: azure, base_url: 'http://127.0.0.1:9/steal', "
                     "azure_endpoint: 'https://evil.example'}\n")
    generator = "generator:\n  python: app/prompts.py:ANSWER\n  model: m1\n"
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), "app/prompts.py": CONSTANT})
    repo.commit({".flipgate.yml": config(generator.replace("m1", "m2") + head_endpoint)})
    result = run(repo, tmp_path)
    assert result.exit_code == 0, result.output
    sent = openai_server.chat_requests("generation")
    assert {r.body["model"] for r in sent} == {"m1", "m2"}   # the head's model, the base's endpoint


def test_a_head_cannot_pass_client_settings_as_its_generator_parameters(openai_server: FakeOpenAI,
                                                                         tmp_path: Path) -> None:
    generator = "generator:\n  python: app/prompts.py:ANSWER\n  model: m1\n"
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), "app/prompts.py": CONSTANT})
    repo.commit({".flipgate.yml": config(generator + "  parameters: {base_url: 'http://127.0.0.1:9/', "
                                                     "extra_headers: {x: y}}\n")})
    result = run(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "base_url" in result.stderr and openai_server.requests == []


def test_a_constant_outside_the_repository_is_refused(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    where = "../outside.py:ANSWER"   # an absolute path is refused alike (safe_path, tests/unit)
    repo = make_repo(tmp_path, {".flipgate.yml": config(f"generator:\n  python: {where}\n  model: m\n"),
                                "app/prompts.py": CONSTANT})
    repo.commit({"app/prompts.py": CONSTANT.replace("Context", "Ctx")})
    result = run(repo, tmp_path)
    assert result.exit_code == 2 and "security:" in result.output + result.stderr
    assert openai_server.requests == []


@pytest.mark.parametrize("linked", ["app/prompts.py", "prompts/system.txt"])
def test_a_symlinked_constant_or_system_file_is_never_followed(openai_server: FakeOpenAI, tmp_path: Path,
                                                              linked: str) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text('ANSWER = "the secret {query}"\n')
    generator = "generator:\n  python: app/prompts.py:ANSWER\n  system: prompts/system.txt\n  model: m\n"
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), "app/prompts.py": CONSTANT,
                                "prompts/system.txt": "Be brief.\n"})
    (repo.path / linked).unlink()
    os.symlink(secret, repo.path / linked)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "link")
    result = run(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output + result.stderr
    assert openai_server.requests == []


def test_a_variables_entry_naming_a_field_no_case_has_is_refused(openai_server: FakeOpenAI,
                                                                  tmp_path: Path) -> None:
    generator = ("generator:\n  python: app/prompts.py:ANSWER\n  model: m\n"
                 "  variables: {query: question}\n")
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), "app/prompts.py": CONSTANT})
    repo.commit({"app/prompts.py": CONSTANT.replace("Context", "Ctx")})
    result = run(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "generator.variables: query <- 'question': no case has the field 'question'" in result.stderr
    assert openai_server.requests == []


def test_a_50_mb_constant_is_refused_before_it_is_parsed(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    huge = "ANSWER = '" + "x" * (50 * 1024 * 1024) + "{query}'\n"
    repo = make_repo(tmp_path, {".flipgate.yml": config("generator:\n  python: app/prompts.py:ANSWER\n  model: m\n"),
                                "app/prompts.py": CONSTANT})
    repo.commit({"app/prompts.py": huge})
    result = run(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "app/prompts.py" in result.stderr and "bytes" in result.stderr
    assert openai_server.requests == []


@pytest.mark.parametrize(("files", "generator", "said"), [
    ({"prompts/answer.txt": "Context: {context}\nQuestion: {query}\n"},
     "generator:\n  template: prompts/answer.txt\n  model: m\n", "format jinja2"),
], ids=["jinja-over-fstring-text"])
def test_a_template_that_reads_no_case_field_is_refused(openai_server: FakeOpenAI, tmp_path: Path,
                                                        files: dict[str, str], generator: str,
                                                        said: str) -> None:
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), **files})
    path = next(iter(files))
    repo.commit({path: files[path] + "\n"})
    result = run(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert f"{path}@" in result.stderr and "reads no field of the cases" in result.stderr and said in result.stderr
    assert openai_server.requests == []


def test_constants_that_double_each_other_are_refused_before_they_build_gigabytes(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    # 50 ** 10 copies from ten short lines: each name is the one before it, fifty times
    doubling = 'A0 = "x{query}"\n' + "".join(f'A{n} = f"{{A{n - 1}}}' * 1 + f"{{A{n - 1}}}" * 49 + '"\n'
                                             for n in range(1, 11))
    repo = make_repo(tmp_path, {".flipgate.yml": config("generator:\n  python: app/prompts.py:A10\n  model: m\n"),
                                "app/prompts.py": doubling})
    repo.commit({"app/prompts.py": doubling.replace("x{query}", "y{query}")})
    result = run(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "app/prompts.py@" in result.stderr and "characters" in result.stderr
    assert "memory" not in result.stderr and "took longer" not in result.stderr   # refused, not killed
    assert openai_server.requests == []


def test_a_message_file_outside_the_repository_is_refused(openai_server: FakeOpenAI, tmp_path: Path) -> None:
    generator = ("generator:\n  messages:\n    - {role: system, template: ../outside.md}\n"
                 "    - {role: user, python: app/prompts.py:ANSWER}\n  model: m\n")
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), "app/prompts.py": CONSTANT})
    repo.commit({"app/prompts.py": CONSTANT.replace("Context", "Ctx")})
    result = run(repo, tmp_path)
    assert result.exit_code == 2 and "security:" in result.output + result.stderr
    assert openai_server.requests == []
