"""Human labels from the pull request: `/flipgate label ID [baseline|candidate] LABEL`.

Pure: parsing the command's words, the hidden block that keeps the labels in the bot's own
comment across runs, the lines of labels.jsonl, and what the comment says about them.

A second hidden block, `<!-- flipgate:readings=BASE64 -->`, keeps what calibrate needs of
the run the comment describes (each answer's judge bucket and its row's category, flipped
rows first, as many as READINGS_ROOM holds), so a label job, which runs no check, writes a
labels.jsonl that `flipgate calibrate --labels` reads alone. It is read as strictly.

The block, `<!-- flipgate:labels=BASE64 -->`, holds JSON that commands wrote: only the
bot edits its comment, but every entry came from a comment's words, so the block is read
like any untrusted input: a block that does not decode is ignored (and reported), and
every entry must name a known side and label, an id of sane shape and a GitHub login.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from flipgate.config.schema import ARTIFACT_NAME
from flipgate.model import Bucket, Report, Row, Verdict
from flipgate.text.escaping import cell, cell_list, escape_md

SIDES = ("baseline", "candidate")
DEFAULT_SIDE = "candidate"
LABELS = tuple(bucket.value for bucket in Bucket)
LABELS_FILE = "labels.jsonl"
# The room the labels block may take in the comment (reserved out of GitHub's limit),
# and the room of the readings block.
BLOCK_ROOM = 8_000
READINGS_ROOM = 4_000
_BLOCK = re.compile(r"<!-- flipgate:labels=([A-Za-z0-9_=-]*) -->")
# GitHub logins: letters, digits and single hyphens, at most 39; apps end in "[bot]".
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}(?:\[bot\])?")
_ID_LIMIT = 200


@dataclass(frozen=True)
class HumanLabel:
    """One person's label on one answer of the run."""

    id: str
    side: str
    label: str
    by: str
    suite: str | None = None

    @property
    def key(self) -> tuple[str | None, str, str]:
        return (self.suite, self.id, self.side)

    def shown(self) -> str:
        """What the comment says on the row: `labelled grounded by @alice`."""
        side = "" if self.side == DEFAULT_SIDE else f" ({self.side})"
        return f"labelled {self.label}{side} by @{self.by}"


@dataclass(frozen=True)
class LabelRequest:
    """The words of a label command, checked for shape; `target` (an id, or SUITE/ID) is
    resolved against the run's cases by `resolve`."""

    target: str
    side: str
    label: str


@dataclass(frozen=True)
class LabelMistake:
    """A label command whose words are not one: what to tell its author."""

    why: str


def parse_label(arguments: Sequence[str]) -> LabelRequest | LabelMistake:
    """`ID [SIDE] LABEL` after `/flipgate label`."""
    if len(arguments) not in (2, 3):
        return LabelMistake("a label command is `/flipgate label ID [baseline|candidate] LABEL`")
    target, label = arguments[0], arguments[-1]
    side = arguments[1] if len(arguments) == 3 else DEFAULT_SIDE
    if side not in SIDES:
        return LabelMistake(f"unknown side `{shown(side)}`; the sides are "
                            f"{', '.join(SIDES)} (candidate when left out)")
    if label not in LABELS:
        return LabelMistake(f"unknown label `{shown(label)}`; the labels are {', '.join(LABELS)}")
    if not valid_id(target):
        return LabelMistake(f"`{shown(target)}` is not a case id")
    return LabelRequest(target=target, side=side, label=label)


# A reply lists this many of the run's ids when the one given is not among them, and none
# is close to it.
LISTED_IDS = 30
# A mistyped id gets at most this many ids as alike as difflib's ratio says (at least
# _ALIKE, casefolded), and only those within _NEAR of the closest one.
CLOSEST_IDS = 3
_ALIKE, _NEAR = 0.6, 0.1


def closest(typed: str, names: Sequence[str]) -> list[str]:
    """The names (ID, or SUITE/ID) most like a mistyped one, closest first; [] when none is
    alike. A SUITE/ID is compared as typed whole and by its id alone."""
    wanted = typed.casefold()
    scored: list[tuple[float, int, str]] = []
    for order, name in enumerate(names):
        ratio = 0.0
        for form in {name, name.rpartition("/")[2]}:
            matcher = SequenceMatcher(None, wanted, form.casefold(), autojunk=False)
            if matcher.real_quick_ratio() >= _ALIKE and matcher.quick_ratio() >= _ALIKE:
                ratio = max(ratio, matcher.ratio())
        if ratio >= _ALIKE:
            scored.append((-ratio, order, name))
    scored.sort()
    return [name for ratio, _, name in scored[:CLOSEST_IDS] if -ratio >= -scored[0][0] - _NEAR]


def resolve(request: LabelRequest, cases: Mapping[str | None, Sequence[str]], *,
            by: str) -> HumanLabel | LabelMistake:
    """The answer a request names among the run's cases (by suite; None: no suites). With
    several suites an id two of them share is named as SUITE/ID."""
    found = [(suite, request.target) for suite, ids in cases.items() if request.target in ids]
    suite_name, _, rest = request.target.partition("/")
    if rest and suite_name in cases and rest in cases[suite_name]:
        found.append((suite_name, rest))
    if len(found) == 1:
        suite, case_id = found[0]
        return HumanLabel(id=case_id, side=request.side, label=request.label, by=by, suite=suite)
    if found:
        names = ", ".join(f"`{shown(f'{suite}/{case_id}')}`" for suite, case_id in found)
        return LabelMistake(f"`{shown(request.target)}` is a case of several suites: name one "
                            f"as {names}")
    every = [f"{suite}/{case_id}" if suite and len(cases) > 1 else case_id
             for suite, ids in cases.items() for case_id in ids]
    meant = closest(request.target, every)
    if meant:
        named = [f"`{shown(name)}`" for name in meant]
        options = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} or {named[-1]}"
        return LabelMistake(f"`{shown(request.target)}` is not a case of this run; "
                            f"did you mean {options}?")
    listed = ", ".join(f"`{shown(case_id)}`" for case_id in every[:LISTED_IDS])
    more = f" and {len(every) - LISTED_IDS:,} more" if len(every) > LISTED_IDS else ""
    return LabelMistake(f"`{shown(request.target)}` is not a case of this run; the ids are "
                        f"{listed or 'none'}{more}")


@dataclass(frozen=True)
class Refused:
    """A label line that records nothing: its words as typed (safe in a code span) and why."""

    line: str
    why: str


def resolve_all(batch: Sequence[Sequence[str]], cases: Mapping[str | None, Sequence[str]], *,
                by: str) -> tuple[list[HumanLabel], list[Refused]]:
    """Each label line of a comment (its words after `label`), checked and resolved on its
    own: the labels it records, in order, and the lines it refuses with why."""
    recorded: list[HumanLabel] = []
    refused: list[Refused] = []
    for words in batch:
        line = shown(" ".join(("/flipgate label", *words)))
        request = parse_label(words)
        found = (request if isinstance(request, LabelMistake)
                 else resolve(request, cases, by=by))
        if isinstance(found, LabelMistake):
            refused.append(Refused(line=line, why=found.why))
        else:
            recorded.append(found)
    return recorded, refused


def listed(label: HumanLabel) -> str:
    """A recorded label as a reply lists it: `ID` labelled LABEL by @USER."""
    name = f"{label.suite}/{label.id}" if label.suite else label.id
    return f"`{shown(name)}` {escape_md(label.shown())}"


def shown(text: str) -> str:
    """A word from a comment, safe inside an inline code span of a reply."""
    return "".join(ch if ch.isprintable() and ch != "`" else "'" if ch == "`" else "\ufffd"
                   for ch in text[:60])


def valid_id(text: object) -> bool:
    return (isinstance(text, str) and 0 < len(text) <= _ID_LIMIT and text.isprintable()
            and "`" not in text)


def valid_login(text: object) -> bool:
    return isinstance(text, str) and _LOGIN.fullmatch(text) is not None


# -- the hidden block -----------------------------------------------------------------

@dataclass(frozen=True)
class Stored:
    """The labels a comment keeps, and what was wrong with its block (ignored, reported)."""

    labels: tuple[HumanLabel, ...] = ()
    problem: str | None = None


def read_block(body: str) -> Stored:
    """The labels in a comment's hidden block: none when there is no block; none, with the
    problem, when the block is not one this module wrote or any entry is not a label."""
    found = _BLOCK.findall(body)
    if not found:
        return Stored()
    if len(found) > 1:
        return Stored(problem="the comment holds more than one labels block")
    try:
        data = decoded_block(found[0])
    except UNREADABLE:
        return Stored(problem="the labels block does not decode")
    if not isinstance(data, list):
        return Stored(problem="the labels block is not a list of labels")
    labels = []
    for number, entry in enumerate(data):
        label = _entry(entry)
        if label is None:
            return Stored(problem=f"entry {number} of the labels block is not a label")
        labels.append(label)
    return Stored(labels=tuple(latest(labels)))


def _entry(entry: object) -> HumanLabel | None:
    if not isinstance(entry, dict) or set(entry) != {"suite", "id", "side", "label", "by"}:
        return None
    suite = entry["suite"]
    if not (suite is None or valid_id(suite)) or not valid_id(entry["id"]):
        return None
    if entry["side"] not in SIDES or entry["label"] not in LABELS or not valid_login(entry["by"]):
        return None
    return HumanLabel(id=entry["id"], side=entry["side"], label=entry["label"], by=entry["by"],
                      suite=suite)


def block(labels: Iterable[HumanLabel]) -> str:
    """The labels as zlib-compressed JSON (a block of plain JSON, as earlier versions wrote
    it, is read too)."""
    data = [{"suite": one.suite, "id": one.id, "side": one.side, "label": one.label, "by": one.by}
            for one in labels]
    return hidden_block("labels", data)


# What a block that this module did not write may raise on the way to its JSON.
UNREADABLE = (binascii.Error, zlib.error, UnicodeDecodeError, ValueError, RecursionError)


def hidden_block(name: str, data: object) -> str:
    """`data` as a hidden comment block: JSON, zlib-compressed, URL-safe base64."""
    packed = zlib.compress(json.dumps(data, ensure_ascii=False).encode("utf-8"), 9)
    return f"<!-- flipgate:{name}={base64.urlsafe_b64encode(packed).decode('ascii')} -->"


def decoded_block(encoded: str) -> object:
    """A hidden block's data (raises one of UNREADABLE when it is not one written here)."""
    return json.loads(_unpacked(base64.urlsafe_b64decode(encoded.encode("ascii"))))


def _unpacked(data: bytes) -> str:
    """A block's JSON text: as it is when it starts as JSON does, else inflated, at most
    _INFLATED bytes (more is not a block this module wrote)."""
    if data[:1] == b"[":
        return data.decode("utf-8")
    inflater = zlib.decompressobj()
    raw = inflater.decompress(data, _INFLATED)
    if inflater.unconsumed_tail or not inflater.eof:
        raise ValueError("the block inflates past its bound")
    return raw.decode("utf-8")


def without_block(body: str) -> str:
    return _BLOCK.sub("", body)


def latest(labels: Iterable[HumanLabel]) -> list[HumanLabel]:
    """One label per answer: the last one given wins, in the order first given."""
    kept: dict[tuple[str | None, str, str], HumanLabel] = {}
    for one in labels:
        kept.pop(one.key, None)
        kept[one.key] = one
    return list(kept.values())


def fits(labels: Sequence[HumanLabel]) -> bool:
    return len(block(labels)) <= BLOCK_ROOM


# -- what is written and shown -----------------------------------------------------------

def jsonl(labels: Iterable[HumanLabel], readings: Mapping[Key, Reading] | None = None) -> str:
    """labels.jsonl, in the labels format `flipgate calibrate --labels` reads (`by` is extra),
    with the row's `category` and the judge's bucket (`judge_label`) where the run's
    readings have the answer: calibrate then needs no report.json."""
    lines = []
    for one in labels:
        entry: dict[str, object] = {"id": one.id, "suite": one.suite, "side": one.side,
                                    "label": one.label, "by": one.by}
        reading = (readings or {}).get(one.key)
        if reading is not None:
            entry |= {"category": reading.category, "judge_label": reading.bucket}
        lines.append(json.dumps(entry, ensure_ascii=False) + "\n")
    return "".join(lines)


# -- the run's readings ------------------------------------------------------------------

Key = tuple[str | None, str, str]  # (suite, id, side)
_READINGS = re.compile(r"<!-- flipgate:readings=([A-Za-z0-9_=-]*) -->")
_RANK = {verdict: rank for rank, verdict in enumerate(Verdict)}
# A readings block never inflates past this (it holds at most READINGS_ROOM of base64).
_INFLATED = 1_000_000
# More than READINGS_ROOM could ever hold, however well ids compress.
_MOST_READINGS = 4_000


@dataclass(frozen=True)
class Reading:
    """What the judge said of one answer of the run, and the row's category."""

    category: str
    bucket: str


def readings_of(report: Report | None) -> dict[Key, Reading]:
    """Every judged answer of the report (by suite), flipped rows first in the verdicts'
    order, as calibrate's template orders them."""
    if report is None:
        return {}
    parts: list[tuple[str | None, list[Row]]] = (
        [(part.name, part.report.rows) for part in report.suites] or [(None, report.rows)])
    rows = sorted(((suite, row) for suite, rows in parts for row in rows),
                  key=lambda pair: _RANK.get(pair[1].verdict, len(_RANK)))
    found: dict[Key, Reading] = {}
    for suite, row in rows:
        for side in SIDES:
            bucket = getattr(row, side).bucket
            if bucket is not None:
                found[(suite, row.id, side)] = Reading(category=row.category, bucket=bucket.value)
    return found


def readings_block(readings: Mapping[Key, Reading]) -> str:
    """The hidden block of as many readings as READINGS_ROOM holds, first ones first."""
    items = list(readings.items())[:_MOST_READINGS]
    count = len(items)
    while True:
        data = [[suite, case_id, side, one.category, one.bucket]
                for (suite, case_id, side), one in items[:count]]
        text = hidden_block("readings", data)
        if len(text) <= READINGS_ROOM or count == 0:
            return text
        count = count * READINGS_ROOM // len(text) if count > 1 else 0


def with_readings(body: str, readings: Mapping[Key, Reading]) -> str:
    """`body` with its readings block replaced by these."""
    bare = _READINGS.sub("", body).rstrip("\n")
    return f"{bare}\n{readings_block(readings)}\n" if readings else bare + "\n"


def read_readings(body: str) -> dict[Key, Reading]:
    """The readings a comment keeps; none when the block is missing or not one this module
    wrote (a field of the wrong shape, a bucket that is not one)."""
    found = _READINGS.findall(body)
    if len(found) != 1:
        return {}
    try:
        data = decoded_block(found[0])
    except UNREADABLE:
        return {}
    if not isinstance(data, list):
        return {}
    readings: dict[Key, Reading] = {}
    for entry in data:
        if not (isinstance(entry, list) and len(entry) == 5):
            return {}
        suite, case_id, side, category, bucket = entry
        if not ((suite is None or valid_id(suite)) and valid_id(case_id) and side in SIDES
                and valid_id(category) and bucket in LABELS):
            return {}
        readings[(suite, case_id, side)] = Reading(category=category, bucket=bucket)
    return readings


def by_row(labels: Iterable[HumanLabel]) -> dict[tuple[str | None, str], tuple[str, ...]]:
    """What each row shows, by (suite, id): `labelled LABEL by @USER` per labelled side."""
    shown: dict[tuple[str | None, str], tuple[str, ...]] = {}
    for one in labels:
        shown[(one.suite, one.id)] = (*shown.get((one.suite, one.id), ()), one.shown())
    return shown


# -- the comment's labels section ------------------------------------------------------

# A row's label as a table cell shows it (the comment's row templates write the same).
ROW_TAG = " · 🏷️ "
_ROW_TAG = re.compile(re.escape(ROW_TAG) + r"[^|]*?(?= \|)")
# An id cell linked to its row of report.html: `[escaped id](url)` (the escaped id holds no
# bare `]`, the URL no `)` or space).
_LINKED_ID = re.compile(r"\[((?:\\.|[^\\\]])*)\]\([^\s()]*\)")
# The comment's id cells hold at most this many characters of the id (Cells.id).
_ID_CELL = 80
TAG_ROOM = 6_000

SECTION_START = "<!-- flipgate:labels-section -->"
SECTION_END = "<!-- flipgate:labels-section-end -->"
SECTION_ROOM = 6_000
# What labels add to a comment at most: the hidden block and the visible section.
LABELS_ROOM = BLOCK_ROOM + READINGS_ROOM + SECTION_ROOM + TAG_ROOM


def section(labels: Sequence[HumanLabel]) -> str:
    """The comment's list of labels, one line a row: `id` — labelled LABEL by @USER."""
    if not labels:
        return ""
    head = "### 🏷️ Labels\n\n"
    tail = (f"\nEvery label is in `{LABELS_FILE}` of the run's artifact `{ARTIFACT_NAME}`, "
            "with the judge's reading of each: `flipgate calibrate --labels` reads it alone.\n")
    lines = []
    room = SECTION_ROOM - len(SECTION_START) - len(SECTION_END) - len(head) - len(tail) - 80
    for key, texts in by_row(labels).items():
        suite, case_id = key
        name = f"{suite}/{case_id}" if suite else case_id
        line = f"- `{shown(name)}` — {'; '.join(escape_md(text) for text in texts)}\n"
        if len(line) > room:
            lines.append(f"- … and more ({len(labels):,} labels in all)\n")
            break
        room -= len(line)
        lines.append(line)
    return f"{SECTION_START}\n{head}{''.join(lines)}{tail}{SECTION_END}"


_SECTION = re.compile(re.escape(SECTION_START) + r".*?" + re.escape(SECTION_END), re.DOTALL)


def with_labels(body: str, labels: Sequence[HumanLabel]) -> str:
    """`body` with its labels section and hidden block replaced by these (none: removed)."""
    bare = _SECTION.sub("", without_block(body)).rstrip("\n")
    if not labels:
        return bare + "\n"
    return f"{bare}\n\n{section(labels)}\n{block(labels)}\n"


def on_rows(body: str, labels: Sequence[HumanLabel]) -> str:
    """`body` with each labelled row's id cell saying who labelled it (`labelled LABEL by
    @USER`), for the label command, which edits the comment without re-rendering it. Tags
    from before are taken off first; rows whose id cell was shortened are left as they are,
    and tagging stops at TAG_ROOM characters (the Labels section lists every label)."""
    shown_by_id: dict[str, list[str]] = {}
    for (_, case_id), texts in by_row(labels).items():
        shown_by_id.setdefault(cell(case_id, _ID_CELL), []).extend(texts)
    room = TAG_ROOM
    lines = []
    for line in body.split("\n"):
        if line.startswith("| ") and ROW_TAG in line:
            line = _ROW_TAG.sub("", line)
        first = line[2:].split(" | ", 1)[0] if line.startswith("| ") else None
        linked = _LINKED_ID.fullmatch(first) if first is not None else None
        given = shown_by_id.get(linked.group(1) if linked else first) if first is not None else None
        if given and first is not None:
            tag = ROW_TAG + cell_list(given, 120, 4, "; ")
            if len(tag) <= room:
                room -= len(tag)
                line = f"| {first}{tag}{line[2 + len(first):]}"
        lines.append(line)
    return "\n".join(lines)
