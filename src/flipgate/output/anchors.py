"""The anchor each row has in report.html, by suite and case id. Pure.

The comment links a row id to `report.html#<anchor>` and the page gives the row that
id, so both ask here. Case ids are untrusted text: everything but ASCII letters,
digits, `.` and `-` is written as `_<hex>_`, so the anchor is a valid HTML id, needs no
escaping in a URL fragment, and two rows never share one (`~` parts suite from id).
"""

from __future__ import annotations

import re

_KEEP = re.compile(r"[A-Za-z0-9.\-]")


def _escape(text: str) -> str:
    return "".join(ch if _KEEP.fullmatch(ch) else f"_{ord(ch):x}_" for ch in text)


def row_anchor(suite: str | None, case_id: str) -> str:
    """`case-<id>`, or `case-<suite>~<id>` for a row of a named suite."""
    if suite:
        return f"case-{_escape(suite)}~{_escape(case_id)}"
    return f"case-{_escape(case_id)}"
