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

from flipgate.output.review import Change, Passage, Piece, Review
from flipgate.text.escaping import escape_md, number, shorten

_TAGS = {"\ue000": "<b>", "\ue001": "</b>", "\ue002": "<del>", "\ue003": "</del>",
         "\ue004": "<ins>", "\ue005": "</ins>", "\ue006": "<sup>", "\ue007": "</sup>",
         "\ue008": "<br>"}
_SENTINEL = re.compile("[\ue000-\ue008]")
_BR = "\ue008"
_PARAGRAPH = re.compile(r"\n[ \t]*(?:\r?\n[ \t]*)+")
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


def _passage_label(passage: Passage, claims: int, cited: frozenset[int]) -> str:
    """What a marked passage is: "supports", "closest to [2]", "contradicts the claim"."""
    labels = ["supports"] if passage.supports else []
    for n in passage.claims:
        verb = "contradicts" if n in cited else "closest to"
        labels.append(f"{verb} claim {n}" if claims > 1 else f"{verb} the claim")
    return _wrap(f"[{', '.join(labels)}]", "sup") if labels else ""


def _elide(text: str, keep: int) -> str:
    """`text` with its middle left out when longer than `keep` characters."""
    if len(text) <= keep:
        return text
    head = max(keep * 2 // 3, 1)
    return f"{text[:head].rstrip()} … {text[len(text) - max(keep - head, 0):].lstrip()}"


def context_passages(review: Review, limit: int) -> tuple[list[tuple[Passage, str]], bool]:
    """The passages to show within about `limit` characters, each with its (possibly
    elided) text, and whether anything was left out. Marked passages are kept first."""
    passages = list(review.context)
    total = sum(len(p.text) for p in passages)
    if total <= limit:
        return [(p, p.text) for p in passages], False
    marked = [p for p in passages if p.marked]
    marked_room = min(sum(len(p.text) for p in marked), limit * 3 // 4)
    per_mark = max(marked_room // max(len(marked), 1), 120)
    plain = [p for p in passages if not p.marked]
    per_plain = max((limit - marked_room) // max(len(plain), 1), 0)
    out: list[tuple[Passage, str]] = []
    for passage in passages:
        keep = per_mark if passage.marked else per_plain
        if keep == 0:
            if not out or out[-1][1] != "…":
                out.append((Passage("…"), "…"))
            continue
        out.append((passage, _elide(passage.text, keep)))
    return out, True


def context_md(review: Review, limit: int) -> str:
    """The whole context as inert Markdown paragraphs (a line break as `<br>`), the passages
    the judge cites as support and each claim's closest passage in bold with a label
    saying which; cut to about `limit` characters, marked passages first."""
    cited = frozenset(claim.number for claim in review.claims if claim.cited)
    shown, cut = context_passages(review, limit)
    paragraphs: list[list[str]] = [[]]
    for passage, text in shown:
        label = _passage_label(passage, len(review.claims), cited)
        pieces = _PARAGRAPH.split(_clean(text).replace("\r\n", "\n"))
        for index, piece in enumerate(pieces):
            if index:
                paragraphs.append([])
            piece = piece.replace("\n", _BR)
            if passage.marked and piece.strip():
                piece = _wrap(piece, "b") + (label if index == len(pieces) - 1 else "")
            paragraphs[-1].append(piece)
    rendered = [inline("".join(parts)) for parts in paragraphs]
    text = "\n\n".join(part for part in rendered if part.strip()) or "*(empty)*"
    if cut:
        total = sum(len(p.text) for p in review.context)
        text += (f"\n\n*The context is cut here from {number(total)} characters; "
                 "the whole of it is in report.html.*")
    return text


def pieces_text(pieces: Iterable[Piece]) -> str:
    return "".join(piece.text for piece in pieces)
