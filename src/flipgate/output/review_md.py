"""A row's review (review.py) as inert Markdown: marked claims, a word diff.

The pieces of an answer are joined with private-use sentinels where the tags
go, escaped in one pass by `escaping.escape_md` (so its defences against
links, mentions and HTML see the whole text, never a fragment), and only then
do the sentinels become `<b>`, `<del>`, `<ins>` and `<sup>`. Untrusted text
cannot carry a sentinel: they are removed from it first.

Claims are marked in bold, not with `<mark>`: GitHub's sanitizer allowlist is
not public and `<mark>` is missing from the lists it has documented, while
`<b>`, `<del>`, `<ins>` and `<sup>` are on every one of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from flipgate.text.escaping import escape_md, shorten
from flipgate.output.review import Change, Piece, Review

_TAGS = {"\ue000": "<b>", "\ue001": "</b>", "\ue002": "<del>", "\ue003": "</del>",
         "\ue004": "<ins>", "\ue005": "</ins>", "\ue006": "<sup>", "\ue007": "</sup>"}
_SENTINEL = re.compile("[\ue000-\ue007]")
_OPEN = {"b": "\ue000", "del": "\ue002", "ins": "\ue004", "sup": "\ue006"}
_CLOSE = {"b": "\ue001", "del": "\ue003", "ins": "\ue005", "sup": "\ue007"}


def _clean(text: str) -> str:
    return _SENTINEL.sub("", text)


def _wrap(text: str, *tags: str) -> str:
    opening = "".join(_OPEN[tag] for tag in tags)
    closing = "".join(_CLOSE[tag] for tag in reversed(tags))
    return f"{opening}{text}{closing}"


def inline(raw: str) -> str:
    """Escape text that carries sentinels, then turn the sentinels into their tags."""
    return _SENTINEL.sub(lambda m: _TAGS[m.group()], escape_md(raw))


def claim_label(number: int, numbered: bool) -> str:
    return _wrap(f"[{number}]", "sup") if numbered else ""


def _within(parts: Iterable[tuple[str, tuple[str, ...], str]], limit: int) -> str:
    """Join (text, tags, suffix) parts, cutting the text at `limit` characters in all."""
    out, used = [], 0
    for text, tags, suffix in parts:
        text = _clean(text)
        if used + len(text) > limit:
            cut = shorten(text, max(limit - used, 1))
            out.append(_wrap(cut, *tags) if tags else cut)
            break
        used += len(text)
        out.append((_wrap(text, *tags) if tags and text.strip() else text) + suffix)
    return "".join(out)


def marked_answer(review: Review, limit: int) -> str:
    """The candidate's answer with each unsupported claim in bold (numbered when several)."""
    numbered = len(review.claims) > 1

    def parts() -> Iterable[tuple[str, tuple[str, ...], str]]:
        for piece in review.answer:
            yield (piece.text, ("b",) if piece.claim else (),
                   claim_label(piece.claim, numbered) if piece.claim else "")
    return inline(_within(parts(), limit)) or "*(empty)*"


def diff(review: Review, limit: int) -> str:
    """Baseline -> candidate word by word: removed words struck out, added ones underlined,
    unsupported claims in bold."""
    assert review.diff is not None
    numbered = len(review.claims) > 1
    changes: list[Change] = list(review.diff)

    def parts() -> Iterable[tuple[str, tuple[str, ...], str]]:
        for index, change in enumerate(changes):
            tags = {"same": (), "del": ("del",), "ins": ("ins",)}[change.op]
            if change.claim is not None:
                tags = (*tags, "b")
            last_of_claim = change.claim is not None and (
                index + 1 == len(changes) or changes[index + 1].claim != change.claim)
            suffix = claim_label(change.claim, numbered) if last_of_claim and change.claim is not None else ""
            yield (change.text, tags, suffix + " ")
    return inline(_within(parts(), limit).rstrip())


def pieces_text(pieces: Iterable[Piece]) -> str:
    return "".join(piece.text for piece in pieces)
