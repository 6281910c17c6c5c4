"""What every judge backend offers the scorer (scoring.py).

A backend never raises for a bad or failed judgement: it returns a `Score`
or `Relevance` whose `error` says what went wrong, so one broken row never
takes the run down and never turns into a score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from flipgate.model import Case, JudgeInfo, Relevance, Score, Statements

# An empty or whitespace-only answer is a non-answer (3) without asking any
# judge: a judge with nothing to score must never turn into a skip or a pass.
EMPTY_ANSWER = Score(value=3, reason="empty answer: nothing to ground, counted as a non-answer "
                                     "without asking the judge")

# Bumped whenever a rubric's wording changes, to say so in the report. The
# version and a hash of the rubric's text are both part of every judge
# request's cache key, so cached verdicts of another rubric are never reused.
RUBRIC_VERSION = "2026-12-01.1"


class Judge(Protocol):
    @property
    def info(self) -> JudgeInfo:
        """What report.json pins about this judge."""
        ...

    async def groundedness(self, case: Case, response: str, *, sample: int = 0) -> Score:
        """1-5 groundedness of `response` against `case.context`, with the query.

        `sample` distinguishes independent scorings of the same answer: the
        confirming re-score uses sample=1 and must reach the judge again.
        """
        ...

    async def statements(self, case: Case, response: str) -> Statements:
        """The answer split into atomic statements, each labelled against the context.

        Asked only for flipped rows. Every statement's text must be in the answer,
        else the result is a judge error (`Statements.error`), never evidence.
        """
        ...

    async def fluency(self, response: str) -> Score:
        """1-5 fluency; consulted only on tied rows, never a vote."""
        ...

    async def relevance(self, items: Sequence[tuple[Case, str]]) -> list[Relevance]:
        """Relevance of each (case, response), in order, batching the work of the whole run."""
        ...

    async def probe(self) -> None:
        """One cheap request that proves the key, the endpoint and the models; raises
        `flipgate.llm.failures.ProviderError` (the run stops) when no retry could help."""
        ...

    async def aclose(self) -> None:
        ...


@runtime_checkable
class ReadsPairs(Protocol):
    """A judge that reads a candidate beside its baseline (the offline judge): what the
    candidate says that the baseline did not decides the flip, so a misreading both sides
    share is none. The scorer asks this for the candidate's groundedness and re-score."""

    async def groundedness_beside(self, case: Case, response: str, baseline: str) -> Score:
        ...
