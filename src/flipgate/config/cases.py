"""Cases and responses (JSONL): read, validated in one place, every problem at once.

Each problem names the file and line. Both parsers take bytes plus a
`source` label, so the same code checks a file on disk and a blob read from
a git ref (`eval/cases.jsonl@<sha>`).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from flipgate.config.schema import WITH_QUERY, WITHOUT_QUERY, Config
from flipgate.errors import InputError, Problem
from flipgate.model import Answer, Case
from flipgate.text.parsing import decode_utf8, load_json

_CASE_FIELDS = ("id", "query", "context")
_KNOWN_CASE_FIELDS = {"id", "query", "context", "category", "ground_truth"}


def json_lines(data: bytes | str, source: str, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    """(line, value) for each non-blank JSONL line; a line that is not JSON is a problem."""
    text = decode_utf8(data, source)
    # A JSONL line ends at "\n" only: str.splitlines() would also split at U+2028,
    # U+2029 and NEL, which JSON allows unescaped inside a string.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            value = load_json(line)
        except ValueError as exc:
            problems.append(Problem(source, number, str(exc)))
            continue
        yield number, value


def json_objects(data: bytes | str, source: str, problems: list[Problem]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, object) for each non-blank line that holds a JSON object."""
    text = decode_utf8(data, source)
    for number, value in json_lines(text, source, problems):
        if not isinstance(value, dict):
            problems.append(Problem(source, number, "each line must be a JSON object"))
            continue
        yield number, value
    if not text.strip():
        problems.append(Problem(source, None, "is empty: expected one JSON object per line"))


def _string_field(obj: Mapping[str, Any], name: str, *, required: bool) -> str | None | Exception:
    if name not in obj:
        return ValueError(f"missing required field '{name}'") if required else None
    value = obj[name]
    if not isinstance(value, str):
        return ValueError(f"field '{name}' must be a string, not {type(value).__name__}")
    if required and name == "id" and not value.strip():
        return ValueError("field 'id' must not be empty")
    return value


def parse_cases(data: bytes, *, source: str) -> list[Case]:
    problems: list[Problem] = []
    cases: list[Case] = []
    first_line: dict[str, int] = {}
    for number, obj in json_objects(data, source, problems):
        values: dict[str, str | None] = {}
        bad = False
        for name, required in (("id", True), ("query", True), ("context", True),
                               ("category", False), ("ground_truth", False)):
            value = _string_field(obj, name, required=required)
            if isinstance(value, Exception):
                problems.append(Problem(source, number, str(value)))
                bad = True
            else:
                values[name] = value
        if bad:
            continue
        case_id = values["id"]
        assert case_id is not None
        if case_id in first_line:
            problems.append(Problem(source, number,
                                    f"duplicate id '{case_id}' (first on line {first_line[case_id]})"))
            continue
        first_line[case_id] = number
        cases.append(Case(
            id=case_id, query=values["query"] or "", context=values["context"] or "",
            category=(values["category"] or "").strip() or "uncategorized",
            ground_truth=values["ground_truth"],
            extra={k: v for k, v in obj.items() if k not in _KNOWN_CASE_FIELDS},
            line=number,
        ))
    if problems:
        raise InputError(problems)
    return cases


def require_queries(cases: Sequence[Case], *, source: str, mode: str) -> None:
    """With `judge.mode: with_query` the rubric grades each answer against its query, so a
    case without one is bad input, never a row scored by another rubric."""
    if mode != WITH_QUERY:
        return
    problems = [Problem(source, case.line, f"case '{case.id}' has an empty 'query', but judge.mode is "
                        f"{WITH_QUERY} (give it a query, or set judge.mode: {WITHOUT_QUERY})")
                for case in cases if not case.query.strip()]
    if problems:
        raise InputError(problems)


def _categories_named(users: Sequence[tuple[Config, Sequence[Case]]]) -> str:
    """The categories the cases have, per suite when there are several."""
    def names(cases: Sequence[Case]) -> str:
        return ", ".join(sorted({case.category for case in cases})) or "none"
    if len(users) == 1 or users[0][0].suite is None:
        return f"the cases have: {names([c for _, cases in users for c in cases])}"
    return "; ".join(f"suite {config.suite}'s cases have: {names(cases)}" for config, cases in users)


def unknown_blocking_categories(parts: Sequence[tuple[Config, Sequence[Case]]], *,
                                every_suite: bool = True) -> list[Problem]:
    """Each `gate.blocking_categories` entry no case has: it would block nothing, so a typo
    (`dosages` for `dosage`) would turn the gate off without a word. `parts`: each suite's
    configuration with its cases. An entry is checked against every suite that reads it (a
    top-level list against all the suites that inherit it), and the top level's list only
    when `every_suite` was read (its cases are all the cases it applies to). The default
    list, written nowhere, is not checked."""
    readers: dict[tuple[str, int], list[tuple[Config, Sequence[Case]]]] = {}
    for config, cases in parts:
        if config.gate.declared is not None:
            readers.setdefault(config.gate.declared, []).append((config, cases))
    problems = []
    for (key, line), users in readers.items():
        if not key.startswith("suites.") and not every_suite:
            continue  # the top level's list, read by cases this run does not have
        have = {case.category for _, cases in users for case in cases}
        for name in users[0][0].gate.blocking_categories:
            if name in have:
                continue
            close = difflib.get_close_matches(name, sorted(have), n=1, cutoff=0.6) or [
                one for one in sorted(have) if one.lower() == name.lower()]
            guess = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(Problem(users[0][0].source, line,
                                    f"'{name}' in {key} is no case's category, so it would block "
                                    f"nothing ({_categories_named(users)}){guess}"))
    return problems


def require_blocking_categories(parts: Sequence[tuple[Config, Sequence[Case]]], *,
                                every_suite: bool = True) -> None:
    """`unknown_blocking_categories` as bad input (exit 2)."""
    problems = unknown_blocking_categories(parts, every_suite=every_suite)
    if problems:
        raise InputError(problems)


def empty_context_warning(ids: Sequence[str], *, named: int = 10) -> str | None:
    """The warning for cases whose context is empty (None: there are none): the judge reads
    every claim of their answers as unsupported, so such a case gates nothing."""
    if not ids:
        return None
    shown = ", ".join(ids[:named]) + (f" and {len(ids) - named} more" if len(ids) > named else "")
    noun = "1 case has" if len(ids) == 1 else f"{len(ids)} cases have"
    return (f"Warning: {noun} an empty context ({shown}): every claim of an answer reads as "
            "unsupported against nothing, so such a case cannot tell a regression.")


def empty_contexts(cases: Sequence[Case]) -> str | None:
    """`empty_context_warning` for loaded cases."""
    return empty_context_warning([case.id for case in cases if not case.context.strip()])


def parse_responses_located(data: bytes, *, source: str) -> tuple[dict[str, Answer], dict[str, int]]:
    """Responses by id, and the line each stood on."""
    problems: list[Problem] = []
    answers: dict[str, Answer] = {}
    lines: dict[str, int] = {}
    for number, obj in json_objects(data, source, problems):
        case_id = _string_field(obj, "id", required=True)
        response = _string_field(obj, "response", required=True)
        others = [key for key, value in obj.items()
                  if key not in ("id", "finish_reason") and isinstance(value, str)]
        if "response" not in obj and len(others) == 1:
            # `answer`, `output`, `text`: name what the line has, so the fix is one rename.
            response = ValueError(f"missing required field 'response' (the line has "
                                  f"'{others[0][:40]}'; rename it to 'response')")
        finish = obj.get("finish_reason")
        errors = [v for v in (case_id, response) if isinstance(v, Exception)]
        if finish is not None and not isinstance(finish, str):
            errors.append(ValueError("field 'finish_reason' must be a string"))
        if errors:
            problems.extend(Problem(source, number, str(e)) for e in errors)
            continue
        assert isinstance(case_id, str) and isinstance(response, str)
        if case_id in lines:
            problems.append(Problem(source, number,
                                    f"duplicate id '{case_id}' (first on line {lines[case_id]})"))
            continue
        answers[case_id] = Answer(response=response, finish_reason=finish)
        lines[case_id] = number
    if problems:
        raise InputError(problems)
    return answers, lines


def parse_responses(data: bytes, *, source: str) -> dict[str, Answer]:
    return parse_responses_located(data, source=source)[0]


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(Problem(str(path), None, "file not found")) from None
    except IsADirectoryError:
        raise InputError(Problem(str(path), None, "is a directory, expected a JSONL file")) from None
    except OSError as exc:
        raise InputError(Problem(str(path), None, f"cannot read: {exc.strerror}")) from None


def load_cases(path: str | os.PathLike[str]) -> list[Case]:
    return parse_cases(read_bytes(path), source=str(path))


def load_answer_sets(cases: Sequence[Case], cases_source: str,
                     files: Sequence[str | os.PathLike[str]]) -> list[dict[str, Answer]]:
    """Read response files and check they pair one to one with the cases.

    Every problem of every file is gathered before raising, so one run shows
    the whole picture.
    """
    problems: list[Problem] = []
    sets: list[dict[str, Answer]] = []
    case_ids = {case.id for case in cases}
    for file in files:
        try:
            answers, lines = parse_responses_located(read_bytes(file), source=str(file))
        except InputError as exc:
            problems.extend(p for p in exc.problems if isinstance(p, Problem))
            continue
        for case_id, line in lines.items():
            if case_id not in case_ids:
                problems.append(Problem(str(file), line, f"response '{case_id}' has no case in {cases_source}"))
        for case in cases:
            if case.id not in answers:
                problems.append(Problem(cases_source, case.line, f"case '{case.id}' has no response in {file}"))
        sets.append(answers)
    if problems:
        raise InputError(problems)
    return sets


def write_responses(path: str | os.PathLike[str], answers: Mapping[str, Answer],
                    order: Sequence[str]) -> None:
    """The contract's responses JSONL, in case order; `finish_reason` kept when known."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for case_id in order:
        answer = answers[case_id]
        record: dict[str, Any] = {"id": case_id, "response": answer.response}
        if answer.finish_reason is not None:
            record["finish_reason"] = answer.finish_reason
        lines.append(json.dumps(record, ensure_ascii=False))
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, target)
