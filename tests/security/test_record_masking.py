"""Attacks on `flipgate record`'s masking: personal data disguised so the masks miss it,
values echoed to the CI log, logs that crash the reader, near-duplicates that pad a category.

Each attack is a logged record a real system could emit; the defence is that what reaches
the cases file and the terminal carries no address and no card number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from flipgate.cli import cli
from flipgate.model import Case
from flipgate.recording.masking import Masking
from flipgate.recording.select import select
from flipgate.recording.sources import Observation
from flipgate.text.parsing import fold as normalise

MASK = Masking()
CARD = "4111111111111111"          # passes Luhn
NOT_A_CARD = "4111111111111112"    # fails Luhn: a figure, not a card


@pytest.mark.parametrize("text, secret", [
    ("write to josé.garcía@example.com today", "garcía@"),
    ("mail: 用户@例子.广告", "用户@"),
    ("contact anna@bücher.de", "anna@"),
    ("contact anna@xn--bcher-kva.de", "anna@"),
    ("see jose%40example.com", "jose%40example"),
    ("see jose%2540example.com", "jose%2540example"),
    ("jo\u200bse@exam\u200bple.com", "se@"),
    ("jose\u2060@example.com", "@example"),
    ("ｊｏｓｅ＠ｅｘａｍｐｌｅ．ｃｏｍ", "ｅｘａｍｐｌｅ"),
    ("José.García+billing@Example.CO.UK", "García"),
])
def test_disguised_email_addresses_are_masked(text: str, secret: str) -> None:
    masked = MASK.apply(text)
    assert "[email]" in masked
    assert secret not in masked
    assert "@" not in normalise(masked).replace("[email]", "")


@pytest.mark.parametrize("text", [
    f"card {CARD[:4]} {CARD[4:8]} {CARD[8:12]} {CARD[12:]}",
    f"card {CARD[:4]}\u00a0{CARD[4:8]}\u00a0{CARD[8:12]}\u00a0{CARD[12:]}",
    f"card {CARD[:4]}.{CARD[4:8]}.{CARD[8:12]}.{CARD[12:]}",
    f"card {CARD[:4]}-{CARD[4:8]}-{CARD[8:12]}-{CARD[12:]}",
    f"card {CARD[:4]}/{CARD[4:8]}/{CARD[8:12]}/{CARD[12:]}",
    f"pan_{CARD}",
    f"card{CARD}end",
    f"{CARD[:8]}\u200b{CARD[8:]}",
    "４１１１１１１１１１１１１１１１",
    f"number={CARD[:6]}%20{CARD[6:]}",
])
def test_card_numbers_with_any_separator_or_glued_to_words_are_masked(text: str) -> None:
    masked = MASK.apply(text)
    assert "[card]" in masked
    digits = "".join(ch for ch in normalise(masked) if ch.isdigit())
    assert "4111" not in digits


@pytest.mark.parametrize("text", [
    f"order {NOT_A_CARD} shipped",
    "The fee is 1,250,000.00 for 1999-2024 accounts",
    "call 0800 123 4567 or +44 20 7946 0958",
    "tracking 1Z999AA10123456784",
    "version 10.4.13.2024.1",
])
def test_figures_that_fail_luhn_are_not_masked(text: str) -> None:
    assert MASK.apply(text) == normalise(text)


def test_a_bad_timestamp_is_refused_without_echoing_the_value(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    secret = "josé.garcía@example.com"
    log.write_text(json.dumps({"query": "q", "context": "c", "timestamp": secret}) + "\n",
                   encoding="utf-8")
    result = CliRunner().invoke(cli, ["record", str(log), "--out", str(tmp_path / "cases.jsonl")])
    assert result.exit_code == 2
    assert f"{log}:1" in result.output
    assert "garc" not in result.output and "@" not in result.output.replace(str(log), "")


@pytest.mark.parametrize("line, what", [
    ('{"query": "q", "context": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested"),
    ('{"query": "q", "context": "c", "n": ' + "9" * 5000 + "}", "digits"),
])
def test_deep_or_huge_json_is_bad_input_naming_the_line(tmp_path: Path, line: str, what: str) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"query": "a", "context": "b"}\n' + line + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["record", str(log), "--out", str(tmp_path / "cases.jsonl")])
    assert result.exit_code == 2, result.output
    assert f"{log}:2" in result.output
    assert what in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "cases.jsonl").exists()


def test_an_otel_export_nested_too_deeply_is_bad_input(tmp_path: Path) -> None:
    export = tmp_path / "traces.json"
    export.write_text('{"resourceSpans": ' + "[" * 50_000 + "]" * 50_000 + "}", encoding="utf-8")
    result = CliRunner().invoke(cli, ["record", str(export), "--out", str(tmp_path / "c.jsonl")])
    assert result.exit_code == 2, result.output
    assert "nested" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("twin", [
    "How long do refunds take? ",
    "How long do refunds take?\u200b",
    "How  long do refunds take?",
    "How long do refunds take？",   # a full-width question mark
    "\ufeffHow long do refunds take?",
])
def test_near_duplicates_do_not_pad_a_category(twin: str) -> None:
    observations = [
        Observation(query="How long do refunds take?", context="Refunds take 30 days.", source="a:1"),
        Observation(query=twin, context="Refunds take 30 days. ", source="a:2"),
    ]
    outcome = select(observations, [], masking=MASK)
    assert len(outcome.added) == 1
    assert outcome.passed_over == {"duplicates (same query and context)": 1}


def test_a_near_duplicate_of_a_recorded_case_is_not_added_again() -> None:
    existing = [Case(id="r-1", query="How long do refunds take?", context="Refunds take 30 days.",
                     category="policy")]
    twin = Observation(query="How long do refunds take?\u200b ", context="Refunds take 30 days.",
                       source="a:1")
    outcome = select([twin], existing, masking=MASK)
    assert outcome.added == []
    assert outcome.passed_over == {"already in the cases file": 1}
