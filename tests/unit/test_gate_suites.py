"""The aggregation rule of several suites (gate.worst, gate.add_counts)."""

from __future__ import annotations

import pytest

from flipgate.errors import EXIT_BLOCKED, EXIT_INCOMPLETE, EXIT_PASS
from flipgate.model import Conclusion, Counts
from flipgate.verdict import gate

E, F, S, K = Conclusion.ERROR, Conclusion.FAILURE, Conclusion.SUCCESS, Conclusion.SKIPPED


@pytest.mark.parametrize(("conclusions", "expected"), [
    ([S, S], S),
    ([S, K], S),          # a skipped suite does not hide a pass
    ([K, K], K),          # skipped only when no suite needed gating
    ([], K),
    ([S, F, K], F),       # one blocking suite blocks the run
    ([F, E], E),          # one unfinished suite makes the run unfinished, as in one suite
    ([K, E], E),
])
def test_the_run_concludes_with_its_worst_suite(conclusions, expected) -> None:
    assert gate.worst(conclusions) is expected
    assert gate.worst(reversed(conclusions)) is expected


@pytest.mark.parametrize(("conclusions", "code"), [
    ([S, K], EXIT_PASS), ([S, F], EXIT_BLOCKED), ([F, E], EXIT_INCOMPLETE), ([K, K], EXIT_PASS)])
def test_the_exit_code_is_the_worst_across_suites(conclusions, code) -> None:
    assert gate.exit_code(gate.worst(conclusions)) == code


def test_counts_add_up_field_by_field() -> None:
    first = Counts(cases=3, blocking_regressions=1, moved=2, held_back=2)
    second = Counts(cases=4, errors=1, moved=1, held_back=1)
    total = gate.add_counts([first, second])
    assert total.cases == 7 and total.blocking_regressions == 1
    assert total.moved == 3 and total.errors == 1 and total.held_back == 3
    assert set(total) == {"cases", *(kind.count_field for kind in gate.KINDS), gate.HELD_BACK}
    assert gate.conclude(total) is E  # the aggregate concludes as one run would
    assert gate.add_counts([]).cases == 0
