"""Render Markdown as GitHub does (cmark-gfm) and read back its structure.

Raw HTML is let through (no safe mode, no tag filter), stricter than GitHub:
any tag that escaped flipgate's escaping shows up here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import cmarkgfm
from cmarkgfm.cmark import Options
from html5lib._tokenizer import HTMLTokenizer
from html5lib.constants import tokenTypes as _TOKEN

EXTENSIONS = ["table", "autolink", "strikethrough", "tasklist"]
# What GitHub would turn into a mention, an issue reference: on the rendered text.
MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")
ISSUE_REFERENCE = re.compile(r"(?<![\w&])#[0-9]")


def to_html(markdown: str) -> str:
    return cmarkgfm.markdown_to_html_with_extensions(
        markdown, options=Options.CMARK_OPT_UNSAFE, extensions=EXTENSIONS)


def github_html(markdown: str) -> str:
    """As GitHub renders a comment: raw HTML through, with GFM's tag filter."""
    return cmarkgfm.markdown_to_html_with_extensions(
        markdown, options=Options.CMARK_OPT_UNSAFE, extensions=[*EXTENSIONS, "tagfilter"])


def safe_html(markdown: str) -> str:
    """As a renderer that drops raw HTML renders it (cmark-gfm's default, safe mode): every
    tag and HTML block becomes `<!-- raw HTML omitted -->`."""
    return cmarkgfm.markdown_to_html_with_extensions(markdown, options=0, extensions=EXTENSIONS)


# Elements whose edges part words as a reader sees them (blocks, cells, line breaks).
_BLOCKS = frozenset({"p", "li", "ul", "ol", "td", "th", "tr", "table", "thead", "tbody", "h1",
                     "h2", "h3", "h4", "br", "hr", "pre", "blockquote", "details", "summary",
                     "div"})


class _Words(HTMLParser):
    """The visible text as a reader sees it, a block's edges as spaces; `<summary>` text
    apart (a renderer that drops HTML drops it)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.summaries: list[str] = []
        self._summary: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "summary":
            self._summary = []
        if tag in _BLOCKS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "summary" and self._summary is not None:
            self.summaries.append("".join(self._summary))
            self._summary = None
        if tag in _BLOCKS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        (self._summary if self._summary is not None else self.parts).append(data)


def visible_words(html_text: str) -> tuple[list[str], list[str]]:
    """(the words a reader sees outside `<summary>`, each summary's text)."""
    reader = _Words()
    reader.feed(html_text)
    reader.close()
    return "".join(reader.parts).split(), reader.summaries


@dataclass
class Page:
    """The parts of rendered HTML the tests look at."""

    tags: list[str] = field(default_factory=list)          # "table", "/table", ...
    tables: list[list[list[str]]] = field(default_factory=list)  # table -> row -> cell text
    headings: list[tuple[str, str]] = field(default_factory=list)  # ("h3", text)
    summaries: list[str] = field(default_factory=list)
    pre: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    text: str = ""
    # The text outside <pre> and <code>: what GitHub's mention and reference filters read
    # (they skip code, as html-pipeline's IGNORE_PARENTS say).
    outside_code: str = ""
    # (index of the next table, text) for each heading and <summary>, in order.
    _anchors: list[tuple[int, str]] = field(default_factory=list)

    def count(self, tag: str) -> int:
        return self.tags.count(tag)

    def table_after(self, heading: str) -> list[list[str]]:
        """The table under the heading (h2/h3) or <summary> containing `heading`; [] if none."""
        index = next(i for i, (_, text) in enumerate(self._anchors) if heading in text)
        first = self._anchors[index][0]
        end = self._anchors[index + 1][0] if index + 1 < len(self._anchors) else len(self.tables)
        return self.tables[first] if first < end else []


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._capture: list[str] | None = None
        self._texts: list[str] = []
        self._outside: list[str] = []
        self._code_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.page.tags.append(tag)
        if tag in ("pre", "code"):
            self._code_depth += 1
        if tag == "table":
            self.page.tables.append([])
        elif tag == "tr":
            self.page.tables[-1].append([])
        if tag in ("td", "th", "h1", "h2", "h3", "h4", "summary", "pre"):
            self._capture = []

    def handle_endtag(self, tag: str) -> None:
        self.page.tags.append("/" + tag)
        if tag in ("pre", "code") and self._code_depth:
            self._code_depth -= 1
        if self._capture is None:
            return
        text = "".join(self._capture)
        if tag in ("td", "th"):
            self.page.tables[-1][-1].append(text.strip())
        elif tag in ("h1", "h2", "h3", "h4"):
            self.page.headings.append((tag, text))
            self.page._anchors.append((len(self.page.tables), text))
        elif tag == "summary":
            self.page.summaries.append(text)
            self.page._anchors.append((len(self.page.tables), text))
        elif tag == "pre":
            self.page.pre.append(text)
        else:
            return
        self._capture = None

    def handle_data(self, data: str) -> None:
        self._texts.append(data)
        if not self._code_depth:
            self._outside.append(data)
        if self._capture is not None:
            self._capture.append(data)

    def handle_comment(self, data: str) -> None:
        self.page.comments.append(data)


def read(markdown: str) -> Page:
    return read_html(to_html(markdown))


def read_html(rendered: str) -> Page:
    """The structure of HTML rendered some other way (github_html, safe_html)."""
    reader = _Reader()
    reader.feed(rendered)
    reader.close()
    reader.page.text = "".join(reader._texts)
    reader.page.outside_code = "".join(reader._outside)
    return reader.page


def consistent_tables(page: Page) -> bool:
    """Every row of every table has as many cells as its header."""
    return all(len({len(row) for row in table}) == 1 for table in page.tables if table)


def details_text(markdown: str, summary_start: str) -> str:
    """The visible text of the first `<details>` block whose summary starts with
    `summary_start`, tags removed and entities decoded (empty when there is none)."""
    import html as html_module

    for block in to_html(markdown).split("<details>")[1:]:
        block = block.split("</details>", 1)[0]
        summary = re.search(r"<summary>(.*?)</summary>", block, re.S)
        text = html_module.unescape(re.sub(r"<[^>]+>", "", summary.group(1))) if summary else ""
        if text.startswith(summary_start):
            return html_module.unescape(re.sub(r"<[^>]+>", "", block))
    return ""


def outside_fences(markdown: str) -> str:
    """The Markdown with its fenced code blocks taken out (backtick fences, as `fence` writes)."""
    return re.sub(r"(?ms)^(`{3,}).*?^\1`*[ \t]*$", "", markdown)


# -- comment commands: the lines GitHub shows as a top-level paragraph's own lines --------

# Elements that never hold content, so never enclose what follows them.
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen",
                   "link", "meta", "param", "source", "track", "wbr"})


def comment_html(markdown: str) -> str:
    """A comment as GitHub's engine renders it: footnotes on (comments have them), raw HTML
    through GFM's tag filter (`<xmp>`, `<plaintext>`, `<script>`, ... shown as text), and each
    block's source position (which tells cmark-gfm's own `<p>` from a typed one)."""
    return cmarkgfm.markdown_to_html_with_extensions(
        markdown, extensions=[*EXTENSIONS, "tagfilter"], options=Options.CMARK_OPT_UNSAFE
        | Options.CMARK_OPT_FOOTNOTES | Options.CMARK_OPT_SOURCEPOS)


class _ParagraphLines:
    """Each shown line that starts in a paragraph of cmark-gfm's (not a `<p>` typed as HTML)
    that nothing but the document encloses (no quote, list, footnote, table, details or raw
    HTML element left open: stricter than a browser, which closes a `<p>` at the next block),
    its text through inline elements to the line's end. The HTML is read with html5lib's
    tokenizer, which follows the HTML standard's (`<!-->`, `--!>`, `<!x`, `</ x` as a browser
    reads them); text in a comment or a tag's attribute is not shown text."""

    def __init__(self) -> None:
        self.open: list[tuple[str, bool]] = []  # (tag, whether cmark-gfm wrote it)
        self.lines: list[str] = []
        self._line: list[str] | None = None  # the line being read, if it started at the top
        self._at_start = False

    @property
    def _at_top(self) -> bool:
        return self.open == [("p", True)]

    def _end_line(self) -> None:
        if self._line is not None:
            self.lines.append("".join(self._line))
        self._line = None

    def feed(self, html_text: str) -> None:
        for token in HTMLTokenizer(html_text):
            kind = token["type"]
            if kind == _TOKEN["StartTag"]:
                self.start(token["name"], token["data"])
            elif kind == _TOKEN["EmptyTag"]:
                self.start(token["name"], token["data"]) if token["name"] not in _VOID \
                    else self._reset()
            elif kind == _TOKEN["EndTag"]:
                self.end(token["name"])
            elif kind in (_TOKEN["Characters"], _TOKEN["SpaceCharacters"]):
                self.data(token["data"])
            elif kind != _TOKEN["ParseError"]:   # a comment, a doctype
                self._reset()

    def _reset(self) -> None:
        self._at_start = False

    def start(self, tag: str, attrs: dict[Any, str]) -> None:
        if tag not in _VOID:
            self.open.append((tag, any(name == "data-sourcepos" for name in attrs)))
        self._at_start = tag == "p" and self._at_top

    def end(self, tag: str) -> None:
        tags = [name for name, _ in self.open]
        if tag in tags:
            del self.open[len(tags) - 1 - tags[::-1].index(tag):]
        if self.open[:1] != [("p", True)]:
            self._end_line()
        self._at_start = False

    def data(self, data: str) -> None:
        if self.open[:1] == [("p", True)]:
            first, *rest = data.split("\n")
            if self._at_start:
                self._line = []
            if self._line is not None and not "".join(self._line).strip() \
                    and first.strip() and not self._at_top:
                self._line = None  # the line's text starts in code, a link, emphasis...
            if self._line is not None:
                self._line.append(first)
            for part in rest:
                self._end_line()
                self._line = [part] if self._at_top else None
        self._at_start = False


def shown_paragraph_lines(markdown: str) -> list[str]:
    """The lines of the comment's top-level paragraphs, as cmark-gfm renders them."""
    reader = _ParagraphLines()
    reader.feed(comment_html(markdown))  # an unfinished comment or tag swallows the rest,
    return reader.lines                  # as in a browser


def shown_command_lines(markdown: str) -> list[str]:
    """The shown top-level paragraph lines whose first word is `/flipgate`."""
    return [line.strip() for line in shown_paragraph_lines(markdown)
            if line.split()[:1] == ["/flipgate"]]
