"""Did the pull request change the prompt or the model, and how? (pure)

A prompt or model change is a difference between base and head in the
generator file, in any file it includes (at either ref), or in a `watch`
path (`.gitignore` rules, `**` spans directories, relative to the
configuration's directory). The description that goes into `report.change`
is built here too: model and parameters old -> new, and unified diffs.
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flipgate.model import Case, Change, ParameterChange
from flipgate.text.escaping import one_line, shorten

MAX_DIFF_LINES = 400
MAX_ID_SHOWN = 80  # characters of one case id in a description


@dataclass(frozen=True)
class ChangeScope:
    """What counts as the generator: its file, what it includes, and the watched paths."""

    generator: str
    includes: frozenset[str] = frozenset()
    includes_complete: bool = True   # False: a template computes an include name at run time
    watch: tuple[str, ...] = ()
    watch_root: str = "."            # the configuration's directory


def _watch_matches(paths: Sequence[str], watch: Sequence[str], root: str) -> set[str]:
    if not watch:
        return set()
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(watch)
    root = posixpath.normpath(root)
    matched = set()
    for path in paths:
        if root == ".":
            relative = path
        elif path.startswith(root + "/"):
            relative = path[len(root) + 1:]
        else:
            continue
        if spec.match_file(relative):
            matched.add(path)
    return matched


def unmatched_watch(paths: Sequence[str], watch: Sequence[str], root: str) -> list[str]:
    """The `watch` patterns that match none of `paths` (a ref's files): a pattern that
    matches nothing can never see a change, so the gate would be off without a word.
    A negation (`!pattern`) only takes files away, and is not asked to match."""
    return [pattern for pattern in watch if not pattern.lstrip().startswith(("!", "#"))
            and pattern.strip() and not _watch_matches(paths, [pattern], root)]


def relevant_paths(changed: Sequence[str], scope: ChangeScope) -> list[str]:
    """The changed paths that make this a prompt or model change, sorted.

    When the includes are not fully known, every changed path counts: missing
    a change would let a regression through, gating one too many only costs
    a run.
    """
    if not scope.includes_complete:
        return sorted(changed)
    watched = _watch_matches(changed, scope.watch, scope.watch_root)
    generator_files = {scope.generator, *scope.includes}
    return sorted(p for p in changed if p in generator_files or p in watched)


def unified(before: str | None, after: str | None, *, before_label: str, after_label: str,
            max_lines: int = MAX_DIFF_LINES) -> str:
    """A unified line diff ('' when equal), shortened to `max_lines` with a note."""
    if before == after:
        return ""
    lines = list(difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(),
                                      fromfile=before_label if before is not None else "/dev/null",
                                      tofile=after_label if after is not None else "/dev/null",
                                      lineterm=""))
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more diff lines not shown)"]
    return "\n".join(lines) + "\n"


def parameter_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[ParameterChange, ...]:
    """Every parameter whose value differs, in name order; an absent side is None."""
    return tuple(ParameterChange(name=name, old=old.get(name), new=new.get(name))
                 for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name))


def describe_change(*, generator: str, files: Sequence[str], model: tuple[str | None, str],
                    parameters: tuple[Mapping[str, Any], Mapping[str, Any]],
                    templates: Sequence[tuple[str, str | None, str | None]],
                    labels: tuple[str, str], config_diff: str | None = None,
                    cases_diff: str | None = None) -> Change:
    """The `report.change` section.

    `templates` holds (path, base text, head text) for the generator's message
    templates and each included file; `labels` name the two refs in diff headers.
    """
    diffs = [unified(before, after, before_label=f"{path}@{labels[0]}",
                     after_label=f"{path}@{labels[1]}")
             for path, before, after in templates]
    return Change(generator=generator, files=tuple(files), model=model,
                  parameters=parameter_changes(*parameters), template_diff="".join(diffs),
                  config_diff=config_diff or None, cases_diff=cases_diff or None)


def _case_content(case: Case) -> tuple[Any, ...]:
    return (case.query, case.context, case.category, case.ground_truth,
            sorted((k, repr(v)) for k, v in case.extra.items()))


def shown(text: str, limit: int) -> str:
    """Text from the head's files, safe to show anywhere: one line, no control or bidi
    characters, no lone surrogate (unwritable as UTF-8), at most `limit` characters."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return shorten(one_line(text), limit)


def _listed(ids: Sequence[str], limit: int = 5) -> str:
    shown_ids = ", ".join(shown(i, MAX_ID_SHOWN) for i in ids[:limit])
    return shown_ids + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def describe_cases_change(base: Sequence[Case], head: Sequence[Case]) -> str | None:
    """A short description of how the head's cases differ from the base's, or None."""
    before = {c.id: _case_content(c) for c in base}
    after = {c.id: _case_content(c) for c in head}
    added = [i for i in after if i not in before]
    removed = [i for i in before if i not in after]
    changed = [i for i in before if i in after and before[i] != after[i]]
    parts = [f"{len(ids)} {verb} ({_listed(ids)})"
             for verb, ids in (("added", added), ("removed", removed), ("changed", changed)) if ids]
    return "; ".join(parts) if parts else None
