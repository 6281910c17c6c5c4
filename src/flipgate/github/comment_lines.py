"""Which lines of a comment its writer shows as their own words: the lines that start a
line of a top-level paragraph when GitHub renders the comment.

GitHub renders comments with cmark-gfm. markdown-it-py (here already, through rich) parses
CommonMark as cmark-gfm does; GFM's tables, strikethrough and footnote definitions are added.
The comment is rendered to HTML with a mark at the start of each paragraph line, and a line
is shown when its mark is text of a `<p>` that nothing else encloses: not a quote, a list, a
table, a footnote, code, an HTML comment or a tag's attribute, nor an element that raw HTML
opened (`<details>`, `<blockquote>`, `<pre>`, ...) and left open. The tests hold this to
cmark-gfm itself (tests/security/test_comment_commands.py).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from html.parser import HTMLParser

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_block import StateBlock
from markdown_it.rules_block.html_block import HTML_SEQUENCES
from markdown_it.rules_block.lheading import lheading
from markdown_it.rules_block.paragraph import paragraph
from markdown_it.rules_block.reference import reference
from markdown_it.rules_block.table import table
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.escape import escape
from markdown_it.rules_inline.newline import newline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

# The mark before a line's text: markdown-it turns every NUL a comment holds into U+FFFD, so
# no comment can type one.
_MARK = "\x00"
_MARKED = re.compile(f"{_MARK}(\\d+){_MARK}")
# How Markdown ends a line (LF, CRLF or a lone CR), as markdown-it splits the comment.
_LINE_END = re.compile(r"\r\n|\r|\n")
# Elements that hold nothing, so enclose nothing after them.
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen",
                   "link", "meta", "param", "source", "track", "wbr"})
# A footnote definition's start, as cmark-gfm reads it: `[^label]:`.
_FOOTNOTE = re.compile(r"\[\^[^\] \t\r\n]+\]:")


def shown_lines(body: str) -> list[tuple[int, str]]:
    """The comment's lines (index, text as written) that start a shown line of a top-level
    paragraph, and that begin after a line feed or at the comment's start (a lone CR ends a
    Markdown line too, but the workflow's filter cannot see past one)."""
    lines = _LINE_END.split(body)
    ends = _LINE_END.findall(body)
    return [(index, lines[index]) for index in sorted(set(_marked_lines(body)))
            if index == 0 or "\n" in ends[index - 1]]


def _marked_lines(body: str) -> Iterator[int]:
    tokens = _MARKDOWN.parse(body)
    for token in tokens:
        if token.type == "inline" and token.map and token.children:
            for child in token.children:
                if "line" in child.meta:
                    child.meta["line"] += token.map[0]
    reader = _TopParagraphs()
    # Never closed: what an unfinished comment, tag or attribute swallowed stays swallowed, as
    # in a browser, where close() would hand it back as text.
    reader.feed(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}))
    return iter(reader.lines)


class _TopParagraphs(HTMLParser):
    """The marks that are shown text of a `<p>` no other element encloses."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.lines: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            del self.open[len(self.open) - 1 - self.open[::-1].index(tag):]

    def handle_data(self, data: str) -> None:
        if self.open == ["p"]:
            self.lines.extend(int(mark.group(1)) for mark in _MARKED.finditer(data))


# -- the parser ----------------------------------------------------------------

_Rule = Callable[[StateInline, bool], bool]


def _numbered(rule: _Rule) -> _Rule:
    """A line-break rule whose break records the line it starts (counted in the paragraph,
    made absolute in `_marked_lines`). A line ending inside a code span, an HTML comment or
    a tag makes no break, so starts no line a reader sees."""
    def numbered(state: StateInline, silent: bool) -> bool:
        at, count = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent and len(state.tokens) > count \
                and state.tokens[-1].type in ("softbreak", "hardbreak"):
            state.tokens[-1].meta["line"] = bisect_left(_line_ends(state), at) + 1
        return True
    return numbered


def _line_ends(state: StateInline) -> list[int]:
    """Where the text being parsed has its line feeds, found once a text."""
    known = state.env.get("flipgate_line_ends")
    if known is None or known[0] is not state.src:
        known = (state.src, [found.start() for found in re.finditer("\n", state.src)])
        state.env["flipgate_line_ends"] = known
    ends: list[int] = known[1]
    return ends


def _footnote(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """A footnote definition (`[^note]: text`): a container whose lines are indented four
    spaces, or lazy, as a list item's. cmark-gfm shows it under the comment, or drops it
    when nothing refers to it; its lines are no paragraph of the comment's own."""
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    begin = state.bMarks[start] + state.tShift[start]
    found = _FOOTNOTE.match(state.src, begin, state.eMarks[start])
    if found is None:
        return False
    if silent:
        return True
    saved = (state.bMarks[start], state.tShift[start], state.sCount[start], state.blkIndent)
    content = found.end()
    while content < state.eMarks[start] and state.src[content] in " \t":
        content += 1
    opened = state.push("footnote_open", "aside", 1)
    state.blkIndent += 4
    state.bMarks[start], state.tShift[start] = found.end(), content - found.end()
    state.sCount[start] = state.blkIndent
    state.md.block.tokenize(state, start, end)
    state.bMarks[start], state.tShift[start], state.sCount[start], state.blkIndent = saved
    opened.map = [start, state.line]
    state.push("footnote_close", "aside", -1)
    return True


# A line of only a tag (an HTML block of CommonMark's 7th kind), which may not interrupt a
# paragraph.
_TAG_LINE = HTML_SEQUENCES[-1][0]


def _lazy_tag_line(state: StateBlock, line: int, end: int, silent: bool) -> bool:
    """Whether a line of only a tag ends a quote or list item it would lazily continue: it
    does in cmark-gfm (the line matches no container, so it may start an HTML block there),
    though markdown-it reads it on as the paragraph's. Only ever asked as a terminator; the
    HTML block itself is html_block's."""
    lazy = state.parentType == "blockquote" or 0 <= state.sCount[line] < state.blkIndent
    begin = state.bMarks[line] + state.tShift[line]
    return silent and lazy and _TAG_LINE.search(state.src[begin:state.eMarks[line]]) is not None


def _reference(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """A link reference definition; the lines after it go on as a paragraph, as in cmark-gfm
    (which takes definitions off the start of a paragraph), unless a block that may interrupt
    a paragraph starts there. markdown-it would start a block of any kind there."""
    if not reference(state, start, end, silent):
        return False
    after = state.line
    if silent or after >= end or state.isEmpty(after) or state.sCount[after] < state.blkIndent:
        return True
    if reference(state, after, end, True) or any(
            rule(state, after, end, True) for rule in state.md.block.ruler.getRules("paragraph")):
        return True
    return lheading(state, after, end, False) or paragraph(state, after, end, False)


# A delimiter row of one column with a pipe or a colon (bare dashes underline a heading).
_ONE_COLUMN = re.compile(r"(?=.*[|:])\|?[ \t]*:?-+:?[ \t]*\|?[ \t]*")


def _table(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """A GFM table, as markdown-it reads it, and also one whose header has no pipe: one
    column, as cmark-gfm reads `b` over `|---|`, which markdown-it leaves a paragraph."""
    if table(state, start, end, silent):
        return True
    rows = start + 1
    if rows >= end or state.sCount[start] - state.blkIndent >= 4 \
            or not 0 <= state.sCount[rows] - state.blkIndent < 4:
        return False
    header = state.src[state.bMarks[start] + state.tShift[start]:state.eMarks[start]]
    delimiter = state.src[state.bMarks[rows] + state.tShift[rows]:state.eMarks[rows]]
    if "|" in header or not header.strip() or not _ONE_COLUMN.fullmatch(delimiter) \
            or (not silent and _TAG_LINE.search(header)):  # a line of a tag starts HTML
        return False
    # cmark-gfm takes the header off a paragraph: a line that starts another block is none.
    others = [rule for rule in state.md.block.ruler.getRules("paragraph") if rule is not _table]
    if reference(state, start, end, True) or any(rule(state, start, end, True) for rule in others):
        return False
    if silent:
        return True
    terminators = state.md.block.ruler.getRules("blockquote")
    lines = [start]
    rows += 1
    while rows < end and state.sCount[rows] >= state.blkIndent and not state.isEmpty(rows) \
            and state.sCount[rows] - state.blkIndent < 4 \
            and not any(rule(state, rows, end, True) for rule in terminators):
        lines.append(rows)
        rows += 1
    state.push("table_open", "table", 1).map = [start, rows]
    for line in lines:
        state.push("tr_open", "tr", 1)
        cell = state.push("inline", "", 0)
        cell.content = state.src[state.bMarks[line] + state.tShift[line]:state.eMarks[line]].strip()
        cell.map, cell.children = [line, line + 1], []
        state.push("tr_close", "tr", -1)
    state.push("table_close", "table", -1)
    state.line = rows
    return True


def _marked(name: str) -> Callable[..., str]:
    """A render rule that writes the line's mark after what the renderer writes."""
    def render(self: RendererHTML, tokens: Sequence[Token], index: int, options: OptionsDict,
               env: EnvType) -> str:
        token = tokens[index]
        written: str = (self.renderToken(tokens, index, options, env) if name == "paragraph_open"
                        else "<br />\n" if name == "hardbreak" else "\n")
        line = token.map[0] if name == "paragraph_open" and token.map else token.meta.get("line")
        return written if line is None or token.hidden else f"{written}{_MARK}{line}{_MARK}"
    return render


def _parser() -> MarkdownIt:
    markdown = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    markdown.block.ruler.before("reference", "footnote", _footnote,
                                {"alt": ["paragraph", "reference", "blockquote"]})
    markdown.block.ruler.at("table", _table, {"alt": ["paragraph", "reference"]})
    markdown.block.ruler.at("reference", _reference)
    markdown.block.ruler.before("html_block", "lazy_tag_line", _lazy_tag_line,
                                {"alt": ["paragraph", "blockquote"]})
    markdown.inline.ruler.at("newline", _numbered(newline))
    markdown.inline.ruler.at("escape", _numbered(escape))
    for name in ("paragraph_open", "softbreak", "hardbreak"):
        markdown.add_render_rule(name, _marked(name))
    return markdown


_MARKDOWN = _parser()
