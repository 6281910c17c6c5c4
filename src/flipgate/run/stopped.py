"""A run stopped part way (a rate limit past `judge.max_wait`, the budget, a spent daily
quota): the rows it finished are kept as a full run reports them, the rest are `not_run`
rows (a kind in `gate.KINDS`), and the notes say how far it got.

A row is finished when its verdict is settled: both answers' groundedness, the
confirmation a flip needs and its statements. Relevance and fluency are kept where they
came back before the stop; neither decides a verdict. The run still concludes `error`
(exit 3): a stopped run never passes, and never blocks on its finished rows alone
(`gate.conclude`), though a confirmed blocking regression among them is listed as one.
"""

from __future__ import annotations

from collections.abc import Sequence

from flipgate.errors import IncompleteError
from flipgate.llm.budget import BudgetExceeded
from flipgate.llm.pacing import PauseTooLong
from flipgate.model import Case, Evidence, Row, Score, Verdict
from flipgate.text.escaping import plural
from flipgate.verdict import gate


class StoppedPartWay(IncompleteError):
    """The stop that ended a run's scoring, with the rows it had finished (in the cases'
    order): `cause` is the error that stopped it, and its message is the cause's."""

    def __init__(self, cause: IncompleteError, rows: Sequence[Row]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.rows = list(rows)

    def with_rows(self, rows: Sequence[Row]) -> StoppedPartWay:
        """The same stop, with rows settled beside the scoring (a generator's errors)."""
        return StoppedPartWay(self.cause, [*self.rows, *rows])


def cause_of(stopped: BaseException) -> BaseException:
    return stopped.cause if isinstance(stopped, StoppedPartWay) else stopped


def rate_limited(stopped: BaseException) -> bool:
    """Did a provider's rate limit stop the run (a pause past `judge.max_wait`, or a 429
    still refused after it)?"""
    cause = cause_of(stopped)
    return isinstance(cause, PauseTooLong) or "HTTP 429" in str(cause)


def why_not_run(stopped: BaseException) -> str:
    """What a `not_run` row says of itself: which stop kept it from being scored."""
    cause = cause_of(stopped)
    if rate_limited(cause):
        return "the run stopped on the provider's rate limit before this row was scored"
    if isinstance(cause, BudgetExceeded):
        return "the run stopped at its budget before this row was scored"
    return "the run stopped before this row was scored"


def _no_evidence(case: Case, response: str) -> Evidence:
    return Evidence()


def not_run_row(case: Case, why: str) -> Row:
    """A case the run did not finish: neither a pass nor a flip (`gate.build_row`)."""
    side = gate.side("", Score.failed(why), not_run=why)
    return gate.build_row(case, side, side, blocking_categories=(), threshold=0.0,
                          find_evidence=_no_evidence)


def _cut_by_the_limit(row: Row) -> bool:
    """A row whose only judge errors are 429s refused past `judge.max_wait` (the requests
    just before the stop): not scored, rather than a judge error of its own."""
    return row.verdict is Verdict.ERROR and bool(row.errors) and all(
        "HTTP 429" in error for error in row.errors)


def kept_rows(cases: Sequence[Case], stopped: BaseException) -> list[Row]:
    """Every case's row after a stop: the finished one as scored, else a `not_run` row (so
    is a row a rate limit's last refusals left with judge errors alone)."""
    limit = rate_limited(stopped)
    finished = {row.id: row for row in
                (stopped.rows if isinstance(stopped, StoppedPartWay) else [])
                if not (limit and _cut_by_the_limit(row))}
    why = why_not_run(stopped)
    return [finished.get(case.id) or not_run_row(case, why) for case in cases]


def progress_note(rows: Sequence[Row]) -> str:
    """How far a stopped run got, for its notes: rows finished, rows not run, and what of the
    finished rows' relevance and fluency did not come back."""
    missing = sum(1 for row in rows if row.verdict is Verdict.NOT_RUN)
    done = [row for row in rows if row.verdict is not Verdict.NOT_RUN]
    note = (f"{len(done):,} of {plural(len(rows), 'row')} finished before the stop and are "
            f"reported as a full run reports them; {missing:,} "
            f"{'was' if missing == 1 else 'were'} not run (listed as not run).")
    unmeasured = sum(1 for row in done if row.baseline.relevance is None
                     and row.candidate.relevance is None)
    if unmeasured:
        note += (f" Relevance did not come back for {plural(unmeasured, 'finished row')}: "
                 "no relevance drop is reported there.")
    if done and any(row.verdict is Verdict.REGRESSION for row in done):
        note += (" The finished rows' regressions are listed below; the run concludes error, "
                 "not blocked, until every row is scored.")
    return note
