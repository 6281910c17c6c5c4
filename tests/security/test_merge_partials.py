"""Attacks on `flipgate merge`: partials edited, removed, duplicated, invented or inflated.

A partial is a file anyone with the artifact can edit. Each test forges one the way an
attacker would and asserts that the merge refuses it (exit 2, one line naming the file and
the field), or that what it says about verdicts is ignored and decided again from scores.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.errors import InputError
from flipgate.run import shards
from flipgate.run.pipeline import merged_check
from flipgate.settings import Settings

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

CONFIG = "version: 1\ncases: cases.jsonl\njudge:\n  provider: offline\ngate:\n  strict: true\n"
FEE = " A 75 dollar handling fee applies."
COUNT = 3


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three honest partials of a 30-case run that blocks (3 regressions in policy)."""
    folder = tmp_path_factory.mktemp("partials")
    cases = [{"id": f"c{i}", "query": f"What does item {i} cost?",
              "context": f"Item {i} costs {i + 1} dollars.", "category": ("policy", "general")[i % 2]}
             for i in range(30)]
    (folder / "flipgate.yml").write_text(CONFIG)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "b.jsonl").write_text("".join(json.dumps({"id": c["id"], "response": c["context"]}) + "\n"
                                            for c in cases))
    (folder / "c.jsonl").write_text("".join(
        json.dumps({"id": c["id"], "response": c["context"] + (FEE if i % 5 == 0 else "")}) + "\n"
        for i, c in enumerate(cases)))
    for i in range(1, COUNT + 1):
        result = CliRunner().invoke(cli, [
            "gate", "--cases", str(folder / "cases.jsonl"), "--baseline", str(folder / "b.jsonl"),
            "--candidate", str(folder / "c.jsonl"), "--config", str(folder / "flipgate.yml"),
            "--out", str(folder / f"s{i}"), "--no-cache", "--shard", f"{i}/{COUNT}"])
        assert result.exit_code == 0, result.output
    return folder


@pytest.fixture
def partials(made: Path, tmp_path: Path) -> list[Path]:
    """Fresh copies, for a test to tamper with."""
    paths = []
    for i in range(1, COUNT + 1):
        target = tmp_path / f"s{i}.json"
        shutil.copy(made / f"s{i}" / "partial.json", target)
        paths.append(target)
    return paths


def edit(path: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def merge(*paths: Path, out: Path | None = None):
    args = ["merge", *map(str, paths)] + (["--out", str(out)] if out else [])
    return CliRunner().invoke(cli, args)


def refused(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for word in words:
        assert word in result.output, result.output


def rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    return data["parts"][0]["rows"]


def with_rows(paths: list[Path]) -> Path:
    return next(p for p in paths if rows(json.loads(p.read_text())))


def test_honest_partials_merge_and_block(partials: list[Path], tmp_path: Path) -> None:
    result = merge(*partials, out=tmp_path / "out")
    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["counts"]["blocking_regressions"] == 3


def test_removing_a_blocking_row_is_refused(partials: list[Path]) -> None:
    victim = with_rows(partials)
    edit(victim, lambda d: rows(d).pop(0))
    refused(merge(*partials), "rows were removed")


def test_removing_a_row_and_shifting_the_positions_is_refused(partials: list[Path]) -> None:
    """Renumbering the rest so no position is missing still leaves a case out: the count
    and the cases' digest say so."""
    victim = with_rows(partials)

    def drop(data: dict[str, Any]) -> None:
        rows(data).pop(0)
        data["parts"][0]["cases"] -= 1
    for path in partials:
        edit(path, lambda d, path=path: d["parts"][0].__setitem__("cases", d["parts"][0]["cases"] - 1)
             if path != victim else drop(d))
    result = merge(*partials)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output


def test_relabelling_a_row_into_a_non_blocking_category_is_refused(partials: list[Path]) -> None:
    victim = with_rows(partials)
    edit(victim, lambda d: [row["case"].__setitem__("category", "general") for row in rows(d)])
    refused(merge(*partials), "not the cases their fingerprint pins")


def test_moving_a_row_to_another_shard_is_refused(partials: list[Path]) -> None:
    donor, taker = partials[0], partials[1]
    moved = rows(json.loads(donor.read_text()))[0]
    edit(donor, lambda d: rows(d).pop(0))
    edit(taker, lambda d: rows(d).append(moved))
    refused(merge(*partials), str(taker), "is not one shard 2/3 evaluates")


def test_a_duplicated_row_is_refused(partials: list[Path]) -> None:
    victim = with_rows(partials)
    edit(victim, lambda d: rows(d).append(rows(d)[0]))
    refused(merge(*partials), str(victim), "position", "is also case")


def test_a_partial_given_twice_is_refused(partials: list[Path]) -> None:
    refused(merge(partials[0], partials[0], partials[1]), "shard 1/3 is also")


def test_a_third_partial_of_a_two_shard_run_is_refused(partials: list[Path], tmp_path: Path) -> None:
    third = tmp_path / "third.json"
    shutil.copy(partials[2], third)
    for path in partials[:2]:
        edit(path, lambda d: d["shard"].__setitem__("count", 2))
    edit(third, lambda d: d["shard"].update(index=3, count=2))
    refused(merge(partials[0], partials[1], third), str(third), "shard.index", "3/2 does not exist")


def test_a_missing_shard_is_named(partials: list[Path]) -> None:
    refused(merge(partials[0], partials[2]), "missing the partial of shard 2/3")


@pytest.mark.parametrize("count", [1e9, 10**9, 10**18, -1, 0, "3", True])
def test_an_inflated_shard_count_is_refused_before_anything_is_allocated(
        partials: list[Path], count: Any) -> None:
    for path in partials:
        edit(path, lambda d: d["shard"].__setitem__("count", count))
    result = merge(*partials)
    refused(result)
    assert "shard" in result.output


def test_an_inflated_case_count_is_refused(partials: list[Path]) -> None:
    for path in partials:
        edit(path, lambda d: d["parts"][0].__setitem__("cases", 10**12))
    refused(merge(*partials), "rows were removed")


def test_a_partial_larger_than_the_bound_is_not_read(partials: list[Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shards, "MAX_PARTIAL_BYTES", 1024)
    refused(merge(*partials), str(partials[0]), "larger than")


def test_a_huge_array_of_rows_is_refused_by_the_count_not_built_into_a_report(
        partials: list[Path]) -> None:
    victim = with_rows(partials)
    edit(victim, lambda d: rows(d).extend([rows(d)[0]] * 50_000))
    refused(merge(*partials), "is also case")


@pytest.mark.parametrize(("where", "field"), [
    (lambda d: d.pop("fingerprint"), "field fingerprint: Field required"),
    (lambda d: d["shard"].pop("index"), "field shard.index: Field required"),
    (lambda d: d["parts"][0].pop("rows"), "field parts[0].rows: Field required"),
    (lambda d: rows(d)[0]["candidate"].pop("groundedness"),
     "field parts[0].rows[0].candidate.groundedness"),
    (lambda d: rows(d)[0]["case"].pop("id"), "field parts[0].rows[0].case.id"),
    (lambda d: rows(d)[0].__setitem__("position", "0"), "field parts[0].rows[0].position"),
    (lambda d: rows(d)[0]["candidate"]["groundedness"].__setitem__("value", "5"),
     "parts[0].rows[0].candidate.groundedness"),
    (lambda d: d["report"].__setitem__("conclusion", "passed"), "field report.conclusion"),
    (lambda d: d.__setitem__("parts", []), "field parts"),
])
def test_a_missing_key_or_wrong_type_names_the_file_and_field(
        partials: list[Path], where: Callable[[dict[str, Any]], Any], field: str) -> None:
    victim = with_rows(partials)
    edit(victim, where)
    refused(merge(*partials), str(victim), field)


@pytest.mark.parametrize("text", ["[]", "null", "{}", "{\"flipgate_partial\": 1}", "[" * 100_000,
                                  "{\"flipgate_partial\": 2, \"a\": " + "[" * 100_000 + "]" * 100_000 + "}"])
def test_what_is_not_a_partial_is_refused(partials: list[Path], text: str) -> None:
    partials[0].write_text(text)
    refused(merge(*partials), str(partials[0]))


def test_a_forged_verdict_field_is_refused(partials: list[Path]) -> None:
    victim = with_rows(partials)
    edit(victim, lambda d: [row.update(verdict="unchanged", blocking=False) for row in rows(d)])
    refused(merge(*partials), "verdict", "Extra inputs are not permitted")


def test_a_forged_bucket_is_decided_again_from_the_scores(partials: list[Path], tmp_path: Path) -> None:
    """The bucket beside a score is derived again: calling a 2 'grounded' changes nothing."""
    for path in partials:
        edit(path, lambda d: [row["candidate"].__setitem__("bucket", "grounded") for row in rows(d)])
    result = merge(*partials, out=tmp_path / "out")
    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["counts"]["blocking_regressions"] == 3


def test_rules_forged_in_every_partial_change_the_fingerprint_the_checkout_pins(
        partials: list[Path]) -> None:
    """Edited alike in every partial, the rules agree with each other: only what the checkout
    says (the action's merge pins the base's rules and cases) catches it."""
    honest = shards.read_partial(partials[0]).fingerprint.model_dump()
    for path in partials:
        edit(path, lambda d: d["fingerprint"]["rules"][""].__setitem__("blocking_categories", []))
    with pytest.raises(InputError, match="field fingerprint.rules"):
        shards.merge(partials, pinned={"rules": honest["rules"],
                                       "cases_digest": honest["cases_digest"]})


def test_a_fingerprint_field_that_differs_is_named(partials: list[Path]) -> None:
    edit(partials[1], lambda d: d["fingerprint"].__setitem__("candidate", "0" * 64))
    refused(merge(*partials), str(partials[1]), "fingerprint.candidate", "cannot be merged")


# -- the action's merge job: partials held to the checkout ---------------------------------

RUN_CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: offline
gate:
  blocking_categories: [policy]
  strict: true
"""
PROMPT = """---
model:
  configuration:
    type: openai
    model: gpt-4o-mini
---
system:
Answer{{ '' }} from the context.
user:
{{ query }}
Context: {{ context }}
"""


@pytest.fixture
def shard_folder(tmp_path: Path, openai_server: FakeOpenAI) -> tuple[GitRepo, Path]:
    """A repository whose head invents a fee in policy answers, run as two shards."""
    def generation(body: dict[str, Any]) -> str:
        context = body["messages"][-1]["content"].split("Context: ", 1)[1]
        invents = "generously" in body["messages"][0]["content"] and "policy" in context
        return context + (FEE if invents else "")

    openai_server.on_generation(generation)
    cases = [{"id": f"c{i}", "query": f"q{i}?", "context": f"Item {i} costs {i + 1} dollars, "
              f"{('policy', 'general')[i % 2]}.", "category": ("policy", "general")[i % 2]}
             for i in range(12)]
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": RUN_CONFIG, "prompts/answer.prompty": PROMPT,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in cases)}, message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("Answer", "Answer generously")})
    folder = tmp_path / "artifacts"
    for i in (1, 2):
        result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                          "--head", "HEAD", "--out", str(folder / f"s{i}"),
                                          "--no-cache", "--shard", f"{i}/2"])
        assert result.exit_code == 0, result.output
    return repo, folder


def test_the_merge_job_merges_honest_partials_of_its_checkout(shard_folder, tmp_path: Path) -> None:
    repo, folder = shard_folder
    fingerprint = json.loads((folder / "s1" / "partial.json").read_text())["fingerprint"]
    result = merged_check(folder)(repo=repo.path, base=fingerprint["base_sha"],
                                  head=fingerprint["head_sha"], out_dir=tmp_path / "out",
                                  settings=Settings.from_environ({}))
    assert result.exit_code == 1
    assert result.report.counts.blocking_regressions == 6


@pytest.mark.parametrize(("forge", "field"), [
    (lambda d: d["fingerprint"]["rules"][""].__setitem__("blocking_categories", []), "fingerprint.rules"),
    (lambda d: d["fingerprint"]["rules"][""].__setitem__("strict", False), "fingerprint.rules"),
    (lambda d: d["fingerprint"]["cases_digest"].__setitem__("", "0" * 64), "fingerprint.cases_digest"),
])
def test_rules_or_cases_forged_alike_in_every_partial_are_refused_by_the_merge_job(
        shard_folder, tmp_path: Path, forge: Callable[[dict[str, Any]], Any], field: str) -> None:
    repo, folder = shard_folder
    fingerprint = json.loads((folder / "s1" / "partial.json").read_text())["fingerprint"]
    for i in (1, 2):
        edit(folder / f"s{i}" / "partial.json", forge)
    with pytest.raises(InputError, match=field):
        merged_check(folder)(repo=repo.path, base=fingerprint["base_sha"],
                             head=fingerprint["head_sha"], out_dir=tmp_path / "out",
                             settings=Settings.from_environ({}))
    assert not (tmp_path / "out" / "report.json").exists()
