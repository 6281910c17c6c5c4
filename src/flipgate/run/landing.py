"""What a pull request changes, and what would land if it merged.

GitHub's "Files changed" is the diff from the merge base of base and head to the head,
and the code that lands is the merge. So a run detects the PR's own change (merge base
-> head), its baseline is the base's tip, and its candidate is the base with the PR's
changes: the head itself while the base has not moved since the branch was cut, else
the merge made in git's object database (`git merge-tree`), the tree GitHub's test
merge holds. A branch cut before main improved its prompt is then never blamed for
main's change, and one that changes nothing the generator reads is skipped however far
main has moved.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from flipgate.errors import InputError, Problem
from flipgate.git import repository as gitrefs
from flipgate.run.refs import Ref, Repo
from flipgate.text.escaping import short


@dataclass(frozen=True)
class Landing:
    """The refs of one run, as a pull request's change reads them."""

    base: Ref
    head: Ref                 # the PR's head: its status and the report name it
    merge_base: str           # where the branch was cut (a sha)
    candidate: Ref            # what would land: the head, or the base with the PR's changes
    changed: list[str]        # the PR's own change, merge base -> head
    conflicts: tuple[str, ...] = ()  # paths the PR's change conflicts with the base in

    @property
    def merged(self) -> bool:
        """The candidate is a merge (the base moved on since the branch was cut)."""
        return self.candidate.sha != self.head.sha


def land(repo: Repo, base: Ref, head: Ref) -> Landing:
    """The merge base, the PR's own changed paths, and the candidate of `head` into `base`."""
    if base.sha == head.sha:
        return Landing(base=base, head=head, merge_base=base.sha, candidate=head, changed=[])
    found = gitrefs.merge_base(repo.path, base.sha, head.sha, git=repo.git)
    if found is None:
        shallow = gitrefs.is_shallow(repo.path, git=repo.git)
        hint = (" (this clone is shallow: fetch more history, e.g. actions/checkout with "
                "fetch-depth: 0)") if shallow else ""
        raise InputError(Problem(head.where, None, f"has no common ancestor with the base "
                                 f"{base.where}{hint}: what it changes cannot be told"))
    changed = gitrefs.changed_paths(repo.path, found, head.sha, git=repo.git)
    if found == base.sha:    # the base has not moved: the head is what lands
        return Landing(base=base, head=head, merge_base=found, candidate=head, changed=changed)
    if found == head.sha:    # the head is already in the base: it changes nothing
        return Landing(base=base, head=head, merge_base=found, candidate=base, changed=[])
    merged = gitrefs.merge_tree(repo.path, base.sha, head.sha, git=repo.git)
    commit = gitrefs.merge_commit(repo.path, merged.tree, (base.sha, head.sha), git=repo.git)
    candidate = Ref(name=f"{head.name} merged into {base.name}", sha=commit,
                    shown=f"{head.label}+{base.label}")
    return Landing(base=base, head=head, merge_base=found, candidate=candidate, changed=changed,
                   conflicts=merged.conflicts)


def refuse_conflicts(landing: Landing, relevant: Collection[str]) -> None:
    """Exit 2, before any model call, when the PR's change conflicts with the base in a
    file the generator reads: what would land cannot be told until the conflict is resolved.
    A conflict elsewhere (a README) does not matter to the gate."""
    clashing = sorted(set(landing.conflicts) & set(relevant))
    if clashing:
        raise InputError(Problem(_shown(clashing), None, f"this pull request conflicts with the "
                                 f"base {landing.base.where} here: resolve the conflict (merge the "
                                 "base into the branch, or rebase it) and push; nothing was run"))


def merge_base_line(landing: Landing) -> str:
    """What a run says of the refs it compared."""
    head, base = landing.head, landing.base
    line = (f"Merge base {short(landing.merge_base)} (where {head.where} branched from {base.where}): "
            "the change is what the head changes since then; ")
    if landing.merged:
        return line + (f"the candidate is the base with that change merged in "
                       f"({landing.candidate.label}), the baseline the base.")
    if landing.candidate.sha == base.sha:
        return line + "the head is already in the base, so it changes nothing."
    return line + "the base has not moved since, so the candidate is the head."


def _shown(paths: Sequence[str]) -> str:
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
