"""Change detection and the change description (pure)."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from flipgate.model import Case
from flipgate.output.report import change_dict
from flipgate.verdict.changes import (
    ChangeScope,
    describe_cases_change,
    describe_change,
    parameter_changes,
    relevant_paths,
    unified,
)

SCOPE = ChangeScope(generator="prompts/answer.prompty",
                    includes=frozenset({"prompts/partials/rules.j2", "shared/tone.j2"}),
                    watch=("config/models/**", "*.schema.json", "!draft.schema.json"))


@pytest.mark.parametrize("changed, relevant", [
    (["README.md"], []),
    (["prompts/answer.prompty"], ["prompts/answer.prompty"]),
    (["prompts/partials/rules.j2", "README.md"], ["prompts/partials/rules.j2"]),
    (["shared/tone.j2"], ["shared/tone.j2"]),                       # an include outside prompts/
    (["prompts/unrelated.j2"], []),                                  # in the folder, not included
    (["config/models/a/b/c.yml"], ["config/models/a/b/c.yml"]),      # ** spans directories
    (["config/models"], []),
    (["deep/dir/answer.schema.json"], ["deep/dir/answer.schema.json"]),  # no slash: any depth
    (["draft.schema.json"], []),                                     # negated
    (["eval/cases.jsonl", ".flipgate.yml"], []),                     # noted, not a prompt change
])
def test_relevant_paths(changed: list[str], relevant: list[str]) -> None:
    assert relevant_paths(changed, SCOPE) == relevant


def test_watch_globs_are_relative_to_the_configuration_directory() -> None:
    scope = ChangeScope(generator="svc/prompts/a.prompty", watch=("prompts/**",), watch_root="svc")
    assert relevant_paths(["svc/prompts/x.j2", "prompts/x.j2", "other/svc/prompts/y"], scope) == [
        "svc/prompts/x.j2"]


def test_unknown_includes_make_every_change_count() -> None:
    scope = ChangeScope(generator="a.prompty", includes_complete=False)
    assert relevant_paths(["README.md", "b"], scope) == ["README.md", "b"]


@pytest.mark.parametrize("old, new, expected", [
    ({"temperature": 0.2}, {"temperature": 0.7}, [{"name": "temperature", "old": 0.2, "new": 0.7}]),
    ({"temperature": 0.2}, {"temperature": 0.2}, []),
    ({}, {"max_tokens": 50}, [{"name": "max_tokens", "old": None, "new": 50}]),
    ({"seed": 1, "top_p": 1}, {"top_p": 0.5},
     [{"name": "seed", "old": 1, "new": None}, {"name": "top_p", "old": 1, "new": 0.5}]),
])
def test_parameter_changes(old: dict, new: dict, expected: list[dict]) -> None:
    assert [asdict(change) for change in parameter_changes(old, new)] == expected


def test_describe_change_has_the_shape_the_renderer_reads() -> None:
    change = describe_change(
        generator="prompts/answer.prompty", files=["prompts/answer.prompty", "prompts/rules.j2"],
        model=("gpt-4o-mini", "gpt-4.1"), parameters=({"temperature": 0.2}, {"temperature": 0.7}),
        templates=[("prompts/answer.prompty", "system:\nBe brief.\n", "system:\nBe generous.\n"),
                   ("prompts/rules.j2", "same\n", "same\n"),
                   ("prompts/new.j2", None, "new file\n")],
        labels=("base1234", "head5678"), config_diff=None, cases_diff="1 added (x)")
    assert change_dict(change) == {
        "generator": "prompts/answer.prompty",
        "files": ["prompts/answer.prompty", "prompts/rules.j2"],
        "model": {"old": "gpt-4o-mini", "new": "gpt-4.1"},
        "parameters": [{"name": "temperature", "old": 0.2, "new": 0.7}],
        "template_diff": (
            "--- prompts/answer.prompty@base1234\n+++ prompts/answer.prompty@head5678\n"
            "@@ -1,2 +1,2 @@\n system:\n-Be brief.\n+Be generous.\n"
            "--- /dev/null\n+++ prompts/new.j2@head5678\n@@ -0,0 +1 @@\n+new file\n"),
        "config_diff": None,
        "cases_diff": "1 added (x)",
    }


def test_long_diffs_are_shortened_and_say_so() -> None:
    before = "\n".join(f"line {i}" for i in range(1000))
    diff = unified(before, "", before_label="a", after_label="b", max_lines=10)
    assert diff.count("\n") == 11
    assert diff.endswith("more diff lines not shown)\n")


def case(case_id: str, **fields) -> Case:
    return Case(id=case_id, query=fields.get("query", "q"), context=fields.get("context", "c"),
                line=fields.get("line", 1))


@pytest.mark.parametrize("head, expected", [
    ([case("a"), case("b")], None),
    ([case("a", line=9), case("b")], None),   # moving a line is not a change
    ([case("a"), case("b"), case("c")], "1 added (c)"),
    ([case("a")], "1 removed (b)"),
    ([case("a", context="new"), case("z")], "1 added (z); 1 removed (b); 1 changed (a)"),
    ([case(f"n{i}") for i in range(7)], "7 added (n0, n1, n2, n3, n4 and 2 more); 2 removed (a, b)"),
])
def test_describe_cases_change(head: list[Case], expected: str | None) -> None:
    assert describe_cases_change([case("a"), case("b")], head) == expected
