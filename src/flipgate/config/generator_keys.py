"""The mapping form of `generator:` checked as a whole: which file it names, `command` and
its keys, `messages` (the messages around a template) and `jinja` (the app's Jinja2 settings).

`schema.py` checks each key's type; this module checks how the keys go together, and turns
`messages` and `jinja` into the values `GeneratorOptions` holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Report = Callable[[tuple[str, ...], str], None]

# `FILE.py:NAME`, `FILE.py:NAME["key"]` (a dict entry), `FILE.py:Class.NAME` (a class attribute).
PYTHON_TARGET = re.compile(r"[^:]+\.py:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[(?:\"[^\"]*\"|'[^']*')\])?")
MESSAGE_ROLES = ("system", "user", "assistant")
MESSAGE_KINDS = ("python", "template", "text")
JINJA_KEYS = ("trim_blocks", "lstrip_blocks", "keep_trailing_newline", "strip")
MAX_MESSAGES = 50   # a chat the application builds; each message's file at most 512 KB
COMMAND_ONLY = ("setup", "env", "timeout", "watch")
# Variables `generator.env` may never list: the runner's tokens and the action's inputs.
COMMAND_ENV_REFUSED = ("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_")
Message = tuple[str, str, str]   # role, kind (python | template | text), value


def check_python(value: Any) -> str | None:
    return None if isinstance(value, str) and PYTHON_TARGET.fullmatch(value) else \
        "must be FILE.py:NAME, FILE.py:NAME[\"key\"] or FILE.py:Class.NAME (a prompt in the file)"


def check_jinja(value: Any) -> str | None:
    if isinstance(value, dict) and all(k in JINJA_KEYS and isinstance(v, bool) for k, v in value.items()):
        return None
    return f"must map {', '.join(JINJA_KEYS)} to true or false"


def split_python(value: str) -> tuple[str, str]:
    """`FILE.py:TARGET` as (FILE.py, TARGET)."""
    file, _, target = value.partition(".py:")
    return file + ".py", target


def check_form(values: dict[Any, Any], where: tuple[str, ...], problem: Report) -> None:
    """The mapping form names one generator (path, template, python or messages); a
    template's keys only with a template, a constant or messages."""
    named = [key for key in ("path", "template", "python", "messages") if key in values]
    dotted = ".".join(where)
    if len(named) > 1:
        problem(where, f"'{dotted}' names {' and '.join(named)}: name one generator "
                       "(path: a Prompty or .prompt.yml file, template: a template file, "
                       "python: FILE.py:NAME, messages: the messages around a template)")
    if named in ([], ["path"]):
        for key in ("format", "system", "model", "parameters", "jinja"):
            if key in values:
                problem((*where, key), f"'{dotted}.{key}' belongs to a template, a Python prompt or "
                                       "messages (generator.template, generator.python or "
                                       "generator.messages); a Prompty or .prompt.yml file names "
                                       "its own model and settings")
    if "messages" in values and "system" in values:
        problem((*where, "system"), f"'{dotted}.system' and '{dotted}.messages' both say the "
                                    "system message: write it as the first of the messages")
    if "messages" in values:
        _check_messages(values["messages"], (*where, "messages"), problem)


def _check_messages(value: Any, where: tuple[str, ...], problem: Report) -> None:
    dotted = ".".join(where)
    if not isinstance(value, list) or not value or len(value) > MAX_MESSAGES:
        problem(where, f"'{dotted}' must be a list of 1 to {MAX_MESSAGES} messages, each "
                       "{role, python | template | text}")
        return
    for index, item in enumerate(value):
        here = (*where, str(index))
        label = f"{dotted}[{index}]"
        if not isinstance(item, dict) or set(item) - {"role", *MESSAGE_KINDS}:
            problem(here, f"'{label}' must be a mapping of role and one of python, template, text")
            continue
        kinds = [kind for kind in MESSAGE_KINDS if kind in item]
        if item.get("role") not in MESSAGE_ROLES:
            problem(here, f"'{label}.role' must be one of {', '.join(MESSAGE_ROLES)}")
        if len(kinds) != 1 or not isinstance(item[kinds[0]], str):
            problem(here, f"'{label}' needs exactly one of python (FILE.py:NAME), template (a file) "
                          "and text (inline, in generator.format), as text")
        elif kinds[0] == "python" and (message := check_python(item["python"])) is not None:
            problem(here, f"'{label}.python' {message}")
    if not any(isinstance(item, dict) and ("python" in item or "template" in item) for item in value):
        problem(where, f"'{dotted}' reads no file: name the prompt the repository keeps "
                       "(python: FILE.py:NAME or template: FILE) in one of them")


def messages_of(value: Any) -> tuple[Message, ...]:
    """`messages` (already checked) as (role, kind, value) in order."""
    if not isinstance(value, list):
        return ()
    return tuple((item["role"], kind, item[kind]) for item in value for kind in MESSAGE_KINDS
                 if kind in item)


def first_file(messages: tuple[Message, ...]) -> tuple[str, str] | None:
    """(the form, the file) of the first message that reads a file: what the generator is."""
    for _, kind, value in messages:
        if kind == "python":
            return "python", split_python(value)[0]
        if kind == "template":
            return "template", value
    return None


def check_command(values: dict[Any, Any], here: tuple[str, ...], problem: Report) -> None:
    """`generator.command` and its keys: `watch` required, no file beside it, no runner token."""
    dotted = ".".join(here)
    if "command" not in values:
        for key in COMMAND_ONLY:
            if key in values:
                problem((*here, key), f"'{dotted}.{key}' belongs to '{dotted}.command' (the "
                                      "application's own code as the generator), which is not set")
        return
    for other in ("path", "template", "python", "messages"):
        if other in values:
            problem((*here, other), f"'{dotted}' has both '{other}' and 'command': name one generator")
    if not values.get("watch"):
        problem((*here, "command"), f"'{dotted}.watch' is required with 'command': the paths "
                                    "whose change is a change of the application's answers")
    for name in values.get("env") or ():
        if isinstance(name, str) and name.upper().startswith(COMMAND_ENV_REFUSED):
            problem((*here, "env"), f"'{dotted}.env' may not list {name}: the runner's tokens "
                                    f"and inputs ({', '.join(p + '*' for p in COMMAND_ENV_REFUSED)}) "
                                    "never reach the application's code")
