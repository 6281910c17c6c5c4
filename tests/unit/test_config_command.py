"""`generator.command` and its keys in `.flipgate.yml`: what is read, what is refused."""

from __future__ import annotations

import pytest

from flipgate.config.schema import CommandConfig, parse_config
from flipgate.errors import InputError

TOP = "version: 1\ncases: eval/cases.jsonl\n"


def test_the_command_form_is_read_with_its_defaults() -> None:
    config = parse_config(TOP + "generator:\n  command: python -m app.answer\n  watch: [app/**]\n")
    assert config.generator is None
    assert config.generator_options.command == CommandConfig(
        command="python -m app.answer", watch=("app/**",), setup=None, env=(), timeout=60.0)


def test_every_key_is_read() -> None:
    config = parse_config(TOP + "generator:\n  command: python -m app.answer\n"
                                "  setup: pip install -r requirements.txt\n"
                                "  env: [OPENAI_API_KEY]\n  timeout: 5\n  watch: [app/**, requirements.txt]\n")
    assert config.generator_options.command == CommandConfig(
        command="python -m app.answer", watch=("app/**", "requirements.txt"),
        setup="pip install -r requirements.txt", env=("OPENAI_API_KEY",), timeout=5.0)


@pytest.mark.parametrize(("generator", "line", "message"), [
    ("  command: python app.py\n", 4, "'generator.watch' is required with 'command'"),
    ("  command: python app.py\n  watch: [app/**]\n  path: p.prompty\n", 6,
     "has both 'path' and 'command'"),
    ("  command: python app.py\n  watch: [app/**]\n  env: [GITHUB_TOKEN]\n", 6,
     "may not list GITHUB_TOKEN"),
    ("  command: python app.py\n  watch: [app/**]\n  env: [ACTIONS_ID_TOKEN_REQUEST_TOKEN]\n", 6,
     "may not list ACTIONS_ID_TOKEN_REQUEST_TOKEN"),
    ("  path: p.prompty\n  setup: pip install x\n", 5, "'generator.setup' belongs to 'generator.command'"),
    ("  command: python app.py\n  watch: [app/**]\n  timeout: 0\n", 6, "must be a number above 0"),
], ids=["no-watch", "path-too", "github-token", "oidc-token", "setup-alone", "timeout-zero"])
def test_mistakes_name_the_line(generator: str, line: int, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_config(TOP + "generator:\n" + generator)
    problem = caught.value.problems[0]
    assert message in str(problem)
    assert problem.line == line


def test_a_suite_may_name_its_own_command_and_is_held_to_the_same_rules() -> None:
    with pytest.raises(InputError, match="'suites.a.generator.watch' is required"):
        parse_config(TOP + "suites:\n  a:\n    generator:\n      command: python app.py\n")
