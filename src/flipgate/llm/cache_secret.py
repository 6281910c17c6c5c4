"""The secret that signs the reply cache: one the pull request cannot read.

In this order:

1. `FLIPGATE_CACHE_KEY`, when the workflow passes one (a repository secret). The
   right choice with `auth: entra` or without any model key, on hosted runners.
2. The provider's API key (`OPENAI_API_KEY`, `AZURE_OPENAI_API_KEY`), through a
   one-way derivation: the cache then needs no set-up, stays valid across jobs
   while the key does, and whoever can forge an entry could spend on the key anyway.
3. A random key generated once and kept in a file outside the repository
   (`FLIPGATE_CACHE_KEY_FILE`, else the user's cache directory). On a hosted runner
   that file lives as long as the job, so the cache serves one job only; a
   self-hosted runner keeps it.

The derivation is HMAC-SHA256 under a fixed label, so the signing key never equals a
credential and a cache entry says nothing about one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from flipgate.errors import InputError, Problem
from flipgate.settings import Settings

_LABEL = b"flipgate reply cache v2"
KEY_BYTES = 32


@dataclass(frozen=True)
class CacheSecret:
    key: bytes = field(repr=False)
    source: str  # what the key came from, for the log (never the key)


def derive(secret: str | bytes) -> bytes:
    raw = secret.encode("utf-8") if isinstance(secret, str) else secret
    return hmac.new(_LABEL, raw, hashlib.sha256).digest()


def cache_secret(settings: Settings, *, outside: Sequence[Path] = ()) -> CacheSecret:
    """The run's cache key. A key file must lie outside every directory in `outside`
    (the repository, the workspace): a file the pull request can write signs nothing."""
    if settings.cache_key:
        return CacheSecret(derive(settings.cache_key), "FLIPGATE_CACHE_KEY")
    provider = [key for key in (settings.openai_api_key, settings.azure_openai_api_key) if key]
    if provider:
        return CacheSecret(derive("\0".join(provider)), "the provider's API key")
    path = settings.cache_key_file
    for directory in outside:
        if path.resolve().is_relative_to(directory.resolve()):
            raise InputError(Problem("FLIPGATE_CACHE_KEY_FILE", None,
                                     f"the cache key file {path} lies inside {directory}, where "
                                     "the pull request can write it; keep it outside"))
    return CacheSecret(derive(_key_file(path)), f"the key file {path}")


def _key_file(path: Path) -> bytes:
    """The key kept in `path`, created (0600) when missing; never through a link."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(KEY_BYTES))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise InputError(Problem(str(path), None, f"cannot read the cache key file: "
                                 f"{exc.strerror or exc}")) from None
    with os.fdopen(fd, "rb") as handle:
        key = handle.read(4096)
    if len(key) < 16:
        raise InputError(Problem(str(path), None, "the cache key file holds fewer than 16 bytes; "
                                 "delete it and a new key is made"))
    return key
