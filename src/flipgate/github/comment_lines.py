"""Which lines of a comment its writer shows as their own words: the lines that start a
line of a top-level paragraph when GitHub renders the comment.

Decided by GitHub's own engine: cmark-gfm (the `cmarkgfm` wheel) renders the comment as
GitHub renders a comment (GFM's extensions, footnotes, raw HTML through the tag filter), with
each candidate line's first word swapped for a mark of the same length and kind of letters
(which changes nothing of how the comment parses). The HTML is then read as a browser reads
it (`github/html_tokens.py`), and a line is shown when its mark is text that starts a line of
a `<p>` of cmark-gfm's own that nothing else encloses: not a quote, a list, a table, a
footnote, code, a heading, an HTML comment or a tag's attribute, nor an element that raw HTML
opened and left open. The tests hold this to cmark-gfm read by the HTML standard's tokenizer
(tests/security/test_comment_commands.py).
"""

from __future__ import annotations

import re
import secrets
import string

import cmarkgfm
from cmarkgfm.cmark import Options

from flipgate.github.html_tokens import Kind, tokens

# How Markdown ends a line (LF, CRLF or a lone CR), as cmark-gfm splits the comment.
_LINE_END = re.compile(r"\r\n|\r|\n")
# GitHub's extensions for comments; `tagfilter` shows `<script>`, `<xmp>`, `<plaintext>`, ...
# as text, as GitHub does.
_EXTENSIONS = ["table", "strikethrough", "autolink", "tagfilter", "tasklist"]
_OPTIONS = Options.CMARK_OPT_UNSAFE | Options.CMARK_OPT_FOOTNOTES | Options.CMARK_OPT_SOURCEPOS
# Elements that hold nothing, so enclose nothing after them.
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen",
                   "link", "meta", "param", "source", "track", "wbr"})


def shown_lines(body: str, word: str) -> list[tuple[int, str]]:
    """The comment's lines (index, text as written) whose first word, after at most three
    spaces, is `word` (a `/` and letters), and that GitHub shows starting a line of a
    top-level paragraph; only lines that begin after a line feed or at the comment's start
    (a lone CR ends a Markdown line too, but the workflow's filter cannot see past one)."""
    lines = _LINE_END.split(body)
    ends = _LINE_END.findall(body)
    candidates = [index for index, line in enumerate(lines)
                  if (index == 0 or "\n" in ends[index - 1]) and _starts_with(line, word)]
    if not candidates:
        return []
    marks = _marks(body, len(word) - 1, len(candidates))
    marked = list(lines)
    for index, mark in zip(candidates, marks, strict=True):
        at = marked[index].index(word)
        marked[index] = f"{marked[index][:at]}/{mark}{marked[index][at + len(word):]}"
    source = "".join(line + end for line, end in zip(marked, [*ends, ""], strict=True))
    html = cmarkgfm.markdown_to_html_with_extensions(source, options=_OPTIONS,
                                                     extensions=_EXTENSIONS)
    shown = _line_starts(html)
    return [(index, lines[index]) for index, mark in zip(candidates, marks, strict=True)
            if f"/{mark}" in shown]


def _starts_with(line: str, word: str) -> bool:
    stripped = line.lstrip(" ")
    return len(line) - len(stripped) <= 3 and stripped.split(maxsplit=1)[:1] == [word] \
        and stripped.startswith(word)


def _marks(body: str, size: int, count: int) -> list[str]:
    """`count` distinct words of `size` lowercase letters (as `flipgate` is), none of them
    anywhere in the comment."""
    letters = string.ascii_lowercase
    while True:
        stem = "".join(secrets.choice(letters) for _ in range(size - 4))
        if stem not in body:
            break
    marks = []
    for number in range(count):
        suffix = ""
        for _ in range(4):
            number, digit = divmod(number, 26)
            suffix += letters[digit]
        marks.append(stem + suffix)
    return marks


def _line_starts(html: str) -> set[str]:
    """The first word of every line of text that a `<p>` of cmark-gfm's own (it carries
    `data-sourcepos`) holds with nothing else open around it."""
    open_: list[tuple[str, bool]] = []     # (tag, whether cmark-gfm wrote it)
    starts: set[str] = set()
    line_open = False                      # the text so far on this line is only spaces
    for kind, value, own in tokens(html):
        top = open_ == [("p", True)]
        if kind is Kind.START:
            if value not in _VOID:
                open_.append((value, own))
            line_open = value == "p" and open_ == [("p", True)]
        elif kind is Kind.END:
            names = [name for name, _ in open_]
            if value in names:
                del open_[len(names) - 1 - names[::-1].index(value):]
            line_open = False
        elif kind is Kind.TEXT and open_[:1] == [("p", True)]:
            for number, part in enumerate(value.split("\n")):
                if number > 0:
                    line_open = open_ == [("p", True)]
                if line_open and top and part.strip():
                    starts.add(part.split()[0])
                if part.strip():
                    line_open = False
        else:   # a comment, a declaration: what follows on the line does not start it
            line_open = False
    return starts
