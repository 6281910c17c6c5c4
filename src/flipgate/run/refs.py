"""What the refs say: configuration, cases, generators and what changed between them.

Everything is read from git objects through one `Repo` (the one git runner
underneath); nothing of either ref is checked out. The configuration and the
cases come from the base ref (the head's only when the base has none yet), so
a pull request never weakens the gate that judges it.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flipgate.config.cases import empty_contexts, parse_cases, require_queries
from flipgate.config.schema import (
    FORM_GITHUB,
    FORMS_CONFIGURED,
    HEAD_GENERATOR_KEYS,
    Config,
    GeneratorOptions,
    parse_config,
)
from flipgate.errors import InputError, Problem
from flipgate.generator.endpoint_lock import LockedPair, check_adopted_config
from flipgate.git import repository as gitrefs
from flipgate.git.repository import Git
from flipgate.model import Case, Change
from flipgate.prompts import Inspected, Prompt, inspect_isolated
from flipgate.prompts.forms import FormSpec
from flipgate.text.escaping import short
from flipgate.text.parsing import decode_utf8
from flipgate.verdict import changes


@dataclass(frozen=True)
class Ref:
    """A resolved ref: what the user typed and the commit it names."""

    name: str
    sha: str
    shown: str | None = None  # how messages name it instead of its short SHA ("worktree")

    @property
    def label(self) -> str:
        return self.shown or short(self.sha)

    @property
    def where(self) -> str:
        """The ref as a person typed it, with its commit: `main@abc1234`."""
        plain = self.shown is not None or self.name in (self.sha, self.label)
        return self.label if plain else f"{self.name}@{self.label}"


WORKTREE = "worktree"  # how messages name the working tree's snapshot, as in `prompts/a.prompty@worktree`


@dataclass(frozen=True)
class Repo:
    """A local repository, read through the one git runner."""

    path: Path
    git: Git

    def ref(self, name: str) -> Ref:
        return Ref(name, gitrefs.resolve(self.path, name, git=self.git))

    def read(self, ref: Ref, path: str) -> bytes | None:
        return gitrefs.read(self.path, ref.sha, path, git=self.git)

    def read_required(self, ref: Ref, path: str) -> bytes:
        return gitrefs.read_required(self.path, ref.sha, path, ref=ref.name, git=self.git)

    def read_text(self, ref: Ref, path: str) -> str | None:
        """A file as text for a diff (undecodable bytes replaced), or None when absent."""
        data = self.read(ref, path)
        return None if data is None else data.decode("utf-8", "replace")

    def reader(self, ref: Ref) -> Callable[[str], bytes | None]:
        return lambda path: self.read(ref, path)

    def files(self, ref: Ref) -> list[str]:
        return gitrefs.tree_paths(self.path, ref.sha, git=self.git)

    def changed(self, base: Ref, head: Ref) -> list[str]:
        return gitrefs.changed_paths(self.path, base.sha, head.sha, git=self.git)

    def worktree(self) -> Ref:
        """The working tree, uncommitted edits included, as a ref (a snapshot commit)."""
        return Ref("the working tree", gitrefs.snapshot_worktree(self.path, git=self.git),
                   shown=WORKTREE)

    def checked_out(self) -> str | None:
        return gitrefs.head_commit(self.path, git=self.git)

    def uncommitted(self) -> list[str]:
        return gitrefs.uncommitted_paths(self.path, git=self.git)


@dataclass
class Inputs:
    """What the run reads from the refs, and what it noticed on the way."""

    config: Config
    cases: list[Case]
    notes: list[str] = field(default_factory=list)
    config_diff: str | None = None
    cases_diff: str | None = None
    from_base: bool = True   # False when adopting: the head's configuration, never trusted to run


def _read_config(repo: Repo, ref: Ref, config_path: str) -> tuple[Config, str] | None:
    data = repo.read(ref, config_path)
    if data is None:
        return None
    source = f"{config_path}@{ref.label}"
    text = decode_utf8(data, source)
    directory = posixpath.dirname(config_path) or "."
    return parse_config(text, source=source, directory=directory), text


def read_config(repo: Repo, ref: Ref, config_path: str) -> Config | None:
    """The configuration at a ref, or None when the ref has none."""
    loaded = _read_config(repo, ref, config_path)
    return loaded[0] if loaded is not None else None


def _head_cases_description(repo: Repo, head: Ref, path: str, base_cases: list[Case]) -> str:
    """How the head changes the cases file. The head's file is only described, never used,
    so nothing in it can stop the run: what cannot be read or parsed is "changed, not parsed"."""
    try:
        data = repo.read(head, path)
        if data is None:
            return "the cases file is removed"
        head_cases = parse_cases(data, source=f"{path}@{head.label}")
        return changes.describe_cases_change(base_cases, head_cases) or "only formatting changed"
    except InputError as exc:
        return f"changed, not parsed: {changes.shown(str(exc.problems[0]), 200)}"
    except Exception as exc:  # noqa: BLE001 - whatever the head's bytes do, the run goes on
        return f"changed, not parsed: {type(exc).__name__}"


@dataclass(frozen=True)
class TrustedConfig:
    """The configuration that judges the run, and the ref its cases are read from."""

    config: Config
    source_ref: Ref
    notes: list[str]
    config_diff: str | None = None
    from_base: bool = True  # False when adopting: the head's configuration
    text: str = ""          # the file as read, to tell a working-tree copy that differs


def load_config_at(repo: Repo, base: Ref, head: Ref, config_path: str) -> TrustedConfig:
    """The base's configuration (the head's only when the base has none yet)."""
    config_path = gitrefs.safe_path(config_path)
    trusted = _read_config(repo, base, config_path)
    notes: list[str] = []
    config_diff = None
    source_ref = base
    if trusted is None:
        trusted = _read_config(repo, head, config_path)
        if trusted is None:
            where = (f"git ref {base.name}" if base.sha == head.sha
                     else f"the base ({base.name}) or the head ({head.name})")
            raise InputError(Problem(config_path, None, f"not found at {where}"))
        source_ref = head
        check_adopted_config(*trusted)
        notes.append(f"The base has no {config_path}: this run uses the pull request's own "
                     "configuration and cases (adopting flipgate).")
    else:
        head_text = repo.read_text(head, config_path)
        if head_text != trusted[1]:
            config_diff = changes.unified(trusted[1], head_text,
                                          before_label=f"{config_path}@{base.label}",
                                          after_label=f"{config_path}@{head.label}")
            notes.append(f"This pull request changes {config_path}; the base's configuration "
                         "judges it (a pull request cannot change the gate that judges it).")
    return TrustedConfig(config=trusted[0], source_ref=source_ref, notes=notes,
                         config_diff=config_diff, from_base=source_ref is base, text=trusted[1])


def load_cases_for(repo: Repo, trusted: TrustedConfig, config: Config, head: Ref, *,
                   changed: Collection[str] = ()) -> Inputs:
    """One suite's cases (`config`: the trusted configuration, narrowed to the suite)."""
    source_ref = trusted.source_ref
    notes = list(trusted.notes)
    cases_path = gitrefs.safe_path(config.path_of(config.cases), source=config.source)
    cases_data = repo.read_required(source_ref, cases_path)
    cases = parse_cases(cases_data, source=f"{cases_path}@{source_ref.label}")
    require_queries(cases, source=f"{cases_path}@{source_ref.label}", mode=config.judge.mode)
    if (empty := empty_contexts(cases)) is not None:
        notes.append(f"{empty[:-1]} ({cases_path}).")
    cases_diff = None
    if source_ref.sha != head.sha and cases_path in changed:
        cases_diff = _head_cases_description(repo, head, cases_path, cases)
        notes.append(f"This pull request changes {cases_path} ({cases_diff}); the base's cases "
                     "are replayed.")
    return Inputs(config=config, cases=cases, notes=notes, config_diff=trusted.config_diff,
                  cases_diff=cases_diff, from_base=trusted.from_base)


def load_inputs(repo: Repo, base: Ref, head: Ref, config_path: str, *,
                changed: Collection[str] = ()) -> Inputs:
    """Configuration and cases from the base ref; notes and diffs when the PR changes them
    (`changed`: the paths that differ between the refs). One implicit suite."""
    trusted = load_config_at(repo, base, head, config_path)
    return load_cases_for(repo, trusted, trusted.config, head, changed=changed)


def refuse_unmatched_watch(repo: Repo, refs: Sequence[Ref], watch: Sequence[str], *,
                           config: Config, key: str = "watch") -> None:
    """Exit 2 naming each `watch` pattern (`key` says which list) that matches no file at
    any of `refs`: it would switch the gate off for the files it meant, without a word."""
    if not watch:
        return
    files = sorted(set().union(*(repo.files(ref) for ref in refs)))
    unmatched = changes.unmatched_watch(files, watch, config.directory)
    where = " or ".join(ref.where for ref in refs)
    within = "" if config.directory in ("", ".") else f" (relative to {config.directory}/)"
    suite = f" (suite {config.suite})" if config.suite else ""
    if unmatched:
        raise InputError([Problem(config.source, None, f"{key}{suite}: {pattern!r} matches no file "
                                  f"at {where}{within}; fix the pattern, or no change there is "
                                  "ever gated") for pattern in unmatched])


def generator_path(config: Config) -> str:
    if not config.generator:
        raise InputError(Problem(config.source, None, "'generator' is required to replay "
                                 "(the Prompty file of the prompt under test)"))
    return gitrefs.safe_path(config.path_of(config.generator), source=config.source)


def form_spec(config: Config, options: GeneratorOptions) -> FormSpec:
    """How the child reads the generator: its form, format, constant and system message
    (a repository path, checked: never outside the repository)."""
    system = None
    if options.system:
        file, name = options.system, ""
        if ".py:" in options.system:
            file, _, name = options.system.rpartition(":")
        system = gitrefs.safe_path(config.path_of(file), source=config.source) + (f":{name}" if name else "")
    messages = []
    for role, kind, value in options.messages:
        if kind != "text":
            file, _, target = value.partition(".py:") if kind == "python" else (value, "", "")
            safe = gitrefs.safe_path(config.path_of(file + (".py" if target else "")), source=config.source)
            value = f"{safe}:{target}" if target else safe
        messages.append((role, kind, value))
    return FormSpec(form=options.form, format=options.format, constant=options.constant, system=system,
                    messages=tuple(messages))


def configured(inspected: Inspected, options: GeneratorOptions) -> Inspected:
    """The generator with what `.flipgate.yml` adds: `variables` (every form) and, for a
    template or a constant, the model and parameters under test."""
    changes: dict[str, Any] = {"variables": dict(options.variables), "jinja": dict(options.jinja)}
    if options.form in FORMS_CONFIGURED:
        changes.update(configuration={"model": options.model} if options.model else {},
                       parameters=dict(options.parameters))
    return dataclasses.replace(inspected, prompt=dataclasses.replace(inspected.prompt, **changes))


def load_generator(repo: Repo, ref: Ref, path: str, *, environ: Mapping[str, str],
                   config: Config | None = None, options: GeneratorOptions | None = None) -> Inspected | None:
    """The generator at a ref (parsed, its includes found, in the isolated child), or None
    when the ref has none (the base, before adoption). This process only reads its bytes.
    `options`: the generator settings this side is read with (default: `config`'s)."""
    data = repo.read(ref, path)
    if data is None:
        return None
    return _inspect(repo, ref, path, data, environ=environ, config=config, options=options)


def require_generator(repo: Repo, ref: Ref, path: str, *, environ: Mapping[str, str],
                      config: Config | None = None, options: GeneratorOptions | None = None) -> Inspected:
    data = repo.read_required(ref, path)
    return _inspect(repo, ref, path, data, environ=environ, config=config, options=options)


def _inspect(repo: Repo, ref: Ref, path: str, data: bytes, *, environ: Mapping[str, str],
             config: Config | None, options: GeneratorOptions | None) -> Inspected:
    if config is None:
        return inspect_isolated(data, path=path, source=f"{path}@{ref.label}", repo=repo.path,
                                sha=ref.sha, environ=environ)
    options = options or config.generator_options
    inspected = inspect_isolated(data, path=path, source=f"{path}@{ref.label}", repo=repo.path,
                                 sha=ref.sha, environ=environ, form=form_spec(config, options))
    return configured(inspected, options)


def head_options(repo: Repo, head: Ref, config_path: str, config: Config) -> GeneratorOptions:
    """The head's generator settings: for a template or a constant, the head's `.flipgate.yml`
    sets `generator.model`, `parameters`, `format`, `system` and `variables` (the generator
    under test); nothing else of it is read. Every other form: the base's settings."""
    options = config.generator_options
    if options.form not in FORMS_CONFIGURED:
        return options
    head_config = read_config(repo, head, gitrefs.safe_path(config_path))
    if head_config is None:
        return options
    head_suites = [c for c in head_config.suite_configs() if c.suite == config.suite]
    if not head_suites:
        return options
    theirs = head_suites[0].generator_options
    return dataclasses.replace(options, **{key: getattr(theirs, key) for key in HEAD_GENERATOR_KEYS})


def refuse_unusable(config: Config, generator: Inspected, cases: Sequence[Case], *,
                    variables_source: str | None = None) -> None:
    """Exit 2 before any render: a `variables` entry naming a field no case has, or a
    template that reads no field of the cases (its placeholders would be sent as they are).
    `variables_source`: the file the `variables` came from (the head's `.flipgate.yml` for a
    template or a constant), when not the configuration's own."""
    fields = set().union(*(case.template_vars() for case in cases)) if cases else set()
    prompt = generator.prompt
    problems = [Problem(variables_source or config.source, None,
                        f"generator.variables: {name} <- {field!r}: no case has the field {field!r} "
                        f"(the cases' fields: {', '.join(sorted(fields))})"
                        + _reversed_hint(name, field, fields, generator.names))
                for name, field in prompt.variables.items() if cases and field not in fields]
    if problems:
        raise InputError(problems)
    if generator.names is None or not cases:
        return
    readable = fields | set(prompt.variables)
    if not generator.names & readable:
        raise InputError(Problem(prompt.source, None, _reads_nothing(prompt, generator.names)))


def _reads_nothing(prompt: Prompt, names: frozenset[str]) -> str:
    """Why a generator that reads no field of the cases is refused, and what would work for
    its form: a prompt without a placeholder needs one; names that no case has need mapping."""
    shown = ", ".join(sorted(names)[:5])
    if prompt.form == FORM_GITHUB:
        return ("has no {{name}} a case fills (it reads " + (shown or "no placeholder") + "), so every "
                "case would send the same messages: write {{query}} and {{context}} where the case's "
                "question and context go" + (", or map its names with generator.variables" if names else ""))
    if prompt.chat and not names:
        return ("is a prompt none of whose messages reads a field of the cases, so every case would "
                "send the same messages: the question the application adds in code is not in it; "
                "say it with generator.messages (the prompt, then {role: user, text: \"{query}\"})")
    if prompt.chat:
        return (f"reads {shown}, which no case has: map them to the cases' fields with "
                "generator.variables (name: field)")
    return (f"reads no field of the cases (format {prompt.format}; it reads {shown or 'nothing'}): "
            "its placeholders would be sent as they are. " + _unread_advice(prompt.form))


def _reversed_hint(name: str, field: str, fields: Collection[str],
                   names: Collection[str] | None) -> str:
    """`variables` is template name: case field; written the other way round, say so."""
    if name in fields and (names is None or field in names):
        return f"; did you mean {{{field}: {name}}} (template name: case field)?"
    return ""


def _unread_advice(form: str) -> str:
    """What fixes a template that reads no case field, for the form at hand: only a template
    file's, a constant's or `generator.messages`' format is `generator.format`'s to choose."""
    if form in FORMS_CONFIGURED:
        return ("Check generator.format ({name} is fstring, {{ name }} jinja, {{name}} "
                "mustache) or map names with generator.variables")
    return "Map the names it reads to case fields with generator.variables (template name: case field)"


@dataclass(frozen=True)
class Detected:
    """What the pull request changes that the gate cares about."""

    relevant: list[str]          # changed paths that count; none: nothing to gate
    includes: frozenset[str]     # files the generators include, at either ref
    notes: list[str]


def detect_change(*, config: Config, path: str, changed: Sequence[str],
                  base_generator: Inspected | None, head_generator: Inspected) -> Detected:
    """The relevant changed paths, from what the child found each generator reads."""
    base_files, base_complete = ((base_generator.files, base_generator.complete)
                                 if base_generator is not None else (frozenset(), True))
    head_files, head_complete = head_generator.files, head_generator.complete
    scope = changes.ChangeScope(generator=path, includes=(base_files | head_files) - {path},
                                includes_complete=base_complete and head_complete,
                                watch=config.watch, watch_root=config.directory)
    relevant = changes.relevant_paths(changed, scope)
    notes = []
    if relevant and not scope.includes_complete:
        notes.append("The generator includes a template whose name is computed, so every "
                     "changed file counts as a prompt change.")
    return Detected(relevant=relevant, includes=scope.includes, notes=notes)


def describe(repo: Repo, base: Ref, head: Ref, *, path: str, files: list[str], pair: LockedPair,
             inputs: Inputs, includes: frozenset[str]) -> Change:
    """The change description: model and parameters old -> new, and the templates' diffs."""
    base_prompt = None if pair.adopted else pair.baseline.prompt
    templates: list[tuple[str, str | None, str | None]] = [
        (path, base_prompt.body if base_prompt else None, pair.candidate.prompt.body)]
    for include in sorted((includes & set(files)) - {path}):
        templates.append((include, repo.read_text(base, include), repo.read_text(head, include)))
    return changes.describe_change(
        generator=path, files=files,
        model=(None if pair.adopted else pair.baseline.model, pair.candidate.model),
        parameters=({} if pair.adopted else pair.baseline.parameters, pair.candidate.parameters),
        templates=templates, labels=(base.label, head.label),
        config_diff=inputs.config_diff, cases_diff=inputs.cases_diff)


# --- the working tree of a local run ------------------------------------------------

def uncommitted_note(paths: Sequence[str], head: Ref) -> str:
    """The warning of a run whose head is a commit while the working tree has edits to what
    its generator reads: they are not evaluated."""
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return (f"Warning: uncommitted changes to what the generator reads ({shown}) are not in "
            f"this run, which evaluates {head.where} as committed; run with --worktree "
            "(instead of --head) to evaluate the working tree.")


def worktree_note(repo: Repo, head: Ref) -> str:
    """What a `--worktree` run evaluated as its head."""
    parent = repo.checked_out()
    on = f"the checkout ({short(parent)})" if parent else "a repository without commits"
    return (f"The head is the working tree: {on} with its uncommitted edits and new files "
            f"(snapshot {short(head.sha)}; the index, HEAD and branches were not changed).")


def unused_config_notes(root: Path, config_path: str, trusted: TrustedConfig,
                        config_from: str, *, head_is_worktree: bool = False) -> list[str]:
    """A working-tree configuration that differs from the one used: unused, or, when the
    working tree is the head and the generator a template or a constant, read only for
    the generator under test (`head_options`), said the way the comment says it."""
    try:
        here = (root / config_path).read_bytes().decode("utf-8-sig", "replace")
    except OSError:
        return []
    if here.replace("\r\n", "\n") == trusted.text.replace("\r\n", "\n"):
        return []
    if head_is_worktree and trusted.from_base and \
            trusted.config.generator_options.form in FORMS_CONFIGURED:
        return [f"Warning: the working tree's {config_path} differs from the one this run used "
                f"({config_from}): as the head, only its generator.{', generator.'.join(HEAD_GENERATOR_KEYS)} "
                "are read (the generator under test); the rest judges nothing until it is "
                "committed to the base."]
    return [f"Warning: the working tree's {config_path} differs from the one this run used "
            f"({config_from}) and was not used: the configuration that judges a change is "
            "the base's; commit it to the base to use it."]


def head_config_owner(head: Ref) -> str:
    """Whose `.flipgate.yml` gives the generator under test's keys, as every message says it."""
    return "the working tree's" if head.shown == WORKTREE else "the pull request's"
