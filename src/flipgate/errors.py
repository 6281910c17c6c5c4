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


class FlipgateError(Exception):
    exit_code = EXIT_INCOMPLETE


class InputError(FlipgateError):
    """Bad input or configuration (exit 2). Carries every problem found."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, problems: list[Problem] | Problem | str):
        listed: list[Problem | str] = [problems] if isinstance(problems, (Problem, str)) else [*problems]
        self.problems = listed
        super().__init__("\n".join(str(p) for p in self.problems))


class SecurityError(InputError):
    """Untrusted input tried something it may not (sandbox escape, endpoint redirect)."""


class IncompleteError(FlipgateError):
    """The run could not finish: an API failed after retries, the budget ran out (exit 3)."""

    exit_code = EXIT_INCOMPLETE
