"""`flipgate init`: a starter `.flipgate.yml`, workflow and cases file for this repository."""

from __future__ import annotations

import os
import posixpath
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
import yaml

from flipgate.commands.common import report_failures, settings_from_env
from flipgate.config.schema import (
    DEFAULT_CONFIG,
    ENDPOINT_PROVIDERS,
    GITHUB_PROMPT_SUFFIXES,
    PROVIDER_GITHUB,
)
from flipgate.config.starter import (
    DEFAULT_ACTION,
    DEFAULT_CASES,
    DEFAULT_WORKFLOW,
    JUDGE_MODELS,
    Starter,
    cases_text,
    command_setup,
    command_watch,
    config_text,
    template_variables,
    test_data,
    workflow_text,
)
from flipgate.errors import InputError, Problem, SecurityError
from flipgate.git import repository as gitrefs
from flipgate.prompts import Prompt
from flipgate.prompts.child import inspect_isolated, sample_values_isolated
from flipgate.prompts.forms import FormSpec


def _interactive() -> bool:
    """Ask only a person at a terminal; a pipe, CI or a script gets the defaults."""
    return sys.stdin is not None and sys.stdin.isatty()


def _choose(generator_files: list[str], wanted: str | None, interactive: bool,
            tracked: set[str]) -> tuple[str, str | None]:
    """(the generator's path, a constant's NAME): `--generator FILE[:NAME]`, else a Prompty
    or GitHub Models prompt file found in the repository."""
    if wanted is not None:
        wanted = wanted.replace(os.sep, "/")
        name = None
        if ".py:" in wanted:
            wanted, _, name = wanted.rpartition(":")
        path = gitrefs.safe_path(wanted, source="--generator")
        if path not in tracked or (name is None and path.endswith(".py")):
            raise InputError(Problem("--generator", None, f"{path} is not a tracked .prompty file "
                                     "(nor a .prompt.yml, a template, or FILE.py:NAME) of this "
                                     f"repository (found: {', '.join(generator_files) or 'none'})"))
        return path, name
    if not generator_files:
        raise InputError("no .prompty file is tracked (nor a .prompt.yml): name the generator "
                         "with --generator FILE (a template) or FILE.py:NAME (a string "
                         "constant), or add one with `git add`, then run flipgate init again")
    if len(generator_files) == 1 or not interactive:
        return generator_files[0], None
    return str(click.prompt("Which Prompty file (or GitHub Models prompt file) is the generator "
                            "to gate?", type=click.Choice(generator_files),
                            default=generator_files[0])), None


def _template_keys(path: str, constant: str | None, data: bytes, *, root: Path, tree: str,
                   environ: Mapping[str, str], model: str,
                   guesses: list[str]) -> tuple[tuple[str, ...], dict[str, Any]]:
    """A template's or a constant's `generator:` lines and an example case's extra fields,
    from the names it reads (read in the isolated child, never run)."""
    suffix = posixpath.splitext(path)[1].lower()
    fmt = ("fstring" if constant else "mustache" if suffix in (".mustache", ".hbs")
           else "jinja" if suffix in (".j2", ".jinja", ".jinja2") else "fstring")
    # a Python name's format is fstring unless it holds a prompt object, which fixes its own
    spec = FormSpec(form="python" if constant else "template", format=None if constant else fmt,
                    constant=constant)
    inspected = inspect_isolated(data, path=path, source=path, repo=root, sha=tree, environ=environ,
                                 form=spec)
    names = inspected.names or frozenset()
    variables = template_variables(names)
    keys = [*([] if inspected.prompt.chat else [f"format: {fmt}"]),
            f"model: {model}  # the model your application calls",
            *_variables_keys(names, path, guesses)]
    histories = {part.placeholder for part in inspected.prompt.chat if part.placeholder}
    extra: dict[str, Any] = {name: [] if name in histories else f"<{name}>"   # a history: its messages
                             for name in sorted(names - set(variables) - {"query", "context"})}
    return tuple(keys), extra


def _variables_keys(names: Iterable[str], path: str, guesses: list[str]) -> list[str]:
    """The `variables:` line for the names a generator reads that hold the question or the
    context (a guess, said as one)."""
    variables = template_variables(names)
    if not variables:
        return []
    mapping = "{" + ", ".join(f"{n}: {f}" for n, f in variables.items()) + "}"
    guesses.append(f"guessed variables {mapping} from the names {path} reads (template name: "
                   "case field); edit generator.variables if one means another field")
    return [f"variables: {mapping}  # template name: case field"]


def _github_prompt(data: bytes, chosen: str, *, root: Path, tree: str, environ: Mapping[str, str],
                   guesses: list[str]) -> tuple[Prompt, tuple[str, ...], list[dict[str, Any]]]:
    """A `.prompt.yml`: read in the child; its `variables` line, and its `testData` entries
    (the cases it was tried on) read from the YAML the child has just accepted."""
    inspected = inspect_isolated(data, path=chosen, source=chosen, repo=root, sha=tree,
                                 environ=environ, form=FormSpec(form="github"))
    keys = _variables_keys(inspected.names or (), chosen, guesses)
    try:
        entries = test_data(yaml.safe_load(data.decode("utf-8-sig")))
    except (UnicodeDecodeError, yaml.YAMLError):
        entries = []
    return inspected.prompt, tuple(keys), entries


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


def _write_starter(root: Path, starter: Starter, *, sample: dict[str, object],
                   force: bool, more: Sequence[Mapping[str, Any]] = ()) -> None:
    files = {starter.config: config_text(starter), starter.cases: cases_text(sample, more),
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
@click.option("--generator", "generator", metavar="FILE[:NAME]", default=None,
              help="The generator to gate: a tracked .prompty or .prompt.yml file (default: the "
                   "only one, or the first; asked on a terminal when there are several), a "
                   "template file, or FILE.py:NAME (a string constant).")
@click.option("--cases", "cases", metavar="PATH", default=DEFAULT_CASES, show_default=True,
              help="The cases file to write, with one example case.")
@click.option("--config", "config", metavar="PATH", default=DEFAULT_CONFIG, show_default=True,
              help="The configuration file to write.")
@click.option("--workflow", "workflow", metavar="PATH", default=DEFAULT_WORKFLOW, show_default=True,
              help="The GitHub workflow file to write.")
@click.option("--action", "action", metavar="REF", default=DEFAULT_ACTION, show_default=True,
              help="The action reference the workflow uses (`uses:`).")
@click.option("--command", "command", metavar="CMD", default=None,
              help="The application's own code as the generator: the command that answers "
                   "JSON cases on stdin (docs/generator-command.md); no .prompty file needed.")
@click.option("--provider", "provider", type=click.Choice(ENDPOINT_PROVIDERS), default=None,
              help="The judge's provider (default: the generator's). github: GitHub Models for "
                   "the judge and an OpenAI-type generator, on the workflow's own token; the "
                   "workflow stores no secret.")
@click.option("--model", "model", metavar="NAME", default=None,
              help="The model under test, for a template file or a constant (the model your "
                   "application calls); without it, init writes a guess and says so.")
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
@report_failures
def init(repo: str, generator: str | None, cases: str, config: str, workflow: str, action: str,
         provider: str | None, force: bool, command: str | None = None,
         model: str | None = None) -> None:
    """Write a starter .flipgate.yml, .github/workflows/flipgate.yml and a cases file.

    Finds the repository's tracked .prompty and .prompt.yml files (or takes
    --generator FILE[:NAME]: a template file or a string constant too) and
    builds the example cases from a Prompty file's `sample:` or a .prompt.yml's
    `testData` when it has them (every file is read in flipgate's isolated
    child, never executed). Prints every guess it made, and the steps left.
    Asks nothing when stdin is not a terminal. Refuses to overwrite an
    existing file unless --force; writes all of the files or none. Exits 2
    outside a git repository or when no generator is found.
    """
    git = gitrefs.Git()
    root = gitrefs.top_level(Path(repo), git=git)
    tree = gitrefs.index_tree(root, git=git)
    tracked = gitrefs.tree_paths(root, tree, git=git)
    prompty_files = [p for p in tracked if p.endswith((".prompty", *GITHUB_PROMPT_SUFFIXES))]
    guesses: list[str] = []

    def starter_of(**generator: Any) -> Starter:
        """The starter for this generator, with the files, action and provider the flags name."""
        return Starter(**generator, config=gitrefs.safe_path(config, source="--config"),
                       cases=gitrefs.safe_path(cases, source="--cases"),
                       workflow=gitrefs.safe_path(workflow, source="--workflow"), action=action,
                       provider=provider)

    if command is not None:
        if not command.strip():
            raise InputError(Problem("--command", None, "is empty"))
        starter = starter_of(generator="", command=command, setup=command_setup(command, tracked),
                             watch=command_watch(command, tracked))
        _write_starter(root, starter, sample={}, force=force)
        guesses.append(f"guessed generator.watch {', '.join(starter.watch)} from the command: "
                       "what counts as a change; edit it in " + starter.config)
        if starter.setup:
            guesses.append(f"guessed generator.setup `{starter.setup}` (installs into "
                           ".flipgate-site with the command's Python: docs/generator-command.md)")
        if model is not None:
            guesses.append(f"--model {model} is not used: the application's code calls its own model")
        _say(guesses, _steps(starter, first="write the adapter the command runs "
                                            "(docs/generator-command.md)"), starter)
        return
    chosen, constant = _choose(prompty_files, generator, interactive=_interactive(), tracked=set(tracked))
    data = gitrefs.read_required(root, tree, chosen, git=git)
    environ = settings_from_env().environ
    keys: tuple[str, ...] = ()
    key = None
    more: list[dict[str, Any]] = []
    on_github = provider == PROVIDER_GITHUB
    if chosen.endswith(".prompty"):
        prompt, sample = sample_values_isolated(data, path=chosen, source=chosen, repo=root, sha=tree,
                                                 environ=environ)
    elif chosen.endswith(GITHUB_PROMPT_SUFFIXES):
        prompt, keys, entries = _github_prompt(data, chosen, root=root, tree=tree,
                                                environ=environ, guesses=guesses)
        sample, more = (entries[0], entries[1:]) if entries else ({}, [])
    else:
        guessed = JUDGE_MODELS[PROVIDER_GITHUB if on_github else "openai"]
        if model is None:
            guesses.append(f"guessed model {guessed} (the model your application calls); pass "
                           "--model NAME")
        keys, sample = _template_keys(chosen, constant, data, root=root, tree=tree, environ=environ,
                                      model=model or guessed, guesses=guesses)
        prompt, key = None, "python" if constant else "template"
    if prompt is not None and model is not None and model != prompt.model:
        guesses.append(f"--model {model} is not used: {chosen} names its model itself "
                       f"({prompt.model or 'none'}); edit the file to change it")
    starter = starter_of(generator=chosen,
                         generator_type=str(prompt.configuration.get("type") or "openai") if prompt else "openai",
                         generator_model=prompt.model if prompt else None,
                         generator_key=key, generator_constant=constant, generator_keys=keys)
    _write_starter(root, starter, sample=sample, more=more, force=force)
    others = [p for p in prompty_files if p != chosen]
    if others:
        click.echo(f"generator: {chosen} ({len(others)} other .prompty file(s); --generator PATH "
                   "picks another, `suites:` gates several: docs/configuration.md)")
    origin = (f"{1 + len(more)} from its testData" if chosen.endswith(GITHUB_PROMPT_SUFFIXES) and sample
              else "one example case")
    note = "" if sample else " (the generator has no sample: edit its query and context)"
    click.echo(f"cases: {origin} in {starter.cases}{note}; record real ones with "
               "`flipgate record` (docs/cases.md)")
    if prompt is not None and starter.generator_on_github and "/" not in (prompt.model or "/"):
        click.echo(f"provider: GitHub Models sends the model as written: name it publisher/model "
                   f"in {chosen} (openai/{prompt.model}, not {prompt.model})")
    _say(guesses, _steps(starter), starter)


def _steps(starter: Starter, first: str | None = None) -> list[str]:
    """What is left to do after init, in order, for this set-up."""
    steps = [first] if first else []
    if starter.action == DEFAULT_ACTION:
        steps.append(f"replace {DEFAULT_ACTION} in {starter.workflow} with where you take the "
                     "action from (or run init again with --action REF)")
    for secret in starter.secrets:
        name = secret.split("secrets.", 1)[1].split()[0]
        steps.append(f"add the repository secret {name} (Settings > Secrets and variables > Actions)")
    steps.append("add flipgate-out/ and .flipgate-cache/ to .gitignore")
    steps.append("try a case's request without sending it: `flipgate replay --sample`")
    steps.append("commit, then `flipgate run --base HEAD --head HEAD`")
    return steps


def _say(guesses: list[str], steps: list[str], starter: Starter) -> None:
    if starter.provider is None:
        guesses.append(f"guessed the judge's provider {starter.judge_provider} from the "
                       "generator's (--provider picks another: openai, azure or github)")
    for guess in guesses:
        click.echo(f"guess: {guess}")
    click.echo("next:")
    for number, step in enumerate(steps, start=1):
        click.echo(f"  {number}. {step}")
