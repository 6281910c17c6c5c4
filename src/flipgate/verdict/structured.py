"""A structured context (a JSON record) written out as plain sentences a lexical reader can weigh.

The offline judge reads words and figures. A JSON record hides both: `"OutdoorSeating": false`
holds the words "outdoor seating" and a denial, `"17:0-21:0"` holds two 24-hour times, and a
review's `"2022-01-09 19:18:59"` stamps when it was written, not a fact about the business.
`readable_context` turns such a record into sentences: keys split into words
("OutdoorSeating" -> "outdoor seating", a one-word key with its parent's: "romantic ambience"),
`true` into "…: yes", `false` (or a value "no", "none") into "No outdoor seating." (a denial
the contradiction check reads), times to `HH:MM` beside the record's own form, prose kept as written, and timestamps
and ids left out. Any other context is returned as it is. Pure and bounded: one pass over the parsed value.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Keys whose values stamp or identify a record rather than describe it.
_STAMP_KEY = re.compile(r"(?:^|_)(?:date|time|id|timestamp|created|updated)$", re.IGNORECASE)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|_+")
_CLOCK = re.compile(r"\b(\d{1,2}):(\d{1,2})\b")
_MAX_DEPTH = 6
_YES, _NO = ": yes.", "No "
_PROSE = re.compile(r"[.!?](?:\s|$)")  # a sentence ends in it: prose, not a value
_FACT_WORDS = 8  # a yes/no attribute is a few words; prose is longer
# A value that says "no" in words ("WiFi": "no") denies its key as `false` does.
_DENYING = frozenset({"no", "none", "false"})


def _words(key: str) -> str:
    """A key as words: "OutdoorSeating" -> "outdoor seating"; a key whose pieces are one or two
    letters is one word ("WiFi" -> "wifi", as an answer writes it)."""
    pieces = _CAMEL.sub(" ", key).split()
    if len(pieces) > 1 and all(len(piece) <= 2 for piece in pieces):
        return "".join(pieces).lower()
    return " ".join(pieces).lower()


def _clock(text: str) -> str:
    """"17:0-21:0" -> "17:00 to 21:00 (17:0-21:0)": 24-hour times as a person writes them,
    and as the record wrote them (an answer may copy either)."""
    if not _CLOCK.search(text):
        return text
    clock = _CLOCK.sub(lambda m: f"{int(m.group(1)):02d}:{int(m.group(2)):02d}", text)
    return re.sub(r"(?<=\d\d:\d\d)-(?=\d\d:\d\d)", " to ", clock) + f" ({text})"


def _scalar(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return _clock(str(value))


def _sentences(value: Any, path: tuple[str, ...], out: list[str], depth: int) -> None:
    label = " ".join(path)
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not _STAMP_KEY.search(str(key)):
                words = _words(str(key))
                # A key of one word is read with its parent's ("romantic ambience"); a longer
                # one names itself ("outdoor seating", not "attributes outdoor seating").
                _sentences(item, (words, *path[:1]) if len(words.split()) == 1 else (words,),
                           out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _sentences(item, path, out, depth + 1)
    elif isinstance(value, bool) or isinstance(value, str) and value.strip().lower() in _DENYING:
        out.append(f"{label.capitalize()}{_YES}" if value is True else f"{_NO}{label}.")
    elif value is None:
        return
    elif isinstance(value, str) and _PROSE.search(value):
        # Prose kept as written; a review's is said to be one (its words are a customer's).
        out.append(f"A customer reviewer wrote: {value}" if "review" in label else value)
    else:
        out.append(f"{label.capitalize()}: {_scalar(value)}." if label else f"{_scalar(value)}.")


def is_record_fact(passage: str) -> bool:
    """Is `passage` one of a record's yes/no attributes as `readable_context` writes them
    (not a review's prose)?"""
    words = len(passage.split())
    return words <= _FACT_WORDS and (passage.endswith(_YES) or passage.startswith(_NO))


def parse_record(context: str) -> Any | None:
    """The context's JSON object or array, or None when it is not one."""
    text = context.strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def readable_context(context: str) -> str:
    """`context` as sentences when it is a JSON record; otherwise as it is."""
    record = parse_record(context)
    if record is None:
        return context
    out: list[str] = []
    _sentences(record, (), out, 0)
    return "\n".join(out)
