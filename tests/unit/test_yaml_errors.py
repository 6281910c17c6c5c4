"""A YAML error names the line where the problem starts, as a person would look for it."""

from __future__ import annotations

import pytest

from flipgate.config.schema import parse_config
from flipgate.errors import InputError


def problem_of(text: str) -> str:
    with pytest.raises(InputError) as raised:
        parse_config(text)
    [problem] = raised.value.problems
    return str(problem)


@pytest.mark.parametrize(("text", "line", "opened"), [
    ("version: 1\ncases: c.jsonl\ngate:\n  blocking_categories: [dosage, refills\n  strict: true\n",
     4, "'['"),
    ("version: 1\ncases: c.jsonl\njudge: {provider: offline\nwatch: [a]\n", 3, "'{'"),
    ('version: 1\ncases: "c.jsonl\nwatch: [a]\n', 2, "quote"),
    ("version: 1\ncases: c.jsonl\nwatch: [prompts/**,\n  docs/**\n", 3, "'['"),
])
def test_an_unclosed_opening_is_reported_on_its_own_line(text: str, line: int, opened: str) -> None:
    problem = problem_of(text)
    assert problem.startswith(f".flipgate.yml:{line}: invalid YAML: the {opened} opened on this "
                              "line is never closed")


def test_other_errors_keep_the_line_where_yaml_stopped() -> None:
    assert problem_of("version: 1\ncases: c.jsonl\n  strict: true\n").startswith(".flipgate.yml:3:")
