"""text/inflate.py: a body's content-encoding undone a bounded piece at a time."""

from __future__ import annotations

import re
import zlib

import pytest

from flipgate.text.inflate import PIECE, EncodingRefused, Inflater

TEXT = b'{"choices": [{"message": {"content": "ok"}}]}' * 50


def encode(data: bytes, wbits: int) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return packer.compress(data) + packer.flush()


GZIP, DEFLATE, RAW = zlib.MAX_WBITS | 16, zlib.MAX_WBITS, -zlib.MAX_WBITS


def undo(header: str | None, body: bytes, *, chunk: int = 7) -> bytes:
    inflater = Inflater(header)
    out = b"".join(piece for start in range(0, len(body), chunk)
                   for piece in inflater.feed(body[start:start + chunk]))
    inflater.finish()
    return out


@pytest.mark.parametrize(("header", "body"), [
    (None, TEXT),
    ("identity", TEXT),
    ("gzip", encode(TEXT, GZIP)),
    ("x-gzip", encode(TEXT, GZIP)),
    ("GZip", encode(TEXT, GZIP)),
    ("deflate", encode(TEXT, DEFLATE)),
    ("deflate", encode(TEXT, RAW)),          # raw deflate, as some servers send it
    ("gzip, gzip", encode(encode(TEXT, GZIP), GZIP)),
    ("deflate, gzip", encode(encode(TEXT, DEFLATE), GZIP)),
    ("identity, gzip", encode(TEXT, GZIP)),
])
def test_each_encoding_read_is_undone(header: str | None, body: bytes) -> None:
    assert undo(header, body) == TEXT


def test_no_piece_is_larger_than_a_piece_however_small_the_input() -> None:
    bomb = encode(bytes(8 * 1024 * 1024), GZIP)  # 8 MiB from about 8 KB
    inflater = Inflater("gzip")
    sizes = [len(piece) for piece in inflater.feed(bomb)]
    assert max(sizes) <= PIECE and sum(sizes) == 8 * 1024 * 1024


def test_a_bomb_is_read_only_as_far_as_its_reader_goes() -> None:
    # A generator: the reader that stops at its cap leaves the rest uninflated.
    pieces = Inflater("gzip").feed(encode(bytes(64 * 1024 * 1024), GZIP))
    held = 0
    for piece in pieces:
        held += len(piece)
        if held > 1024 * 1024:
            break
    assert held <= 1024 * 1024 + PIECE


@pytest.mark.parametrize(("header", "message"), [
    ("br", "content-encoding 'br' is not one flipgate reads (gzip, deflate)"),
    ("zstd", "content-encoding 'zstd' is not one"),
    ("compress", "content-encoding 'compress' is not one"),
    ("gzip, br", "content-encoding 'br' is not one"),
    ("gzip, gzip, gzip", "encoded 3 times over"),
])
def test_an_encoding_no_bound_was_written_for_is_refused(header: str, message: str) -> None:
    with pytest.raises(EncodingRefused, match=re.escape(message)):
        Inflater(header)


@pytest.mark.parametrize(("header", "body", "message"), [
    ("gzip", b"not gzip at all", "not valid gzip"),
    ("deflate", b"\xff" * 20, "not valid deflate"),
    ("gzip", encode(TEXT, GZIP) + b"trailing", "goes on past its end"),
    ("gzip", encode(TEXT, GZIP) + encode(TEXT, GZIP), "goes on past its end"),
    ("gzip", encode(TEXT, GZIP)[:-12], "ends before its end"),
])
def test_a_body_not_in_the_encoding_it_names_is_refused(header: str, body: bytes,
                                                         message: str) -> None:
    with pytest.raises(EncodingRefused, match=message):
        undo(header, body)


def test_an_empty_body_under_an_encoding_is_empty() -> None:
    assert undo("gzip", b"") == b""
