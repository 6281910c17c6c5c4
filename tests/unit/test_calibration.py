"""Calibration figures against values worked out by hand on a 40-label file."""

from __future__ import annotations

import json

import pytest

from flipgate.calibration import agreement as calibration
from flipgate.errors import InputError
from flipgate.model import Verdict

U, N, P, G = "ungrounded", "non_answer", "partial", "grounded"

# Judge bucket (rows) x human label (columns), per category; 40 labelled answers.
PRICING = {U: {U: 4, N: 0, P: 0, G: 1},
           N: {U: 0, N: 2, P: 0, G: 0},
           P: {U: 1, N: 0, P: 2, G: 1},
           G: {U: 1, N: 0, P: 0, G: 4}}    # 16 answers
POLICY = {U: {U: 4, N: 1, P: 0, G: 0},
          N: {U: 0, N: 3, P: 1, G: 0},
          P: {U: 1, N: 0, P: 3, G: 2},
          G: {U: 0, N: 0, P: 2, G: 7}}     # 24 answers


def pairs(matrix: dict) -> list[tuple[str, str]]:
    return [(judge, human) for judge, row in matrix.items() for human, n in row.items()
            for _ in range(n)]


def build_files() -> tuple[str, str]:
    """report.json text and labels.jsonl text: two answers a row, each labelled once."""
    rows, labels = [], []
    for category, matrix in (("policy", POLICY), ("pricing", PRICING)):
        answers = pairs(matrix)
        for i in range(0, len(answers), 2):
            row_id = f"{category}-{i // 2}"
            (b_judge, b_human), (c_judge, c_human) = answers[i], answers[i + 1]
            rows.append({"id": row_id, "category": category, "verdict": "moved",
                         "baseline": {"groundedness": 5, "bucket": b_judge},
                         "candidate": {"groundedness": 2, "bucket": c_judge}})
            labels += [{"id": row_id, "side": "baseline", "label": b_human},
                       {"id": row_id, "side": "candidate", "label": c_human}]
    # A row whose candidate the judge could not score, labelled anyway; one label left empty.
    rows.append({"id": "erred", "category": "policy", "verdict": "error",
                 "baseline": {"groundedness": 5, "bucket": G},
                 "candidate": {"groundedness": None, "bucket": None}})
    labels += [{"id": "erred", "side": "candidate", "label": U},
               {"id": "erred", "side": "baseline", "label": None}]
    report = json.dumps({"version": 1, "rows": rows})
    return report, "\n".join(json.dumps(label) for label in labels) + "\n"


def run() -> calibration.Calibration:
    report, labels = build_files()
    sides = calibration.read_report_sides(report, source="report.json")
    return calibration.calibrate(sides, calibration.read_labels(labels, source="labels.jsonl"))


def test_forty_labels_give_the_hand_computed_figures() -> None:
    result = run()
    overall = calibration.to_dict(result)["overall"]
    assert result.labelled == 40 and result.unlabelled == 1 and result.unscored == ["erred/candidate"]
    # Overall matrix: U row 8 1 0 1, N row 0 5 1 0, P row 2 0 5 3, G row 1 0 2 11.
    assert overall["confusion"] == {U: {U: 8, N: 1, P: 0, G: 1}, N: {U: 0, N: 5, P: 1, G: 0},
                                    P: {U: 2, N: 0, P: 5, G: 3}, G: {U: 1, N: 0, P: 2, G: 11}}
    assert overall["n"] == 40
    # Agreement: diagonal 8+5+5+11 = 29 of 40.
    assert (overall["agreed"], overall["agreement"]) == (29, 0.725)
    # Wilson, z=1.96: centre (p + z²/2n)/(1 + z²/n) = 0.7053, half-width 0.1336.
    assert overall["agreement_ci"] == [0.5717, 0.8389]
    # Chance agreement: judge rows 10,6,10,14; human columns 11,6,8,15
    # pe = (110+36+80+210)/1600 = 436/1600; kappa = (1160-436)/(1600-436) = 181/291.
    assert overall["kappa"] == pytest.approx(0.6220, abs=1e-4)
    # Judge said ungrounded 10 times, 8 of them the person agrees: precision 8/10.
    assert (overall["ungrounded_both"], overall["ungrounded_by_judge"]) == (8, 10)
    assert overall["ungrounded_precision"] == 0.8
    assert overall["ungrounded_precision_ci"] == [0.4902, 0.9433]
    # The person said ungrounded 11 times, the judge caught 8: recall 8/11.
    assert overall["ungrounded_by_human"] == 11
    assert overall["ungrounded_recall"] == pytest.approx(0.7273, abs=1e-4)
    assert overall["ungrounded_recall_ci"] == [0.4344, 0.9025]


def test_per_category_figures_are_hand_computed_too() -> None:
    per = calibration.to_dict(run())["per_category"]
    assert set(per) == {"policy", "pricing"}
    pricing = per["pricing"]
    assert pricing["confusion"] == PRICING and pricing["n"] == 16
    # Diagonal 4+2+2+4 = 12 of 16.
    assert pricing["agreement"] == 0.75 and pricing["agreement_ci"] == [0.505, 0.8982]
    # judge rows 5,2,4,5; human columns 6,2,2,6: pe = (30+4+8+30)/256 = 72/256;
    # kappa = (192-72)/(256-72) = 15/23.
    assert pricing["kappa"] == pytest.approx(0.6522, abs=1e-4)
    assert pricing["ungrounded_precision"] == 0.8 and pricing["ungrounded_precision_ci"] == [0.3755, 0.9638]
    assert pricing["ungrounded_recall"] == pytest.approx(0.6667, abs=1e-4)
    assert pricing["ungrounded_recall_ci"] == [0.3, 0.9032]
    policy = per["policy"]
    # Diagonal 4+3+3+7 = 17 of 24; judge rows 5,4,6,9 = human columns: pe = 158/576,
    # kappa = (408-158)/(576-158) = 125/209.
    assert policy["agreement_ci"] == [0.5083, 0.8509]
    assert policy["kappa"] == pytest.approx(0.5981, abs=1e-4)


@pytest.mark.parametrize(("successes", "n", "expected"), [
    (0, 10, (0.0, 0.2775)),    # a rate of 0 still has an upper bound
    (10, 10, (0.7225, 1.0)),
    (5, 10, (0.2366, 0.7634)),
])
def test_wilson_interval(successes: int, n: int, expected: tuple[float, float]) -> None:
    lo, hi = calibration.wilson(successes, n)
    assert (round(lo, 4), round(hi, 4)) == expected


def test_a_rate_with_nothing_behind_it_is_null_not_zero() -> None:
    report = json.dumps({"rows": [{"id": "a", "category": "x", "verdict": "unchanged",
                                   "baseline": {"bucket": G}, "candidate": {"bucket": G}}]})
    labels = '{"id": "a", "side": "baseline", "label": "grounded"}\n'
    result = calibration.calibrate(calibration.read_report_sides(report, source="r"),
                                   calibration.read_labels(labels, source="l"))
    figures = calibration.to_dict(result)["overall"]
    assert figures["ungrounded_precision"] is None and figures["ungrounded_precision_ci"] is None
    assert figures["ungrounded_recall"] is None
    assert figures["kappa"] is None  # one bucket only: chance agreement is total
    assert figures["agreement"] == 1.0


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "a", "side": "both", "label": "grounded"}', "field 'side'"),
    ('{"id": "a", "side": "baseline", "label": "fine"}', "field 'label'"),
    ('{"side": "baseline", "label": "grounded"}', "field 'id'"),
    ('not json', "invalid JSON"),
])
def test_bad_labels_name_the_file_and_line(line: str, message: str) -> None:
    text = '{"id": "a", "side": "candidate", "label": "grounded"}\n' + line + "\n"
    with pytest.raises(InputError) as caught:
        calibration.read_labels(text, source="labels.jsonl")
    assert str(caught.value).startswith("labels.jsonl:2: ") and message in str(caught.value)


def test_a_label_twice_and_an_unknown_id_are_errors() -> None:
    twice = ('{"id": "a", "side": "candidate", "label": "grounded"}\n'
             '{"id": "a", "side": "candidate", "label": "partial"}\n')
    with pytest.raises(InputError, match=r"labels.jsonl:2: a/candidate is labelled twice \(first on line 1\)"):
        calibration.read_labels(twice, source="labels.jsonl")
    sides = [calibration.JudgedSide("a", "candidate", "x", G, "unchanged")]
    labels = calibration.read_labels('\n{"id": "zz", "side": "candidate", "label": "grounded"}',
                                     source="labels.jsonl")
    with pytest.raises(InputError, match="labels.jsonl:2: id 'zz' is not a row of the report"):
        calibration.calibrate(sides, labels, labels_source="labels.jsonl")


def test_template_lists_flipped_rows_first_in_the_verdicts_order() -> None:
    report = json.dumps({"rows": [
        {"id": verdict, "category": "c", "verdict": verdict,
         "baseline": {"bucket": G}, "candidate": {"bucket": U}}
        for verdict in ("unchanged", "moved", "regression", "still_ungrounded", "unstable",
                        "new_non_answer")]})
    lines = [json.loads(line) for line in
             calibration.template_lines(calibration.read_report_sides(report, source="r"))]
    assert [(line["id"], line["side"]) for line in lines[:6]] == [
        ("regression", "baseline"), ("regression", "candidate"), ("unstable", "baseline"),
        ("unstable", "candidate"), ("new_non_answer", "baseline"), ("new_non_answer", "candidate")]
    assert [line["id"] for line in lines[6::2]] == [v.value for v in Verdict
                                                   if v.value in ("moved", "still_ungrounded", "unchanged")]
    assert all(set(line) == {"id", "suite", "side", "category", "query", "context", "answer",
                             "judge_label", "label"} and line["label"] is None for line in lines)
    assert {line["judge_label"] for line in lines} == {G, U}


def report_of_two_suites() -> str:
    """Two suites that share the case id `q1`, with different buckets."""
    return json.dumps({"rows": [
        {"id": "q1", "suite": "support", "category": "policy", "verdict": "regression",
         "baseline": {"bucket": G}, "candidate": {"bucket": U}},
        {"id": "q1", "suite": "sales", "category": "pricing", "verdict": "unchanged",
         "baseline": {"bucket": G}, "candidate": {"bucket": G}}]})


def test_two_suites_sharing_an_id_do_not_collide() -> None:
    sides = calibration.read_report_sides(report_of_two_suites(), source="r")
    template = calibration.template_lines(sides)
    assert len(template) == len(set(template)) == 4
    filled = []
    for line in map(json.loads, template):
        line["label"] = line["judge_label"]  # a person who agrees everywhere
        filled.append(json.dumps(line))
    labels = calibration.read_labels("\n".join(filled), source="labels.jsonl")
    result = calibration.calibrate(sides, labels)
    assert result.labelled == 4 and result.overall.agreement.value == 1
    # Each suite's answers land in their own category, not the other suite's.
    assert result.per_category["policy"].confusion[U][U] == 1
    assert result.per_category["pricing"].confusion[G][G] == 2


def test_a_label_without_its_suite_must_name_it_when_the_id_is_shared() -> None:
    sides = calibration.read_report_sides(report_of_two_suites(), source="r")
    labels = calibration.read_labels('{"id": "q1", "side": "candidate", "label": "grounded"}',
                                     source="labels.jsonl")
    with pytest.raises(InputError, match="several suites"):
        calibration.calibrate(sides, labels, labels_source="labels.jsonl")


def test_the_same_answer_labelled_twice_in_one_suite_is_refused_but_not_across_suites() -> None:
    two = ('{"id": "q1", "suite": "support", "side": "candidate", "label": "grounded"}\n'
           '{"id": "q1", "suite": "sales", "side": "candidate", "label": "grounded"}\n')
    assert len(calibration.read_labels(two, source="l")) == 2
    with pytest.raises(InputError, match="support/q1/candidate is labelled twice"):
        calibration.read_labels(two + two.splitlines()[0], source="l")
