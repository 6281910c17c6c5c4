"""How long GitHub asks flipgate to wait: `x-ratelimit-reset` in every form it may come in
(`retry-after` is read by `llm.pacing.retry_after`, tested in test_pacing.py), and how the
header is named in the line that ends a call."""

from __future__ import annotations

import pytest

from flipgate.github.api import _header, _reset_in

NOW = 1_764_800_000.0


@pytest.mark.parametrize("value, seconds", [
    ("1764800060", 60.0),            # epoch seconds, as GitHub writes it
    (" 1764800060 ", 60.0),
    ("1764799000", 0.0),             # passed: no wait
    ("99999999999999999999", 99999999999999999999 - NOW),  # past any clock: the caller refuses it
    ("nan", None), ("-1", None), ("inf", None), ("1764800060.5", None), ("1e9", None),
    ("soon", None), ("", None), (None, None), ("\uff11\uff12", None),
])
def test_a_reset_is_whole_epoch_seconds_or_names_no_time(value: str | None,
                                                         seconds: float | None) -> None:
    assert _reset_in(value, now=NOW) == seconds


@pytest.mark.parametrize("name, value, seconds, line", [
    ("retry-after", "3600", 3600.0, 'retry-after "3600": 3,600 s'),
    ("retry-after", "Wed, 03 Dec 2046 22:00:00 GMT", 631_152_000.0,
     'retry-after "Wed, 03 Dec 2046 22:00:00 GMT": 7,305 days'),
    ("x-ratelimit-reset", "nan", None, 'x-ratelimit-reset "nan"'),
    ("retry-after", "a\nb\rc\u0000" + "d" * 80, None, 'retry-after "a b c' + "d" * 54 + '…"'),
])
def test_a_header_is_named_as_received_on_one_short_line(name: str, value: str,
                                                         seconds: float | None, line: str) -> None:
    assert _header(name, value, seconds) == line
