"""Calibration: the judge's buckets against a person's labels, with error bars.

Pure functions only: `read_report_sides` and `read_labels` turn the two
files' text into values (every problem with its file and line), `calibrate`
computes the figures, `template_lines` writes a labels file to fill in.
An answer is keyed by its suite, its case id and its side everywhere: two
suites may share a case id.

The figures, per category and overall, each with the counts behind it:

* the confusion matrix judge bucket x human label;
* agreement (share of sides where both say the same bucket) with a 95%
  Wilson interval;
* Cohen's kappa: agreement corrected for the agreement two raters with the
  same bucket frequencies would reach by chance;
* precision and recall of the judge's `ungrounded`, the verdict that blocks:
  of the sides the judge called ungrounded, how many a person agrees are;
  of the sides a person calls ungrounded, how many the judge caught. Each
  with its 95% Wilson interval.

A rate with nothing behind it (no side the judge called ungrounded, say) is
null, never 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flipgate.config.cases import json_objects
from flipgate.errors import InputError, Problem
from flipgate.model import Bucket, Verdict
from flipgate.output.report import read_report_json

SIDES = ("baseline", "candidate")
BUCKETS = tuple(bucket.value for bucket in Bucket)
UNGROUNDED = Bucket.UNGROUNDED.value
# The normal quantile for a two-sided 95% interval.
Z_95 = 1.959963984540054
# The template lists rows a person should label first: flips, then the rest, in the
# verdicts' own order.
_TEMPLATE_RANK = {verdict.value: rank for rank, verdict in enumerate(Verdict)}


@dataclass(frozen=True)
class JudgedSide:
    """One answer the judge put in a bucket, as report.json records it."""

    id: str
    side: str
    category: str
    bucket: str
    verdict: str
    suite: str | None = None

    @property
    def key(self) -> tuple[str | None, str, str]:
        return (self.suite, self.id, self.side)


@dataclass(frozen=True)
class Label:
    id: str
    side: str
    label: str | None  # None: not labelled yet (a template line left as it was)
    line: int
    suite: str | None = None
    # What the line says of the judge (a template's, or the action's labels.jsonl), read
    # only when calibrate is given no report.
    judge_label: str | None = None
    category: str | None = None

    @property
    def key(self) -> tuple[str | None, str, str]:
        return (self.suite, self.id, self.side)


def wilson(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a binomial rate; None when there is no trial."""
    if n <= 0:
        return None
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def cohens_kappa(confusion: Mapping[str, Mapping[str, int]]) -> float | None:
    """Cohen's kappa of a square confusion matrix; None when chance agreement is total."""
    n = sum(sum(row.values()) for row in confusion.values())
    if n == 0:
        return None
    observed = sum(confusion[b][b] for b in BUCKETS) / n
    judge_share = {b: sum(confusion[b].values()) / n for b in BUCKETS}
    human_share = {b: sum(confusion[j][b] for j in BUCKETS) / n for b in BUCKETS}
    expected = sum(judge_share[b] * human_share[b] for b in BUCKETS)
    if expected >= 1:
        return None  # both raters used one and the same bucket only
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class Rate:
    """A rate with its counts and its 95% Wilson interval."""

    hits: int
    n: int

    @property
    def value(self) -> float | None:
        return self.hits / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.hits, self.n)


@dataclass(frozen=True)
class Figures:
    """Calibration figures for one group of labelled sides."""

    confusion: dict[str, dict[str, int]]

    @property
    def n(self) -> int:
        return sum(sum(row.values()) for row in self.confusion.values())

    @property
    def agreement(self) -> Rate:
        return Rate(sum(self.confusion[b][b] for b in BUCKETS), self.n)

    @property
    def kappa(self) -> float | None:
        return cohens_kappa(self.confusion)

    @property
    def precision(self) -> Rate:
        """Of the judge's `ungrounded`, the share a person also calls ungrounded."""
        return Rate(self.confusion[UNGROUNDED][UNGROUNDED], sum(self.confusion[UNGROUNDED].values()))

    @property
    def recall(self) -> Rate:
        """Of a person's `ungrounded`, the share the judge also called ungrounded."""
        return Rate(self.confusion[UNGROUNDED][UNGROUNDED],
                    sum(self.confusion[j][UNGROUNDED] for j in BUCKETS))


def empty_confusion() -> dict[str, dict[str, int]]:
    return {judge: dict.fromkeys(BUCKETS, 0) for judge in BUCKETS}


@dataclass
class Calibration:
    overall: Figures
    per_category: dict[str, Figures]
    labelled: int
    unlabelled: int = 0
    unscored: list[str] = field(default_factory=list)  # "id/side" the judge gave no bucket


def calibrate(sides: Sequence[JudgedSide], labels: Sequence[Label], *,
              labels_source: str = "labels") -> Calibration:
    """Pair every label with the judge's bucket for the same answer, and count."""
    judged = {s.key: s for s in sides}
    known_rows = {(s.suite, s.id) for s in sides}
    suites_of: dict[str, set[str | None]] = {}
    for s in sides:
        suites_of.setdefault(s.id, set()).add(s.suite)
    problems: list[Problem] = []
    overall = empty_confusion()
    per_category: dict[str, dict[str, dict[str, int]]] = {}
    unlabelled = 0
    unscored: list[str] = []
    labelled = 0
    for label in labels:
        if label.label is None:
            unlabelled += 1
            continue
        suite = label.suite
        if suite is None and None not in suites_of.get(label.id, {None}):
            # A label without its suite, for a report with suites: the id must say which.
            owners = sorted(name for name in suites_of[label.id] if name is not None)
            if len(owners) > 1:
                problems.append(Problem(labels_source, label.line,
                                        f"id {label.id!r} is a case of several suites "
                                        f"({', '.join(owners)}): name its \"suite\""))
                continue
            suite = owners[0]
        side = judged.get((suite, label.id, label.side))
        if side is None:
            if (suite, label.id) in known_rows:
                unscored.append("/".join(part for part in (suite, label.id, label.side) if part))
                continue  # the judge erred on this side
            where = f" of suite {suite!r}" if suite is not None else ""
            problems.append(Problem(labels_source, label.line,
                                    f"id {label.id!r}{where} is not a row of the report"))
            continue
        labelled += 1
        overall[side.bucket][label.label] += 1
        category = per_category.setdefault(side.category, empty_confusion())
        category[side.bucket][label.label] += 1
    if problems:
        raise InputError(problems)
    if not labelled:
        raise InputError(Problem(labels_source, None,
                                 "no labelled answer to compare with the judge (every label is "
                                 "empty, or names an answer the judge could not score)"))
    return Calibration(overall=Figures(overall),
                       per_category={name: Figures(c) for name, c in sorted(per_category.items())},
                       labelled=labelled, unlabelled=unlabelled, unscored=unscored)


# --- reading the files ----------------------------------------------------------

def read_report_sides(data: bytes | str, *, source: str) -> list[JudgedSide]:
    """Every answer the report's judge put in a bucket (sides with a judge error are left out)."""
    rows = read_report_json(data, source=source)["rows"]
    sides: list[JudgedSide] = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise InputError(Problem(source, None, f"rows[{index}] has no string 'id'"))
        category = found if isinstance(found := row.get("category"), str) else "uncategorized"
        suite = row.get("suite")
        if suite is not None and not isinstance(suite, str):
            raise InputError(Problem(source, None, f"rows[{index}].suite must be a string"))
        for name in SIDES:
            side = row.get(name)
            bucket = side.get("bucket") if isinstance(side, dict) else None
            if bucket in BUCKETS:
                sides.append(JudgedSide(id=row["id"], side=name, category=category, bucket=bucket,
                                        verdict=str(row.get("verdict", "")), suite=suite))
    return sides


def read_labels(data: bytes | str, *, source: str) -> list[Label]:
    """The labels file: `{"id", "side", "label"}` a line, and `suite` when the report has
    suites; other fields (a template's query, context, answer) are ignored. An empty label
    is not labelled yet."""
    problems: list[Problem] = []
    labels: list[Label] = []
    seen: dict[tuple[str | None, str, str], int] = {}
    for number, value in json_objects(data, source, problems):
        row_id, side, label = value.get("id"), value.get("side"), value.get("label")
        suite = value.get("suite")
        if not isinstance(row_id, str) or not row_id:
            problems.append(Problem(source, number, "field 'id' must be a non-empty string"))
            continue
        if suite is not None and (not isinstance(suite, str) or not suite):
            problems.append(Problem(source, number, "field 'suite' must be a suite's name or null"))
            continue
        if side not in SIDES:
            problems.append(Problem(source, number, "field 'side' must be \"baseline\" or \"candidate\""))
            continue
        if label == "":
            label = None
        if label is not None and label not in BUCKETS:
            problems.append(Problem(source, number, f"field 'label' must be one of {', '.join(BUCKETS)} "
                                                    "(or null while not labelled yet)"))
            continue
        key = (suite, row_id, side)
        if key in seen:
            shown = "/".join(part for part in key if part)
            problems.append(Problem(source, number, f"{shown} is labelled twice "
                                                    f"(first on line {seen[key]})"))
            continue
        seen[key] = number
        judge_label, category = value.get("judge_label"), value.get("category")
        labels.append(Label(id=row_id, side=side, label=label, line=number, suite=suite,
                            judge_label=judge_label if judge_label in BUCKETS else None,
                            category=category if isinstance(category, str) else None))
    if problems:
        raise InputError(problems)
    if not labels:
        raise InputError(Problem(source, None, "is empty: expected one label per line"))
    return labels


def sides_of_labels(labels: Sequence[Label], *, source: str) -> list[JudgedSide]:
    """Without a report: the judge's bucket of each labelled answer as its line carries it
    (`judge_label`, and `category`), so one labels.jsonl is enough. A labelled line without
    one is bad input naming its line."""
    problems: list[Problem] = []
    sides: list[JudgedSide] = []
    for label in labels:
        if label.label is None:
            continue
        if label.judge_label is None:
            problems.append(Problem(source, label.line,
                                    "no \"judge_label\" (the judge's bucket): give the run's "
                                    "report with --report"))
            continue
        sides.append(JudgedSide(id=label.id, side=label.side, bucket=label.judge_label,
                                category=label.category or "uncategorized", verdict="",
                                suite=label.suite))
    if problems:
        raise InputError(problems)
    return sides


@dataclass(frozen=True)
class Answered:
    """What a labeller reads for one row: the case and both answers (answers.jsonl)."""

    query: str
    context: str
    baseline: str
    candidate: str


def read_answers(data: bytes | str, *, source: str) -> dict[tuple[str | None, str], Answered]:
    """answers.jsonl (written beside report.json): the query, context and answers by
    (suite, id)."""
    problems: list[Problem] = []
    found: dict[tuple[str | None, str], Answered] = {}
    for number, value in json_objects(data, source, problems):
        fields = [value.get(name) for name in ("id", "query", "context", "baseline", "candidate")]
        texts = [item for item in fields if isinstance(item, str)]
        suite = value.get("suite")
        if len(texts) != len(fields) or not (suite is None or isinstance(suite, str)):
            problems.append(Problem(source, number, "expected {\"id\", \"suite\", \"query\", "
                                                    "\"context\", \"baseline\", \"candidate\"} "
                                                    "(strings; suite may be null)"))
            continue
        found[(suite, texts[0])] = Answered(*texts[1:])
    if problems:
        raise InputError(problems)
    return found


def template_lines(sides: Sequence[JudgedSide],
                   answers: Mapping[tuple[str | None, str], Answered] | None = None) -> list[str]:
    """A labels file to fill in, one line per judged answer, flipped rows first: what the
    labeller needs (the query, the context, the answer; null where the run's answers.jsonl
    is missing) and the judge's reading (`judge_label`), with `label` null to fill in."""
    ordered = sorted(enumerate(sides), key=lambda pair: (
        _TEMPLATE_RANK.get(pair[1].verdict, len(_TEMPLATE_RANK)), pair[0]))
    lines = []
    for _, s in ordered:
        answered = (answers or {}).get((s.suite, s.id))
        lines.append(json.dumps({
            "id": s.id, "suite": s.suite, "side": s.side, "category": s.category,
            "query": answered.query if answered else None,
            "context": answered.context if answered else None,
            "answer": getattr(answered, s.side) if answered else None,
            "judge_label": s.bucket, "label": None}, ensure_ascii=False))
    return lines


# --- output ---------------------------------------------------------------------

def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _interval(rate: Rate) -> list[float] | None:
    interval = rate.interval
    return None if interval is None else [round(interval[0], 4), round(interval[1], 4)]


def figures_to_dict(figures: Figures) -> dict[str, Any]:
    agreement, precision, recall = figures.agreement, figures.precision, figures.recall
    return {
        "n": figures.n,
        "agreement": _rounded(agreement.value),
        "agreement_ci": _interval(agreement),
        "agreed": agreement.hits,
        "kappa": _rounded(figures.kappa),
        "ungrounded_precision": _rounded(precision.value),
        "ungrounded_precision_ci": _interval(precision),
        "ungrounded_recall": _rounded(recall.value),
        "ungrounded_recall_ci": _interval(recall),
        "ungrounded_both": precision.hits,
        "ungrounded_by_judge": precision.n,
        "ungrounded_by_human": recall.n,
        "confusion": figures.confusion,
    }


def to_dict(result: Calibration) -> dict[str, Any]:
    return {
        "overall": figures_to_dict(result.overall),
        "per_category": {name: figures_to_dict(f) for name, f in result.per_category.items()},
        "confusion": result.overall.confusion,
        "labelled": result.labelled,
        "unlabelled": result.unlabelled,
        "unscored": list(result.unscored),
        "interval": "95% Wilson score interval",
    }
