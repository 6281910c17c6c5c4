"""From observations to new cases: mask, categorise, deduplicate, sample, never overwrite.

Pure: the observations and the cases already recorded go in, the cases to
append and a summary come out.

- **Masking first** (`masking.py`): `--drop` patterns discard a record; e-mails,
  card numbers (Luhn-checked) and every `--mask` pattern are replaced in every
  value kept, before ids are derived or anything is compared, written or printed.
- **Deduplicated** on (query, context) after masking, in a normalised form
  (`masking.dedup_key`: NFKC, no zero-width characters, whitespace folded), against
  the cases file too; of several copies the most recent one is kept.
- **Stable ids**: the log's own id when it has one, else `<category>-<hash of
  query and context>`. An id already in the file is never reused.
- **Sampled per category** up to `per_category` cases in the file, seeded:
  queries not yet seen (in the file or the sample) come first, and within each
  tier recent records are more likely to be drawn (weighted reservoir keys,
  by time: the newest four times as heavy as the oldest).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flipgate.errors import InputError, Problem
from flipgate.model import Case
from flipgate.recording.masking import Masking, dedup_key
from flipgate.recording.sources import Observation
from flipgate.text.parsing import load_yaml_located

DEFAULT_PER_CATEGORY = 50
DEFAULT_CATEGORY = "uncategorized"
_RECENCY_WEIGHT = 3.0  # the newest record weighs 1 + this; the oldest 1

@dataclass(frozen=True)
class CategoryRules:
    """`category: pattern` (or a list of patterns) in file order; the first match on the query wins."""

    rules: tuple[tuple[str, re.Pattern[str]], ...] = ()

    def category_of(self, query: str) -> str | None:
        return next((name for name, pattern in self.rules if pattern.search(query)), None)


def parse_category_rules(text: str, *, source: str) -> CategoryRules:
    data, lines = load_yaml_located(text, source=source)
    if not isinstance(data, dict):
        raise InputError(Problem(source, 1, "must map each category to a pattern or a list of "
                                            "patterns, e.g. pricing: '\\bfees?\\b'"))
    problems, rules = [], []
    for name, value in data.items():
        line = lines.get((str(name),))
        patterns = value if isinstance(value, list) else [value]
        if not str(name).strip() or not all(isinstance(p, str) and p for p in patterns):
            problems.append(Problem(source, line, f"'{name}' must map to a pattern or a list of patterns"))
            continue
        for pattern in patterns:
            try:
                rules.append((str(name), re.compile(pattern, re.IGNORECASE)))
            except re.error as exc:
                problems.append(Problem(source, line, f"'{pattern}' is not a regular expression: {exc}"))
    if problems:
        raise InputError(problems)
    return CategoryRules(tuple(rules))


@dataclass
class CategoryCount:
    existing: int = 0
    found: int = 0      # new distinct cases the logs offered
    added: int = 0

    @property
    def total(self) -> int:
        return self.existing + self.added


@dataclass
class Outcome:
    added: list[dict[str, Any]]
    categories: dict[str, CategoryCount]
    read: int
    passed_over: dict[str, int] = field(default_factory=dict)   # reason -> records
    masked: int = 0     # records with at least one value masked


@dataclass
class _Candidate:
    id: str
    query: str
    context: str
    category: str
    timestamp: datetime | None
    extra: dict[str, str]
    source: str

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "query": self.query, "context": self.context,
                               "category": self.category}
        if self.timestamp is not None:
            out["timestamp"] = self.timestamp.isoformat().replace("+00:00", "Z")
        out.update(self.extra)
        return out


def content_hash(query: str, context: str) -> str:
    return hashlib.sha256(f"{query}\x00{context}".encode()).hexdigest()


def _slug(category: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", category.lower()).strip("-")[:24] or "case"


def hashed_id(category: str, query: str, context: str) -> str:
    return f"{_slug(category)}-{content_hash(query, context)[:10]}"


_NOT_WORD = re.compile(r"[\W_]+")


def normal_query(query: str) -> str:
    """What makes two queries "the same question": case, spacing and punctuation aside."""
    return _NOT_WORD.sub(" ", query.casefold()).strip()


def _newer(a: datetime | None, b: datetime | None) -> bool:
    return a is not None and (b is None or a > b)


def _bump(counter: dict[str, int], reason: str, n: int = 1) -> None:
    counter[reason] = counter.get(reason, 0) + n


def sample(candidates: Sequence[_Candidate], room: int, *, seed: int, category: str,
           seen_queries: Iterable[str] = ()) -> list[_Candidate]:
    """Up to `room` candidates: unseen queries first, recent ones more likely, seeded."""
    if room <= 0:
        return []
    ordered = sorted(candidates, key=lambda c: c.id)   # independent of input order
    if len(ordered) <= room:
        return ordered
    times = [c.timestamp.timestamp() for c in ordered if c.timestamp is not None]
    oldest, span = (min(times), max(times) - min(times)) if times else (0.0, 0.0)

    def recency(candidate: _Candidate) -> float:   # 0 oldest (or no time) .. 1 newest
        if candidate.timestamp is None:
            return 0.0
        return (candidate.timestamp.timestamp() - oldest) / span if span else 1.0

    rng = random.Random(f"{seed}:{category}")
    keys = {c.id: rng.random() ** (1.0 / (1.0 + _RECENCY_WEIGHT * recency(c))) for c in ordered}
    by_priority = sorted(ordered, key=lambda c: keys[c.id], reverse=True)
    seen = set(seen_queries)
    chosen: list[_Candidate] = []
    for candidate in by_priority:            # distinct queries first
        question = normal_query(candidate.query)
        if question not in seen and len(chosen) < room:
            seen.add(question)
            chosen.append(candidate)
    chosen_ids = {c.id for c in chosen}
    for candidate in by_priority:            # then the rest, if room is left
        if len(chosen) >= room:
            break
        if candidate.id not in chosen_ids:
            chosen.append(candidate)
    return chosen


def select(observations: Sequence[Observation], existing: Sequence[Case], *,
           masking: Masking, rules: CategoryRules | None = None,
           per_category: int = DEFAULT_PER_CATEGORY, seed: int = 0,
           passed_over: Mapping[str, int] | None = None) -> Outcome:
    """The cases to append to `existing`, and what happened to every observation."""
    outcome = Outcome(added=[], categories={}, read=len(observations),
                      passed_over=dict(passed_over or {}))
    for case in existing:
        outcome.categories.setdefault(case.category, CategoryCount()).existing += 1
    recorded = {(dedup_key(case.query), dedup_key(case.context)) for case in existing}
    taken_ids = {case.id for case in existing}
    by_content: dict[tuple[str, str], _Candidate] = {}

    for observation in observations:
        if masking.drops(observation.query, observation.context):
            _bump(outcome.passed_over, "dropped by a --drop pattern")
            continue
        values = {"query": observation.query, "context": observation.context,
                  "category": observation.category, "id": observation.id, **observation.extra}
        masked = {k: masking.apply(v) if isinstance(v, str) else v for k, v in values.items()}
        if masked != values:
            outcome.masked += 1
        query, context = masked.pop("query") or "", masked.pop("context") or ""
        category = (masked.pop("category") or (rules.category_of(query) if rules else None)
                    or DEFAULT_CATEGORY)
        given_id = masked.pop("id")
        key = (dedup_key(query), dedup_key(context))
        if key in recorded:
            _bump(outcome.passed_over, "already in the cases file")
            continue
        candidate = _Candidate(id=given_id or hashed_id(category, query, context), query=query,
                               context=context, category=category, timestamp=observation.timestamp,
                               extra={k: v for k, v in masked.items() if isinstance(v, str)},
                               source=observation.source)
        if key in by_content:
            _bump(outcome.passed_over, "duplicates (same query and context)")
            if _newer(candidate.timestamp, by_content[key].timestamp):
                by_content[key] = candidate
            continue
        by_content[key] = candidate

    per_id: dict[str, _Candidate] = {}
    for candidate in by_content.values():
        if candidate.id in taken_ids:
            _bump(outcome.passed_over, "id already in the cases file (kept the recorded case)")
        elif candidate.id in per_id:
            _bump(outcome.passed_over, "id shared with another record (kept the first)")
        else:
            per_id[candidate.id] = candidate

    by_category: dict[str, list[_Candidate]] = {}
    for candidate in per_id.values():
        by_category.setdefault(candidate.category, []).append(candidate)
    seen = [normal_query(case.query) for case in existing]
    for category in sorted(by_category):
        count = outcome.categories.setdefault(category, CategoryCount())
        pool = by_category[category]
        count.found = len(pool)
        chosen = sample(pool, per_category - count.existing, seed=seed, category=category,
                        seen_queries=seen)
        count.added = len(chosen)
        if len(pool) > len(chosen):
            _bump(outcome.passed_over, f"not sampled (over --per-category {per_category})",
                  len(pool) - len(chosen))
        newest_first = sorted(chosen, key=lambda c: (c.timestamp is None,
                                                     -(c.timestamp.timestamp() if c.timestamp else 0),
                                                     c.id))
        outcome.added.extend(c.record() for c in newest_first)
    return outcome
