"""The few named errors that cross module boundaries.

Each maps to one of the contract's exit codes; the CLI turns them into a
clean message and that code, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_PASS = 0
EXIT_BLOCKED = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input, located as precisely as we can."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


REPEATS_NAMED = 5  # of a problem repeated on many lines, the first lines named


def collapse_repeats(problems: list[Problem | str]) -> list[Problem | str]:
    """The same problem of the same file on three or more lines as one line, at its first,
    with the count and the first line numbers: 23 identical lines hide the one cause."""
    lines: dict[tuple[str, str], list[int]] = {}
    for problem in problems:
        if isinstance(problem, Problem) and problem.line is not None:
            lines.setdefault((problem.path, problem.message), []).append(problem.line)
    out: list[Problem | str] = []
    for problem in problems:
        if not isinstance(problem, Problem) or problem.line is None:
            out.append(problem)
            continue
        key = (problem.path, problem.message)
        where = lines.get(key)
        if where is None:
            continue  # already said, on its first line
        if len(where) < 3:
            out.append(problem)
        else:
            del lines[key]
            named = ", ".join(str(line) for line in where[:REPEATS_NAMED])
            more = ", …" if len(where) > REPEATS_NAMED else ""
            out.append(Problem(problem.path, problem.line,
                               f"{problem.message} (on {len(where)} lines: {named}{more})"))
    return out


class FlipgateError(Exception):
    exit_code = EXIT_INCOMPLETE


class InputError(FlipgateError):
    """Bad input or configuration (exit 2). Carries every problem found."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, problems: list[Problem] | Problem | str):
        listed: list[Problem | str] = [problems] if isinstance(problems, (Problem, str)) else [*problems]
        self.problems = collapse_repeats(listed)
        super().__init__("\n".join(str(p) for p in self.problems))


class SecurityError(InputError):
    """Untrusted input tried something it may not (sandbox escape, endpoint redirect)."""


class IncompleteError(FlipgateError):
    """The run could not finish: an API failed after retries, the budget ran out (exit 3)."""

    exit_code = EXIT_INCOMPLETE
