"""Which base a pull request is judged against (github/bases.py) and its setting."""

from __future__ import annotations

import pytest

from flipgate.config.schema import parse_config
from flipgate.errors import InputError
from flipgate.github.bases import refuse_base


def refused(base: str, named: list[str] | None = None, *, default_has: bool = True,
            base_has: bool = True) -> str | None:
    result = refuse_base(base, default_branch="main", named=named, default_has_config=default_has,
                         base_has_config=base_has, config_path=".flipgate.yml")
    return None if result is None else result.why


def test_the_default_branch_is_trusted_even_while_adopting() -> None:
    assert refused("main", default_has=False, base_has=False) is None


def test_another_branch_needs_the_default_branchs_list() -> None:
    why = refused("legacy")
    assert why is not None and "legacy" in why and "gate.base_branches" in why


@pytest.mark.parametrize(("base", "trusted"), [
    ("release/1.2", True), ("release/", True), ("release", False), ("Release/1", False),
    ("main-old", False), ("hotfix/release/1", False)])
def test_patterns_are_fnmatch_and_case_sensitive(base: str, trusted: bool) -> None:
    assert (refused(base, ["main", "release/*"]) is None) is trusted


def test_a_named_base_without_a_configuration_is_refused_not_adopted() -> None:
    why = refused("release/1", ["release/*"], base_has=False)
    assert why is not None and "never read" in why


def test_without_a_trusted_configuration_only_the_default_branch_is_trusted() -> None:
    assert refused("release/1", None, default_has=False, base_has=False) is not None


TOP = "cases: eval/cases.jsonl\ngenerator: prompts/answer.prompty\n"


def test_the_setting_validates_and_is_the_runs_not_a_suites() -> None:
    config = parse_config(TOP + 'gate:\n  base_branches: [main, "release/*"]\n')
    assert config.base_branches == ("main", "release/*")
    assert parse_config(TOP + "gate:\n  strict: true\n").base_branches is None
    with pytest.raises(InputError, match="base_branches"):
        parse_config(TOP + "gate:\n  base_branches: main\n")
    with pytest.raises(InputError, match="base_branches"):
        parse_config("generator: prompts/answer.prompty\nsuites:\n  - name: a\n"
                     "    cases: a.jsonl\n    gate:\n      base_branches: [main]\n")
