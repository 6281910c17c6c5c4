"""`auth: key | entra` and the GroundednessPro second opinion in `.flipgate.yml`, and the
rule by which a true/false second opinion confirms a flip."""

from __future__ import annotations

import math

import pytest

from flipgate.config.schema import parse_config, second_judge
from flipgate.errors import InputError
from flipgate.judges import describe, rescore_mode
from flipgate.judges.groundedness_pro import read_verdict
from flipgate.model import Score, Verdict
from flipgate.verdict import gate

HEAD = "version: 1\ncases: c.jsonl\n"
AZURE = "judge:\n  provider: azure\n  model: judge-deploy\n"
PROJECT = "https://res.services.ai.azure.com/api/projects/proj"


def parse(text: str):
    return parse_config(HEAD + text, source="cfg.yml")


def problems(text: str) -> list[str]:
    with pytest.raises(InputError) as caught:
        parse(text)
    return [str(p) for p in caught.value.problems]


def test_auth_is_a_key_unless_entra_is_asked_for() -> None:
    assert parse(AZURE).judge.auth == "key"
    config = parse(AZURE + "  auth: entra\n"
                   "generator:\n  path: p.prompty\n  endpoint:\n    provider: azure\n    auth: entra\n")
    assert config.judge.auth == "entra" and config.generator_options.endpoint.auth == "entra"
    assert describe(config).auth == "entra" and describe(parse(AZURE)).auth == "key"
    assert describe(parse("")).auth is None  # the offline judge signs in nowhere


@pytest.mark.parametrize("text, expected", [
    (AZURE + "  auth: password\n", "cfg.yml:6: 'judge.auth' must be one of key, entra"),
    ("judge:\n  provider: openai\n  model: m\n  auth: entra\n",
     "cfg.yml:6: 'judge.auth' entra signs in to Azure: it needs provider azure"),
    ("generator:\n  path: p.prompty\n  endpoint:\n    provider: openai\n    auth: entra\n",
     "cfg.yml:7: 'generator.endpoint.auth' entra signs in to Azure: it needs provider azure"),
])
def test_bad_auth_is_named_with_file_and_line(text: str, expected: str) -> None:
    assert expected in problems(text)


def test_groundedness_pro_is_a_second_opinion_of_its_own() -> None:
    config = parse(AZURE + f"  second_opinion:\n    engine: groundedness_pro\n    azure_ai_project: {PROJECT}\n")
    second = second_judge(config.judge)
    assert (second.engine, second.model, second.auth) == ("groundedness_pro", "groundedness_pro", "entra")
    assert config.judge.second_opinion.azure_ai_project == PROJECT
    assert rescore_mode(config) == "second_opinion"
    assert second_judge(config.judge, "offline") is None  # --judge offline sends nothing


@pytest.mark.parametrize("text, expected", [
    ("judge:\n  provider: openai\n  model: m\n  second_opinion:\n    engine: groundedness_pro\n"
     f"    azure_ai_project: {PROJECT}\n",
     "cfg.yml:7: 'judge.second_opinion.engine' groundedness_pro is an Azure AI service: it needs "
     "'judge.provider: azure'"),
    (AZURE + "  second_opinion:\n    engine: groundedness_pro\n",
     "cfg.yml:7: 'judge.second_opinion.engine' groundedness_pro needs 'azure_ai_project'"),
    (AZURE + "  second_opinion:\n    engine: groundedness_pro\n    azure_ai_project: http://x/api/projects/p\n",
     "cfg.yml:8: 'judge.second_opinion.azure_ai_project' must be the project's https:// endpoint"),
    (AZURE + f"  second_opinion:\n    model: judge-2\n    azure_ai_project: {PROJECT}\n",
     "cfg.yml:8: 'judge.second_opinion.azure_ai_project' is for 'engine: groundedness_pro'"),
    (AZURE + f"  second_opinion:\n    engine: groundedness_pro\n    azure_ai_project: {PROJECT}\n"
     "    deployment: gpt-4o\n",
     "cfg.yml:9: 'judge.second_opinion.deployment' does not apply to 'engine: groundedness_pro'"),
    (AZURE + "  second_opinion:\n    engine: llama\n",
     "cfg.yml:7: 'judge.second_opinion.engine' must be one of groundedness_pro"),
])
def test_a_groundedness_pro_that_cannot_work_is_bad_input_with_file_and_line(text: str, expected: str) -> None:
    assert any(problem.startswith(expected) for problem in problems(text)), problems(text)


GROUNDED, NOT_GROUNDED = Score(None, label=True), Score(None, label=False)


@pytest.mark.parametrize("second, verdict", [
    (NOT_GROUNDED, Verdict.REGRESSION),     # the service agrees: not grounded
    (GROUNDED, Verdict.UNSTABLE),           # the service disagrees
    (Score.failed("second opinion (groundedness_pro): region"), Verdict.ERROR),
    (None, Verdict.ERROR),
])
def test_a_true_false_second_opinion_confirms_a_flip_by_the_one_rule(second: Score | None,
                                                                     verdict: Verdict) -> None:
    got, errors = gate.classify(Score(5), Score(2), second=second, mode=gate.SECOND_OPINION)
    assert got is verdict and bool(errors) is (verdict is Verdict.ERROR)


@pytest.mark.parametrize("mode, rescore, verdict", [
    (gate.BOTH, Score(1), Verdict.REGRESSION),
    (gate.BOTH, Score(4), Verdict.UNSTABLE),
])
def test_both_confirmations_must_agree(mode: str, rescore: Score, verdict: Verdict) -> None:
    got, _ = gate.classify(Score(5), Score(2), rescore, second=NOT_GROUNDED, mode=mode)
    assert got is verdict


@pytest.mark.parametrize("result, expected", [
    ({"groundedness_pro_label": True, "groundedness_pro_score": 5, "groundedness_pro_reason": " ok "},
     Score(None, "ok", label=True)),
    ({"groundedness_pro_label": False, "groundedness_pro_score": 1, "groundedness_pro_reason": "no"},
     Score(None, "no", label=False)),
])
def test_the_services_verdict_reads_as_a_label(result: dict, expected: Score) -> None:
    assert read_verdict(result) == expected


@pytest.mark.parametrize("result", [
    {},                                                                   # the SDK found no result
    {"groundedness_pro_label": False, "groundedness_pro_score": 0},       # a missing score, as 0
    {"groundedness_pro_label": False, "groundedness_pro_score": math.nan},
    {"groundedness_pro_label": "false", "groundedness_pro_score": 1},
    {"groundedness_pro_label": True, "groundedness_pro_score": 7},
])
def test_a_reply_without_a_verdict_is_a_judge_error_never_not_grounded(result: dict) -> None:
    score = read_verdict(result)
    assert not score.ok and "holds no verdict" in score.error


def test_a_groundedness_pro_label_survives_a_shard_merge(tmp_path) -> None:
    """A partial keeps the label, so the merged report shows the service's verdict."""
    from dataclasses import replace

    from flipgate.output.report import row_to_dict
    from flipgate.run.scoring import Rules
    from flipgate.run.shards import Part, Shard, merge, write_partial

    from support.factories import make_judge, make_report, make_row

    row = make_row("fee", after=2)
    row = replace(row, candidate=replace(row.candidate, second_opinion=Score(None, "no source", label=False)))
    report = make_report([row], judge=replace(make_judge(), second_opinion="groundedness_pro"))
    path = write_partial(report, tmp_path, shard=Shard(1, 1), fingerprint={"config": "x"},
                         parts=[Part(name=None, report=report, cases=[row.case], positions=[0],
                                     rules=Rules())])
    merged = merge([path])
    shown = row_to_dict(merged.rows[0], second_opinion=merged.judge.second_opinion)
    assert shown["candidate"]["second_opinion"] == {"engine": "groundedness_pro", "label": False,
                                                    "reason": "no source"}
