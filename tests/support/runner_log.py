"""How the Actions runner reads a step's log: which lines it acts on as workflow commands.

Tests use `runner_commands(log)` to prove that text flipgate prints (answers,
ids, errors) can never become a command the runner obeys.
"""

from __future__ import annotations

import re

RUNNER_COMMANDS = {"add-mask", "add-matcher", "add-path", "debug", "echo", "endgroup", "error",
                   "group", "notice", "remove-matcher", "save-state", "set-env", "set-output",
                   "stop-commands", "warning"}


def _runner_parse(line: str, known: set[str]) -> tuple[str, str] | None:
    """(command, data) as the runner's ActionCommand reads a line, or None."""
    trimmed = line.lstrip()  # TryParseV2 trims leading white space first
    if trimmed.startswith("::") and (end := trimmed.find("::", 2)) >= 0:
        name = trimmed[2:end].split(" ", 1)[0]
        if name in known:
            return name, trimmed[end + 2:]
    start = line.find("##[")  # the legacy form, found anywhere in the line
    if start >= 0 and (end := line.find("]", start)) >= 0:
        name = line[start + 3:end].split(" ", 1)[0]
        if name in known:
            return name, line[end + 1:]
    return None


def runner_commands(log: str) -> list[tuple[str, str]]:
    """The commands the Actions runner would act on in a step's log, honouring
    `stop-commands` (paused until a line names the token as a command)."""
    acted: list[tuple[str, str]] = []
    token: str | None = None
    for line in re.split(r"\r\n|\r|\n", log):
        parsed = _runner_parse(line, RUNNER_COMMANDS | ({token} if token else set()))
        if parsed is None:
            continue
        name, data = parsed
        if token is not None:
            token = None if name == token else token
        elif name == "stop-commands":
            token = data
        else:
            acted.append((name, data))
    return acted
