"""`flipgate record` through the real CLI on an OpenTelemetry GenAI export of 500 spans."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.recording.otel import DOCUMENT_SEPARATOR

from support.otel_export import Trace, export

DAY_NS = 86_400 * 10**9
T0 = 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z
SHARES = {"policy": 70, "pricing": 70, "cards": 60, "safety": 20}  # distinct traces per category


def distinct_traces(category: str, count: int, *, offset: int = 0) -> list[Trace]:
    traces = []
    for i in range(offset, offset + count):
        query = f"{category} question {i}: what applies to my account?"
        documents = [f"{category.title()} rule {i}: the fee is €{i}.00 per month.\n  - indented detail",
                     f"Section {i}\u2028continues here."]
        if i % 7 == 0:
            query += f" Reach me at jane.doe{i}@example.com"
            documents.append(f"Escalations go to team-{i}@bank.example.org.")
        traces.append(Trace(query=query, documents=documents, category=category,
                            start_ns=T0 + i * DAY_NS // 10, structured=i % 2 == 0))
    return traces


def first_export() -> list[Trace]:
    traces = []
    for category, count in SHARES.items():
        traces.extend(distinct_traces(category, count))
    # 20 repeats of policy and 10 of pricing: the same query and context logged again later.
    for category, count in (("policy", 20), ("pricing", 10)):
        for trace in distinct_traces(category, count):
            trace.start_ns += 30 * DAY_NS
            traces.append(trace)
    return traces


def run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["record", *args])
    return result.exit_code, result.output


def read_cases(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def test_record_from_500_spans_then_append_only_new(tmp_path: Path) -> None:
    traces = first_export()
    spans = export(traces)
    assert sum(len(s["spans"]) for r in spans["resourceSpans"] for s in r["scopeSpans"]) == 500
    otel = tmp_path / "traces.json"
    otel.write_text(json.dumps(spans, indent=2, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "eval" / "cases.jsonl"

    code, output = run([str(otel), "--out", str(out), "--field", "category=app.category"])

    assert code == 0, output
    cases = read_cases(out)
    per_category = Counter(c["category"] for c in cases)
    assert per_category == {"policy": 50, "pricing": 50, "cards": 50, "safety": 20}
    assert len({(c["query"], c["context"]) for c in cases}) == len(cases)       # deduplicated
    assert len({c["id"] for c in cases}) == len(cases)
    text = out.read_text(encoding="utf-8")
    assert not re.search(r"[\w.]+@[\w.]+\.\w+", text)                            # masked emails
    assert "[email]" in text
    # Exact contexts: the retrieved documents, joined, byte for byte (emails masked).
    by_query = {t.query.split(" Reach me")[0]: t for t in traces}
    for case in cases:
        trace = by_query[case["query"].split(" Reach me")[0]]
        expected = DOCUMENT_SEPARATOR.join(trace.documents)
        expected = re.sub(r"team-\d+@bank\.example\.org", "[email]", expected)
        assert case["context"] == expected
        assert case["trace_id"] and case["timestamp"].startswith("2026-")
    # The per-category counts against the gate's minimum.
    assert re.search(r"safety\s+0\s+20\s+20\s+20\s+below minimum \(needs 30 more\)", output), output
    assert re.search(r"policy\s+0\s+70\s+50\s+50\s+ok", output), output
    assert "passed over 30: duplicates (same query and context)" in output
    assert "appended 170 cases" in output

    # Second run: JSONL of exports with 30 new safety traces, 15 already recorded, 5 new policy ones.
    first_bytes = out.read_bytes()
    recorded = {(c["query"], c["context"]) for c in cases}
    again = [t for t in first_export() if t.category == "safety"][:15]
    new_safety = distinct_traces("safety", 30, offset=100)
    new_policy = distinct_traces("policy", 5, offset=200)
    jsonl = tmp_path / "more.jsonl"
    jsonl.write_text("\n".join(json.dumps(export(batch)) for batch in (again, new_safety, new_policy)) + "\n",
                     encoding="utf-8")

    code, output = run([str(jsonl), "--out", str(out), "--field", "category=app.category"])

    assert code == 0, output
    assert out.read_bytes().startswith(first_bytes)                              # nothing rewritten
    after = read_cases(out)
    appended = after[len(cases):]
    assert Counter(c["category"] for c in appended) == {"safety": 30}
    assert not {(c["query"], c["context"]) for c in appended} & recorded
    assert Counter(c["category"] for c in after)["policy"] == 50                 # the target holds
    assert "passed over 15: already in the cases file" in output
    assert "appended 30 cases" in output and "(it had 170)" in output
    assert re.search(r"safety\s+20\s+30\s+30\s+50\s+ok", output), output


def test_the_cases_it_writes_are_what_gate_reads(tmp_path: Path) -> None:
    otel = tmp_path / "traces.json"
    otel.write_text(json.dumps(export(distinct_traces("policy", 3))), encoding="utf-8")
    out = tmp_path / "cases.jsonl"
    assert run([str(otel), "--out", str(out)])[0] == 0
    from flipgate.config.cases import load_cases

    cases = load_cases(out)
    assert len(cases) == 3 and {c.category for c in cases} == {"uncategorized"}
    assert all(re.fullmatch(r"uncategorized-[0-9a-f]{10}", c.id) for c in cases)


def test_bad_input_names_file_and_line_and_exits_2(tmp_path: Path) -> None:
    logs = tmp_path / "logs.jsonl"
    logs.write_text('{"query": "a", "context": "b"}\n{"query": "c", "context": \n', encoding="utf-8")
    out = tmp_path / "cases.jsonl"
    code, output = run([str(logs), "--out", str(out)])
    assert code == 2
    assert f"{logs}:2: invalid JSON" in output
    assert "Traceback" not in output and not out.exists()


def test_the_counts_use_the_configured_minimum(tmp_path: Path) -> None:
    otel = tmp_path / "traces.json"
    otel.write_text(json.dumps(export(distinct_traces("policy", 12))), encoding="utf-8")
    config = tmp_path / "flipgate.yml"
    config.write_text("version: 1\ncases: cases.jsonl\ngate:\n  blocking_categories: [policy]\n"
                      "  min_cases_per_category: 10\n", encoding="utf-8")
    code, output = run([str(otel), "--out", str(tmp_path / "cases.jsonl"), "--config", str(config),
                        "--field", "category=app.category"])
    assert code == 0, output
    assert "minimum 10" in output
    assert re.search(r"policy\s+0\s+12\s+12\s+12\s+ok, blocking", output), output
