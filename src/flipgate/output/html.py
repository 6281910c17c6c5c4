"""report.html: every row of the run on one self-contained page, written as it is rendered.

The page loads nothing: its style and script are inline, and its
Content-Security-Policy allows exactly those two (by hash) and nothing else,
so no request leaves it, and a tag that escaped the escaping would not run.
The template runs in Jinja2's immutable sandbox with autoescape on.
Rows are rendered and written one at a time (`Template.generate` over a
generator of row views), so memory stays bounded however many rows there are.
"""

from __future__ import annotations

import base64
import hashlib
import os
from functools import lru_cache
from pathlib import Path

from jinja2 import FileSystemLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from flipgate.model import Report
from flipgate.output.comment import templates_dir
from flipgate.output.page import Labels, page_rows, row_total
from flipgate.text.escaping import plural
from flipgate.verdict import gate

HTML_FILE = "report.html"
TEMPLATE = "report.html.j2"
_WRITE_BUFFER = 1 << 16


@lru_cache(maxsize=1)
def environment() -> ImmutableSandboxedEnvironment:
    return ImmutableSandboxedEnvironment(
        loader=FileSystemLoader(str(templates_dir())), autoescape=True,
        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _asset(name: str) -> str:
    return (templates_dir() / name).read_text(encoding="utf-8")


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def content_security_policy(style: str, script: str) -> str:
    """Nothing may load or be sent; only the page's own style and script run."""
    return (f"default-src 'none'; style-src {_digest(style)}; script-src {_digest(script)}; "
            "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; "
            "object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'")


# The comment sections a row is in that its verdict does not already say.
KIND_LABELS = {"review": "to review", "relevance": "relevance drop",
               "flagged": "addresses the judge", "errors": "judge error"}
_TITLES = {"failure": "blocked", "success": "passed", "error": "could not finish",
           "skipped": "skipped"}


def _counts(report: Report) -> str:
    shown = [kind.status.of(report.counts[kind.count_field]) for kind in gate.KINDS
             if report.counts[kind.count_field]]
    return f"{plural(report.counts.cases, 'case')}: " + (", ".join(shown) or "no row changed bucket")


def write_html(report: Report, path: str | os.PathLike[str], *,
               labels: Labels | None = None) -> Path:
    """Write the page to `path` (through a temporary file, replaced when complete)."""
    style, script = _asset("report.css"), _asset("report.js")
    judge = report.judge
    stream = environment().get_template(TEMPLATE).generate(
        csp=content_security_policy(style, script), style=Markup(style), script=Markup(script),
        title=_TITLES.get(report.conclusion.value, report.conclusion.value),
        counts=_counts(report),
        judge=f"{judge.provider} · {judge.model}" + (f" · second opinion {judge.second_opinion}"
                                                      if judge.second_opinion else ""),
        head_sha=report.head_sha, total=f"{row_total(report):,}", kind_labels=KIND_LABELS,
        rows=page_rows(report, labels),
    )
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    with tmp.open("w", encoding="utf-8", buffering=_WRITE_BUFFER) as handle:
        for chunk in stream:
            handle.write(chunk)
    os.replace(tmp, target)
    return target
