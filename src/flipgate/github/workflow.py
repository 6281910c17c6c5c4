"""Speaking to the Actions runner: workflow commands, step outputs, the step summary.

The runner reads three side channels: lines on stdout that start with `::`
(log annotations, groups, masks), the file named by `$GITHUB_OUTPUT`
(step outputs) and the file named by `$GITHUB_STEP_SUMMARY` (Markdown shown
on the run page). Everything written here is escaped so that text we did
not write (file names, model output, PR titles) cannot forge a command.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from flipgate.config.schema import STEP_SUMMARY_LIMIT

_SUMMARY_CUT_NOTE = "\n\n_flipgate: the step summary was cut at GitHub's 1 MiB limit; " \
                    "report.json has everything._\n"


def escape_data(text: str) -> str:
    """The runner's escaping for a command's message (what follows the last `::`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """The runner's escaping for a command's `key=value` properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str = "", **properties: str) -> str:
    """One workflow command line, e.g. `::error title=flipgate::message`."""
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    head = f"{name} {props}" if props else name
    return f"::{head}::{escape_data(message)}"


def output_entry(name: str, value: str, *, delimiter: str | None = None) -> str:
    """A `$GITHUB_OUTPUT` entry in the heredoc form, with a delimiter absent from the value."""
    if not name or any(ch in name for ch in "\r\n=<"):
        raise ValueError(f"not a valid output name: {name!r}")
    while delimiter is None or delimiter in value or delimiter in name:
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def fit_summary(markdown: str, *, already: int = 0, limit: int = STEP_SUMMARY_LIMIT) -> str:
    """`markdown`, cut (at a character boundary, with a note) to fit the summary's byte limit."""
    room = limit - already
    encoded = markdown.encode("utf-8")
    if len(encoded) <= room:
        return markdown
    note_size = len(_SUMMARY_CUT_NOTE.encode("utf-8"))
    if room <= note_size:
        return ""
    # errors="ignore" drops a multi-byte character split by the cut.
    return encoded[:room - note_size].decode("utf-8", errors="ignore") + _SUMMARY_CUT_NOTE


@dataclass
class Workflow:
    """The runner's channels, as paths and a stream passed in (stdout by default)."""

    stream: TextIO = field(default_factory=lambda: sys.stdout)
    output_path: Path | None = None
    summary_path: Path | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str], *, stream: TextIO | None = None) -> Workflow:
        def path(name: str) -> Path | None:
            value = environ.get(name, "")
            return Path(value) if value else None

        return cls(stream=stream or sys.stdout, output_path=path("GITHUB_OUTPUT"),
                   summary_path=path("GITHUB_STEP_SUMMARY"))

    # -- log -----------------------------------------------------------------

    def _emit(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def info(self, message: str) -> None:
        """Plain log text, never read as a command. The runner finds one in a line that
        starts with `::` once leading white space is trimmed, or that holds the legacy
        `##[name]` anywhere, so such text is shown with commands off."""
        lines = message.splitlines() or [""]
        if not any("::" in line or "##[" in line for line in lines):
            for line in lines:
                self._emit(line)
            return
        with self.commands_off():
            for line in lines:
                self._emit(line)

    def notice(self, message: str) -> None:
        self._emit(command("notice", message, title="flipgate"))

    def warning(self, message: str) -> None:
        self._emit(command("warning", message, title="flipgate"))

    def error(self, message: str) -> None:
        self._emit(command("error", message, title="flipgate"))

    def mask(self, secret: str) -> None:
        """Ask the runner to hide a secret in every later log line (each line of it)."""
        for line in secret.splitlines():
            if line.strip():
                self._emit(command("add-mask", line))

    @contextlib.contextmanager
    def group(self, title: str) -> Iterator[None]:
        self._emit(command("group", title))
        try:
            yield
        finally:
            self._emit(command("endgroup"))

    @contextlib.contextmanager
    def commands_off(self) -> Iterator[None]:
        """While inside, the runner ignores workflow commands: for logs that echo untrusted text."""
        token = secrets.token_hex(16)
        self._emit(command("stop-commands", token))
        try:
            yield
        finally:
            self._emit(f"::{token}::")

    # -- files ---------------------------------------------------------------

    def set_output(self, name: str, value: str) -> None:
        if self.output_path is None:
            self.info(f"(no GITHUB_OUTPUT) output {name} = {value[:200]}")
            return
        with self.output_path.open("a", encoding="utf-8") as out:
            out.write(output_entry(name, value))

    def summary_room(self) -> int:
        """Bytes the step summary can still take."""
        if self.summary_path is None or not self.summary_path.exists():
            return STEP_SUMMARY_LIMIT
        return max(STEP_SUMMARY_LIMIT - self.summary_path.stat().st_size, 0)

    def append_summary(self, markdown: str) -> None:
        if self.summary_path is None:
            return
        already = self.summary_path.stat().st_size if self.summary_path.exists() else 0
        text = fit_summary(markdown if markdown.endswith("\n") else markdown + "\n",
                           already=already)
        if text:
            with self.summary_path.open("a", encoding="utf-8") as out:
                out.write(text)
