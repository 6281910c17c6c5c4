"""GitHub Models' free quota against a run's plan (run/quota.py): the count by model, and the
line that says when the free daily limit cannot hold the run."""

from __future__ import annotations

from flipgate.run.quota import Plan, quota_lines, requests_by_model


def plan(cases: int, *, generator: str = "openai/gpt-4.1-mini", judge: str | None = "openai/gpt-4.1-mini") -> Plan:
    return Plan(generations={generator: 2 * cases}, judge_model=judge, judged_cases=cases,
                embedding_model="openai/text-embedding-3-small" if judge else None,
                embedding_texts=cases * 7)


def test_a_20_case_run_on_one_model_is_counted_and_said_to_pass_the_free_daily_limit() -> None:
    counts = requests_by_model(plan(20))
    assert counts == {"openai/gpt-4.1-mini": 40 + 6 * 20 + 1, "openai/text-embedding-3-small": 2}
    line = quota_lines(plan(20))[0]
    assert line.startswith("GitHub Models: this run sends about 161 requests to openai/gpt-4.1-mini "
                           "(40 generations, 121 judge requests, a probe included); the free plan "
                           "allows 150 a day and 15 a minute (low tier")
    assert "at least 11 min" in line
    assert "over the free daily limit: the run may stop part way" in line
    assert "over" not in quota_lines(plan(20))[1]


def test_a_model_of_another_tier_or_unknown_is_named_with_where_to_look() -> None:
    lines = quota_lines(plan(3, generator="openai/gpt-4.1", judge=None))
    assert lines == ["GitHub Models: this run sends about 6 requests to openai/gpt-4.1 (6 generations); "
                     "the free plan allows 50 a day and 10 a minute (high tier, docs/rate-limits.md), "
                     "so at least 1 min."]
    unknown = quota_lines(plan(3, generator="mistral-ai/some-model", judge=None))[0]
    assert "check its daily limit on its page in the GitHub Models catalog" in unknown


def test_nothing_on_github_models_says_nothing() -> None:
    assert quota_lines(Plan(generations={}, judge_model=None, judged_cases=5,
                            embedding_model=None)) == []
