"""report.html read back as the page's script reads it: its rows are JSON data blocks."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

# A quiet row's array, by name (output/html.quiet_record).
QUIET_FIELDS = ("a", "i", "s", "c", "v", "m", "q", "ca", "ba", "cx", "cut")


class Page(HTMLParser):
    """Every tag and attribute of the page, its text, and its script and style bodies."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self._in: tuple[str, dict[str, str | None]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = (tag, dict(attrs)) if tag in ("script", "style") else None
        if tag == "script":
            self.scripts.append((dict(attrs), ""))

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is not None and self._in[0] == "script":
            attrs, body = self.scripts[-1]
            self.scripts[-1] = (attrs, body + data)
        elif self._in is not None:
            self.styles.append(data)
        else:
            self.text.append(data)

    def code(self) -> list[str]:
        """The bodies of the scripts that run (a data block has a type)."""
        return [body for attrs, body in self.scripts if "type" not in attrs]

    def data(self, block: str) -> Any:
        (body,) = [body for attrs, body in self.scripts if attrs.get("id") == block]
        return json.loads(body)

    def full(self) -> list[dict[str, Any]]:
        return [_anchored(row) for row in self.data("rows-full")]

    def quiet(self) -> list[dict[str, Any]]:
        return [_anchored(dict(zip(QUIET_FIELDS, row, strict=True)))
                for row in self.data("rows-quiet")]

    def rows(self) -> list[dict[str, Any]]:
        """Every row in the page's order: the full ones, then the quiet ones."""
        return self.full() + self.quiet()


def _anchored(row: dict[str, Any]) -> dict[str, Any]:
    """The anchor as the page's script reads it: left out when it is `case-` + the id."""
    return {**row, "a": row["a"] or "case-" + row["i"]}


def read_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page
