"""report.html: every row of the run on one self-contained page, written as it is rendered.

The page loads nothing: its style and scripts are inline, and its
Content-Security-Policy allows exactly those (by hash) and nothing else,
so no request leaves it, and a tag that escaped the escaping would not run.
Where its script cannot run, the rows the comment tables are also written as
escaped markup (`page.Unscripted`), which the first script's `js` mark hides.
The template runs in Jinja2's immutable sandbox with autoescape on.
The rows are data, not markup: two JSON blocks (`<script type="application/json">`,
which never runs), the rows shown in full and the quiet ones, each row one compact
record escaped for a script element (`script_json`: no `<`, `>` or `&` survives, so
no text can close the block). The page's script builds a row's elements only
when it is shown, and sets every untrusted string as text. Records are written one
at a time, so memory stays bounded however many rows there are.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from flipgate.model import Conclusion, Report
from flipgate.output.comment import templates_dir
from flipgate.output.page import (
    UNSCRIPTED_TEXT_BUDGET,
    Labels,
    PageRow,
    QuietRow,
    SideView,
    Unscripted,
    page_rows,
    quiet_rows,
    row_total,
)
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


# The first script: it marks the page as scripted, which hides the rows written for a
# browser or server where scripts cannot run (the `#static` section).
SCRIPTED_MARK = 'document.documentElement.classList.add("js");'


def content_security_policy(style: str, *scripts: str) -> str:
    """Nothing may load or be sent; only the page's own style and scripts run."""
    hashes = " ".join(_digest(script) for script in scripts)
    return (f"default-src 'none'; style-src {_digest(style)}; script-src {hashes}; "
            "img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; "
            "object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'")


# The comment sections a row is in that its verdict does not already say.
KIND_LABELS = {"review": "to review", "relevance": "relevance drop",
               "flagged": "addresses the judge", "errors": "judge error",
               "generator_error": "generator error"}
_TITLES = {"failure": "blocked", "success": "passed", "error": "could not finish",
           "skipped": "skipped"}


def _title(report: Report) -> str:
    """The page's heading: a pass that held flips back says so first, as the comment does."""
    held = gate.held_back_sentence(report) if report.conclusion in (
        Conclusion.SUCCESS, Conclusion.AWAITING_REVIEW) else None
    if held:
        lead = "awaiting review:" if report.conclusion is Conclusion.AWAITING_REVIEW else "passed, but"
        return f"{gate.headline_mark(report)} {lead} {held}"
    return _TITLES.get(report.conclusion.value, report.conclusion.value)


def _counts(report: Report) -> str:
    shown = [kind.status.of(report.counts[kind.count_field]) for kind in gate.KINDS
             if report.counts[kind.count_field]]
    return f"{plural(report.counts.cases, 'case')}: " + (", ".join(shown) or "no row changed bucket")


_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                             "\u2028": "\\u2028", "\u2029": "\\u2029"})


def script_json(value: Any) -> str:
    """JSON that stays data inside a `<script>` element: `</script>`, `<!--` and friends
    cannot form, since `<`, `>` and `&` are written as JSON escapes."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).translate(_SCRIPT_SAFE)


def _side(side: SideView, *, answer: bool = True) -> dict[str, Any]:
    return {**({"t": side.answer} if answer else {}), "cut": side.truncated,
            "r": [[r.name, r.value, r.reason] for r in side.readings]}


def _anchor(anchor: str, case_id: str) -> str | None:
    """None when the anchor is `case-` and the id as it is (the script's default): most
    rows, and 18 bytes a row at 100,000 rows."""
    return None if anchor == f"case-{case_id}" else anchor


def full_record(row: PageRow) -> dict[str, Any]:
    """A row shown in full, as the page's script reads it (short keys: 100,000 rows). The
    candidate's answer is its pieces (`ans`), claims marked."""
    return {"a": _anchor(row.anchor, row.id), "i": row.id, "s": row.suite, "c": row.category, "v": row.verdict,
            "b": row.blocking, "k": list(row.kinds), "m": row.movement, "q": row.query,
            "x": [[p.text, p.supports, list(p.claims)] for p in row.context],
            "base": _side(row.baseline), "cand": _side(row.candidate, answer=False),
            "ans": [[p.text, p.claim] for p in row.answer],
            "d": None if row.diff is None else [[c.op, c.text, c.claim] for c in row.diff],
            "same": row.identical, "st": [[s.text, s.label, s.span] for s in row.statements],
            "se": row.statements_error, "e": list(row.errors), "n": list(row.notes),
            "l": list(row.labels), "cl": [list(one) for one in row.closest]}


def quiet_record(row: QuietRow) -> list[Any]:
    """A quiet row: [anchor (null: the default), id, suite, category, verdict, movement,
    query, candidate, baseline (null: the same), context, cut]."""
    return [_anchor(row.anchor, row.id), row.id, row.suite, row.category, row.verdict, row.movement, row.query,
            row.candidate, row.baseline, row.context, row.cut]


def _records(records: Iterator[Any]) -> Iterator[Markup]:
    """A JSON array, one record a line, each escaped for the script element."""
    yield Markup("[")
    for number, record in enumerate(records):
        yield Markup(("," if number else "") + "\n" + script_json(record))
    yield Markup("\n]")


def write_html(report: Report, path: str | os.PathLike[str], *,
               labels: Labels | None = None, unscripted_budget: int = UNSCRIPTED_TEXT_BUDGET) -> Path:
    """Write the page to `path` (through a temporary file, replaced when complete).
    `unscripted_budget`: the characters of row text written as markup for a browser
    where the script cannot run (page.Unscripted)."""
    style, script = _asset("report.css"), _asset("report.js")
    judge = report.judge
    unscripted = Unscripted(budget=unscripted_budget)

    def full_records() -> Iterator[dict[str, Any]]:
        for row in page_rows(report, labels):
            unscripted.take(row)
            yield full_record(row)

    stream = environment().get_template(TEMPLATE).generate(
        csp=content_security_policy(style, SCRIPTED_MARK, script), style=Markup(style),
        script=Markup(script), marker=Markup(SCRIPTED_MARK),
        title=_title(report),
        counts=_counts(report),
        judge=f"{judge.provider} · {judge.model}" + (f" · second opinion {judge.second_opinion}"
                                                      if judge.second_opinion else ""),
        head_sha=report.head_sha, total=f"{row_total(report):,}",
        kinds=Markup(script_json(KIND_LABELS)),
        full=_records(full_records()),
        quiet=_records(quiet_record(row) for row in quiet_rows(report, labels)),
        # Read after both data blocks are written, so filled by then.
        unscripted=unscripted, kind_labels=KIND_LABELS,
        total_rows=row_total(report),
    )
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    with tmp.open("w", encoding="utf-8", buffering=_WRITE_BUFFER) as handle:
        for chunk in stream:
            handle.write(chunk)
    os.replace(tmp, target)
    return target
