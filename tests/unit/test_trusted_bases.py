"""Which base a pull request is judged against (github/bases.py) and its setting."""

from __future__ import annotations

import pytest

from flipgate.config.schema import parse_config
from flipgate.errors import InputError
from flipgate.github.bases import CONTEXT_LIMIT, refuse_base, status_context


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
    ("main-old", False), ("hotfix/release/1", False), ("release/a/b", False)])
def test_patterns_are_fnmatch_and_case_sensitive(base: str, trusted: bool) -> None:
    assert (refused(base, ["main", "release/*"]) is None) is trusted


# GitHub's branch-protection patterns: File.fnmatch with FNM_PATHNAME, so no wildcard
# crosses a `/`, and `**/` stands for any number of whole directories.
@pytest.mark.parametrize(("pattern", "base", "trusted"), [
    ("release/*", "release/1", True),
    ("release/*", "release/a/b", False),        # `*` stops at `/`
    ("*", "main", True),
    ("*", "feature/x", False),
    ("*release*", "prerelease-2", True),
    ("*release*", "hotfix/release/1", False),
    ("release/?", "release/1", True),
    ("release/?", "release/12", False),
    ("release?1", "release/1", False),          # `?` is never a `/`
    ("release/[0-9]*", "release/1.2", True),
    ("release/[0-9]*", "release/x", False),
    ("release/[!0-9]*", "release/x", True),
    ("release[/]1", "release/1", False),        # nor is a bracket set
    ("release/**/*", "release/a/b", True),      # `**/`: any number of directories
    ("release/**/*", "release/1", True),        # ... none included
    ("release/**", "release/a/b", False),       # `**` not before `/` is a plain `*`
    ("qa**/**/*", "qa-x/y/z", True),
    ("**/hotfix", "team/a/hotfix", True),
    ("**/hotfix", "hotfix", True),
    ("release/1.*", "release/1x2", False),      # `.` is itself, not any character
    ("main", "Main", False),                    # case counts, as in git
    ("release/[9-0]", "release/5", False),      # a reversed range trusts nothing
])
def test_wildcards_do_not_cross_a_slash(pattern: str, base: str, trusted: bool) -> None:
    assert (refused(base, [pattern]) is None) is trusted


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


# Each base's verdict on a context of its own: one head proposed to two bases.
@pytest.mark.parametrize(("base", "suite", "context"), [
    ("main", None, "flipgate"),
    ("main", "support", "flipgate/support"),
    ("release/1", None, "flipgate@release/1"),
    ("release/1", "support", "flipgate/support@release/1"),
    ("support", None, "flipgate@support"),        # never a suite's `flipgate/support`
    ("release/1/support", None, "flipgate@release/1/support"),
])
def test_a_verdict_lands_on_its_bases_own_context(base: str, suite: str | None,
                                                   context: str) -> None:
    assert status_context("flipgate", base=base, default_branch="main", suite=suite) == context


def test_no_two_bases_share_a_context_even_past_githubs_limit() -> None:
    long = "release/" + "x" * 300
    first = status_context("flipgate", base=long + "1", default_branch="main")
    second = status_context("flipgate", base=long + "2", default_branch="main")
    assert len(first) == len(second) == CONTEXT_LIMIT and first != second
    assert first.startswith("flipgate@release/xxx")


def test_two_long_bases_whose_short_digests_collide_keep_contexts_apart() -> None:
    """Two valid 255-character branch names the sixth red team's kind of search finds: they
    share 247 characters, and the first 12 hex digits of their names' SHA-256 are equal. A
    pass against one must never land on the other's context."""
    stem = "release/" + "r" * 239
    first, second = stem + "012d8c1c", stem + "01b388c0"
    assert len(first) == len(second) == 255
    contexts = [status_context("flipgate", base=base, default_branch="main", suite=suite)
                for base in (first, second) for suite in (None, "support")]
    assert len(set(contexts)) == 4
    assert all(len(context) <= CONTEXT_LIMIT for context in contexts)
