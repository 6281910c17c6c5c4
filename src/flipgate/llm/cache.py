"""An on-disk cache of model replies, keyed by the full canonical request, each entry signed.

A cache directory may hold files nobody trustworthy wrote: in a `pull_request`
workflow the checkout is the PR's, and a cache restored by `actions/cache` is
only as good as whoever saved it. Entry names are plain request digests, which
anyone can compute, so the name proves nothing. Each entry carries an
HMAC-SHA256 over its name and its value, keyed by a secret the pull request
cannot read (cache_secret.py chooses it); an entry that fails the check, or is
not a plain file, is ignored, counted as `rejected`, and asked again.

Safe under concurrency and interruption: entries are written to a temporary
file in the same directory and moved into place with an atomic rename, so a
reader sees either nothing or a whole entry. Writes never pass through a
symbolic link. Entries are created 0666 less the umask (0644 under the usual
022), not mkstemp's 0600, so whoever saves the cache (actions/cache) can read them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_FORMAT = 2  # bump to invalidate every entry when the stored shape changes (2: signed)
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # larger is not an entry this cache wrote
# A cache given no key signs with one only this process knows: nothing from outside verifies.
_PROCESS_KEY = secrets.token_bytes(32)


def cache_key(request: Mapping[str, Any]) -> str:
    """A stable digest of a request: sorted keys, no whitespace, UTF-8."""
    canonical = json.dumps({"format": _FORMAT, "request": request}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def canonical_json(value: Any) -> str:
    """`value` as `cache_key` encodes it (sorted keys, no whitespace, UTF-8 as is), which is
    also a valid request body: a chat request is encoded once, for its key and for the wire.
    NaN and infinities are refused, as the openai client refuses them."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def body_key(body_json: str, **parts: Any) -> str:
    """`cache_key({"body": body, **parts})` for a body already encoded by `canonical_json`,
    without encoding it again: "body" sorts before every other part's name."""
    if any(name <= "body" for name in parts):
        raise ValueError("every other part of the key must sort after 'body'")
    rest = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)[1:-1]
    canonical = f'{{"format":{_FORMAT},"request":{{"body":{body_json}{"," if rest else ""}{rest}}}}}'
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class Counts:
    hits: int = 0
    misses: int = 0
    rejected: int = 0  # present but not signed by this key (or not a plain file): ignored


class Cache:
    def __init__(self, root: str | os.PathLike[str], *, key: bytes | None = None,
                 counts: Counts | None = None):
        self.root = Path(root)
        self.key = key or _PROCESS_KEY
        self.counts = counts or Counts()

    def child(self, name: str) -> Cache:
        """A cache in a subdirectory, signed with the same key, counted with this one."""
        return Cache(self.root / name, key=self.key, counts=self.counts)

    @property
    def hits(self) -> int:
        return self.counts.hits

    @property
    def misses(self) -> int:
        return self.counts.misses

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _mac(self, digest: str, value: Any) -> str:
        signed = json.dumps([digest, value], sort_keys=True, separators=(",", ":"),
                            ensure_ascii=False, default=str)
        return hmac.new(self.key, signed.encode("utf-8"), hashlib.sha256).hexdigest()

    def get(self, request: Mapping[str, Any]) -> Any | None:
        return self.get_digest(cache_key(request))

    def put(self, request: Mapping[str, Any], value: Any) -> None:
        self.put_digest(cache_key(request), value)

    def get_digest(self, key: str) -> Any | None:
        """The entry stored under a `cache_key` digest, or None (a miss, or a rejected entry)."""
        try:
            raw = _read_plain_file(self._path(key))
        except FileNotFoundError:
            self.counts.misses += 1
            return None
        except (OSError, _NotAnEntry):
            self._reject()
            return None
        try:
            document = json.loads(raw)
            value, mac = document["value"], document["mac"]
        except (ValueError, KeyError, TypeError, RecursionError):
            self._reject()
            return None
        if not isinstance(mac, str) or not hmac.compare_digest(mac, self._mac(key, value)):
            self._reject()
            return None
        self.counts.hits += 1
        return value

    def _reject(self) -> None:
        self.counts.rejected += 1
        self.counts.misses += 1

    def put_digest(self, key: str, value: Any) -> None:
        path = self._path(key)
        if self.root.is_symlink() or path.parent.is_symlink():
            return  # never write through a link: the entry is simply not kept
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _new_file(path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"value": value, "mac": self._mac(key, value)}, handle,
                          ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def stats(self) -> dict[str, int]:
        return {"hits": self.counts.hits, "misses": self.counts.misses,
                "rejected": self.counts.rejected}


class _NotAnEntry(Exception):
    pass


def _read_plain_file(path: Path) -> bytes:
    """The bytes of a regular file, opened without following a link or blocking on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            raise _NotAnEntry(path)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_ENTRY_BYTES + 1)
    finally:
        os.close(fd)


def _new_file(directory: Path) -> tuple[int, Path]:
    """A new, uniquely named file in `directory`, open for writing, its mode left to the umask."""
    while True:
        tmp = directory / f".tmp-{secrets.token_hex(8)}.json"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666), tmp
        except FileExistsError:
            continue
