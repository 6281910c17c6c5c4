"""`flipgate record`: frozen cases built from logged traffic.

`sources` and `otel` turn logs (plain JSONL, OpenTelemetry GenAI spans, a
previous report.json) into observations; `select` masks, categorises,
deduplicates and samples them against the cases already recorded. All of it
is pure: bytes in, values out. The command in `commands/record.py` does the
file I/O.
"""
