"""calibrate reads its own figures: enough labels or not, why kappa is undefined, and whether
the judge may block on its own under the rule in calibration/reading.py."""

from __future__ import annotations

import pytest

from flipgate.calibration.agreement import Figures, empty_confusion, wilson
from flipgate.calibration.reading import MIN_PRECISION, Verdict, lines, more_labels, read


def figures(*cells: tuple[str, str, int]) -> Figures:
    confusion = empty_confusion()
    for judge, person, count in cells:
        confusion[judge][person] += count
    return Figures(confusion)


@pytest.mark.parametrize(("given", "verdict"), [
    # Three labels, all agreeing: far from enough to decide.
    (figures(("ungrounded", "ungrounded", 1), ("grounded", "grounded", 2)), Verdict.UNDECIDED),
    # 40 of 42 blocks right, kappa high: may block.
    (figures(("ungrounded", "ungrounded", 40), ("ungrounded", "grounded", 2),
             ("grounded", "grounded", 60)), Verdict.MAY_BLOCK),
    # Half its blocks wrong: even the interval's upper end is under the threshold.
    (figures(("ungrounded", "ungrounded", 5), ("ungrounded", "grounded", 5),
             ("grounded", "grounded", 10)), Verdict.MAY_NOT),
    # Its blocks are right, but it calls ungrounded what people call partial and grounded.
    (figures(("ungrounded", "ungrounded", 60), ("grounded", "partial", 30),
             ("partial", "grounded", 30), ("grounded", "grounded", 10)), Verdict.MAY_NOT),
    # No answer the judge called ungrounded was labelled: nothing to say about its blocks.
    (figures(("grounded", "grounded", 10)), Verdict.UNDECIDED),
])
def test_the_verdict_under_the_rule(given: Figures, verdict: Verdict) -> None:
    assert read(given).verdict is verdict


def test_three_labels_are_far_too_few_and_the_reading_says_how_many_more() -> None:
    reading = read(figures(("ungrounded", "ungrounded", 1), ("grounded", "grounded", 2)))
    assert reading.enough.startswith("Far too few labels: 3 labelled answers")
    assert reading.more_labels is not None
    # The count is the first that clears the threshold at the rate so far (1 of 1: all right).
    total = 1 + reading.more_labels
    lower = wilson(total, total)
    before = wilson(total - 1, total - 1)
    assert lower is not None and before is not None
    assert lower[0] >= MIN_PRECISION > before[0]
    assert f"about {reading.more_labels} more labelled answers" in reading.why


def test_a_kappa_of_one_bucket_says_why_it_is_undefined() -> None:
    reading = read(figures(("grounded", "grounded", 10)))
    assert reading.kappa is not None and "both use one bucket only (`grounded`)" in reading.kappa
    assert read(figures(("ungrounded", "grounded", 3), ("grounded", "grounded", 3))).kappa is None


def test_enough_labels_read_as_enough() -> None:
    many = figures(("ungrounded", "ungrounded", 200), ("grounded", "grounded", 200),
                   ("ungrounded", "grounded", 5))
    assert read(many).enough.startswith("Enough labels to read")


def test_a_rate_on_the_threshold_is_never_decided() -> None:
    assert more_labels(8, 10, above=True) is None
    reading = read(figures(("ungrounded", "ungrounded", 8), ("ungrounded", "grounded", 2),
                           ("grounded", "grounded", 10)))
    assert reading.verdict is Verdict.UNDECIDED and reading.more_labels is None
    assert "no number of labels would decide it" in reading.why


def test_the_verdict_comes_first() -> None:
    reading = read(figures(("grounded", "grounded", 10)))
    assert lines(reading)[0] == reading.why and reading.kappa in lines(reading)
