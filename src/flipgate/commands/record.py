"""`flipgate record`: build or extend the cases file from logged traffic."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flipgate.commands.common import config_option, read_config, report_failures, visible
from flipgate.config.schema import DEFAULT_MIN_CASES_PER_CATEGORY
from flipgate.recording.select import DEFAULT_PER_CATEGORY

if TYPE_CHECKING:
    from flipgate.recording.select import Outcome

FORMATS = ("otel", "jsonl", "report")


def detect_format(data: bytes) -> str:
    """otel, report or jsonl, from the first JSON value of the file."""
    text = data.decode("utf-8-sig", "replace").lstrip()
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        if "resourceSpans" in whole:
            return "otel"
        if "rows" in whole and "conclusion" in whole:
            return "report"
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):
        return "jsonl"   # its reader reports the bad line
    if isinstance(obj, dict) and ("resourceSpans" in obj or "traceId" in obj or "spanId" in obj
                                  or isinstance(obj.get("context"), dict) and "trace_id" in obj["context"]):
        return "otel"
    return "jsonl"


def jsonl_line(value: object) -> str:
    """One JSONL line, UTF-8 as is, but U+2028/U+2029 escaped: tools that split lines
    with str.splitlines() would cut a line there."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029") + "\n"


def summary_lines(outcome: Outcome, *, minimum: int, blocking: frozenset[str], out: str,
                  was: int) -> list[str]:
    """The per-category table and what was passed over, as plain lines for stderr."""
    lines = [f"read {outcome.read} records"
             + (f"; masked values in {outcome.masked}" if outcome.masked else "")]
    for reason, n in sorted(outcome.passed_over.items()):
        lines.append(f"  passed over {n}: {reason}")
    names = sorted(outcome.categories)
    width = max([len("category"), *map(len, names)])
    lines.append(f"{'category':<{width}}  in file  found  added  total  minimum {minimum}")
    for name in names:
        count = outcome.categories[name]
        status = "ok" if count.total >= minimum else f"below minimum (needs {minimum - count.total} more)"
        if name in blocking:
            status += ", blocking"
        lines.append(f"{name:<{width}}  {count.existing:>7}  {count.found:>5}  {count.added:>5}  "
                     f"{count.total:>5}  {status}")
    lines.append(f"appended {len(outcome.added)} cases to {out} (it had {was})")
    return lines


@click.command("record")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", "out_path", metavar="PATH", required=True, type=click.Path(dir_okay=False),
              help="The cases file to create or extend (JSONL).")
@click.option("--format", "input_format", type=click.Choice(FORMATS), default=None,
              help="Input format (default: detected per file).")
@click.option("--field", "fields", multiple=True, metavar="NAME=PATH",
              help="Where a field is found: a dotted path in JSONL (query=input.question; "
                   "`*` takes every item of a list: context=retrieval.*.text joins the chunks "
                   "with a blank line), a span attribute in OpenTelemetry input "
                   "(context=app.context).")
@click.option("--per-category", type=click.IntRange(min=1), default=DEFAULT_PER_CATEGORY,
              show_default=True, help="At most this many cases per category in the file.")
@click.option("--mask", "masks", multiple=True, metavar="REGEX",
              help="Replace matches with [masked] (emails and card numbers always are).")
@click.option("--drop", "drops", multiple=True, metavar="REGEX",
              help="Leave out any record whose query or context matches.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sampling.")
@click.option("--category-rules", "rules_path", type=click.Path(dir_okay=False), default=None,
              help="YAML: category -> pattern(s) on the query, first match wins; used when a "
                   "record has no category of its own.")
@config_option
@report_failures
def record(inputs: tuple[str, ...], out_path: str, input_format: str | None,
           fields: tuple[str, ...], per_category: int, masks: tuple[str, ...],
           drops: tuple[str, ...], seed: int, rules_path: str | None,
           config_path: str | None) -> None:
    """Build or extend a cases file from logged traffic: OpenTelemetry GenAI spans (OTLP
    JSON or JSONL), a JSONL of query/context records, or a previous report.json.

    Deduplicates on query and context, keeps the exact context, masks emails and card
    numbers before anything is written, never changes a recorded case, and prints the
    cases per category against the gate's minimum. Exits 2 on bad input.
    """
    from flipgate.config.cases import empty_context_warning, parse_cases, read_bytes
    from flipgate.recording.masking import Masking
    from flipgate.recording.otel import read_otel
    from flipgate.recording.select import parse_category_rules, select
    from flipgate.recording.sources import Reading, parse_field_options, read_jsonl, read_report
    from flipgate.text.parsing import decode_utf8

    mapping = parse_field_options(fields)
    masking = Masking.from_options(masks, drops)
    rules = None
    if rules_path is not None:
        rules = parse_category_rules(decode_utf8(read_bytes(rules_path), rules_path), source=rules_path)
    config = read_config(config_path)
    minimum = config.gate.min_cases_per_category if config else DEFAULT_MIN_CASES_PER_CATEGORY
    blocking = frozenset(config.gate.blocking_categories) if config else frozenset()

    reading = Reading()
    for path in inputs:
        data = read_bytes(path)
        kind = input_format or detect_format(data)
        if kind == "otel":
            reading.extend(read_otel(data, source=path, fields=mapping))
        elif kind == "report":
            reading.extend(read_report(data, source=path))
        else:
            reading.extend(read_jsonl(data, source=path, fields=mapping))

    target = Path(out_path)
    before = target.read_bytes() if target.exists() else b""
    existing = parse_cases(before, source=out_path) if before.strip() else []
    outcome = select(reading.observations, existing, masking=masking, rules=rules,
                     per_category=per_category, seed=seed, passed_over=reading.skipped)
    if outcome.added:
        lines = "".join(jsonl_line(case) for case in outcome.added)
        prefix = before if not before or before.endswith(b"\n") else before + b"\n"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(prefix + lines.encode("utf-8"))
        os.replace(tmp, target)
    for line in summary_lines(outcome, minimum=minimum, blocking=blocking, out=out_path,
                              was=len(existing)):
        click.echo(visible(line), err=True)
    empty = empty_context_warning([str(case.get("id", "")) for case in outcome.added
                                   if not str(case.get("context", "")).strip()])
    if empty:
        click.echo(visible(f"flipgate: {empty} Check the recording, or where --field "
                           "context=PATH points."), err=True)
