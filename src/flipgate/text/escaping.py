"""Untrusted text -> inert Markdown: the one escaping filter of every comment.

Everything that came from a pull request or from a model (answers, reasons,
ids, categories, diffs, error messages) reaches GitHub's Markdown only
through these functions: `cell`/`escape_md` for inline text, `fence` for
multi-line text. After them, text cannot break a table, open HTML or a code
span, make a link, or @-mention anyone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_LINE_BREAKS = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
# Control characters, and the bidi overrides that make text read differently
# from how it is stored ("Trojan source").
_INVISIBLE = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_ZERO_WIDTH_SPACE = "\u200b"

# One replacement per character, applied in a single pass so nothing is
# escaped twice. Backslash escapes for Markdown syntax, entities for HTML.
# `|` splits table cells, backticks open code spans, `[`/`]` make links and
# images, `*`/`_`/`~` emphasis, `#` headings; `<`/`>`/`&` tags, comments
# (`<!--`), autolinks (`<https://...>`), block quotes and entities.
# GitHub turns `@name` into a mention (a notification) from the raw text, so
# every `@` is followed by a zero-width space: `@&#8203;name` is no mention
# in the source, nor `@\u200bname` in the rendered page.
_INLINE = str.maketrans({
    "\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_", "~": "\\~",
    "[": "\\[", "]": "\\]", "|": "\\|", "#": "\\#",
    "<": "&lt;", ">": "&gt;", "&": "&amp;",
    "@": "@&#8203;",
})
# GFM's extended autolinks need no brackets: "https://x", "www.x".
_BARE_URL = re.compile(r"(?<=[A-Za-z0-9]):(?=//)")
_BARE_WWW = re.compile(r"(?<![A-Za-z0-9])(www)\.", re.IGNORECASE)
# "#12" links to (and leaves a trace on) issue 12.
_ISSUE_REF = re.compile(r"\\#(?=[0-9])")
# At the start of a list item these would open a nested list or draw a rule.
_LEADING_LIST = re.compile(r"^(?:([-+])(?=[ -]|$)|([0-9]{1,9})([.)])(?= |$))")


_SPELLED_OUT = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def visible(text: str) -> str:
    """`text` on one line with control characters and line separators spelled out (`\\x1b`,
    `\\n`, `\\u2028`): a message may quote a file from the pull request or a command's
    output, and its escape sequences or line breaks must not reach a terminal or a CI log."""
    return _SPELLED_OUT.sub(lambda m: repr(m.group())[1:-1], text)


def one_line(text: object) -> str:
    """Text on a single line: line breaks become spaces, control characters go."""
    flat = _LINE_BREAKS.sub(" ", str(text))
    return " ".join(_INVISIBLE.sub("", flat).split())


def shorten(text: str, limit: int) -> str:
    """At most `limit` characters, with an ellipsis when something was cut."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def short(sha: str) -> str:
    """A commit's abbreviated name in every message flipgate writes."""
    return sha[:12]


def snippet(text: object, limit: int) -> str:
    """A short excerpt of `text` for a message: whitespace runs collapsed, at most `limit`
    characters."""
    return shorten(" ".join(str(text).split()), limit)


def quoted(text: object, limit: int) -> str:
    """`snippet(text, limit)` in double quotes, for a judge's reason."""
    return f'"{snippet(text, limit)}"'


def _unmarked(text: str) -> str:
    """`text` without a `<!--`, so nothing a user typed carries flipgate's hidden marker
    (the sticky comment is found by it); a zero-width space keeps it readable."""
    return text.replace("<!--", "<!\u200b--")


def inline_code(text: str) -> str:
    """`text` as a code span that no backtick inside it can close."""
    text = _unmarked(" ".join(text.splitlines()))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_span(text: object) -> str:
    """Untrusted text as one code span, outside a table: one line, no invisible character,
    no `<!--`, an `@` followed by a zero-width space (no mention even where one is read from
    the raw text), fenced by more backticks than it holds. Markdown, links, HTML and
    references are inert inside it, and it needs no raw HTML to show."""
    return inline_code(one_line(text).replace("@", "@" + _ZERO_WIDTH_SPACE))


# What a link destination keeps as it is; everything else is percent-encoded, so no `)`,
# `<`, space, quote or backslash can end or change it, and the URL is one token.
_URL_SAFE = "-._~:/?#[]@!$&'*+,;=%"


def safe_url(url: object) -> str | None:
    """An http(s) URL fit for a Markdown link destination, or None when it is not one (another
    scheme, no host, a line break or control character inside)."""
    from urllib.parse import quote, urlsplit

    text = str(url or "").strip()
    if not text or _LINE_BREAKS.search(text) or _INVISIBLE.search(text):
        return None
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return quote(text, safe=_URL_SAFE)


def link(text: str, url: str | None) -> str:
    """Markdown `[text](url)` when `url` is a safe http(s) URL, else `text` alone. `text` is
    Markdown already escaped (`cell`, `escape_md`), so it cannot close the brackets."""
    safe = safe_url(url) if url else None
    return f"[{text}]({safe})" if safe and text else text


def escape_md(text: object) -> str:
    """Untrusted text as inert inline Markdown: safe in a table cell, a list item, a paragraph."""
    escaped = one_line(text).translate(_INLINE)
    escaped = _BARE_URL.sub(r"\\:", escaped)
    escaped = _BARE_WWW.sub(r"\1\\.", escaped)
    escaped = _ISSUE_REF.sub("\\#&#8203;", escaped)
    return _LEADING_LIST.sub(_escape_list_marker, escaped)


def _escape_list_marker(match: re.Match[str]) -> str:
    if match.group(1):
        return "\\" + match.group(1)
    return f"{match.group(2)}\\{match.group(3)}"


def one_line_within(text: object, limit: int) -> str:
    """`shorten(one_line(text), limit)`, without flattening all of a very long text.

    Flattening a prefix yields a prefix of the flattened whole, so once a
    prefix flattens to more than `limit` characters the result is the same.
    """
    raw = str(text)
    window = 4 * limit + 64
    if len(raw) > window:
        flat = one_line(raw[:window])
        if len(flat) > limit:
            return shorten(flat, limit)
    return shorten(one_line(raw), limit)


def cell(text: object, limit: int) -> str:
    """Untrusted text for one table cell: one line, shortened to `limit`, escaped."""
    if text is None:
        return ""
    return _cell(str(text), limit)


# The same cells come back in every plan tried; render_within clears this when
# it is done, so no answer outlives the rendering.
@lru_cache(maxsize=16_384)
def _cell(text: str, limit: int) -> str:
    return escape_md(one_line_within(text, limit))


def cell_list(items: Iterable[object], limit: int, max_items: int, separator: str = "; ") -> str:
    """Several untrusted items in one cell, each shortened; says how many were left out."""
    shown: list[str] = []
    rest = 0
    for item in items:
        if len(shown) < max_items:
            value = one_line_within(item, limit)
            if value:
                shown.append(escape_md(value))
        elif str(item).strip():
            rest += 1
    if rest > 0:
        shown.append(f"(+{rest:,} more)")
    return separator.join(shown)


def fence(text: object, limit: int, info: str = "diff") -> str:
    """Untrusted multi-line text as a fenced code block it cannot close early.

    The fence is longer than any run of backticks inside, so no line of the
    text can end it. It holds no invisible character, so what a reader copies
    is what they see: a mention inside a code block is inert on GitHub as it
    is, and `<!--` becomes a visible `<\\!--`, so the raw comment holds its hidden
    markers exactly once.
    """
    body = _LINE_BREAKS.sub("\n", str(text).replace("\t", "    "))
    body = _INVISIBLE.sub("", body).replace("<!--", "<\\!--")
    lines = body.rstrip("\n").split("\n")
    kept: list[str] = []
    used = 0
    for line in lines:
        line = shorten(line, 1000)
        if kept and used + len(line) + 1 > limit:
            break
        kept.append(line)
        used += len(line) + 1
    longest_run = max((len(run) for run in re.findall(r"`+", "\n".join(kept))), default=0)
    marker = "`" * max(3, longest_run + 1)
    block = f"{marker}{info}\n" + "\n".join(kept) + f"\n{marker}"
    if len(kept) < len(lines):
        block += f"\n\n… {len(lines) - len(kept):,} more lines not shown; see report.json"
    return block


def plural(count: int, word: str, plural_word: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (plural_word or word + 's')}"


def number(value: object) -> str:
    """A count as text, with thousands separators; anything else escaped."""
    if isinstance(value, bool):
        return escape_md(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}"
    return cell(value, 40)


def clear_cell_cache() -> None:
    """Forget memoised cells (a render of thousands of rows fills the cache)."""
    _cell.cache_clear()
