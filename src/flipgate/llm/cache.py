"""An on-disk cache of model replies, keyed by the full canonical request.

Safe under concurrency and interruption: entries are written to a temporary
file in the same directory and moved into place with an atomic rename, so a
reader sees either nothing or a whole entry. A corrupt entry is a miss.
Entries are created 0666 less the umask (0644 under the usual 022), not
mkstemp's 0600, so whoever saves the cache (actions/cache) can read them.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_FORMAT = 1  # bump to invalidate every entry when the stored shape changes


def cache_key(request: Mapping[str, Any]) -> str:
    """A stable digest of a request: sorted keys, no whitespace, UTF-8."""
    canonical = json.dumps({"format": _FORMAT, "request": request}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class Cache:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, request: Mapping[str, Any]) -> Any | None:
        return self.get_digest(cache_key(request))

    def put(self, request: Mapping[str, Any], value: Any) -> None:
        self.put_digest(cache_key(request), value)

    def get_digest(self, key: str) -> Any | None:
        """The entry stored under a `cache_key` digest, or None."""
        path = self._path(key)
        try:
            value = json.loads(path.read_text(encoding="utf-8"))["value"]
        except (OSError, ValueError, KeyError, TypeError):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put_digest(self, key: str, value: Any) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _new_file(path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"value": value}, handle, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}


def _new_file(directory: Path) -> tuple[int, Path]:
    """A new, uniquely named file in `directory`, open for writing, its mode left to the umask."""
    while True:
        tmp = directory / f".tmp-{secrets.token_hex(8)}.json"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
