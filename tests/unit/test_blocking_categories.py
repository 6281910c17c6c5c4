"""A `gate.blocking_categories` entry that no case has is bad input: a typo never turns the gate off."""

from __future__ import annotations

import pytest

from flipgate.config.cases import require_blocking_categories, unknown_blocking_categories
from flipgate.config.schema import parse_config
from flipgate.errors import InputError
from flipgate.model import Case

PHARMACY = "version: 1\ncases: eval/cases.jsonl\ngate:\n  blocking_categories: [dosages, refill]\n"


def cases(*categories: str) -> list[Case]:
    return [Case(id=f"{category}-{i}", query="q?", context="c.", category=category)
            for i, category in enumerate(categories)]


def test_a_typo_names_the_entry_its_line_the_categories_the_cases_have_and_the_closest() -> None:
    config = parse_config(PHARMACY)
    with pytest.raises(InputError) as raised:
        require_blocking_categories([(config, cases("dosage", "refills", "hours", "insurance"))])
    assert [str(problem) for problem in raised.value.problems] == [
        ".flipgate.yml:4: 'dosages' in gate.blocking_categories is no case's category, so it would "
        "block nothing (the cases have: dosage, hours, insurance, refills); did you mean 'dosage'?",
        ".flipgate.yml:4: 'refill' in gate.blocking_categories is no case's category, so it would "
        "block nothing (the cases have: dosage, hours, insurance, refills); did you mean 'refills'?",
    ]


def test_an_entry_nothing_resembles_gets_no_guess() -> None:
    config = parse_config(PHARMACY.replace("[dosages, refill]", "[dosage, pricing]"))
    [problem] = unknown_blocking_categories([(config, cases("dosage", "hours"))])
    assert "'pricing'" in str(problem) and "did you mean" not in str(problem)


def test_the_default_list_written_nowhere_is_not_checked() -> None:
    config = parse_config("version: 1\ncases: c.jsonl\n")
    assert unknown_blocking_categories([(config, cases("general"))]) == []


SUITES = """\
version: 1
gate:
  blocking_categories: [dosage, hours]
suites:
  - name: pharmacy
    cases: eval/pharmacy.jsonl
  - name: counter
    cases: eval/counter.jsonl
  - name: billing
    cases: eval/billing.jsonl
    gate: {blocking_categories: [insurence]}
"""


def test_per_suite_a_shared_list_counts_every_suite_and_a_suites_own_list_its_cases() -> None:
    config = parse_config(SUITES)
    pharmacy, counter, billing = config.suite_configs()
    parts = [(pharmacy, cases("dosage")), (counter, cases("hours")),
             (billing, cases("insurance", "copay"))]
    [problem] = unknown_blocking_categories(parts)
    assert str(problem) == (
        ".flipgate.yml:11: 'insurence' in suites.billing.gate.blocking_categories is no case's "
        "category, so it would block nothing (the cases have: copay, insurance); "
        "did you mean 'insurance'?")
    # A shared list checked on one suite alone (--suite) could miss the suite that has it.
    assert unknown_blocking_categories([(pharmacy, cases("dosage"))], every_suite=False) == []
    [problem] = unknown_blocking_categories(parts[:2] + [(billing, cases("dosage"))])
    assert "'insurence'" in str(problem)
    [problem] = unknown_blocking_categories([(pharmacy, cases("dosage")), (counter, cases("x"))])
    assert str(problem).startswith(".flipgate.yml:3: 'hours' in gate.blocking_categories")
    assert "suite pharmacy's cases have: dosage; suite counter's cases have: x" in str(problem)
