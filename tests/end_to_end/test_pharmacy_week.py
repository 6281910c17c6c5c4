"""Issue 30's pharmacy week, replayed: a customer-line assistant with 24 cases (dosage,
refills, hours, insurance) whose friendlier prompt invents dosages.

Monday, a typo in `blocking_categories` is bad input, not a gate switched off. Tuesday, the
pull request's check holds the 5 invented dosages back (6 dosage cases, below 50): the status
and headline start with ⚠️, never ✅, and the job log annotates each held-back flip before the
new non-answers. Wednesday, an uncommitted prompt edit: `--head HEAD` says it was left out and
names `--worktree`, which evaluates it; the working tree's `strict: true` is said to be unused.
Real git, the real CLI and action, the loopback model and GitHub servers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.github import action
from flipgate.text.escaping import short

from support.action_harness import PR, Harness
from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI
from support.prompts import WITH_SYSTEM

CONFIG = """\
version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
  max_retries: 0
gate:
  blocking_categories: {blocking}
"""
TYPO, FIXED = "[dosages, refill]", "[dosage, refills]"
CAREFUL = "Answer only from the pharmacy's leaflet in the context."
FRIENDLY = "Be as helpful as you can; when the leaflet is vague, give typical amounts."
CONTEXTS = {
    "dosage": ["Ibuprofen 200 mg: adults and children 12 years and over take 1 to 2 tablets "
               "every 4 to 6 hours. Do not exceed 6 tablets in 24 hours.",
               "Paracetamol 500 mg: adults take 1 to 2 tablets every 4 to 6 hours, at most 8 "
               "tablets in 24 hours.",
               "Naproxen 220 mg: take 1 tablet every 8 to 12 hours; do not exceed 2 tablets in "
               "12 hours.",
               "Loratadine 10 mg: adults take 1 tablet a day.",
               "Children's ibuprofen suspension: dose by weight, as the chart on the box shows.",
               "Cough syrup: adults take 10 ml every 4 hours, at most 4 doses a day."],
    "refills": ["Refills can be requested in the app up to 7 days before you run out.",
                "A refill is ready for pickup 1 hour after the pharmacist approves it.",
                "Controlled medicines need a new prescription for every refill.",
                "Automatic refills can be switched off in the app under Prescriptions.",
                "Refills ordered by phone are ready the next working day.",
                "A refill can be transferred from another pharmacy with its prescription number."],
    "hours": ["The pharmacy is open 8 am to 8 pm Monday to Friday.",
              "On Saturday the pharmacy is open 9 am to 5 pm.",
              "On Sunday the pharmacy is open 10 am to 4 pm.",
              "The pharmacist takes a lunch break from 1:30 pm to 2 pm.",
              "On public holidays the pharmacy is closed.",
              "The drive-through window closes 30 minutes before the pharmacy."],
    "insurance": ["We accept HealthFirst, CareWell and Unity plans.",
                  "A copay is charged at pickup, as your plan sets it.",
                  "Bring your insurance card the first time you fill a prescription.",
                  "Prior authorisation requests are sent to your plan by the pharmacist.",
                  "Generic medicines usually have the lowest copay.",
                  "We cannot bill plans from outside the country."],
}
CASES = [{"id": f"{category}-{n}", "category": category, "query": f"A {category} question ({n})?",
          "context": context}
         for category, contexts in CONTEXTS.items() for n, context in enumerate(contexts, start=1)]
INVENTS = {f"dosage-{n}" for n in range(1, 6)}   # the friendly prompt invents a daily maximum
VAGUE = {f"hours-{n}" for n in range(1, 4)}      # and stops answering opening times
INVENTED = " You can take up to 3,200 mg a day, which is 16 tablets."
NON_ANSWER = "Opening times vary; please call your local store."


def generation(body: dict[str, Any]) -> str:
    system = body["messages"][0]["content"]
    context = body["messages"][-1]["content"].split("Context: ", 1)[1].split("\n", 1)[0]
    case = next(case for case in CASES if case["context"] == context)
    if "helpful" in system and case["id"] in INVENTS:
        return context + INVENTED
    if "helpful" in system and case["id"] in VAGUE:
        return NON_ANSWER
    return context


def groundedness(query: str | None, context: str | None, response: str | None, call: int) -> int:
    response = response or ""
    return 1 if "16 tablets" in response else 3 if response == NON_ANSWER else 5


@pytest.fixture
def pharmacy(openai_server: FakeOpenAI, tmp_path: Path) -> GitRepo:
    openai_server.on_generation(generation)
    openai_server.on_groundedness(groundedness)
    repo = GitRepo.create(tmp_path / "pharmacy")
    repo.commit({".gitignore": "flipgate-out/\n.flipgate-cache/\n",
                 ".flipgate.yml": CONFIG.format(blocking=FIXED),
                 "eval/cases.jsonl": "".join(json.dumps(case) + "\n" for case in CASES),
                 "prompts/answer.prompty": WITH_SYSTEM.format(system=CAREFUL)}, message="the bot")
    return repo


def run(repo: GitRepo, tmp_path: Path, *head: str) -> tuple[int, str, dict[str, Any] | None]:
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "main", *head,
                                      "--out", str(out), "--no-cache"])
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    return result.exit_code, result.output, report


def test_monday_a_typo_in_the_blocking_categories_is_bad_input(
        pharmacy: GitRepo, openai_server: FakeOpenAI, tmp_path: Path) -> None:
    pharmacy.commit({".flipgate.yml": CONFIG.format(blocking=TYPO)}, message="gate dosages")
    pharmacy.git("checkout", "-q", "-b", "friendly")
    pharmacy.commit({"prompts/answer.prompty": WITH_SYSTEM.format(system=FRIENDLY)})

    code, output, report = run(pharmacy, tmp_path, "--head", "friendly")

    assert code == 2 and report is None
    errors = [line for line in output.splitlines() if line.startswith("flipgate: error:")]
    have = "(the cases have: dosage, hours, insurance, refills)"
    assert errors == [
        f"flipgate: error: .flipgate.yml@{short(pharmacy.git('rev-parse', 'main'))}:9: "
        f"'dosages' in gate.blocking_categories is no case's category, so it would block nothing "
        f"{have}; did you mean 'dosage'?",
        f"flipgate: error: .flipgate.yml@{short(pharmacy.git('rev-parse', 'main'))}:9: "
        f"'refill' in gate.blocking_categories is no case's category, so it would block nothing "
        f"{have}; did you mean 'refills'?"]
    assert openai_server.requests == []  # refused before any model was asked


def test_tuesday_held_back_dosages_are_a_warning_and_each_flip_an_annotation(
        pharmacy: GitRepo, harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    harness.repo = pharmacy
    harness.base = pharmacy.git("rev-parse", "HEAD")
    harness.head = pharmacy.commit({"prompts/answer.prompty": WITH_SYSTEM.format(system=FRIENDLY)})
    harness.server.add_pull(PR, base_sha=harness.base, head_sha=harness.head)
    harness.env["GITHUB_WORKSPACE"] = str(pharmacy.path)
    harness.env["INPUT_OPENAI-API-KEY"] = "sk-pharmacy"
    harness.pull_event()
    for name, value in harness.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_API_KEY")

    assert action.main(os.environ, stream=harness.log) == 0, harness.log.getvalue()[-3000:]

    held = "5 confirmed flips did not block: dosage has 6 cases, below 50; see gate.strict"
    status = harness.final_status()
    assert (status["state"], status["description"]) == ("success", f"⚠️ passed, but {held}")
    [comment] = harness.own_comments()
    headline = next(line for line in comment["body"].splitlines() if line.startswith("## "))
    assert headline == f"## ⚠️ flipgate passed, but {held}"
    assert "✅" not in comment["body"] and "✅" not in harness.summary()
    report = json.loads((pharmacy.path / "flipgate-out/report.json").read_text())
    assert report["counts"]["held_back"] == 5 and report["counts"]["new_non_answers"] == 3

    log = harness.log.getvalue()
    annotations = [(line[2:].split(" ", 1)[0], line.split("::", 2)[2]) for line in log.splitlines()
                   if line.startswith(("::warning title=flipgate::", "::error title=flipgate::"))]
    rows = [(level, text.split(",", 1)[0]) for level, text in annotations if " [" in text]
    assert rows == [*(("warning", f"held-back regression: dosage-{n} [dosage]") for n in range(1, 6)),
                    *(("warning", f"new non-answer: hours-{n} [hours]") for n in range(1, 4))]
    assert annotations[-1] == ("warning", f"flipgate: ⚠️ passed, but {held}")
    assert all("16 tablets" in text and "below 50 a flip needs a second judge" in text
               for _, text in annotations if text.startswith("held-back"))
    assert f"flipgate: configuration: .flipgate.yml from {short(harness.base)}" in log


def test_wednesday_an_uncommitted_edit_is_evaluated_with_worktree(
        pharmacy: GitRepo, openai_server: FakeOpenAI, tmp_path: Path) -> None:
    main = short(pharmacy.git("rev-parse", "main"))
    (pharmacy.path / "prompts/answer.prompty").write_text(WITH_SYSTEM.format(system=FRIENDLY))
    (pharmacy.path / ".flipgate.yml").write_text(CONFIG.format(blocking=FIXED) + "  strict: true\n")
    status = pharmacy.git("status", "--porcelain")

    # The committed head has no change: skipped, and it says what it left out.
    code, output, report = run(pharmacy, tmp_path, "--head", "HEAD")
    assert code == 0 and report is not None and report["conclusion"] == "skipped"
    said = " ".join(output.split())
    assert ("Warning: uncommitted changes to what the generator reads (prompts/answer.prompty) "
            f"are not in this run, which evaluates HEAD@{main} as committed; run with "
            "--worktree (instead of --head) to evaluate the working tree.") in said
    assert (f"Warning: the working tree's .flipgate.yml differs from the one this run used "
            f"(.flipgate.yml from main@{main}) and was not used") in said
    assert f"flipgate: configuration: .flipgate.yml from main@{main}" in output
    assert openai_server.requests == []

    # --worktree evaluates the edit; the base's configuration still judges (no strict).
    code, output, report = run(pharmacy, tmp_path, "--worktree")
    assert code == 0, output
    assert report is not None and report["conclusion"] == "success"
    assert sorted(row["id"] for row in report["rows"] if row["verdict"] == "regression") == sorted(INVENTS)
    assert report["counts"]["held_back"] == 5
    assert "⚠️  passed, but 5 confirmed flips did not block" in output and "✅" not in output
    assert "prompts/answer.prompty@worktree" not in output  # no error named the snapshot
    comment = (tmp_path / "out/comment.md").read_text()
    assert "The head is the working tree: the checkout" in " ".join(comment.split())
    assert pharmacy.git("status", "--porcelain") == status  # nothing of the repository changed

    code, output, _ = run(pharmacy, tmp_path, "--head", "HEAD", "--worktree")
    assert code == 2 and "exactly one of --head REF (a commit) and --worktree" in output
