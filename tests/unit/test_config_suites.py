"""`suites:` in `.flipgate.yml`: every field defaults from the top level, problems name
the file and the line, and a config without suites is its own one suite."""

from __future__ import annotations

import pytest

from flipgate.config.schema import STATUS_PER_SUITE, STATUS_SINGLE, GateConfig, parse_config
from flipgate.errors import InputError

TOP = """\
cases: eval/cases.jsonl
generator: prompts/answer.prompty
watch: [schemas/**]
gate:
  blocking_categories: [policy]
  min_cases_per_category: 10
  strict: true
relevance:
  threshold: 0.6
  embedding_model: text-embedding-3-large
"""


def messages(text: str) -> list[str]:
    with pytest.raises(InputError) as caught:
        parse_config(text, source="cfg.yml")
    return [str(p) for p in caught.value.problems]


def test_a_config_without_suites_is_one_implicit_suite() -> None:
    config = parse_config(TOP)
    assert config.suites == () and config.status == STATUS_SINGLE
    assert config.suite_configs() == [config]
    with pytest.raises(InputError, match="--suite needs a 'suites:' section"):
        config.suite_configs(["support"])


def test_every_suite_field_defaults_from_the_top_level() -> None:
    config = parse_config(TOP + """\
suites:
  - name: support
  - name: billing
    generator: prompts/billing.prompty
    cases: eval/billing.jsonl
    watch: [billing/**]
    gate: {blocking_categories: [pricing, fees]}
    relevance: {threshold: 0.4}
""")
    support, billing = config.suite_configs()
    assert (support.suite, support.cases, support.generator, support.watch) == (
        "support", "eval/cases.jsonl", "prompts/answer.prompty", ("schemas/**",))
    assert support.gate == config.gate == GateConfig(("policy",), 10, True)
    assert support.relevance == config.relevance
    assert (billing.suite, billing.cases, billing.generator, billing.watch) == (
        "billing", "eval/billing.jsonl", "prompts/billing.prompty", ("billing/**",))
    # A suite's gate overrides key by key; the rest still comes from the top.
    assert billing.gate == GateConfig(("pricing", "fees"), 10, True)
    assert billing.relevance.threshold == 0.4
    assert billing.relevance.embedding_model == "text-embedding-3-large"
    # The judge, budget and concurrency are the run's, shared by every suite.
    assert billing.judge == config.judge and billing.concurrency == config.concurrency
    assert billing.suites == ()


def test_suites_as_a_mapping_name_to_settings() -> None:
    config = parse_config("""\
generator: prompts/a.prompty
status: per-suite
suites:
  support: {cases: eval/support.jsonl}
  billing:
    cases: eval/billing.jsonl
""")
    assert [c.suite for c in config.suite_configs()] == ["support", "billing"]
    assert config.status == STATUS_PER_SUITE
    assert config.cases == ""  # no top-level cases needed when every suite has its own


def test_suite_selection_keeps_the_files_order_and_refuses_unknown_names() -> None:
    config = parse_config("cases: c.jsonl\nsuites: {a: {}, b: {}, c: {}}\n")
    assert [c.suite for c in config.suite_configs(["c", "a"])] == ["a", "c"]
    with pytest.raises(InputError, match="no suite named z"):
        config.suite_configs(["a", "z"])


@pytest.mark.parametrize(("text", "expected"), [
    ("cases: c\nsuites:\n  - name: a\n    gate: {bogus: 1}\n",
     "cfg.yml:4: unknown key 'suites.a.gate.bogus'"),
    ("cases: c\nsuites:\n  a:\n    judge: {model: x}\n",
     "cfg.yml:4: unknown key 'suites.a.judge'"),
    ("cases: c\nsuites:\n  a:\n    relevance: {embedding_model: m}\n",
     "cfg.yml:4: unknown key 'suites.a.relevance.embedding_model' (known: threshold)"),
    ("cases: c\nsuites:\n  - name: a\n  - name: a\n", "cfg.yml:4: suite 'a' is named twice"),
    ("cases: c\nsuites:\n  - cases: x\n", "cfg.yml:3: 'suites' item 1 must be a mapping with a 'name'"),
    ("cases: c\nsuites:\n  bad name: {}\n", "cfg.yml:3: suite name 'bad name' must be"),
    ("cases: c\nsuites: []\n", "cfg.yml:2: 'suites' names no suite"),
    ("cases: c\nsuites: support\n", "cfg.yml:2: 'suites' must be a list of suites"),
    ("generator: g\nsuites:\n  a: {generator: x}\n",
     "cfg.yml:3: suite 'a' has no 'cases' (set it here or at the top level)"),
    ("cases: c\nstatus: per-suite\n", "cfg.yml:2: 'status' per-suite needs a 'suites:' section"),
    ("cases: c\nstatus: each\n", "cfg.yml:2: 'status' must be one of single, per-suite"),
    ("cases: c\nsuites:\n  a:\n    gate: {min_cases_per_category: 0}\n",
     "cfg.yml:4: 'suites.a.gate.min_cases_per_category' must be a whole number above 0"),
])
def test_suite_problems_name_the_file_and_line(text: str, expected: str) -> None:
    assert any(message.startswith(expected) for message in messages(text)), messages(text)


def test_without_suites_cases_stay_required() -> None:
    assert messages("generator: g\n") == ["cfg.yml:1: missing required key 'cases'"]


def test_a_suites_generator_may_take_the_mapping_form() -> None:
    config = parse_config("""\
cases: c.jsonl
generator: {path: prompts/a.prompty, strict_undefined: false}
suites:
  plain: {}
  own:
    generator:
      path: prompts/b.prompty
      endpoint: {provider: azure, deployment: gpt-4o-mini}
""")
    plain, own = config.suite_configs()
    assert plain.generator == "prompts/a.prompty" and not plain.generator_options.strict_undefined
    assert own.generator == "prompts/b.prompty" and own.generator_options.strict_undefined  # the default
    assert own.generator_options.endpoint is not None
    assert own.generator_options.endpoint.deployment == "gpt-4o-mini"
    assert any(m.startswith("cfg.yml:4: unknown key 'suites.own.generator.bogus'")
               for m in messages("cases: c\nsuites:\n  own:\n    generator: {bogus: 1}\n"))
