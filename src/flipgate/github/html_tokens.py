"""HTML read as a browser's tokenizer reads it (the HTML standard, section 13.2.5), as far as
deciding what is shown text: start and end tags, comments, declarations and text.

Python's `html.parser` ends comments and declarations as older browsers did: it keeps
`<!-->` open, does not end a comment at `--!>` and reads `<!x` up to a `-->`. A reader of
cmark-gfm's HTML that disagreed with the browser would obey lines GitHub hides or ignore lines
it shows. Nothing is built but the token stream; character references stay as written (they
never hold a `<` or a line's first word).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator

_SPACE = "\t\n\f\r "
_COMMENT_END = re.compile(r"--!?>")
_OWN = "data-sourcepos"   # the attribute cmark-gfm writes on the blocks it makes


class Kind(enum.Enum):
    START = "start"     # value: the tag's name; own: it carries `data-sourcepos`
    END = "end"         # value: the tag's name
    TEXT = "text"       # value: the text
    OTHER = "other"     # a comment, a declaration, a processing instruction


Token = tuple[Kind, str, bool]


def tokens(html: str) -> Iterator[Token]:
    """The tokens of `html`. What an unfinished tag, attribute or comment would hold to the
    end is swallowed, as in a browser."""
    at, size = 0, len(html)
    while at < size:
        lt = html.find("<", at)
        if lt < 0:
            yield Kind.TEXT, html[at:], False
            return
        if lt > at:
            yield Kind.TEXT, html[at:lt], False
        at = lt
        after = html[at + 1:at + 2]
        if after == "!":
            at = _declaration_end(html, at)
            yield Kind.OTHER, "", False
        elif after == "?":
            at = _bogus_end(html, at + 2)
            yield Kind.OTHER, "", False
        elif after == "/":
            first = html[at + 2:at + 3]
            if _letter(first):
                end, name, _ = _tag(html, at + 2)
                if end > size:
                    return
                yield Kind.END, name, False
                at = end
            elif first == ">":
                at += 3           # `</>`: nothing
            elif not first:
                yield Kind.TEXT, "</", False
                return
            else:                 # `</ x`: a bogus comment to the next `>`
                at = _bogus_end(html, at + 2)
                yield Kind.OTHER, "", False
        elif _letter(after):
            end, name, own = _tag(html, at + 1)
            if end > size:
                return
            yield Kind.START, name, own
            at = end
        else:
            yield Kind.TEXT, "<", False
            at += 1


def _letter(char: str) -> bool:
    return len(char) == 1 and char.isascii() and char.isalpha()


def _bogus_end(html: str, start: int) -> int:
    """Past the `>` that ends a bogus comment, or the end."""
    end = html.find(">", start)
    return len(html) if end < 0 else end + 1


def _declaration_end(html: str, at: int) -> int:
    """Past a markup declaration at `at` (`<!`): a comment (`<!-->` and `<!--->` are whole
    ones, and `--!>` ends one as `-->` does), or a doctype, CDATA (outside SVG and MathML) or
    anything else, each ending at the next `>`."""
    if not html.startswith("<!--", at):
        return _bogus_end(html, at + 2)
    start = at + 4
    if html.startswith(">", start):
        return start + 1
    if html.startswith("->", start):
        return start + 2
    found = _COMMENT_END.search(html, start)
    return len(html) if found is None else found.end()


def _tag(html: str, start: int) -> tuple[int, str, bool]:
    """A tag whose name starts at `start`: (past its `>`, its name in lower case, whether it
    carries `data-sourcepos`); past the end (len + 1) when it never ends."""
    size = len(html)
    at = start
    while at < size and html[at] not in _SPACE + "/>":
        at += 1
    name = html[start:at].lower()
    own = False
    while at < size:
        char = html[at]
        if char in _SPACE or char == "/":
            at += 1
            continue
        if char == ">":
            return at + 1, name, own
        begin = at
        at += 1   # a name may start with `=`
        while at < size and html[at] not in _SPACE + "/>=":
            at += 1
        own = own or html[begin:at].lower() == _OWN
        while at < size and html[at] in _SPACE:
            at += 1
        if at < size and html[at] == "=":
            at += 1
            while at < size and html[at] in _SPACE:
                at += 1
            if at < size and html[at] in "\"'":
                close = html.find(html[at], at + 1)
                if close < 0:
                    return size + 1, name, own
                at = close + 1
            else:
                while at < size and html[at] not in _SPACE + ">":
                    at += 1
    return size + 1, name, own
