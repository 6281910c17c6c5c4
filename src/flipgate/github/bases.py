"""Which base a pull request may be judged against: pure rules, the refs' answers passed in.

The base's configuration judges a pull request, so whoever picks the base picks
the gate. A PR's author picks its base, so the list of bases comes from where
the author cannot write: the configuration on the repository's default branch
(`gate.base_branches`; without it, the default branch alone). Its patterns read as
GitHub's branch-protection patterns do (fnmatch with FNM_PATHNAME): `*`, `?` and
`[...]` never match a `/`, and `**/` stands for any number of whole directories.
A base it names judges with its own configuration; a base that has none while
the default branch has one is refused, never judged by the head's.

A commit status belongs to a commit, and one head can be proposed to two bases
at once. So each base's verdict lands on a context of its own (`status_context`):
the default branch's on the configured context (`flipgate`), any other base's on
`flipgate@<base>`; a pass against a weaker base never reads as the default branch's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from hashlib import sha256

SETTING = "gate.base_branches"
# GitHub refuses a status context longer than this.
CONTEXT_LIMIT = 255
# A long context ends in the whole SHA-256 of its full name: 12 hex digits (48 bits) were
# found colliding for two valid 255-character branch names, so a pass against one base
# overwrote the other's failure. 64 hex digits leave 190 characters of the name's start.
_DIGEST = 64


@dataclass(frozen=True)
class Refused:
    """This base gets no verdict; `why` goes into the comment, the status and the log."""

    base: str
    why: str
    unconfigured: bool = False  # a trusted base without a configuration, not an untrusted one


def allowed_bases(default_branch: str, named: Sequence[str] | None) -> tuple[str, ...]:
    """The patterns a base must match: the default branch's `gate.base_branches`, or it alone."""
    return tuple(named) if named is not None else (default_branch,)


def branch_matches(branch: str, pattern: str) -> bool:
    """Whether `branch` matches `pattern` as a GitHub branch rule's pattern (case counts).
    A pattern that is no pattern (a reversed range, `[z-a]`) trusts nothing."""
    try:
        return _pattern(pattern).fullmatch(branch) is not None
    except re.error:
        return False


@lru_cache(maxsize=64)
def _pattern(pattern: str) -> re.Pattern[str]:
    """A branch pattern as the regular expression that matches the same names."""
    parts: list[str] = []
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if pattern.startswith("**/", at):
            parts.append("(?:[^/]*/)*")  # zero or more whole directories
            at += 3
            continue
        if char == "*":
            while at + 1 < len(pattern) and pattern[at + 1] == "*":
                at += 1                   # `**` not before a `/` is a plain `*`
            parts.append("[^/]*")
        elif char == "?":
            parts.append("[^/]")
        elif char == "[" and (end := _set_end(pattern, at)) is not None:
            body = pattern[at + 1:end]
            negated = body.startswith("!")
            body = body[1:] if negated else body
            members = re.sub(r"([\\\[\]^&~|])", r"\\\1", body)  # literal inside a set
            parts.append(f"(?![/])[{'^' if negated else ''}{members}]")
            at = end
        else:
            parts.append(re.escape(char))
        at += 1
    return re.compile("".join(parts))


def _set_end(pattern: str, start: int) -> int | None:
    """Where the bracket set opened at `start` closes (a `]` first in the set is a member)."""
    at = start + 1 + (pattern.startswith("!", start + 1))
    at += pattern.startswith("]", at)
    end = pattern.find("]", at)
    return end if end != -1 else None


def refuse_base(base: str, *, default_branch: str, named: Sequence[str] | None,
                default_has_config: bool, base_has_config: bool,
                config_path: str) -> Refused | None:
    """None when `base` is trusted; else why not. `named`: the default branch's
    `gate.base_branches` (None when it sets none or has no configuration)."""
    if base == default_branch:
        return None  # the default branch is trusted; without a configuration it is adopting
    patterns = allowed_bases(default_branch, named)
    if not any(branch_matches(base, pattern) for pattern in patterns):
        listed = ", ".join(patterns)
        return Refused(base, f"the base branch {base} is not a trusted base: {SETTING} on "
                             f"{default_branch} is [{listed}]"
                       + ("" if named is not None else " (its default, the default branch alone)"))
    if default_has_config and not base_has_config:
        return Refused(base, f"the base branch {base} has no {config_path} while {default_branch} "
                             "has one; the pull request's own configuration is never read in "
                             "its place", unconfigured=True)
    return None


def unconfigured(base: str, config_path: str) -> Refused:
    """A base other than the default branch without a configuration: refused whatever the
    default branch says (not trusted without its list; trusted, the head's file would be
    read in its place), so this needs nothing from the default branch."""
    return Refused(base, f"the base branch {base} has no {config_path}; only the default branch "
                         "is ever judged without one, and the pull request's own configuration "
                         "is never read in its place", unconfigured=True)


def status_context(context: str, *, base: str, default_branch: str,
                   suite: str | None = None) -> str:
    """The commit status context a verdict against `base` lands on (`context`: the
    action's `status-context`; `suite`: one suite's status under `status: per-suite`).

    The default branch keeps `context` (and `context/suite`); any other base gets
    `context@base` (`context/suite@base`). Suite names hold no `@` or `/`, so no base
    and suite can share a context, and none equals the default branch's. A context past
    GitHub's limit keeps its start and the whole SHA-256 of the whole name (no two names
    share one, whatever their length).
    """
    named = f"{context}/{suite}" if suite else context
    if base == default_branch:
        return named
    whole = f"{named}@{base}"
    if len(whole) <= CONTEXT_LIMIT:
        return whole
    digest = sha256(whole.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{whole[:CONTEXT_LIMIT - _DIGEST - 1]}~{digest}"
