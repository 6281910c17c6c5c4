"""Differential suite: flipgate renders real Prompty files as the reference runtime does.

The corpus (tests/fixtures/prompty-corpus/, sources in its README) holds
.prompty files written by others. Each is rendered with its own sample
inputs twice: by flipgate (`flipgate replay --sample`'s code path, in a
real git repository) and by the reference runtime on PyPI, run from its
own venv (0.1.50 for v1 files, 2.1.0 for v2 files; made by
scripts/prompty-reference-venvs). The message lists (role and content
parts), the model and the request parameters must be equal, or the file is
one flipgate refuses on purpose: listed below with the reason, and the
refusal's message asserted.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from flipgate.errors import InputError, SecurityError
from flipgate.prompts import parse_prompty

from support.gitrepo import GitRepo

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "prompty-corpus"
VENVS = Path(os.environ.get("FLIPGATE_REFERENCE_VENVS", ROOT / "tests" / ".ref-venvs"))
DRIVER = ROOT / "tests" / "support" / "prompty_reference.py"

# The same environment for both sides: `${env:...}` in the files resolves alike.
ENV = {
    "OPENAI_API_KEY": "sk-test", "AZURE_OPENAI_API_KEY": "az-test",
    "AZURE_OPENAI_ENDPOINT": "https://example.openai.azure.com",
    "OPENAI_ENDPOINT": "https://api.openai.com/v1", "AZURE_OPENAI_DEPLOYMENT": "gpt-4o-mini",
    "TEST_API_KEY": "k", "TEST_ENDPOINT": "https://api.openai.com/v1",
    "AZURE_OPENAI_CHAT_DEPLOYMENT": "gpt-4o-mini", "AZURE_OPENAI_API_VERSION": "2024-08-01-preview",
}

# Files flipgate refuses on purpose: path -> (the refusal's error type, words of its message).
_NOT_CHAT = "generator is not a chat completion; flipgate gates chat answers only"
_NOT_A_PROVIDER = "is not a provider flipgate calls"
_STREAM = "model.parameters.stream is not a chat-completion body field flipgate sends"
REFUSED: dict[str, tuple[type[Exception], str]] = {
    # Not chat generators: embeddings, images and the Responses API have no answer to judge.
    "prompty-v1/runtime/prompty/tests/prompts/embedding.prompty": (InputError, _NOT_CHAT),
    "prompty-v2/spec/fixtures/embedding.prompty": (InputError, _NOT_CHAT),
    "prompty-v2/spec/fixtures/image.prompty": (InputError, _NOT_CHAT),
    "prompty-v2/spec/fixtures/responses.prompty": (InputError, _NOT_CHAT),
    "prompty-v2/web/docs-examples/prompts/embedding.prompty": (InputError, _NOT_CHAT),
    "prompty-v2/web/docs-examples/prompts/image-gen.prompty": (InputError, _NOT_CHAT),
    # Streaming is a client option: the openai client would return a stream, not an answer.
    "prompty-v1/runtime/prompty/tests/prompts/streaming.prompty": (SecurityError, _STREAM),
    "prompty-v2/web/docs-examples/prompts/streaming-chat.prompty": (SecurityError, _STREAM),
    # Providers flipgate does not call (it speaks to OpenAI and Azure OpenAI only): the
    # key would go to an endpoint kind the lock cannot compare.
    "prompty-v1/runtime/prompty/tests/prompts/serverless.prompty": (InputError, _NOT_A_PROVIDER),
    "prompty-v1/runtime/prompty/tests/prompts/serverless_stream.prompty": (InputError, _NOT_A_PROVIDER),
    "prompty-v1/runtime/prompty/tests/prompts/structured_output.prompty": (InputError, _NOT_A_PROVIDER),
    "prompty-v2/web/src/content/docs/legacy/getting-started/setup/socrates.prompty":
        (InputError, _NOT_A_PROVIDER),
    **{f"prompty-v2/runtime/python/prompty/tests/prompts/anthropic_{name}.prompty":
       (InputError, "model.provider 'anthropic' is not supported")
       for name in ("agent", "chat", "structured", "tools")},
    # The endpoint read from another file: the lock compares the generator's own text, and a
    # pull request could change the file while the reference stays the same.
    "prompty-v2/runtime/python/prompty/tests/prompts/config_cascade.prompty":
        (SecurityError, "model.connection from a reference is refused"),
}

# Files whose reference output varies from run to run, so no comparison can hold:
# path -> why, and what flipgate sends instead (asserted).
MULTIMODAL = "prompty-v2/spec/fixtures/multimodal.prompty"
NOT_COMPARABLE = {
    MULTIMODAL: "two media inputs in one message: the reference expands only one of them, "
                "picked in set iteration order (it varies with the hash seed); flipgate expands both",
}


def _files() -> list[str]:
    return sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.prompty"))


@pytest.fixture(scope="module")
def references() -> Path:
    # One maker at a time (pytest-xdist workers, two runs of one checkout): a second would
    # see the first's half-made venv, or remove it under the first.
    VENVS.mkdir(parents=True, exist_ok=True)
    with open(VENVS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((VENVS / v / "bin" / "python").exists() for v in ("v1", "v2")):
            subprocess.run([str(ROOT / "scripts" / "prompty-reference-venvs"), str(VENVS)], check=True)
    return VENVS


@pytest.fixture(scope="module")
def corpus_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, str]:
    """The corpus, committed to a real git repository (flipgate reads refs, not folders)."""
    path = tmp_path_factory.mktemp("corpus") / "repo"
    shutil.copytree(CORPUS, path)
    repo = GitRepo.create(path)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "corpus")
    return repo, repo.git("rev-parse", "HEAD")


def reference_request(venvs: Path, file: Path, inputs: dict[str, Any], version: int) -> dict[str, Any]:
    python = venvs / f"v{version}" / "bin" / "python"
    text = file.read_text(encoding="utf-8")
    if "${ENV:" in text:
        # Written for an older runtime that read `${ENV:...}`; 0.1.50 only takes lower case.
        # The reference reads a copy (beside it, for its ${file:} references) spelled its way.
        file = file.with_name(f".reference-{file.name}")
        file.write_text(text.replace("${ENV:", "${env:"), encoding="utf-8")
    env = {**ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(file.parent)}
    result = subprocess.run([str(python), str(DRIVER), str(file), json.dumps(inputs)], env=env,
                            cwd=file.parent, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        return {"error": result.stderr.strip().splitlines()[-1]}
    return json.loads(result.stdout)


def flipgate_request(repo: GitRepo, sha: str, path: str) -> dict[str, Any]:
    from flipgate.git.repository import Git
    from flipgate.run.refs import Ref, Repo
    from flipgate.run.sample import sample_request

    return sample_request(repo=Repo(repo.path, Git()), ref=Ref(sha, sha), path=path, environ=ENV)


def _without_nonces(request: dict[str, Any]) -> dict[str, Any]:
    """The request with what differs on every run of either side made equal: the reference's
    random thread markers, and memory addresses (a template that prints a method, as
    contoso-chat's `{{item.title}}` on a string does, shows `<built-in method ... at 0x...>`)."""
    text = re.sub(r"__PROMPTY_THREAD_[0-9a-f]{8}_", "__PROMPTY_THREAD_nonce_", json.dumps(request))
    return json.loads(re.sub(r" at 0x[0-9a-f]+>", " at 0x...>", text))


def compare(name: str, repo: GitRepo, sha: str, venvs: Path) -> tuple[str, str]:
    """(outcome, detail): identical | refused | different | reference-fails."""
    from flipgate.prompts.references import sample_values

    file = repo.path / name
    try:
        prompt = parse_prompty(file.read_bytes(), path=name)
        inputs = {} if prompt.version == 1 else sample_values(prompt, read=lambda p: None)
    except InputError as exc:
        prompt, inputs = None, {}
        ours: dict[str, Any] | Exception = exc
    if prompt is not None:
        try:
            ours = flipgate_request(repo, sha, name)
        except InputError as exc:
            ours = exc
    if prompt is not None:
        theirs = reference_request(venvs, file, inputs, prompt.version)
    else:  # flipgate cannot read it: does either reference render it?
        theirs = reference_request(venvs, file, inputs, 1)
        if "error" in theirs:
            theirs = reference_request(venvs, file, inputs, 2)
    if name in NOT_COMPARABLE:
        assert isinstance(ours, dict) and ours["messages"][1] == {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": ""}},
            {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}]}, ours
        return "not-comparable", NOT_COMPARABLE[name]
    if name in REFUSED:
        kind, words = REFUSED[name]
        assert isinstance(ours, kind) and words in str(ours), (name, ours)
        return "refused", str(ours)
    if "error" in theirs:
        return "reference-fails", f"{theirs['error']} (flipgate: " + (
            f"refuses: {ours}" if isinstance(ours, Exception) else "renders it") + ")"
    if isinstance(ours, Exception):
        return "different", f"flipgate refused: {ours}"
    if isinstance(ours, dict):  # the reference marks where rich inputs go with a random nonce
        ours, theirs = _without_nonces(ours), _without_nonces(theirs)
    if ours != theirs:
        return "different", json.dumps({"flipgate": ours, "reference": theirs}, indent=1,
                                        sort_keys=True, default=str)[:3000]
    return "identical", ""


def test_flipgate_renders_the_corpus_as_the_reference_does(references: Path,
                                                           corpus_repo: tuple[GitRepo, str]) -> None:
    repo, sha = corpus_repo
    with ThreadPoolExecutor(max_workers=4) as pool:  # each comparison waits on subprocesses
        results = pool.map(lambda name: compare(name, repo, sha, references), _files())
        outcomes: dict[str, tuple[str, str]] = dict(zip(_files(), results, strict=False))
    counts = {kind: sum(1 for o, _ in outcomes.values() if o == kind)
              for kind in ("identical", "refused", "different", "reference-fails", "not-comparable")}
    compared = counts["identical"] + counts["refused"] + counts["different"]
    print(f"\nprompty compatibility: {counts['identical']} of {compared} identical, "
          f"{counts['refused']} refused on purpose, {counts['different']} different "
          f"({counts['reference-fails']} files the reference itself cannot render and "
          f"{counts['not-comparable']} whose reference output varies by run are not compared)")
    different = {name: detail for name, (outcome, detail) in outcomes.items() if outcome == "different"}
    for name, detail in different.items():
        print(f"--- {name}\n{detail}", file=sys.stderr)
    for name, (outcome, detail) in sorted(outcomes.items()):
        if outcome in ("reference-fails", "not-comparable"):
            print(f"not compared: {name}: {detail}")
    assert not different, sorted(different)
    assert counts["identical"] >= 55


@pytest.mark.parametrize("evaluator", ["groundedness_with_query", "relevance", "coherence"])
def test_replay_sample_prints_what_the_reference_renders_for_an_evaluator(
        references: Path, corpus_repo: tuple[GitRepo, str], evaluator: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from flipgate.cli import cli

    repo, _ = corpus_repo
    name = f"azure-ai-evaluation/{evaluator}.prompty"
    for variable, value in ENV.items():
        monkeypatch.setenv(variable, value)
    result = CliRunner().invoke(cli, ["replay", "--sample", "--ref", "HEAD", "--repo", str(repo.path),
                                      "--generator", name])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    theirs = reference_request(references, repo.path / name, {}, 1)
    assert printed == theirs
    assert printed["messages"][0]["role"] == "system" and printed["parameters"]["temperature"] == 0.0


@pytest.mark.parametrize("name", [
    "contoso-creative-writer/src/api/evaluate/friendliness.prompty",  # max_tokens, temperature
    "prompty-v1/runtime/prompty/tests/prompts/funcfile.prompty",       # tools from a file
])
def test_v1_parameters_are_sent_as_the_01_runtime_sends_them_not_dropped_as_2x_does(
        references: Path, corpus_repo: tuple[GitRepo, str], name: str) -> None:
    # The 2.x runtime loads v1 files too, but drops every `model.parameters` entry (max_tokens,
    # temperature, response_format, tools). flipgate follows 0.1.x: what the author wrote is sent.
    repo, sha = corpus_repo
    file = repo.path / name
    v1, v2 = (reference_request(references, file, {}, version) for version in (1, 2))
    assert v1["parameters"] and v2["parameters"] == {}
    ours = flipgate_request(repo, sha, name)
    assert ours["parameters"] == v1["parameters"]
