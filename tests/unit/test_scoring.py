"""The scorer's order of work, with a scripted in-process judge passed in."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from flipgate.config.schema import Config, GateConfig
from flipgate.errors import IncompleteError
from flipgate.model import Answer, Case, Conclusion, JudgeInfo, Relevance, Score, Statements, Verdict
from flipgate.output.progress import Silent
from flipgate.run.scoring import build_report, score_rows

from support.factories import make_judge


class ScriptedJudge:
    """Scores answers from a table: response -> list of scores, one per call (sample)."""

    info = JudgeInfo(provider="scripted", model="table")

    def __init__(self, scores: dict[str, list[int | str]], relevance: dict[str, float] | None = None,
                 fluency: dict[str, int] | None = None):
        self.scores, self.relevance_table, self.fluency_table = scores, relevance or {}, fluency or {}
        self.calls: list[tuple[str, str, int]] = []

    async def groundedness(self, case: Case, response: str, *, sample: int = 0) -> Score:
        self.calls.append(("groundedness", response, sample))
        value = self.scores[response][sample]
        if isinstance(value, str):
            return Score.failed(value)
        return Score(value=value, reason=f"scored {value}")

    async def fluency(self, response: str) -> Score:
        self.calls.append(("fluency", response, 0))
        return Score(value=self.fluency_table.get(response, 4))

    async def relevance(self, items: Sequence[tuple[Case, str]]) -> list[Relevance]:
        self.calls.append(("relevance", str(len(items)), 0))
        return [Relevance(score=self.relevance_table.get(r, 0.9)) for _, r in items]

    async def statements(self, case: Case, response: str) -> Statements:
        self.calls.append(("statements", response, 0))
        return Statements()

    async def aclose(self) -> None:
        pass


CONFIG = Config(cases="x", gate=GateConfig(blocking_categories=("pricing",), strict=True))


def run(cases: list[Case], baseline: dict[str, str], candidate: dict[str, str], judge: ScriptedJudge):
    """Score the rows and build the report from them, as a run does."""
    scored = asyncio.run(score_rows(
        cases=cases, baseline={k: Answer(v) for k, v in baseline.items()},
        candidate={k: Answer(v) for k, v in candidate.items()}, config=CONFIG, judge=judge,
        progress=Silent()))
    return build_report(config=CONFIG, judge=make_judge(), cases=len(cases), scored=scored)


def case(case_id: str, category: str = "pricing") -> Case:
    return Case(id=case_id, query=f"q {case_id}", context="The fee is $12.", category=category)


def test_a_confirmed_regression_blocks_after_a_real_second_scoring() -> None:
    judge = ScriptedJudge({"good": [5, 5], "invented": [2, 2]})
    report = run([case("a")], {"a": "good"}, {"a": "invented"}, judge)
    row = report.rows[0]
    assert (row.verdict, row.blocking) == (Verdict.REGRESSION, True)
    assert ("groundedness", "invented", 1) in judge.calls  # the re-score is sample 1
    assert report.conclusion is Conclusion.FAILURE
    assert row.evidence is not None


def test_a_disagreeing_rescore_is_unstable_and_does_not_block() -> None:
    judge = ScriptedJudge({"good": [5], "wobbly": [2, 4]})
    report = run([case("a")], {"a": "good"}, {"a": "wobbly"}, judge)
    assert report.rows[0].verdict is Verdict.UNSTABLE
    assert report.conclusion is Conclusion.SUCCESS


def test_rows_not_newly_ungrounded_are_scored_once_per_side() -> None:
    judge = ScriptedJudge({"x": [5], "y": [4], "bad": [2]})
    run([case("a"), case("b")], {"a": "x", "b": "bad"}, {"a": "y", "b": "bad"}, judge)
    samples = [sample for kind, _, sample in judge.calls if kind == "groundedness"]
    assert samples == [0, 0, 0, 0]


def test_an_empty_answer_is_a_non_answer_without_asking_the_judge() -> None:
    judge = ScriptedJudge({"good": [5]})
    report = run([case("a")], {"a": "good"}, {"a": "  \n"}, judge)
    assert report.rows[0].verdict is Verdict.NEW_NON_ANSWER
    assert report.rows[0].candidate.groundedness.value == 3
    assert all(r != "  \n" for kind, r, _ in judge.calls if kind == "groundedness")


def test_judge_errors_give_error_rows_and_an_error_conclusion() -> None:
    judge = ScriptedJudge({"good": [5], "?": ["reply was not JSON"]})
    report = run([case("a"), case("b", "general")], {"a": "good", "b": "good"}, {"a": "?", "b": "good"}, judge)
    assert report.rows[0].verdict is Verdict.ERROR
    assert report.rows[0].errors == ["candidate: reply was not JSON"]
    assert report.counts.errors == 1
    assert report.conclusion is Conclusion.ERROR


def test_a_failed_rescore_never_becomes_a_regression_or_a_pass() -> None:
    judge = ScriptedJudge({"good": [5], "invented": [2, "timed out"]})
    report = run([case("a")], {"a": "good"}, {"a": "invented"}, judge)
    assert report.rows[0].verdict is Verdict.ERROR
    assert report.conclusion is Conclusion.ERROR


def test_a_confirmed_regression_stays_listed_when_other_rows_error() -> None:
    judge = ScriptedJudge({"good": [5], "invented": [1, 1], "?": ["garbage"]})
    report = run([case("a"), case("b")], {"a": "good", "b": "good"}, {"a": "invented", "b": "?"}, judge)
    assert [r.verdict for r in report.rows] == [Verdict.REGRESSION, Verdict.ERROR]
    assert report.counts.blocking_regressions == 1
    assert report.conclusion is Conclusion.ERROR


def test_a_judge_that_raises_is_a_judge_error_for_that_row() -> None:
    class Raising(ScriptedJudge):
        async def groundedness(self, case, response, *, sample=0):
            raise RuntimeError("socket closed")

    report = run([case("a")], {"a": "x"}, {"a": "y"}, Raising({}))
    assert report.rows[0].verdict is Verdict.ERROR
    assert "socket closed" in report.rows[0].errors[0]


def test_budget_and_other_run_stoppers_propagate() -> None:
    class Broke(ScriptedJudge):
        async def groundedness(self, case, response, *, sample=0):
            raise IncompleteError("budget.max_requests (1) reached")

    with pytest.raises(IncompleteError):
        run([case("a")], {"a": "x"}, {"a": "y"}, Broke({}))


def test_fluency_is_asked_only_on_ties_and_never_changes_a_verdict() -> None:
    judge = ScriptedJudge({"g1": [5], "g2": [5], "p": [4], "u": [2]}, fluency={"g1": 3, "g2": 5})
    report = run([case("tie"), case("moved"), case("still")],
                 {"tie": "g1", "moved": "g1", "still": "u"}, {"tie": "g2", "moved": "p", "still": "u"}, judge)
    assert [r.verdict for r in report.rows] == [Verdict.UNCHANGED, Verdict.MOVED, Verdict.STILL_UNGROUNDED]
    asked = [r for kind, r, _ in judge.calls if kind == "fluency"]
    assert asked == ["g1", "g2"]
    assert report.fluency is not None and report.fluency.mean_delta == 2.0


def test_a_blocked_run_asks_no_fluency_and_says_so() -> None:
    judge = ScriptedJudge({"g1": [5], "g2": [5], "good": [5, 5], "invented": [2, 2]})
    report = run([case("tie"), case("flip")], {"tie": "g1", "flip": "good"},
                 {"tie": "g2", "flip": "invented"}, judge)
    assert report.conclusion is Conclusion.FAILURE
    assert [kind for kind, _, _ in judge.calls if kind == "fluency"] == []
    assert report.fluency is not None
    assert (report.fluency.rows, report.fluency.mean_delta, report.fluency.skipped) == (0, None, 1)
    assert report.rows[0].baseline.fluency is None and report.rows[0].candidate.fluency is None
    assert ("Fluency was not asked on 1 tied row: the gate blocked on a groundedness regression, "
            "and fluency never outweighs one.") in report.notes


def test_a_regression_outside_the_blocking_categories_still_gets_fluency() -> None:
    judge = ScriptedJudge({"g1": [5], "g2": [5], "good": [5, 5], "invented": [2, 2]})
    report = run([case("tie"), case("flip", category="general")], {"tie": "g1", "flip": "good"},
                 {"tie": "g2", "flip": "invented"}, judge)
    assert report.conclusion is Conclusion.SUCCESS
    assert sorted(r for kind, r, _ in judge.calls if kind == "fluency") == ["g1", "g2"]
    assert report.fluency is not None and report.fluency.rows == 1 and not report.notes


def test_fluency_waits_until_every_row_is_scored() -> None:
    judge = ScriptedJudge({f"g{i}": [5] for i in range(20)})
    cases = [case(f"c{i}") for i in range(10)]
    run(cases, {f"c{i}": f"g{i}" for i in range(10)}, {f"c{i}": f"g{i + 10}" for i in range(10)}, judge)
    kinds = [kind for kind, _, _ in judge.calls if kind != "relevance"]
    assert kinds == ["groundedness"] * 20 + ["fluency"] * 20


def test_relevance_is_asked_once_for_the_whole_run_and_drops_are_flagged() -> None:
    judge = ScriptedJudge({"on": [5], "off": [5]}, relevance={"on": 0.9, "off": 0.3})
    report = run([case("a"), case("b")], {"a": "on", "b": "on"}, {"a": "off", "b": "on"}, judge)
    assert [c for c in judge.calls if c[0] == "relevance"] == [("relevance", "4", 0)]
    assert [r.relevance_drop for r in report.rows] == [True, False]
    assert report.counts.relevance_drops == 1


def test_a_relevance_error_is_reported_not_ignored() -> None:
    class NoRelevance(ScriptedJudge):
        async def relevance(self, items):
            return [Relevance(score=None, error="embeddings failed") for _ in items]

    report = run([case("a")], {"a": "x"}, {"a": "x"}, NoRelevance({"x": [5]}))
    assert report.rows[0].verdict is Verdict.ERROR
    assert report.conclusion is Conclusion.ERROR


def test_a_stop_part_way_keeps_the_rows_it_finished_and_names_the_rest_not_run() -> None:
    """The limit is spent on the third row: the first two are kept as scored (a confirmed
    regression among them), the third is not run, and the run concludes error, not blocked."""
    from flipgate.run import stopped
    from flipgate.verdict import gate

    class SpentAfterTwoRows(ScriptedJudge):
        async def groundedness(self, case, response, *, sample=0):
            if case.id == "c":
                raise IncompleteError("HTTP 429 from models.github.ai for the judge model")
            return await super().groundedness(case, response, sample=sample)

    judge = SpentAfterTwoRows({"good": [5, 5], "invented": [2, 2], "g1": [5], "g2": [5]})
    cases = [case("a"), case("b"), case("c")]
    with pytest.raises(stopped.StoppedPartWay) as raised:
        asyncio.run(score_rows(
            cases=cases, baseline={k: Answer(v) for k, v in {"a": "good", "b": "g1", "c": "g1"}.items()},
            candidate={k: Answer(v) for k, v in {"a": "invented", "b": "g2", "c": "g2"}.items()},
            config=CONFIG, judge=judge, progress=Silent(), workers=1))
    rows = stopped.kept_rows(cases, raised.value)
    assert [(row.id, row.verdict) for row in rows] == [
        ("a", Verdict.REGRESSION), ("b", Verdict.UNCHANGED), ("c", Verdict.NOT_RUN)]
    assert rows[0].blocking and rows[0].evidence is not None   # as a full run has it
    assert rows[2].candidate.not_run == ("the run stopped on the provider's rate limit before "
                                         "this row was scored")
    counts = gate.count(rows)
    assert (counts.not_run, counts.blocking_regressions, counts.errors) == (1, 1, 0)
    assert gate.conclude(counts) is Conclusion.ERROR        # never blocks on part of the rows
    assert stopped.progress_note(rows).startswith("2 of 3 rows finished before the stop")


def test_a_row_left_with_only_429_judge_errors_by_a_rate_limit_stop_is_not_run() -> None:
    from flipgate.run import stopped
    from flipgate.verdict import gate

    refused = Score.failed("groundedness judge: HTTP 429 (still rate limited): Rate limit")
    side = gate.side("an answer", refused)
    row = gate.build_row(case("a"), side, side, blocking_categories=(), threshold=0.7,
                         find_evidence=lambda c, r: None)  # type: ignore[arg-type,return-value]
    assert row.verdict is Verdict.ERROR
    cause = IncompleteError("HTTP 429 from models.github.ai for the judge model")
    kept = stopped.kept_rows([case("a")], stopped.StoppedPartWay(cause, [row]))
    assert kept[0].verdict is Verdict.NOT_RUN
    budget = IncompleteError("budget.max_requests (1) reached")   # not a rate limit: kept
    assert stopped.kept_rows([case("a")], stopped.StoppedPartWay(budget, [row]))[0] is row
