"""The on-disk reply cache: canonical keys, atomic entries, corrupt entries are misses."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from flipgate.llm.cache import Cache, body_key, cache_key, canonical_json


def test_key_ignores_key_order_but_not_content() -> None:
    assert cache_key({"a": 1, "b": [1, 2]}) == cache_key({"b": [1, 2], "a": 1})
    assert cache_key({"a": 1}) != cache_key({"a": 2})
    assert cache_key({"sample": 0}) != cache_key({"sample": 1})


@pytest.mark.parametrize("body", [
    {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    {"model": "m", "temperature": 0.0, "max_tokens": 5, "response_format": {"type": "json_object"},
     "messages": [{"role": "system", "content": 'quote " slash \\ line\u2028sep é 😀 \x00'}]},
    {},
])
def test_a_body_encoded_once_keys_as_the_whole_request_does(body: dict) -> None:
    # A chat request is encoded once, for its key and for the wire: the key must be the
    # one earlier versions wrote, or every cache in use would miss.
    endpoint, tag = {"kind": "openai", "host": "api.openai.com", "port": "443"}, {"sample": 1}
    assert body_key(canonical_json(body), endpoint=endpoint, tag=tag) == cache_key(
        {"body": body, "endpoint": endpoint, "tag": tag})
    assert body_key(canonical_json(body)) == cache_key({"body": body})
    assert json.loads(canonical_json(body)) == body  # and it is the body, whole


def test_a_body_that_is_not_json_is_refused_before_it_is_keyed() -> None:
    with pytest.raises(ValueError):
        canonical_json({"temperature": float("nan")})
    with pytest.raises(ValueError):
        body_key("{}", a_part_sorting_first=1)


def test_round_trip_and_statistics(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    assert cache.get({"q": "x"}) is None
    cache.put({"q": "x"}, {"content": "ünïcode"})
    assert cache.get({"q": "x"}) == {"content": "ünïcode"}
    assert cache.stats() == {"hits": 1, "misses": 1, "rejected": 0}


def test_a_corrupt_entry_is_a_miss(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.put({"q": "x"}, "value")
    [entry] = list(tmp_path.rglob("*.json"))
    entry.write_text('{"value": "trunc')
    assert cache.get({"q": "x"}) is None


def test_an_interrupted_write_leaves_no_entry_and_no_temp_file(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Cache(tmp_path)

    def explode(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(json, "dump", explode)
    with pytest.raises(KeyboardInterrupt):
        cache.put({"q": "x"}, "value")
    monkeypatch.undo()
    assert cache.get({"q": "x"}) is None
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_concurrent_writers_of_the_same_key_leave_one_whole_entry(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    values = [{"n": i, "pad": "x" * 10_000} for i in range(32)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda v: cache.put({"q": "same"}, v), values))
    assert cache.get({"q": "same"}) in values
    assert len([p for p in tmp_path.rglob("*") if p.is_file()]) == 1
