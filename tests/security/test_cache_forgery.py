"""Attacks on the reply cache (issue 17, item 1): a pull request that writes cache entries
must not decide its own verdict.

The attacker knows the cache's layout and can compute every request's plain digest
(`cache_key` is public and deterministic); what they cannot read is the key the run
signs its entries with.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.llm.cache import Cache, cache_key

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI

REQUEST = {"endpoint": "https://judge.example", "body": {"model": "judge", "messages": []}}
GOOD = {"content": '{"score": 5}', "finish_reason": "stop"}
CI_KEY, ATTACKER_KEY = b"ci-secret-key-0123456789", b"attacker-own-key-9876543210"


def entry_path(root: Path, request: dict) -> Path:
    digest = cache_key(request)
    return root / digest[:2] / f"{digest}.json"


def plant(root: Path, request: dict, document: object) -> Path:
    path = entry_path(root, request)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def test_an_entry_forged_under_the_plain_request_hash_is_ignored_and_counted(tmp_path: Path) -> None:
    plant(tmp_path, REQUEST, {"value": GOOD})
    cache = Cache(tmp_path, key=CI_KEY)
    assert cache.get(REQUEST) is None
    assert cache.stats()["rejected"] == 1 and cache.stats()["hits"] == 0


@pytest.mark.parametrize("mac", ["", "0" * 64, "not hex", None, 5, ["x"]])
def test_an_entry_with_a_made_up_mac_is_ignored(tmp_path: Path, mac: object) -> None:
    plant(tmp_path, REQUEST, {"value": GOOD, "mac": mac})
    cache = Cache(tmp_path, key=CI_KEY)
    assert cache.get(REQUEST) is None and cache.stats()["rejected"] == 1


def test_an_entry_signed_offline_with_the_attackers_own_key_is_ignored(tmp_path: Path) -> None:
    Cache(tmp_path, key=ATTACKER_KEY).put(REQUEST, GOOD)
    cache = Cache(tmp_path, key=CI_KEY)
    assert cache.get(REQUEST) is None and cache.stats()["rejected"] == 1


def test_a_genuine_entry_copied_under_another_requests_name_is_ignored(tmp_path: Path) -> None:
    genuine = Cache(tmp_path, key=CI_KEY)
    genuine.put(REQUEST, GOOD)
    other = {**REQUEST, "body": {"model": "judge", "messages": [{"role": "user", "content": "x"}]}}
    target = entry_path(tmp_path, other)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(entry_path(tmp_path, REQUEST).read_bytes())
    cache = Cache(tmp_path, key=CI_KEY)
    assert cache.get(other) is None and cache.stats()["rejected"] == 1
    assert cache.get(REQUEST) == GOOD  # the genuine one still serves


def test_a_genuine_entry_whose_value_was_edited_is_ignored(tmp_path: Path) -> None:
    Cache(tmp_path, key=CI_KEY).put(REQUEST, {"content": '{"score": 1}', "finish_reason": "stop"})
    path = entry_path(tmp_path, REQUEST)
    document = json.loads(path.read_text())
    document["value"]["content"] = '{"score": 5}'
    path.write_text(json.dumps(document))
    cache = Cache(tmp_path, key=CI_KEY)
    assert cache.get(REQUEST) is None and cache.stats()["rejected"] == 1


def test_json_that_is_not_an_entry_is_ignored_and_counted(tmp_path: Path) -> None:
    for document in ([1, 2], "value", {"value": GOOD, "mac": "ab", "extra": {"deep": [[[]]]}}):
        plant(tmp_path, REQUEST, document)
        cache = Cache(tmp_path, key=CI_KEY)
        assert cache.get(REQUEST) is None and cache.stats()["rejected"] == 1


def test_an_entry_that_is_a_symlink_to_a_file_outside_is_not_read(tmp_path: Path) -> None:
    genuine_elsewhere = tmp_path / "elsewhere"
    Cache(genuine_elsewhere, key=CI_KEY).put(REQUEST, GOOD)
    root = tmp_path / "cache"
    path = entry_path(root, REQUEST)
    path.parent.mkdir(parents=True)
    path.symlink_to(entry_path(genuine_elsewhere, REQUEST))
    cache = Cache(root, key=CI_KEY)
    assert cache.get(REQUEST) is None and cache.stats()["rejected"] == 1


def test_a_fifo_planted_as_an_entry_does_not_hang_the_read(tmp_path: Path) -> None:
    path = entry_path(tmp_path, REQUEST)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    cache = Cache(tmp_path, key=CI_KEY)
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(cache.get(REQUEST)), daemon=True)
    reader.start()
    reader.join(timeout=5)
    assert not reader.is_alive() and result == [None]


def test_a_shard_directory_that_is_a_symlink_is_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "cache"
    root.mkdir()
    digest = cache_key(REQUEST)
    (root / digest[:2]).symlink_to(outside)
    Cache(root, key=CI_KEY).put(REQUEST, GOOD)
    assert list(outside.iterdir()) == []


def test_a_cache_root_that_is_a_symlink_gets_nothing_written_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "cache").symlink_to(outside)
    Cache(tmp_path / "cache", key=CI_KEY).put(REQUEST, GOOD)
    assert list(outside.iterdir()) == []  # not even a shard directory


def test_an_unkeyed_cache_is_not_shared_across_keys(tmp_path: Path) -> None:
    """Without a key given, a cache signs with a key of its process only."""
    Cache(tmp_path, key=ATTACKER_KEY).put(REQUEST, GOOD)
    assert Cache(tmp_path).get(REQUEST) is None


# -- the whole attack, through `flipgate run` ---------------------------------------------

CONFIG = """version: 1
cases: eval/cases.jsonl
generator: prompts/answer.prompty
judge:
  provider: openai
  model: judge-pinned
gate:
  strict: true
"""
PROMPT = """---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gen-1
---
system:
{system}
user:
{{{{ context }}}} {{{{ query }}}}
"""
CASES = "".join(json.dumps({"id": f"case-{i}", "query": f"Fee {i}?", "context": f"Fee {i} is 0.",
                            "category": "policy"}) + "\n" for i in range(3))


def _run(repo: GitRepo, out: Path, cache: Path, key: str) -> tuple[int, str, dict]:
    env = {"FLIPGATE_CACHE_KEY": key}
    result = CliRunner().invoke(cli, ["run", "--repo", str(repo.path), "--base", "base",
                                      "--head", "HEAD", "--out", str(out), "--cache", str(cache)],
                                env=env)
    return result.exit_code, result.stderr, json.loads((out / "report.json").read_text())


def test_a_pull_request_that_commits_cache_entries_made_offline_still_gets_judged(
        openai_server: FakeOpenAI, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    repo.commit({".flipgate.yml": CONFIG, "eval/cases.jsonl": CASES,
                 "prompts/answer.prompty": PROMPT.format(system="Answer from the context.")},
                message="base")
    repo.branch("base", "HEAD")
    repo.commit({"prompts/answer.prompty": PROMPT.format(system="Invent a fee.")})
    openai_server.on_generation(lambda body: "A $12 fee applies."
                                if "Invent" in json.dumps(body) else "No fee.")
    cache = repo.path / ".flipgate-cache"

    # Offline, at an endpoint the attacker runs at the CI's address, every answer is judged grounded.
    openai_server.on_groundedness(lambda query, context, response, call_index: 5)
    code, _, report = _run(repo, tmp_path / "attacker-out", cache, key="attacker's own key")
    assert code == 0 and report["conclusion"] == "success"
    forged = sorted(cache.rglob("*.json"))
    assert forged
    # The same entries once more as plain request hashes, without any MAC.
    for path in forged[: len(forged) // 2]:
        document = json.loads(path.read_text())
        path.write_text(json.dumps({"value": document["value"]}))
    repo.commit({str(p.relative_to(repo.path)): p.read_text() for p in forged},
                message="add cached answers")
    openai_server.clear()

    # In CI the real judge sees the invented fee.
    openai_server.on_groundedness(lambda query, context, response, call_index:
                                  1 if "$12" in (response or "") else 5)
    code, stderr, report = _run(repo, tmp_path / "ci-out", cache, key="the CI's secret key")

    assert code == 1, stderr
    assert report["conclusion"] == "failure"
    assert openai_server.chat_requests("groundedness") and openai_server.chat_requests("generation")
    assert report["cache"]["rejected"] > 0 and report["cache"]["hits"] == 0  # nothing forged served
    assert "rejected" in stderr and "not signed" in stderr


# -- the signing key ------------------------------------------------------------------------

from flipgate.errors import InputError  # noqa: E402
from flipgate.llm.cache_secret import cache_secret  # noqa: E402
from flipgate.settings import Settings  # noqa: E402


def test_a_key_file_the_pull_request_could_commit_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".flipgate").mkdir(parents=True)
    (repo / ".flipgate" / "cache.key").write_bytes(b"k" * 32)  # committed by the PR
    settings = Settings.from_environ({"FLIPGATE_CACHE_KEY_FILE": str(repo / ".flipgate/cache.key")})
    with pytest.raises(InputError, match="inside"):
        cache_secret(settings, outside=[repo])


def test_a_key_file_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "known").write_bytes(b"k" * 32)
    (tmp_path / "cache.key").symlink_to(tmp_path / "known")
    settings = Settings.from_environ({"FLIPGATE_CACHE_KEY_FILE": str(tmp_path / "cache.key")})
    with pytest.raises(InputError, match="cache key file"):
        cache_secret(settings)


def test_without_any_credential_a_random_key_is_made_once_outside_the_repository(
        tmp_path: Path) -> None:
    """Entra (no key) or an offline judge: a key of the runner's own, kept 0600."""
    settings = Settings.from_environ({"XDG_CACHE_HOME": str(tmp_path / "xdg")})
    first, again = cache_secret(settings), cache_secret(settings)
    assert first.key == again.key and len(first.key) == 32
    path = tmp_path / "xdg" / "flipgate" / "cache.key"
    assert path.stat().st_mode & 0o777 == 0o600
    assert first.key not in path.read_bytes()  # the file holds the seed, not the signing key


def test_the_provider_key_signs_through_a_derivation_and_a_given_secret_wins() -> None:
    derived = cache_secret(Settings.from_environ({"OPENAI_API_KEY": "sk-real"}))
    assert derived.key != b"sk-real" and b"sk-real" not in derived.key
    assert derived.key != cache_secret(Settings.from_environ({"OPENAI_API_KEY": "sk-other"})).key
    given = cache_secret(Settings.from_environ({"OPENAI_API_KEY": "sk-real",
                                                "FLIPGATE_CACHE_KEY": "repo-secret"}))
    assert given.source == "FLIPGATE_CACHE_KEY" and given.key != derived.key
    assert "sk-real" not in repr(derived) and "repo-secret" not in repr(given)


def test_the_comment_counts_the_rejected_entries() -> None:
    from flipgate.output.comment import render_comment

    from support.factories import make_report, make_row

    report = make_report([make_row("r1", before=5, after=5)])
    report.cache = {"hits": 0, "misses": 4, "rejected": 3}
    report.usage = {"judge": {"requests": 4, "prompt_tokens": 10, "completion_tokens": 4}}
    assert "3 rejected (not signed" in render_comment(report)
