"""`flipgate init`: a starter `.flipgate.yml`, workflow and cases file for this repository."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from flipgate.commands.common import report_failures, settings_from_env
from flipgate.config.schema import DEFAULT_CONFIG, ENDPOINT_PROVIDERS
from flipgate.config.starter import (
    DEFAULT_ACTION,
    DEFAULT_CASES,
    DEFAULT_WORKFLOW,
    Starter,
    cases_text,
    config_text,
    workflow_text,
)
from flipgate.errors import InputError, Problem, SecurityError
from flipgate.git import repository as gitrefs
from flipgate.prompty.child import sample_values_isolated


def _interactive() -> bool:
    """Ask only a person at a terminal; a pipe, CI or a script gets the defaults."""
    return sys.stdin is not None and sys.stdin.isatty()


def _choose(prompty_files: list[str], wanted: str | None, interactive: bool) -> str:
    if wanted is not None:
        path = gitrefs.safe_path(wanted.replace(os.sep, "/"), source="--generator")
        if path not in prompty_files:
            raise InputError(Problem("--generator", None, f"{path} is not a tracked .prompty file "
                                     f"of this repository (tracked: {', '.join(prompty_files)})"))
        return path
    if len(prompty_files) == 1 or not interactive:
        return prompty_files[0]
    return str(click.prompt("Which Prompty file is the generator to gate?",
                            type=click.Choice(prompty_files), default=prompty_files[0]))


def _refuse_outside(root: Path, names: list[str]) -> None:
    """Refuse a target whose directory resolves outside the repository (a committed directory
    symlink such as `.github -> /elsewhere`, dangling or not), before anything is written."""
    real_root = root.resolve()
    outside = [(name, (root / name).parent.resolve()) for name in names]
    problems = [Problem(name, None, f"its directory resolves to {parent}, outside the repository "
                        "(a symlink?); flipgate init wrote nothing")
                for name, parent in outside if not parent.is_relative_to(real_root)]
    if problems:
        raise SecurityError(problems)


def _write_all(root: Path, files: dict[str, str]) -> None:
    """Write every file or none: each goes to a temporary name first, and is renamed into
    place only when all of them were written."""
    staged: list[tuple[Path, Path]] = []
    try:
        for name, text in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{target.name}.flipgate-init")
            temporary.write_text(text, encoding="utf-8")
            staged.append((temporary, target))
        for temporary, target in staged:
            temporary.replace(target)
    finally:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)


@click.command("init")
@click.option("--repo", "repo", default=".", show_default=True, type=click.Path(file_okay=False),
              help="The git repository to set up.")
@click.option("--generator", "generator", metavar="PATH", default=None,
              help="The tracked .prompty file to gate (default: the only one, or the first; "
                   "asked on a terminal when there are several).")
@click.option("--cases", "cases", metavar="PATH", default=DEFAULT_CASES, show_default=True,
              help="The cases file to write, with one example case.")
@click.option("--config", "config", metavar="PATH", default=DEFAULT_CONFIG, show_default=True,
              help="The configuration file to write.")
@click.option("--workflow", "workflow", metavar="PATH", default=DEFAULT_WORKFLOW, show_default=True,
              help="The GitHub workflow file to write.")
@click.option("--action", "action", metavar="REF", default=DEFAULT_ACTION, show_default=True,
              help="The action reference the workflow uses (`uses:`).")
@click.option("--provider", "provider", type=click.Choice(ENDPOINT_PROVIDERS), default=None,
              help="The judge's provider (default: the generator's). github: GitHub Models for "
                   "the judge and an OpenAI-type generator, on the workflow's own token; the "
                   "workflow stores no secret.")
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
@report_failures
def init(repo: str, generator: str | None, cases: str, config: str, workflow: str, action: str,
         provider: str | None, force: bool) -> None:
    """Write a starter .flipgate.yml, .github/workflows/flipgate.yml and a cases file.

    Finds the repository's tracked .prompty files and builds the example case
    from the chosen one's `sample:` when it has one (the file is parsed in
    flipgate's isolated child, never executed). Asks nothing when stdin is not
    a terminal. Refuses to overwrite an existing file unless --force; writes
    all of the files or none. Exits 2 outside a git repository or when no
    .prompty file is tracked.
    """
    git = gitrefs.Git()
    root = gitrefs.top_level(Path(repo), git=git)
    tree = gitrefs.index_tree(root, git=git)
    prompty_files = [p for p in gitrefs.tree_paths(root, tree, git=git) if p.endswith(".prompty")]
    if not prompty_files:
        raise InputError(f"no .prompty file is tracked in {root} (flipgate gates a Prompty "
                         "generator: add one with `git add`, then run flipgate init again)")
    chosen = _choose(prompty_files, generator, interactive=_interactive())
    data = gitrefs.read_required(root, tree, chosen, git=git)
    prompty, sample = sample_values_isolated(data, path=chosen, source=chosen, repo=root, sha=tree,
                                             environ=settings_from_env().environ)
    starter = Starter(generator=chosen, generator_type=str(prompty.configuration.get("type") or "openai"),
                      generator_model=prompty.model,
                      config=gitrefs.safe_path(config, source="--config"),
                      cases=gitrefs.safe_path(cases, source="--cases"),
                      workflow=gitrefs.safe_path(workflow, source="--workflow"), action=action,
                      provider=provider)
    files = {starter.config: config_text(starter), starter.cases: cases_text(sample),
             starter.workflow: workflow_text(starter)}
    if len(files) < 3:
        raise InputError("--config, --cases and --workflow must name three different files")
    _refuse_outside(root, list(files))
    existing = [name for name in files if (root / name).exists()]
    if existing and not force:
        raise InputError([Problem(name, None, "already exists; flipgate init wrote nothing "
                                  "(--force overwrites)") for name in existing])
    _write_all(root, files)

    for name in files:
        click.echo(f"wrote {name}")
    others = [p for p in prompty_files if p != chosen]
    if others:
        click.echo(f"generator: {chosen} ({len(others)} other .prompty file(s); --generator PATH "
                   "picks another, `suites:` gates several: docs/configuration.md)")
    note = "" if sample else " (the Prompty file has no sample: edit its query and context)"
    click.echo(f"cases: one example case in {starter.cases}{note}; record real ones with "
               "`flipgate record` (docs/cases.md)")
    if starter.generator_on_github and "/" not in (prompty.model or "/"):
        click.echo(f"provider: GitHub Models sends the model as written: name it publisher/model "
                   f"in {chosen} (openai/{prompty.model}, not {prompty.model})")
    if action == DEFAULT_ACTION:
        click.echo(f"workflow: replace {DEFAULT_ACTION} in {starter.workflow} with where you take "
                   "the action from (or pass --action REF)")
    click.echo("next: add flipgate-out/ and .flipgate-cache/ to .gitignore, commit, then "
               "`flipgate run --base HEAD --head HEAD`")
