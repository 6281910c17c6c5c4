"""An HTTP body's `Content-Encoding` undone in bounded pieces.

A few hundred kilobytes of gzip can inflate to gigabytes, so a cap on a reply must
count what it inflates to, and no single step may inflate much at once: every piece
handed out is at most `PIECE` bytes, however small the compressed input. Only gzip and
deflate are read (the encodings flipgate's clients ask for); any other is refused, so
an encoding no bound was written for is never decoded.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

# What flipgate's clients send as `Accept-Encoding`: nothing they could not bound.
ACCEPTED = "gzip, deflate"
PIECE = 64 * 1024
_LAYERS_AT_MOST = 2  # "gzip, gzip" is legal HTTP; deeper nesting is no server's honest reply


class EncodingRefused(ValueError):
    """A body in an encoding flipgate does not read, or not valid in the one it names."""


class _Layer:
    """One encoding undone: zlib's stream, drained `PIECE` bytes at a time."""

    def __init__(self, name: str):
        self.name = name
        # gzip: its header; deflate: zlib-wrapped as RFC 9110 says, or raw as some servers send.
        self._wbits = [zlib.MAX_WBITS | 16] if name == "gzip" else [zlib.MAX_WBITS, -zlib.MAX_WBITS]
        self._inflate = zlib.decompressobj(self._wbits.pop(0))
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._inflate.eof:
            if data:
                raise EncodingRefused(f"the {self.name} body goes on past its end")
            return
        try:
            piece = self._inflate.decompress(data, PIECE)
        except zlib.error as exc:
            if self._started or not self._wbits:
                raise EncodingRefused(f"the body is not valid {self.name}: {exc}") from None
            self._inflate = zlib.decompressobj(self._wbits.pop(0))  # raw deflate, from the start
            yield from self.feed(data)
            return
        self._started = True
        while piece:
            yield piece
            piece = self._inflate.decompress(self._inflate.unconsumed_tail, PIECE)
        if self._inflate.eof and self._inflate.unused_data:
            raise EncodingRefused(f"the {self.name} body goes on past its end")

    def finish(self) -> None:
        if self._started and not self._inflate.eof:
            raise EncodingRefused(f"the {self.name} body ends before its end")


class Inflater:
    """Undo `content_encoding` (the header as received) on a body fed in chunks."""

    def __init__(self, content_encoding: str | None):
        names = [part.strip().lower() for part in (content_encoding or "").split(",")]
        names = [name for name in names if name and name != "identity"]
        for name in names:
            if name not in ("gzip", "deflate", "x-gzip"):
                raise EncodingRefused(f"the reply's content-encoding {name[:40]!r} is not one "
                                      f"flipgate reads ({ACCEPTED})")
        if len(names) > _LAYERS_AT_MOST:
            raise EncodingRefused(f"the reply is encoded {len(names)} times over "
                                  f"(content-encoding {content_encoding[:80]!r})"
                                  if content_encoding else "the reply is encoded too often")
        # The last encoding applied is the first undone.
        self._layers = [_Layer("gzip" if name == "x-gzip" else name) for name in reversed(names)]

    @property
    def identity(self) -> bool:
        return not self._layers

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of one more chunk of the body, each at most `PIECE` bytes."""
        yield from _through(self._layers, data)

    def finish(self) -> None:
        """The body ended: refused if an encoding was cut short."""
        for layer in self._layers:
            layer.finish()


def _through(layers: list[_Layer], data: bytes) -> Iterator[bytes]:
    if not layers:
        if data:
            yield data
        return
    for piece in layers[0].feed(data):
        yield from _through(layers[1:], piece)
