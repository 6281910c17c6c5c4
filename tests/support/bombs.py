"""Compression bombs, and the peak memory a call takes while one is served.

`bomb("gzip", 64 MiB)` is about 290 KB that inflates to 64 MiB of zero bytes (zlib's
fastest level: a test builds it in a fraction of a second); `"deflate"` is the
zlib-wrapped form RFC 9110 names, `"raw-deflate"` the bare stream some servers send
under the same name. `traced_peak` measures with tracemalloc, which counts every Python
allocation of the process (zlib's output and the HTTP libraries' buffers included)
from its start, so a test can assert what a client held at most.
"""

from __future__ import annotations

import functools
import tracemalloc
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

MiB = 1024 * 1024
WBITS = {"gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS, "raw-deflate": -zlib.MAX_WBITS}


@functools.cache
def bomb(encoding: str, size: int, *, of: bytes = b"\0") -> bytes:
    packer = zlib.compressobj(1, zlib.DEFLATED, WBITS[encoding])
    block = of * MiB
    parts = [packer.compress(block) for _ in range(size // MiB)]
    return b"".join([*parts, packer.flush()])


def header_for(encoding: str) -> str:
    """The `Content-Encoding` a server names for `encoding`."""
    return "deflate" if encoding == "raw-deflate" else encoding


@contextmanager
def traced_peak() -> Iterator[dict[str, int]]:
    """`with traced_peak() as traced: ...`; then `traced["peak"]` is the most bytes held."""
    tracemalloc.start()
    traced: dict[str, int] = {}
    try:
        yield traced
    finally:
        traced["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
