"""The card-FAQ example under the offline judge: every row's verdict, as its README says.

Runs the offline judge and the gate core directly (not the CLI), so the
example's promise holds however the command around it is wired.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from flipgate.config.cases import load_answer_sets, load_cases
from flipgate.config.schema import Config, load_config
from flipgate.judges.offline import OfflineJudge
from flipgate.model import Case, Conclusion, Evidence, Row, Verdict
from flipgate.verdict import gate
from flipgate.verdict.evidence import find_unsupported

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cards"


@dataclass(frozen=True)
class Outcome:
    scores: tuple[int, int]
    verdict: Verdict
    blocking: bool
    relevance_drop: bool


@dataclass(frozen=True)
class Gated:
    cases: dict[str, Case]
    rows: dict[str, Row]
    outcomes: dict[str, Outcome]
    config: Config


def gate_example(config: Config, cases: list[Case], baseline: dict[str, str],
                 candidate: dict[str, str]) -> tuple[dict[str, Row], dict[str, Outcome]]:
    """What `flipgate gate --judge offline` decides, row by row, from the gate core."""
    judge = OfflineJudge(config)

    async def score() -> list[Row]:
        rows = []
        relevances = await judge.relevance(
            [(c, baseline[c.id]) for c in cases] + [(c, candidate[c.id]) for c in cases])
        for i, case in enumerate(cases):
            before = await judge.groundedness(case, baseline[case.id])
            after = await judge.groundedness(case, candidate[case.id])
            assert before.value is not None and after.value is not None
            rescore = None
            if gate.needs_rescore(gate.bucket_of(before.value), gate.bucket_of(after.value)):
                rescore = await judge.groundedness(case, candidate[case.id], sample=1)
            row = gate.build_row(
                case,
                gate.side(baseline[case.id], before, relevance=relevances[i]),
                gate.side(candidate[case.id], after, relevance=relevances[len(cases) + i],
                          rescore=rescore),
                blocking_categories=config.gate.blocking_categories,
                threshold=config.relevance.threshold,
                find_evidence=lambda c, answer: find_unsupported(c.context, answer, query=c.query))
            assert row.errors == []
            rows.append(row)
        return rows

    rows = asyncio.run(score())
    outcomes = {
        row.id: Outcome(
            scores=(row.baseline.groundedness.value or 0, row.candidate.groundedness.value or 0),
            verdict=row.verdict, blocking=row.blocking, relevance_drop=row.relevance_drop)
        for row in rows
    }
    return {row.id: row for row in rows}, outcomes


@pytest.fixture(scope="module")
def example() -> Gated:
    config = load_config(EXAMPLE / ".flipgate.yml")
    cases = load_cases(EXAMPLE / config.cases)
    baseline, candidate = load_answer_sets(cases, str(EXAMPLE / config.cases),
                                           [EXAMPLE / "baseline.jsonl", EXAMPLE / "candidate.jsonl"])
    rows, outcomes = gate_example(config, cases,
                                  {k: a.response for k, a in baseline.items()},
                                  {k: a.response for k, a in candidate.items()})
    return Gated({c.id: c for c in cases}, rows, outcomes, config)


def readme_table() -> dict[str, Outcome]:
    """The README's promise: | `id` | category | b → c | verdict | blocking | relevance drop | ..."""
    promised = {}
    row = re.compile(r"^\| `(?P<id>[^`]+)` \| (?P<category>[^|]+) \| (?P<before>\d) \u2192 (?P<after>\d) "
                     r"\| (?P<verdict>\w+) \| (?P<blocking>yes|no) \| (?P<drop>yes|no) \|")
    for line in (EXAMPLE / "README.md").read_text(encoding="utf-8").splitlines():
        if match := row.match(line):
            promised[match["id"]] = Outcome(
                scores=(int(match["before"]), int(match["after"])),
                verdict=Verdict(match["verdict"]),
                blocking=match["blocking"] == "yes",
                relevance_drop=match["drop"] == "yes")
    return promised


# The example's design: which row shows which verdict.
EXPECTED = {
    "replacement-card-fee": (Verdict.REGRESSION, True),
    "overdraft-protection": (Verdict.REGRESSION, True),
    "travel-notice": (Verdict.REGRESSION, False),
    "stolen-card": (Verdict.NEW_NON_ANSWER, False),
    "platinum-annual-fee": (Verdict.STILL_UNGROUNDED, False),
    "overdraft-fee": (Verdict.MOVED, False),
    "atm-daily-limit": (Verdict.MOVED, False),
    "dispute-window": (Verdict.MOVED, False),
    "contactless-limit": (Verdict.MOVED, False),
    "foreign-transaction-fee": (Verdict.UNCHANGED, False),
    "balance-check": (Verdict.UNCHANGED, False),
    "late-payment-fee": (Verdict.UNCHANGED, False),
    "card-activation": (Verdict.UNCHANGED, False),
    "pin-reset": (Verdict.UNCHANGED, False),
    "fee-schedule-change": (Verdict.UNCHANGED, False),
}


@pytest.mark.parametrize("case_id", sorted(EXPECTED))
def test_each_row_gets_its_verdict(example: Gated, case_id: str) -> None:
    outcome = example.outcomes[case_id]
    assert (outcome.verdict, outcome.blocking) == EXPECTED[case_id]


def test_the_readme_table_is_what_the_offline_judge_decides(example: Gated) -> None:
    assert readme_table() == example.outcomes
    for case_id, case in example.cases.items():
        assert f"| `{case_id}` | {case.category} |" in (EXAMPLE / "README.md").read_text(encoding="utf-8")


def test_the_example_blocks_and_shows_every_verdict_but_unstable(example: Gated) -> None:
    rows = list(example.rows.values())
    counts = gate.count(rows)
    assert counts.blocking_regressions == 2 and counts.regressions_to_review == 1
    assert counts.new_non_answers >= 1 and counts.still_ungrounded >= 1 and counts.moved >= 2
    assert counts.relevance_drops >= 1 and counts.errors == 0
    # Its answers are short: the offline judge sets aside none of them (NOT_JUDGED); the run
    # finishes, so no row is NOT_RUN.
    assert {row.verdict for row in rows} == set(Verdict) - {Verdict.UNSTABLE, Verdict.ERROR,
                                                            Verdict.NOT_JUDGED, Verdict.NOT_RUN}
    assert gate.conclude(counts) is Conclusion.FAILURE
    assert gate.exit_code(gate.conclude(counts)) == 1


def test_moves_go_both_ways_and_a_relevance_drop_rides_on_an_off_question_answer(example: Gated) -> None:
    moved = [o.scores for o in example.outcomes.values() if o.verdict is Verdict.MOVED]
    assert any(after < before for before, after in moved)
    assert any(after > before for before, after in moved)
    atm = example.rows["atm-daily-limit"]
    assert atm.relevance_drop and atm.candidate.relevance and not atm.candidate.relevance.noncommittal


def test_deterministic_rescore_confirms_every_new_ungrounded_row(example: Gated) -> None:
    for row in example.rows.values():
        if row.candidate.rescore is not None:
            assert row.candidate.rescore == row.candidate.groundedness
            assert row.verdict is Verdict.REGRESSION


def test_ties_include_rows_that_read_differently(example: Gated) -> None:
    judge = OfflineJudge(example.config)
    ties = [row for row in example.rows.values() if row.verdict is Verdict.UNCHANGED
            and gate.is_tie(row.baseline.bucket, row.candidate.bucket)]  # type: ignore[arg-type]
    assert len(ties) >= 4
    assert all(row.baseline.response != row.candidate.response for row in ties)
    deltas = {row.id: asyncio.run(judge.fluency(row.candidate.response)).value
              - asyncio.run(judge.fluency(row.baseline.response)).value  # type: ignore[operator]
              for row in ties}
    assert deltas["foreign-transaction-fee"] < 0 < deltas["balance-check"]


def test_the_invented_fee_is_the_evidence(example: Gated) -> None:
    case = example.cases["replacement-card-fee"]
    row = example.rows["replacement-card-fee"]
    evidence = find_unsupported(case.context, row.candidate.response, query=case.query)
    assert evidence.unsupported_figures == ("$5", "2 business days")
    assert "$5" in row.candidate.groundedness.reason
    perk = example.rows["overdraft-protection"].candidate.groundedness.reason
    assert "Premier members get these transfer fees refunded" in perk


def test_faithful_answers_carry_no_evidence_against_them(example: Gated) -> None:
    """Precision: no grounded answer of the example is flagged for anything."""
    for case_id, row in example.rows.items():
        case = example.cases[case_id]
        for side in (row.baseline, row.candidate):
            if side.bucket in (gate.Bucket.GROUNDED, gate.Bucket.PARTIAL):
                evidence = find_unsupported(case.context, side.response, query=case.query)
                assert evidence == Evidence(), (case_id, side.response)


def test_gating_the_baseline_against_itself_passes(example: Gated) -> None:
    cases = list(example.cases.values())
    baseline = {row.id: row.baseline.response for row in example.rows.values()}
    rows, outcomes = gate_example(example.config, cases, baseline, baseline)
    assert {o.verdict for o in outcomes.values()} <= {Verdict.UNCHANGED, Verdict.STILL_UNGROUNDED}
    assert gate.conclude(gate.count(rows.values())) is Conclusion.SUCCESS
