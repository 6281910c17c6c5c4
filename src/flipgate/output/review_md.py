"""A row's review (review.py) as inert Markdown: marked claims, a word diff, the context.

One mark, one meaning, and every mark is Markdown or text, so a renderer that drops raw
HTML (cmark-gfm's safe mode, a mail client, a chat preview) keeps all of them:

- a claim the context does not support: a code span (`like this`), numbered when several;
- word diff: ~~struck out~~ only in the baseline, *slanted* only in the candidate, and a
  claim inside it is only a code span (one mark a word, never stacked);
- the context: 🟢“…” a passage the judge cites as support, 🔴“…” the passage the judge
  quotes as contradicting a claim, 🟡“…” the passage closest to a claim (the word match);
- bold is left to the block's labels ("**Query:**").

The pieces are joined with private-use sentinels where the marks go, escaped by
`escaping.escape_md` a run at a time (a claim's run becomes `escaping.code_span`), and
only then do the sentinels become marks. Untrusted text cannot carry a sentinel: they
are removed from it first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from flipgate.output.review import Change, Passage, Piece, Review
from flipgate.text.escaping import code_span, escape_md, number, one_line, shorten

# A claim: its run between these two is a code span. The others are replaced after escaping.
_CODE_OPEN, _CODE_CLOSE = "\ue000", "\ue001"
_TAGS = {"\ue002": "~~", "\ue003": "~~", "\ue004": "*", "\ue005": "*",
         "\ue006": "<sup>", "\ue007": "</sup>", "\ue008": " <br>"}
_SENTINEL = re.compile("[\ue000-\ue008]")
_CODE = re.compile("\ue000([^\ue000\ue001]*)\ue001")
_MARKS = re.compile("[\ue002-\ue008]")
_BR = "\ue008"
_PARAGRAPH = re.compile(r"\n[ \t]*(?:\r?\n[ \t]*)+")
_OPEN = {"code": _CODE_OPEN, "del": "\ue002", "ins": "\ue004", "sup": "\ue006"}
_CLOSE = {"code": _CODE_CLOSE, "del": "\ue003", "ins": "\ue005", "sup": "\ue007"}
# The context's marks: a glyph before the passage's opening quote.
SUPPORTS, CONTRADICTS, CLOSEST = "🟢", "🔴", "🟡"
LEGEND = {SUPPORTS: "the judge cites it as support",
          CONTRADICTS: "the judge quotes it as contradicting a claim",
          CLOSEST: "the passage closest to a claim (most words in common)"}


def _clean(text: str) -> str:
    return _SENTINEL.sub("", text)


def _wrap(text: str, *tags: str) -> str:
    opening = "".join(_OPEN[tag] for tag in tags)
    closing = "".join(_CLOSE[tag] for tag in reversed(tags))
    return f"{opening}{text}{closing}"


def _escaped(raw: str) -> str:
    """A run between claims, escaped, keeping a space at either end (`one_line` trims)."""
    body = escape_md(raw)
    if not body:
        return " " if raw[:1].isspace() or raw[-1:].isspace() else ""
    lead = " " if raw[:1].isspace() else ""
    trail = " " if raw[-1:].isspace() else ""
    return lead + body + trail


def inline(raw: str) -> str:
    """Escape text that carries sentinels, then turn the sentinels into their marks."""
    out, cursor = [], 0
    for found in _CODE.finditer(raw):
        out.append(_escaped(raw[cursor:found.start()]))
        claim = _clean(found.group(1))
        out.append(code_span(claim) if one_line(claim) else "")
        cursor = found.end()
    out.append(_escaped(raw[cursor:]))
    text = "".join(out).replace(_CODE_OPEN, "").replace(_CODE_CLOSE, "")
    return _MARKS.sub(lambda m: _TAGS[m.group()], text).strip()


def claim_label(number: int, numbered: bool) -> str:
    return _wrap(f"[{number}]", "sup") if numbered else ""


def _within(parts: Iterable[tuple[str, tuple[str, ...], str]], limit: int) -> str:
    """Join (text, tags, suffix) parts, cutting the text at `limit` characters in all."""
    out, used = [], 0
    for text, tags, suffix in parts:
        text = _clean(text)
        if used + len(text) > limit:
            cut = shorten(text, max(limit - used, 1))
            out.append(_wrap(cut, *tags) if tags and one_line(cut) else cut)
            break
        used += len(text)
        out.append((_wrap(text, *tags) if tags and one_line(text) else text) + suffix)
    return "".join(out)


def marked_answer(review: Review, limit: int) -> str:
    """The candidate's answer with each unsupported claim a code span (numbered when several)."""
    numbered = len(review.claims) > 1

    def parts() -> Iterable[tuple[str, tuple[str, ...], str]]:
        for piece in review.answer:
            yield (piece.text, ("code",) if piece.claim else (),
                   claim_label(piece.claim, numbered) if piece.claim else "")
    return inline(_within(parts(), limit)) or "*(empty)*"


def diff(review: Review, limit: int) -> str:
    """Baseline -> candidate word by word: removed words struck out, added ones slanted, and
    the words of an unsupported claim a code span whether added or kept (one mark a word)."""
    assert review.diff is not None
    numbered = len(review.claims) > 1
    changes: list[Change] = list(review.diff)

    def parts() -> Iterable[tuple[str, tuple[str, ...], str]]:
        for index, change in enumerate(changes):
            tags = ("code",) if change.claim is not None else {
                "same": (), "del": ("del",), "ins": ("ins",)}[change.op]
            last_of_claim = change.claim is not None and (
                index + 1 == len(changes) or changes[index + 1].claim != change.claim)
            suffix = claim_label(change.claim, numbered) if last_of_claim and change.claim is not None else ""
            yield (change.text, tags, suffix + " ")
    return inline(_within(parts(), limit).rstrip())


def diff_legend(review: Review) -> str:
    """What the diff's marks mean, those it shows only."""
    ops = {change.op for change in review.diff or () if change.claim is None}
    keys = [("~~struck out~~", "only in the baseline") if "del" in ops else None,
            ("*slanted*", "only in the candidate") if "ins" in ops else None,
            ("`marked`", "not in the context") if review.claims else None]
    return " · ".join(f"{mark}: {meaning}" for mark, meaning in filter(None, keys))


def _glyphs(passage: Passage, cited: frozenset[int]) -> str:
    return ((SUPPORTS if passage.supports else "")
            + (CONTRADICTS if any(n in cited for n in passage.claims) else "")
            + (CLOSEST if any(n not in cited for n in passage.claims) else ""))


def _passage_label(passage: Passage, claims: int, cited: frozenset[int]) -> str:
    """Which claims a marked passage answers to, when there are several: "[2]", or with
    both kinds of mark on it "[🔴 1, 🟡 2]"."""
    if claims <= 1 or not passage.claims:
        return ""
    mixed = len({n in cited for n in passage.claims}) > 1
    numbers = [f"{CONTRADICTS if n in cited else CLOSEST} {n}" if mixed else str(n)
               for n in passage.claims]
    return _wrap(f"[{', '.join(numbers)}]", "sup")


def context_legend(review: Review) -> str:
    """What the context's marks mean, those it shows only."""
    cited = frozenset(claim.number for claim in review.claims if claim.cited)
    shown = "".join(_glyphs(passage, cited) for passage in review.context)
    return " · ".join(f"{glyph}“…” {LEGEND[glyph]}" for glyph in LEGEND if glyph in shown)


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


def context_md(review: Review, limit: int, page: str = "report.html") -> str:
    """The whole context as inert Markdown paragraphs (a line break as `<br>`, after a space
    that keeps the words apart where `<br>` is dropped), each passage the judge cites and
    each claim's closest passage quoted after its glyph; cut to about `limit` characters,
    marked passages first."""
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
            if passage.marked and one_line(piece):
                piece = (f"{_glyphs(passage, cited)}“{piece.strip()}”"
                         + (label if index == len(pieces) - 1 else ""))
            paragraphs[-1].append(piece)
    rendered = [inline("".join(parts)) for parts in paragraphs]
    text = "\n\n".join(part for part in rendered if part.strip()) or "*(empty)*"
    if cut:
        total = sum(len(p.text) for p in review.context)
        text += (f"\n\n*The context is cut here from {number(total)} characters; "
                 f"the whole of it is in {page}.*")
    return text


def pieces_text(pieces: Iterable[Piece]) -> str:
    return "".join(piece.text for piece in pieces)
