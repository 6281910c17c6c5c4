"""`flipgate replay --sample`: the request one case would send, for every form, sending nothing.

The one ref is trusted, as in single-ref `replay`: its configuration, its cases and its
generator, read, locked and rendered by the same steps a replay takes up to the request
(`pipeline.prepare`, `pipeline.lock_generators`), so what prints is what would be sent. The
application's own code (`generator.command`) builds its request itself: the preview is the
line its command would read. A Prompty file named with `--generator` (and no `--case`)
renders its own `sample:` instead (`run/sample.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from flipgate.config.schema import (
    DEFAULT_CONFIG,
    FORM_PROMPTY,
    GeneratorOptions,
    generator_form,
)
from flipgate.errors import InputError, Problem
from flipgate.git import repository as gitrefs
from flipgate.model import Case
from flipgate.run.pipeline import (
    cases_source,
    lock_generators,
    one_suite,
    open_repo,
    prepare,
    undefined_notes,
)
from flipgate.run.refs import (
    Ref,
    Repo,
    generator_path,
    load_cases_for,
    load_config_at,
    read_config,
    refuse_unusable,
    require_generator,
)
from flipgate.run.sample import sample_request
from flipgate.settings import Settings

COMMAND_NOTE = ("the application's own code builds its request, so flipgate cannot show it: "
                "`stdin` is the line its command reads for this case")
_SHOWN_IDS = 10


def pick_case(cases: Sequence[Case], case_id: str | None, *, source: str) -> Case:
    """The case named `case_id`, else the first."""
    if not cases:
        raise InputError(Problem(source, None, "has no case to preview"))
    if case_id is None:
        return cases[0]
    for case in cases:
        if case.id == case_id:
            return case
    ids = ", ".join(case.id for case in cases[:_SHOWN_IDS]) + (", …" if len(cases) > _SHOWN_IDS else "")
    raise InputError(Problem("--case", None, f"no case {case_id!r} in {source} (its ids: {ids})"))


def preview(*, repo: Path, ref: str, settings: Settings, config_path: str | None = None,
            generator: str | None = None, suite: str | None = None, case_id: str | None = None,
            warn: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """What one case of the generator at `ref` would send: `{"case", "url", "model",
    "parameters", "messages"}`; for the application's code, the line it would read."""
    git_repo = open_repo(repo, settings)
    at = git_repo.ref(ref)
    if generator is not None:
        if case_id is not None:
            raise InputError(Problem("--case", None, "previews a case of the configuration's "
                                     "generator; drop --generator (which renders a Prompty "
                                     "file's own sample)"))
        return _own_sample(repo=git_repo, at=at, settings=settings, config_path=config_path,
                           generator=generator, suite=suite, warn=warn)
    trusted = load_config_at(git_repo, at, at, config_path or DEFAULT_CONFIG)
    config = one_suite(trusted.config, suite)
    inputs = load_cases_for(git_repo, trusted, config, at)
    source = cases_source(config)
    case = pick_case(inputs.cases, case_id, source=source)
    options = config.generator_options
    if options.command is not None:
        return {"case": case.id, "form": "command", "command": options.command.command,
                "note": COMMAND_NOTE, "stdin": case.template_vars()}
    path = generator_path(config)
    inspected = require_generator(git_repo, at, path, environ=settings.environ, config=config)
    refuse_unusable(config, inspected, inputs.cases)
    pair = lock_generators(git_repo, at, at, config=config, base_generator=inspected.prompt,
                           head_generator=inspected.prompt, settings=settings)
    prepared = prepare(git_repo, {"preview": at}, {"preview": pair.baseline}, [case],
                       environ=settings.environ, strict_undefined=options.strict_undefined,
                       cases_source=source)
    for note in undefined_notes(prepared):
        warn(note)
    side = prepared["preview"]
    return {"case": case.id, "url": side.endpoint.base_url, "model": side.model,
            "parameters": dict(side.parameters),
            "messages": [dict(message) for message in side.messages(case.id)]}


def _own_sample(*, repo: Repo, at: Ref, settings: Settings, config_path: str | None,
                generator: str, suite: str | None, warn: Callable[[str], None]) -> dict[str, Any]:
    """A Prompty file's own `sample:`, rendered (the configuration, when there is one, gives
    the endpoint settings)."""
    path = gitrefs.safe_path(generator)
    form = generator_form(path, GeneratorOptions())
    if form != FORM_PROMPTY:
        raise InputError(Problem(path, None, f"--generator renders a Prompty file's own sample; a "
                                 f"{form} file has none: preview a case of the configuration's "
                                 "generator with `flipgate replay --sample [--case ID]`"))
    config = None
    if config_path is not None:
        config = read_config(repo, at, gitrefs.safe_path(config_path))
        if config is not None:
            config = one_suite(config, suite)
    options = config.generator_options if config is not None else None
    return sample_request(repo=repo, ref=at, path=path, environ=settings.environ,
                          endpoint=options.endpoint if options else None,
                          strict_undefined=options.strict_undefined if options else False,
                          warn=warn)
