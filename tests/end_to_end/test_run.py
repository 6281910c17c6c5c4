"""`flipgate run` / `flipgate replay` end to end: real git repos, the real CLI and openai
client, and a loopback server that answers generation per (model, prompt) and judges per answer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.judges import make_judges
from flipgate.run import pipeline
from flipgate.run.pipeline import run_check

from support.factories import settings_now
from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
watch: [schemas/**]
judge:
  provider: openai
  model: judge-pinned
  max_retries: 0
  timeout: 5
gate:
  blocking_categories: [policy, pricing]
  strict: true  # a handful of cases: the same-judge re-score may block
"""
CASES = [
    {"id": "refund-007", "query": "How long do I have to ask for a refund?",
     "context": "Refunds are accepted within 30 days of purchase.", "category": "policy"},
    {"id": "card-002", "query": "How do I freeze my card?",
     "context": "Freeze your card in the app under Card settings.", "category": "cards"},
    {"id": "fee-003", "query": "Is there a replacement card fee?",
     "context": "The first replacement card each year is free.", "category": "pricing"},
]
PROMPT = """---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4o-mini
  parameters:
    temperature: 0.2
---
system:
You answer bank questions. {% include 'partials/rules.j2' %}
user:
{{ query }}
Context: {{ context }}
"""
RULES = "Use only the context."
HEAD_PROMPT = (PROMPT.replace("gpt-4o-mini", "gpt-4.1").replace("temperature: 0.2", "temperature: 0.7")
               .replace("You answer bank questions.", "You answer bank questions generously."))


def generation(body: dict) -> str:
    """A stand-in model: grounded answers, except that the generous prompt on gpt-4.1
    invents a figure for the refund policy."""
    user = body["messages"][-1]["content"]
    context = user.split("Context: ", 1)[1]
    system = body["messages"][0]["content"]
    if body["model"] == "gpt-4.1" and "generously" in system and "Refunds" in context:
        return "Refunds are accepted within 45 days of purchase, and a $15 fee applies."
    return context


@pytest.fixture
def server(openai_server: FakeOpenAI) -> FakeOpenAI:
    openai_server.on_generation(generation)
    return openai_server


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({
        ".flipgate.yml": CONFIG,
        "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES),
        "prompts/answer.prompty": PROMPT,
        "prompts/partials/rules.j2": RULES,
        "README.md": "# bank bot\n",
        "schemas/reply.json": "{}\n",  # what `watch` names (a pattern matching nothing is an error)
    }, message="base")
    repo.branch("base", "HEAD")
    return repo


def invoke(repo: GitRepo, tmp_path: Path, *args: str, head: str = "HEAD", out: str = "out"):
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", head, "--out", str(tmp_path / out),
                                      "--cache", str(tmp_path / "cache"), *args])
    report_path = tmp_path / out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return result, report


def comment(tmp_path: Path, out: str = "out") -> str:
    return (tmp_path / out / "comment.md").read_text()


# --- the gate on a prompt change ------------------------------------------------------

def test_a_prompt_change_that_invents_a_figure_blocks(server: FakeOpenAI, repo: GitRepo,
                                                      tmp_path: Path) -> None:
    head = repo.commit({"prompts/answer.prompty": HEAD_PROMPT}, message="generous prompt")
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 1, result.output

    assert report["conclusion"] == "failure"
    verdicts = {row["id"]: (row["verdict"], row["blocking"]) for row in report["rows"]}
    assert verdicts == {"refund-007": ("regression", True), "card-002": ("unchanged", False),
                        "fee-003": ("unchanged", False)}
    assert report["head_sha"] == head
    assert report["change"]["files"] == ["prompts/answer.prompty"]
    assert report["change"]["model"] == {"old": "gpt-4o-mini", "new": "gpt-4.1"}
    assert report["change"]["parameters"] == [{"name": "temperature", "old": 0.2, "new": 0.7}]
    assert "-You answer bank questions. {% include" in report["change"]["template_diff"]
    assert "+You answer bank questions generously." in report["change"]["template_diff"]
    assert set(report["usage"]) == {"baseline", "candidate", "judge"}
    assert report["usage"]["baseline"]["requests"] == report["usage"]["candidate"]["requests"] == 3

    # Generation went to the generator's models; judging to the pinned judge only.
    generated = server.chat_requests("generation")
    assert sorted(r.model for r in generated) == ["gpt-4.1"] * 3 + ["gpt-4o-mini"] * 3
    assert {r.model for r in server.chat_requests("groundedness")} == {"judge-pinned"}

    text = comment(tmp_path)
    assert "refund-007" in text
    assert "gpt-4o-mini" in text and "gpt-4.1" in text
    assert "temperature" in text
    assert "+You answer bank questions generously." in text
    assert "usage: " in result.stderr and "cache: " in result.stderr


def test_a_run_builds_one_judge_through_its_wiring_and_closes_it(server: FakeOpenAI, repo: GitRepo,
                                                                 tmp_path: Path) -> None:
    built, repos = [], []

    def counting_make_judges(*args, **kwargs):
        judges = make_judges(*args, **kwargs)
        built.append(judges)
        return judges

    def recording_open_git(path, settings):
        repos.append(path)
        return pipeline.open_repo(path, settings)

    repo.commit({"prompts/answer.prompty": HEAD_PROMPT}, message="generous prompt")
    result = run_check(repo=repo.path, base="base", head="HEAD", settings=settings_now(),
                       out_dir=tmp_path / "out", cache_dir=tmp_path / "cache",
                       wiring=pipeline.Wiring(judges=counting_make_judges, open_git=recording_open_git))
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert result.exit_code == 1
    assert repos == [repo.path]  # git is opened through the wiring, once
    [judges] = built
    assert judges.second is None  # no second opinion configured
    assert judges.first.llm.client.is_closed()
    assert report["judge"]["model"] == judges.info.model == "judge-pinned"


def test_a_second_identical_run_makes_no_request(server: FakeOpenAI, repo: GitRepo,
                                                 tmp_path: Path) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    first, first_report = invoke(repo, tmp_path, out="first")
    assert first.exit_code == 1
    server.clear()

    second, second_report = invoke(repo, tmp_path, out="second")
    assert second.exit_code == 1, second.output
    assert server.requests == []
    assert second_report["rows"] == first_report["rows"]
    assert second_report["cache"]["misses"] == 0 and second_report["cache"]["hits"] > 0
    assert all(u["requests"] == 0 for u in second_report["usage"].values())


def test_a_push_that_changes_only_the_head_prompt_reuses_every_baseline_answer_and_verdict(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    invoke(repo, tmp_path, out="first")
    baseline_answers = {c["context"] for c in CASES}
    server.clear()

    def warm(body: dict) -> str:
        warmly = "warmly" in body["messages"][0]["content"]
        return generation(body) + (" Warm regards." if warmly else "")
    server.on_generation(warm)
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT.replace("generously", "generously and warmly")})
    result, report = invoke(repo, tmp_path, out="second")
    assert result.exit_code == 1, result.output
    generated = server.chat_requests("generation")
    assert len(generated) == 3 and {r.model for r in generated} == {"gpt-4.1"}
    judged = {r.inputs.response for r in server.chat_requests("groundedness")}
    assert judged and not (judged & baseline_answers)  # baseline verdicts came from the cache
    assert report["usage"]["baseline"]["requests"] == 0


# --- nothing to gate -----------------------------------------------------------------

@pytest.mark.parametrize("files", [
    {"README.md": "# bank bot, now with docs\n"},
    {"prompts/unused.j2": "not included anywhere"},
    {"eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES[:2])},
])
def test_a_change_outside_the_generator_exits_0_without_any_request(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path, files: dict[str, str]) -> None:
    repo.commit(files)
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 0, result.output
    assert server.requests == []
    assert report["conclusion"] == "skipped"
    assert report["rows"] == []
    assert "nothing to gate" in report["notes"][0]
    assert (tmp_path / "out" / "comment.md").exists()


def test_no_client_is_built_when_nothing_changed(repo: GitRepo, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # No server and no key at all: a skipped run must not need either.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    repo.commit({"README.md": "changed\n"})
    result = run_check(repo=repo.path, base="base", head="HEAD", settings=settings_now(),
                       out_dir=tmp_path / "out", cache_dir=None)
    assert result.exit_code == 0
    assert result.report.conclusion.value == "skipped"


@pytest.mark.parametrize("files, relevant", [
    ({"prompts/partials/rules.j2": "Use only the context, and be brief."}, "prompts/partials/rules.j2"),
    ({"schemas/answer.json": "{}"}, "schemas/answer.json"),
])
def test_an_included_or_watched_file_is_a_prompt_change(server: FakeOpenAI, repo: GitRepo,
                                                        tmp_path: Path, files: dict[str, str],
                                                        relevant: str) -> None:
    repo.commit(files)
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 0, result.output
    assert report["conclusion"] == "success"
    assert report["change"]["files"] == [relevant]
    sent = [json.dumps(r.body, sort_keys=True) for r in server.chat_requests("generation")]
    if relevant.endswith(".j2"):  # the include changes the prompt: both sides ask
        assert len(sent) == 6
    else:  # the same prompt on both sides: one request per case answers both (single flight)
        assert len(sent) == 3
    assert len(set(sent)) == len(sent)
    if relevant.endswith(".j2"):
        assert "+Use only the context, and be brief." in report["change"]["template_diff"]


def test_a_watched_file_whose_name_is_not_utf8_is_reported_not_a_crash(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    # git names are bytes; a PR can add one that is not UTF-8. It used to crash the
    # report writer after every answer had been generated and judged.
    repo.commit({"schemas/\udcff.json": "{}"})
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 0, result.output
    assert report["change"]["files"] == ["schemas/\\xff.json"]
    assert "schemas/\\\\xff.json" in comment(tmp_path)  # escaped again as Markdown


# --- refused before any request -----------------------------------------------------------

@pytest.mark.parametrize("head_files, message", [
    ({"prompts/answer.prompty": PROMPT.replace("{{ query }}", "{{ query.__class__.__mro__ }}")},
     "prompts/answer.prompty:14: the template reaches for Python internals"),
    ({"prompts/partials/rules.j2": "{{ cycler.__init__.__globals__.os.popen('id').read() }}"},
     "prompts/partials/rules.j2:1: the template reaches for Python internals"),
    ({"prompts/answer.prompty": PROMPT.replace("{{ query }}", "{{ query|attr('__cla'~'ss__') }}")},
     "refused by the sandbox"),
    ({"prompts/answer.prompty": PROMPT.replace("{% include 'partials/rules.j2' %}",
                                               "{% include '../../../../etc/passwd' %}")},
     "leaves the repository"),
    ({"prompts/answer.prompty": PROMPT.replace("temperature: 0.2", "extra_headers: {x: y}")},
     "model.parameters.extra_headers is not a chat-completion body field"),
])
def test_a_head_that_reaches_outside_the_sandbox_exits_2_before_any_request(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path, head_files: dict[str, str],
        message: str) -> None:
    repo.commit(head_files)
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "security: " in result.stderr and message in result.stderr
    assert "Traceback" not in result.output
    assert server.requests == []
    assert report is None


def test_a_head_that_moves_the_endpoint_exits_2_and_no_server_sees_a_request(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    attacker = FakeOpenAI()
    attacker.start()
    try:
        redirected = PROMPT.replace("model: gpt-4o-mini",
                                    f"model: gpt-4o-mini\n    base_url: {attacker.base_url}")
        repo.commit({"prompts/answer.prompty": redirected})
        result, _ = invoke(repo, tmp_path)
    finally:
        attacker.stop()
    assert result.exit_code == 2, result.output
    assert "security: " in result.stderr
    assert "changes model.configuration.base_url" in result.stderr
    assert server.requests == [] and attacker.requests == []


def test_a_problem_quoting_the_heads_text_reaches_the_terminal_inert(server: FakeOpenAI, repo: GitRepo,
                                                                   tmp_path: Path) -> None:
    # A YAML key can hold any character ("\e" is ESC): printed raw, an OSC 52 sequence
    # would set the clipboard of whoever runs flipgate on the PR, and a CR/LF would
    # start a fresh CI log line such as ::add-mask::.
    key = '"x\\e]52;c;Y3VybCBldmlsIHwgc2g=\\a\\r\\n::add-mask::y\\x9b"'
    repo.commit({"prompts/answer.prompty": PROMPT.replace(
        "    model: gpt-4o-mini\n", f"    model: gpt-4o-mini\n    {key}: 1\n")})
    result, _ = invoke(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "unsupported key 'model.configuration.x\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07" in result.stderr
    assert "\\n::add-mask::y\\x9b'" in result.stderr
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", result.stderr)
    assert len(result.stderr.splitlines()) == 1


def test_a_missing_variable_renders_empty_and_the_run_warns_when_not_strict(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    # The opt-out, as the reference Prompty runtime: undefined is empty and falsy. The typo
    # still shows.
    lenient = CONFIG.replace("generator: prompts/answer.prompty\n",
                             "generator:\n  path: prompts/answer.prompty\n  strict_undefined: false\n")
    repo.commit({".flipgate.yml": lenient}, message="lenient")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.replace("{{ query }}", "{{ query }} {{ account }}")})
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 0, result.output
    warning = next(note for note in report["notes"] if "undefined" in note)
    assert "prompts/answer.prompty@" in warning and "'account' (3 cases, e.g. refund-007)" in warning
    assert "generator.strict_undefined is false" in warning
    assert "account" in comment(tmp_path)
    terminal = " ".join(result.output.split())  # the terminal says it too, wrapped or not
    assert "Warning: prompts/answer.prompty@" in terminal and "'account' (3 cases" in terminal


def test_a_missing_variable_exits_2_naming_cases_file_line_case_and_variable_by_default(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    repo.commit({"prompts/answer.prompty": PROMPT.replace("{{ query }}", "{{ query }} {{ account }}")})
    result, _ = invoke(repo, tmp_path)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert [line.split(" has no ")[0] for line in lines] == [
        "flipgate: error: eval/cases.jsonl:1: case refund-007",
        "flipgate: error: eval/cases.jsonl:2: case card-002",
        "flipgate: error: eval/cases.jsonl:3: case fee-003"]
    # No case has it: the line asks for a mapping, not for rendering it empty.
    assert all("has no 'account', which prompts/answer.prompty@" in line and ":14 reads" in line
               and "generator.variables (account: FIELD)" in line
               and "strict_undefined: false" not in line for line in lines)
    assert "Traceback" not in result.output and server.requests == []


def test_the_base_template_reading_a_variable_the_cases_lack_is_refused_too(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    repo.commit({"prompts/answer.prompty": PROMPT.replace("{{ query }}", "{{ query }} {{ account }}")},
                message="the base reads account")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})   # the head does not
    result, _ = invoke(repo, tmp_path)
    assert result.exit_code == 2, result.output
    assert "eval/cases.jsonl:1: case refund-007 has no 'account', which prompts/answer.prompty@" \
        in result.stderr
    assert server.requests == []


@pytest.mark.parametrize("args, message", [
    (["--base", "no-such-branch"], "git ref 'no-such-branch' does not name a commit"),
    (["--config", "missing.yml"], "missing.yml: not found at the base (base) or the head (HEAD)"),
])
def test_bad_refs_and_files_are_bad_input(server: FakeOpenAI, repo: GitRepo, tmp_path: Path,
                                          args: list[str], message: str) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    runner_args = ["run", "--repo", str(repo.path), "--base", "base", "--head", "HEAD",
                   "--out", str(tmp_path / "out")]
    for flag, value in zip(args[::2], args[1::2], strict=True):
        if flag in runner_args:
            runner_args[runner_args.index(flag) + 1] = value
        else:
            runner_args += [flag, value]
    result = CliRunner().invoke(cli, runner_args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_a_head_that_deletes_the_generator_is_bad_input(server: FakeOpenAI, repo: GitRepo,
                                                        tmp_path: Path) -> None:
    repo.commit({"prompts/answer.prompty": None})
    result, _ = invoke(repo, tmp_path)
    assert result.exit_code == 2
    assert "prompts/answer.prompty: not found at git ref HEAD" in result.stderr


# --- trusted configuration --------------------------------------------------------------

def test_the_base_configuration_judges_a_pr_that_tries_to_weaken_it(server: FakeOpenAI, repo: GitRepo,
                                                                     tmp_path: Path) -> None:
    weakened = CONFIG.replace("blocking_categories: [policy, pricing]", "blocking_categories: []")
    extra_case = {"id": "new-1", "query": "q", "context": "c"}
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT, ".flipgate.yml": weakened,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in [*CASES[1:], extra_case])})
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 1, result.output   # still blocked by the base's categories
    assert any("changes .flipgate.yml" in note for note in report["notes"])
    assert "-  blocking_categories: [policy, pricing]" in report["change"]["config_diff"]
    assert report["change"]["cases_diff"] == "1 added (new-1); 1 removed (refund-007)"
    assert [row["id"] for row in report["rows"]] == ["refund-007", "card-002", "fee-003"]


def test_adopting_flipgate_uses_the_heads_configuration_and_says_so(server: FakeOpenAI, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({"README.md": "# bank bot\n"})
    repo.branch("base", "HEAD")
    repo.commit({".flipgate.yml": CONFIG, "prompts/answer.prompty": PROMPT,
                 "prompts/partials/rules.j2": RULES, "schemas/reply.json": "{}\n",
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)})
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 0, result.output
    assert report["conclusion"] == "success"
    assert {row["verdict"] for row in report["rows"]} == {"unchanged"}
    notes = " ".join(report["notes"])
    assert "base has no .flipgate.yml" in notes and "base has no generator" in notes
    assert len(server.chat_requests("generation")) == 3  # replayed once, compared with itself


@pytest.mark.parametrize("config, prompt, refused", [
    (CONFIG.replace("model: judge-pinned", "model: judge-pinned\n  base_url: ATTACKER"), PROMPT,
     ".flipgate.yml@HEAD:8: judge.base_url is refused"),
    (CONFIG, PROMPT.replace("model: gpt-4o-mini", "model: gpt-4o-mini\n    base_url: ATTACKER"),
     "prompts/answer.prompty@HEAD:8: model.configuration.base_url is refused"),
    (CONFIG, PROMPT.replace("model: gpt-4o-mini", "model: ${env:OPENAI_API_KEY}"),
     "prompts/answer.prompty@HEAD:7: model.configuration.model uses ${...}"),
], ids=["judge-endpoint", "generator-endpoint", "secret-as-model-name"])
def test_a_pr_that_adopts_flipgate_cannot_send_the_key_elsewhere_or_publish_a_secret(
        server: FakeOpenAI, tmp_path: Path, config: str, prompt: str, refused: str) -> None:
    attacker = FakeOpenAI()
    attacker.start()
    try:
        repo = GitRepo.create(tmp_path / "repo")
        repo.commit({"README.md": "# bank bot\n"})
        repo.branch("base", "HEAD")
        head = repo.commit({".flipgate.yml": config.replace("ATTACKER", attacker.base_url),
                            "prompts/answer.prompty": prompt.replace("ATTACKER", attacker.base_url),
                            "prompts/partials/rules.j2": RULES, "schemas/reply.json": "{}\n",
                            "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)})
        result, report = invoke(repo, tmp_path)
    finally:
        attacker.stop()
    assert result.exit_code == 2, result.output
    assert refused.replace("HEAD", head[:12]) in result.stderr
    assert attacker.requests == [] and server.requests == []
    assert report is None and "test-key" not in result.output


# --- could not finish -----------------------------------------------------------------------

def test_budget_exceeded_exits_3_and_says_how_far_it_got(server: FakeOpenAI, repo: GitRepo,
                                                         tmp_path: Path) -> None:
    # The budget is read from the base's configuration.
    repo.commit({".flipgate.yml": CONFIG + "concurrency: 1\nbudget:\n  max_requests: 4\n"})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 3, result.output
    assert "budget.max_requests (4) reached after 4 requests" in result.stderr
    assert re.search(r"\d of 3 (baseline|candidate) answers were generated", result.stderr)
    assert len(server.requests) == 4
    assert report["conclusion"] == "error"
    assert any("budget.max_requests" in note for note in report["notes"])


def test_a_generation_that_fails_after_retries_exits_3_naming_the_case(server: FakeOpenAI, repo: GitRepo,
                                                                      tmp_path: Path) -> None:
    server.fail("generation", status=500, times=100)
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 3, result.output
    assert "HTTP 500" in result.stderr and "(after 3 retries)" in result.stderr
    assert "for case '" in result.stderr
    assert report["conclusion"] == "error"
    assert server.chat_requests("groundedness") == []  # nothing judged after the failure


def test_why_a_run_stopped_reaches_the_terminal_inert(server: FakeOpenAI, repo: GitRepo,
                                                     tmp_path: Path) -> None:
    # The head names the model, and a failed generation quotes it.
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    invoke(repo, tmp_path, out="first")  # the baseline's answers are cached from here on
    server.fail("generation", status=404, times=100)
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT.replace(
        "model: gpt-4.1", 'model: "gpt\\e]52;c;cHduZWQ=\\a\\n::add-mask::y"')})
    result, _ = invoke(repo, tmp_path)
    assert result.exit_code == 3, result.output
    assert "candidate model gpt\\x1b]52;c;cHduZWQ=\\x07\\n::add-mask::y (sent once)" \
        in result.stderr
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", result.stderr)


def test_a_truncated_answer_is_flagged_on_its_row(server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    def cut_off_on_gpt41(body: dict):
        answer = generation(body)
        return {"content": answer, "finish_reason": "length"} if body["model"] == "gpt-4.1" else answer
    server.on_generation(cut_off_on_gpt41)
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    _, report = invoke(repo, tmp_path)
    rows = {row["id"]: row for row in report["rows"]}
    assert rows["card-002"]["candidate"]["finish_reason"] == "length"
    assert rows["card-002"]["baseline"].get("finish_reason") == "stop"


# --- flipgate replay --------------------------------------------------------------------------

def test_replay_writes_the_responses_of_a_ref(server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    out = tmp_path / "responses.jsonl"
    args = ["replay", "--repo", str(repo.path), "--ref", "HEAD", "--out", str(out),
            "--cache", str(tmp_path / "cache")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["refund-007", "card-002", "fee-003"]
    assert lines[0]["response"].startswith("Refunds are accepted within 45 days")
    assert "usage: generation 3 requests" in result.stderr
    server.clear()

    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0
    assert server.requests == []
    assert "cache: 3 hits, 0 misses" in again.stderr


def test_replay_with_no_cache_asks_again(server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    args = ["replay", "--repo", str(repo.path), "--ref", "base", "--out", str(tmp_path / "r.jsonl"),
            "--no-cache"]
    for _ in range(2):
        assert CliRunner().invoke(cli, args).exit_code == 0
    assert len(server.chat_requests("generation")) == 6


# --- other providers -------------------------------------------------------------------------

AZURE_PROMPT = PROMPT.replace(
    "    type: openai\n    model: gpt-4o-mini\n",
    "    type: azure_openai\n    azure_deployment: answers-v1\n"
    "    azure_endpoint: ${env:AZURE_OPENAI_ENDPOINT}\n    api_version: 2024-10-21\n")


def test_an_azure_generator_calls_each_sides_deployment(server: FakeOpenAI, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    server.set_azure_env(monkeypatch)
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "prompts/answer.prompty": AZURE_PROMPT,
                 "schemas/reply.json": "{}\n",
                 "prompts/partials/rules.j2": RULES,
                 "eval/cases.jsonl": "".join(json.dumps(c) + "\n" for c in CASES)})
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": AZURE_PROMPT.replace("answers-v1", "answers-v2")})
    result, report = invoke(repo, tmp_path)
    assert result.exit_code == 0, result.output
    generated = server.chat_requests("generation")
    assert sorted(r.deployment for r in generated) == ["answers-v1"] * 3 + ["answers-v2"] * 3
    assert {r.args["api-version"] for r in generated} == {"2024-10-21"}
    assert report["change"]["model"] == {"old": "answers-v1", "new": "answers-v2"}


def test_the_offline_judge_needs_no_judge_requests(server: FakeOpenAI, repo: GitRepo,
                                                   tmp_path: Path) -> None:
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    result, report = invoke(repo, tmp_path, "--judge", "offline")
    assert result.exit_code == 1, result.output
    assert report["judge"]["provider"] == "offline"
    assert {r.kind for r in server.requests} == {"generation"}
    assert {row["id"]: row["verdict"] for row in report["rows"]}["refund-007"] == "regression"


# --- failures that say why, at once ---------------------------------------------------

def _once(text: str, pattern: str) -> int:
    return len(re.findall(pattern, text))


def test_a_missing_judge_model_stops_before_generation_and_says_why_once(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    server.missing_models.add("judge-pinned")
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    result, report = invoke(repo, tmp_path)

    assert result.exit_code == 3, result.output
    assert len(server.requests) <= 2 and server.chat_requests("generation") == []
    [probe] = server.chat_requests()  # the embeddings probe goes out beside it
    assert probe.kind == "probe" and probe.model == "judge-pinned"
    host = re.escape(server.root_url.split("//", 1)[1])
    for text in (result.stderr, comment(tmp_path)):
        assert _once(text, r"(?<![0-9a-f])404(?![0-9a-f])") == 1, text
        assert _once(text, host) == 1 and "judge model judge-pinned" in text
        assert "The model `judge-pinned` does not exist" in text.replace("\\`", "`")
    assert "404" not in result.stdout  # the summary does not repeat it
    assert "sent once" in result.stderr and "retries" not in result.stderr
    assert report["conclusion"] == "error"


def test_an_unreachable_judge_names_the_url_and_the_real_retry_count(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    result, _ = invoke(repo, tmp_path)

    assert result.exit_code == 3, result.output
    assert "could not connect to http://127.0.0.1:9/v1" in result.stderr
    assert "judge model judge-pinned" in result.stderr and "(sent once)" in result.stderr
    assert server.requests == []  # not the judge, and no generation either


def test_a_rejected_key_for_the_generator_stops_at_the_first_request(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    server.fail("generation", status=401, times=1000)
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    result, _ = invoke(repo, tmp_path)

    assert result.exit_code == 3, result.output
    assert "HTTP 401" in result.stderr and "(sent once)" in result.stderr
    # Every generation already in flight may land, but none is retried.
    assert len(server.chat_requests("generation")) <= len(CASES) * 2
    assert all(r.status == 401 for r in server.chat_requests("generation"))


def test_concurrency_flag_limits_run_and_replay(server: FakeOpenAI, repo: GitRepo,
                                                tmp_path: Path) -> None:
    server.latency = 0.05  # requests overlap unless something holds them back
    repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    result, _ = invoke(repo, tmp_path, "--concurrency", "1", "--no-cache")
    assert result.exit_code == 1, result.output
    assert server.peak_concurrency == 1

    server.clear()
    replayed = CliRunner().invoke(cli, ["replay", "--repo", str(repo.path), "--ref", "HEAD",
                                        "--out", str(tmp_path / "r.jsonl"), "--no-cache",
                                        "--concurrency", "1"])
    assert replayed.exit_code == 0, replayed.output
    assert server.peak_concurrency == 1 and len(server.chat_requests("generation")) == len(CASES)


def test_a_skipped_run_replaces_an_earlier_comment_with_the_skipped_one(
        server: FakeOpenAI, repo: GitRepo, tmp_path: Path) -> None:
    blocked = repo.commit({"prompts/answer.prompty": HEAD_PROMPT})
    result, _ = invoke(repo, tmp_path, head=blocked)
    assert result.exit_code == 1 and "blocked" in comment(tmp_path)

    repo.checkout("base")
    docs_only = repo.commit({"README.md": "docs\n"})
    result, report = invoke(repo, tmp_path, head=docs_only)

    assert result.exit_code == 0, result.output
    assert report["conclusion"] == "skipped" and report["rows"] == []
    assert comment(tmp_path).splitlines()[1] == "## ⏭️ flipgate skipped: no prompt or model change"
    assert "blocked" not in comment(tmp_path)


@pytest.mark.parametrize("sample, warned", [
    ("", True), ("sample:\n  query: Can I get a refund?\n  context: Refunds within 30 days.\n", False)])
def test_replay_sample_warns_when_the_file_has_no_sample(repo: GitRepo, sample: str,
                                                         warned: bool) -> None:
    repo.commit({"prompts/answer.prompty": PROMPT.replace("---\nsystem:", sample + "---\nsystem:", 1)})
    result = CliRunner().invoke(cli, ["replay", "--sample", "--ref", "HEAD", "--repo", str(repo.path),
                                      "--generator", "prompts/answer.prompty"])
    assert result.exit_code == 0, result.output
    request = json.loads(result.stdout)  # the request still prints, on stdout alone
    assert request["model"] == "gpt-4o-mini"
    assert ("warning: prompts/answer.prompty has no sample:" in result.stderr) is warned
    if not warned:
        assert "Can I get a refund?" in request["messages"][-1]["content"]
