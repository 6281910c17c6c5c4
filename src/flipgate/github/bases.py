"""Which base a pull request may be judged against: pure rules, the refs' answers passed in.

The base's configuration judges a pull request, so whoever picks the base picks
the gate. A PR's author picks its base, so the list of bases comes from where
the author cannot write: the configuration on the repository's default branch
(`gate.base_branches`, fnmatch patterns; without it, the default branch alone).
A base it names judges with its own configuration; a base that has none while
the default branch has one is refused, never judged by the head's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

SETTING = "gate.base_branches"


@dataclass(frozen=True)
class Refused:
    """This base gets no verdict; `why` goes into the comment, the status and the log."""

    base: str
    why: str
    unconfigured: bool = False  # a trusted base without a configuration, not an untrusted one


def allowed_bases(default_branch: str, named: Sequence[str] | None) -> tuple[str, ...]:
    """The patterns a base must match: the default branch's `gate.base_branches`, or it alone."""
    return tuple(named) if named is not None else (default_branch,)


def refuse_base(base: str, *, default_branch: str, named: Sequence[str] | None,
                default_has_config: bool, base_has_config: bool,
                config_path: str) -> Refused | None:
    """None when `base` is trusted; else why not. `named`: the default branch's
    `gate.base_branches` (None when it sets none or has no configuration)."""
    if base == default_branch:
        return None  # the default branch is trusted; without a configuration it is adopting
    patterns = allowed_bases(default_branch, named)
    if not any(fnmatchcase(base, pattern) for pattern in patterns):
        listed = ", ".join(patterns)
        return Refused(base, f"the base branch {base} is not a trusted base: {SETTING} on "
                             f"{default_branch} is [{listed}]"
                       + ("" if named is not None else " (its default, the default branch alone)"))
    if default_has_config and not base_has_config:
        return Refused(base, f"the base branch {base} has no {config_path} while {default_branch} "
                             "has one; the pull request's own configuration is never read in "
                             "its place", unconfigured=True)
    return None
