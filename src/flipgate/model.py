"""The value types every module shares: cases, judge readings, rows, the report.

They hold data only. Deciding (gate.py), scoring (scoring.py), rendering
(render.py) and serialising (report.py) live elsewhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Bucket(StrEnum):
    UNGROUNDED = "ungrounded"
    NON_ANSWER = "non_answer"
    PARTIAL = "partial"
    GROUNDED = "grounded"


class Verdict(StrEnum):
    REGRESSION = "regression"
    UNSTABLE = "unstable"
    NEW_NON_ANSWER = "new_non_answer"
    STILL_UNGROUNDED = "still_ungrounded"
    MOVED = "moved"
    UNCHANGED = "unchanged"
    ERROR = "error"
    NOT_JUDGED = "not_judged"  # a side the judge set aside (Score.set_aside)
    NOT_RUN = "not_run"  # the run stopped (a rate limit, the budget) before this row was scored


class Conclusion(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"
    SKIPPED = "skipped"
    # `gate.review: required` and flips the sample-size rule held back: a person decides.
    AWAITING_REVIEW = "awaiting_review"


@dataclass(frozen=True)
class Case:
    """One frozen case: the query and the exact context the generator saw."""

    id: str
    query: str
    context: str
    category: str = "uncategorized"
    ground_truth: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    line: int = 0  # where it stood in the cases file, for messages

    def template_vars(self) -> dict[str, Any]:
        """Every field of the case, as a generator template sees it."""
        variables: dict[str, Any] = dict(self.extra)
        variables.update(id=self.id, query=self.query, context=self.context,
                         category=self.category)
        if self.ground_truth is not None:
            variables["ground_truth"] = self.ground_truth
        return variables


@dataclass(frozen=True)
class Answer:
    """One generated (or recorded) answer to a case."""

    response: str
    finish_reason: str | None = None  # "length" means the generator was cut off


@dataclass(frozen=True)
class Score:
    """One judge reading: a 1-5 score, or, from a true/false instrument (the GroundednessPro
    second opinion), a `label` (True: grounded). Exactly one of the reading and `error` is set."""

    value: int | None
    reason: str = ""
    error: str | None = None
    label: bool | None = None
    # A reading of its own: the judge could not weigh this answer (the offline judge on an
    # answer too long or too far from its context to tell) and says so in `reason`. No
    # score, no error: the row is "not judged" (gate.classify), never a flip, never a pass.
    set_aside: bool = False

    @classmethod
    def failed(cls, error: str) -> Score:
        return cls(value=None, error=error)

    @classmethod
    def aside(cls, reason: str) -> Score:
        return cls(value=None, reason=reason, set_aside=True)

    @property
    def ok(self) -> bool:
        return self.value is not None or self.label is not None


@dataclass(frozen=True)
class Relevance:
    """Answer relevance: mean cosine of invented questions to the real query."""

    score: float | None
    questions: tuple[str, ...] = ()
    noncommittal: bool = False
    error: str | None = None


@dataclass(frozen=True)
class Evidence:
    """What a reviewer needs to see why a row moved: claims the context lacks."""

    unsupported_figures: tuple[str, ...] = ()
    unsupported_statements: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # e.g. "evidence cut at 20,000 characters"


class StatementLabel(StrEnum):
    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"
    NOT_A_CLAIM = "not_a_claim"


@dataclass(frozen=True)
class Statement:
    """One atomic statement of an answer, as written in it, judged against the context."""

    text: str
    label: StatementLabel
    span: str | None = None  # the context text that supports (unsupported: contradicts) it, verbatim


@dataclass(frozen=True)
class Statements:
    """An answer split into statements by a judge. `error` is set exactly when it failed:
    then there are no statements, and nothing here is evidence."""

    items: tuple[Statement, ...] = ()
    error: str | None = None

    @property
    def supported(self) -> int:
        return sum(1 for s in self.items if s.label is StatementLabel.SUPPORTED)

    @property
    def total(self) -> int:
        """The claims: statements that are not `not_a_claim`. The judge chose this denominator."""
        return sum(1 for s in self.items if s.label is not StatementLabel.NOT_A_CLAIM)

    @property
    def unsupported(self) -> tuple[Statement, ...]:
        return tuple(s for s in self.items if s.label is StatementLabel.UNSUPPORTED)


@dataclass
class Side:
    """Everything measured about one answer (baseline or candidate) of a row."""

    response: str
    groundedness: Score
    bucket: Bucket | None = None
    relevance: Relevance | None = None
    rescore: Score | None = None   # candidate only: the confirming second scoring
    fluency: Score | None = None   # only on tied rows
    finish_reason: str | None = None  # from replay; "length" means truncated
    second_opinion: Score | None = None  # candidate only: the second-opinion judge's scoring
    statements: Statements | None = None  # candidate only, on flipped rows
    manipulation: tuple[str, ...] = ()  # what in the answer addresses the grader
    generator_error: str | None = None  # the generator gave no answer: why (never judged)
    not_run: str | None = None  # the run stopped before this row was scored: why (run/stopped.py)


@dataclass
class Row:
    case: Case
    baseline: Side
    candidate: Side
    verdict: Verdict
    blocking: bool = False
    relevance_drop: bool = False
    errors: list[str] = field(default_factory=list)
    evidence: Evidence | None = None
    # For a regression: how it was confirmed (same_judge | second_opinion | both).
    confirmed_by: str | None = None
    # A regression in a blocking category that does not block: why (too few cases).
    review_reason: str | None = None

    @property
    def id(self) -> str:
        return self.case.id

    @property
    def category(self) -> str:
        return self.case.category


@dataclass(frozen=True)
class JudgeInfo:
    """The instrument behind every verdict of a run, pinned in the report."""

    provider: str          # openai | azure | offline
    model: str
    engine: str = "openai"  # openai | azure-ai-evaluation | lexical
    mode: str = "with_query"  # the groundedness rubric: with_query | without_query
    sdk: Mapping[str, str | None] | None = None  # the azure engine's package: {"name", "version"}
    embedding_model: str | None = None
    rubric_version: str | None = None
    rubric_hash: Mapping[str, str] = field(default_factory=dict)  # metric -> sha256 of its prompt
    # None: not sent (reasoning judges, the lexical judge). `int |` first, so a partial read
    # back by `merge` keeps the pinned 0 a 0 (the comment says `temperature 0`, never `0.0`).
    temperature: int | float | None = None
    seed: int | None = None
    rescore: str = "same_judge"       # how a flip is confirmed: same_judge | second_opinion | both
    second_opinion: str | None = None  # the second judge's model, when one confirms flips
    auth: str | None = "key"           # key | entra: how the judge signs in (None: no endpoint)
    returned_models: tuple[str, ...] = ()      # what the provider said answered
    system_fingerprints: tuple[str, ...] = ()

    @property
    def lexical(self) -> bool:
        return self.provider == "offline"


class Counts(Counter[str]):
    """How many rows of each kind, by the kind's count field (gate.KINDS names them),
    and `cases`. A field nobody counted is 0; fields read as attributes too."""

    def __getattr__(self, name: str) -> int:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]


@dataclass(frozen=True)
class FluencySummary:
    """Mean fluency change on tied rows: a tie-breaker shown last, never a vote."""

    rows: int
    mean_delta: float | None
    failed: int = 0
    skipped: int = 0  # tied rows not asked: the run blocked, so fluency could not matter


@dataclass(frozen=True)
class CategoryInfo:
    """A category's size in this run, and whether one judge may block in it."""

    cases: int
    blocking: bool
    below_minimum: bool
    minimum: int  # gate.min_cases_per_category


@dataclass(frozen=True)
class ParameterChange:
    """One model parameter whose value differs between the refs; None: unset on that side."""

    name: str
    old: Any
    new: Any


@dataclass(frozen=True)
class Change:
    """What the pull request changes about the generator, as the comment describes it."""

    generator: str
    files: tuple[str, ...] = ()
    model: tuple[str | None, str | None] = (None, None)   # (base, head); base None when adopting
    parameters: tuple[ParameterChange, ...] = ()
    template_diff: str = ""
    config_diff: str | None = None
    cases_diff: str | None = None


@dataclass(frozen=True)
class E2ERow:
    """One case of the end-to-end run: live retrieval, both versions, compared with the frozen run."""

    id: str
    category: str
    query: str
    frozen_verdict: Verdict
    e2e_verdict: Verdict | None      # None: live retrieval failed for this case
    drift: bool                      # the verdicts differ: look at retrieval first
    live_context: str | None
    context_changed: bool
    context_diff: str                # frozen vs live, '' when equal
    error: str | None = None


@dataclass
class E2EReport:
    """The end-to-end run: a section of the report and the comment; it never blocks."""

    rows: list[E2ERow]
    date: str                        # the day the live contexts are cached for (UTC)
    retrieval: str                   # what fetched them, e.g. "command `python r.py`"
    stopped: str | None = None       # why it could not finish, when it could not
    notes: list[str] = field(default_factory=list)

    @property
    def drift(self) -> list[E2ERow]:
        return [row for row in self.rows if row.drift]

    @property
    def changed_contexts(self) -> int:
        return sum(row.context_changed for row in self.rows)

    @property
    def retrieval_errors(self) -> int:
        return sum(row.error is not None and row.e2e_verdict is None for row in self.rows)


@dataclass
class Report:
    conclusion: Conclusion
    judge: JudgeInfo
    counts: Counts
    rows: list[Row]
    fluency: FluencySummary | None = None
    relevance_threshold: float = 0.7
    change: Change | None = None
    # Requests and tokens per purpose ("judge", "baseline", ...), and cache hits and misses.
    usage: dict[str, Any] | None = None
    cache: dict[str, int] | None = None
    budget: dict[str, Any] | None = None  # spent, reserved and refused (budget.py)
    scheduling: dict[str, int] | None = None  # concurrency reached and 429s seen (pacing.py)
    notes: list[str] = field(default_factory=list)
    head_sha: str | None = None
    merge_base: str | None = None  # where the PR's branch was cut: its change is since then
    categories: dict[str, CategoryInfo] = field(default_factory=dict)
    strict: bool = False  # gate.strict: the same-judge re-score may block below the minimum
    e2e: E2EReport | None = None     # the end-to-end run, when it ran
    # Several suites: each one's own report (a suite nothing of which changed is
    # `skipped`); the fields above are then the aggregate. Empty: one implicit suite.
    suites: list[SuiteReport] = field(default_factory=list)
    per_suite_status: bool = False  # status: per-suite, one commit status per suite


@dataclass
class SuiteReport:
    name: str
    report: Report

    @property
    def evaluated(self) -> bool:
        return self.report.conclusion is not Conclusion.SKIPPED
