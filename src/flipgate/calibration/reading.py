"""What calibration's figures mean: are the labels enough, why is a kappa undefined, and
may this judge block on its own under the rule below (docs/labelling.md).

The rule: the judge may block on its own when, on the labelled answers,

* the 95% Wilson lower bound of the precision of its `ungrounded` (of the answers it
  called ungrounded, the share a person agrees are) is at least MIN_PRECISION, so a block
  is right at least that often; and
* Cohen's kappa is at least MIN_KAPPA (agreement well beyond chance over every bucket).

It may not when the precision's upper bound is below MIN_PRECISION (more labels at this
rate would not change that) or kappa is below MIN_KAPPA on enough labels; otherwise
the labels do not decide it yet, and `more_labels` says how many more answers the judge
called ungrounded would decide it if the rate so far holds.

Pure: figures in, sentences out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from flipgate.calibration.agreement import BUCKETS, Figures, wilson

MIN_PRECISION = 0.80
MIN_KAPPA = 0.60
# How wide the agreement's 95% interval may be for a reading (in points of a share).
FAR_TOO_WIDE, TOO_WIDE = 0.30, 0.10
# Kappa below MIN_KAPPA says "may not" only on at least this many labels.
KAPPA_LABELS = 30
# The most labels `more_labels` looks for before it says no number would decide.
_SEARCH = 100_000


class Verdict(StrEnum):
    MAY_BLOCK = "may block on its own"
    MAY_NOT = "may not block on its own"
    UNDECIDED = "not decided yet"


@dataclass(frozen=True)
class Reading:
    enough: str           # whether the labels are enough: the interval's width
    kappa: str | None     # why kappa is undefined (None: it is defined)
    verdict: Verdict
    why: str              # the verdict in a sentence, under the rule
    more_labels: int | None = None  # more judge-ungrounded answers to label that would decide


def enough(figures: Figures) -> str:
    interval = figures.agreement.interval
    if interval is None:
        return "No labelled answer: nothing can be read yet."
    width = interval[1] - interval[0]
    points = f"{width * 100:.0f} points"
    if width > FAR_TOO_WIDE:
        return (f"Far too few labels: {figures.n:,} labelled answers leave the agreement's "
                f"95% interval {points} wide; a reading needs it under {TOO_WIDE * 100:.0f}.")
    if width > TOO_WIDE:
        return (f"Too few labels to be sure: the agreement's 95% interval is {points} wide "
                f"on {figures.n:,} labelled answers; under {TOO_WIDE * 100:.0f} it reads well.")
    return (f"Enough labels to read: the agreement's 95% interval is {points} wide on "
            f"{figures.n:,} labelled answers.")


def why_no_kappa(figures: Figures) -> str | None:
    if figures.kappa is not None:
        return None
    if figures.n == 0:
        return "Kappa is undefined: there is no labelled answer."
    used = [bucket for bucket in BUCKETS if figures.confusion[bucket][bucket]]
    only = used[0] if used else "one bucket"
    return (f"Kappa is undefined: the judge and the labels both use one bucket only "
            f"(`{only}`), so chance alone would agree on every answer; label answers of "
            "other buckets (the template lists flipped rows first).")


def more_labels(hits: int, n: int, *, above: bool) -> int | None:
    """How many more trials at the rate so far until the 95% interval clears MIN_PRECISION:
    its lower bound reaches it (`above`) or its upper bound falls below it. None when no
    number up to _SEARCH would."""
    if n == 0:
        return None
    rate = hits / n
    for extra in range(1, _SEARCH):
        total = n + extra
        interval = wilson(round(rate * total), total)
        assert interval is not None
        if (interval[0] >= MIN_PRECISION) if above else (interval[1] < MIN_PRECISION):
            return extra
    return None


def read(figures: Figures) -> Reading:
    kappa_note = why_no_kappa(figures)
    precision = figures.precision
    rule = (f"the rule: the precision of its `ungrounded` at least {MIN_PRECISION:.0%} at the "
            f"95% interval's lower end, and kappa at least {MIN_KAPPA:.2f}")
    base = Reading(enough=enough(figures), kappa=kappa_note, verdict=Verdict.UNDECIDED, why="")
    interval = precision.interval
    if interval is None:
        return _with(base, Verdict.UNDECIDED,
                     f"Not decided yet: no labelled answer is one the judge called ungrounded, so "
                     f"nothing says how often it blocks rightly ({rule}). Label answers it called "
                     "ungrounded: flipped rows come first in the template.")
    kappa = figures.kappa
    shown = f"{precision.value:.0%} ({precision.hits:,} of {precision.n:,}; 95% interval " \
            f"{interval[0]:.0%}–{interval[1]:.0%})"
    if interval[1] < MIN_PRECISION:
        return _with(base, Verdict.MAY_NOT,
                     f"This judge may not block on its own: its `ungrounded` is right {shown}, "
                     f"below {MIN_PRECISION:.0%} even at the interval's upper end ({rule}).")
    if kappa is not None and kappa < MIN_KAPPA and figures.n >= KAPPA_LABELS:
        return _with(base, Verdict.MAY_NOT,
                     f"This judge may not block on its own: kappa is {kappa:.2f} on "
                     f"{figures.n:,} labelled answers, below {MIN_KAPPA:.2f} ({rule}).")
    if interval[0] >= MIN_PRECISION and kappa is not None and kappa >= MIN_KAPPA:
        return _with(base, Verdict.MAY_BLOCK,
                     f"This judge may block on its own: its `ungrounded` is right {shown} and "
                     f"kappa is {kappa:.2f} ({rule}).")
    missing = []
    extra = None
    if interval[0] < MIN_PRECISION:
        rate = precision.hits / precision.n
        if rate != MIN_PRECISION:
            extra = more_labels(precision.hits, precision.n, above=rate > MIN_PRECISION)
        missing.append(f"its `ungrounded` is right {shown}, whose lower end is under "
                       f"{MIN_PRECISION:.0%}")
    if kappa is None:
        missing.append("kappa is undefined")
    elif kappa < MIN_KAPPA:
        missing.append(f"kappa is {kappa:.2f} on only {figures.n:,} labelled answers")
    if extra is not None:
        decide = (f" At the rate so far, about {extra:,} more labelled answers the judge called "
                  "ungrounded would decide it.")
    elif interval[0] < MIN_PRECISION:
        decide = (" At the rate so far, which sits on the threshold, no number of labels "
                  "would decide it.")
    else:
        decide = " Label more answers of other buckets to decide it."
    return _with(base, Verdict.UNDECIDED,
                 f"Not decided yet: {'; '.join(missing)} ({rule}).{decide}", extra)


def _with(base: Reading, verdict: Verdict, why: str, extra: int | None = None) -> Reading:
    return Reading(enough=base.enough, kappa=base.kappa, verdict=verdict, why=why,
                   more_labels=extra)


def lines(reading: Reading) -> list[str]:
    """The reading as the terminal and calibration.md say it, verdict first."""
    return [reading.why, reading.enough, *([reading.kappa] if reading.kappa else [])]


def to_dict(reading: Reading) -> dict[str, Any]:
    """calibration.json's `reading`."""
    return {"verdict": reading.verdict.value, "why": reading.why, "enough": reading.enough,
            "kappa_undefined": reading.kappa, "more_labels": reading.more_labels,
            "rule": {"min_precision_lower_bound": MIN_PRECISION, "min_kappa": MIN_KAPPA}}
