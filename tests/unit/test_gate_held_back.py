"""Held back: the regressions the sample-size rule kept from blocking, counted and said first;
and a deterministic judge's re-score, which is never called a confirmation."""

from __future__ import annotations

import pytest

from flipgate.github.texts import STATUS_LIMIT, status_description
from flipgate.model import Case, CategoryInfo, Conclusion, JudgeInfo, Row, Score
from flipgate.output.comment import render_comment
from flipgate.verdict import gate

from support.factories import make_report

OFFLINE = JudgeInfo(provider="offline", model="lexical-v1", engine="lexical", auth=None)
LLM = JudgeInfo(provider="openai", model="judge-pinned")


def flip(case_id: str, category: str, *, cases: int, strict: bool = False,
         blocking: tuple[str, ...] = ("safety", "policy")) -> Row:
    case = Case(id=case_id, query="q", context="c", category=category)
    return gate.build_row(
        case, gate.side("kept to the context", Score(5)),
        gate.side("invented", Score(2, "unsupported: figures not in the context: \"$5\""),
                  rescore=Score(2)),
        blocking_categories=blocking, threshold=0.7, find_evidence=lambda case, answer: None,
        policy=gate.Policy(min_cases=50, strict=strict), category_cases=cases)


def report_of(rows: list[Row], *, judge: JudgeInfo = LLM, sizes: dict[str, int] | None = None):
    sizes = sizes or {}
    categories = {name: CategoryInfo(cases=n, blocking=True, below_minimum=n < 50, minimum=50)
                  for name, n in sizes.items()}
    return make_report(rows, judge=judge, categories=categories)


@pytest.mark.parametrize(("row", "held"), [
    (flip("a", "safety", cases=2), True),                       # the sample-size rule
    (flip("a", "safety", cases=2, strict=True), False),         # strict: it blocks
    (flip("a", "safety", cases=80), False),                     # enough cases: it blocks
    (flip("a", "general", cases=2), False),                     # not a blocking category
])
def test_held_back_is_the_sample_size_rule_only(row: Row, held: bool) -> None:
    assert gate.held_back(row) is held
    assert gate.count([row]).held_back == int(held)


def test_the_sentence_names_each_category_and_its_size() -> None:
    rows = [flip("s1", "safety", cases=2), flip("s2", "safety", cases=2), flip("p1", "policy", cases=3)]
    report = report_of(rows, sizes={"safety": 2, "policy": 3})
    assert report.conclusion is Conclusion.SUCCESS and report.counts.held_back == 3
    assert gate.held_back_sentence(report) == (
        "3 confirmed flips did not block: safety has 2 cases, policy has 3 cases, below 50; "
        "see gate.strict")
    assert status_description(report).startswith("⚠️ passed, but 3 confirmed flips did not block")
    # A pass that held flips back is a warning everywhere, never a green tick.
    assert gate.headline_mark(report) == "⚠️"
    headline = next(line for line in render_comment(report).splitlines() if line.startswith("## "))
    assert headline.startswith("## ⚠️ flipgate passed, but 3 confirmed flips")
    assert "✅" not in render_comment(report)


def test_nothing_held_back_says_nothing() -> None:
    report = report_of([flip("a", "safety", cases=2, strict=True)], sizes={"safety": 2})
    assert gate.held_back_sentence(report) is None
    assert status_description(report).startswith("blocked:")


def test_with_the_offline_judge_they_are_flips_not_confirmed_flips() -> None:
    report = report_of([flip("a", "safety", cases=1)], judge=OFFLINE, sizes={"safety": 1})
    assert gate.held_back_sentence(report) == (
        "1 flip did not block: safety has 1 case, below 50; see gate.strict")
    comment = render_comment(report)
    assert "confirm" not in comment.lower()
    assert "## ⚠️ flipgate passed, but 1 flip did not block" in comment


def test_the_status_stays_within_githubs_limit_and_keeps_the_way_out() -> None:
    names = [f"category-with-a-long-name-{i}" for i in range(8)]
    rows = [flip(f"r{i}", name, cases=3, blocking=tuple(names)) for i, name in enumerate(names)]
    report = report_of(rows, sizes=dict.fromkeys(names, 3))
    description = status_description(report)
    assert len(description) <= STATUS_LIMIT
    assert description == ("⚠️ passed, but 8 confirmed flips did not block: 8 categories with too few "
                           "cases, below 50; see gate.strict")


@pytest.mark.parametrize(("mode", "deterministic", "kind"), [
    (gate.SAME_JUDGE, True, gate.REREAD),       # the offline judge re-reading itself
    (gate.SAME_JUDGE, False, gate.SAME_JUDGE),  # an LLM's fresh sample is a second scoring
    (gate.SECOND_OPINION, True, gate.SECOND_OPINION),
    (gate.BOTH, True, gate.BOTH),
    (None, True, None),
])
def test_a_deterministic_re_score_is_a_reread(mode, deterministic, kind) -> None:
    assert gate.confirmation_kind(mode, deterministic=deterministic) == kind


def test_the_sections_and_rows_of_a_reread_run_never_say_confirmed() -> None:
    blocking = gate.kind_named("blocking")
    assert "confirmed" in gate.kind_about(blocking, threshold=0.7)
    for kind in gate.KINDS:
        assert "confirm" not in gate.kind_about(kind, threshold=0.7, reread=True).lower()
    report = report_of([flip("a", "safety", cases=80)], judge=OFFLINE, sizes={"safety": 80})
    comment = render_comment(report)
    assert report.conclusion is Conclusion.FAILURE
    assert "confirm" not in comment.lower()
    assert "decided by the figure check (a figure the context lacks) alone" in comment
    assert "rough screen" in comment
    llm = render_comment(report_of([flip("a", "safety", cases=80)], sizes={"safety": 80}))
    assert "a second scoring confirmed it" in llm


def test_several_suites_say_first_what_any_of_them_held_back() -> None:
    from flipgate.model import SuiteReport

    held = report_of([flip("s1", "safety", cases=2), flip("s2", "safety", cases=2)],
                     sizes={"safety": 2})
    clean = report_of([], sizes={})
    suites = [SuiteReport("support", held), SuiteReport("billing", clean)]
    report = make_report([], judge=LLM, suites=suites,
                         conclusion=gate.worst(part.report.conclusion for part in suites))
    report.counts = gate.add_counts(part.report.counts for part in suites)
    sentence = "2 confirmed flips did not block: safety has 2 cases, below 50; see gate.strict"
    assert status_description(report) == f"⚠️ passed, but {sentence}"
    comment = render_comment(report)
    assert f"## ⚠️ flipgate passed every suite it evaluated, but {sentence}" in comment
    assert f"## Suite support · ⚠️ flipgate passed, but {sentence}" in comment


def test_a_blocked_run_leads_with_the_block_and_still_names_what_it_held_back() -> None:
    rows = [flip("big", "policy", cases=80), flip("small", "safety", cases=2)]
    report = report_of(rows, sizes={"policy": 80, "safety": 2})
    assert report.conclusion is Conclusion.FAILURE and report.counts.held_back == 1
    assert status_description(report).startswith("blocked:")
    comment = render_comment(report)
    assert "\n## ❌ flipgate blocked this change: 1 blocking regression\n" in comment
    assert ("Besides these, 1 confirmed flip did not block: safety has 2 cases, below 50; "
            "see gate.strict.") in comment
