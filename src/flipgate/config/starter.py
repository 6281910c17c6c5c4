"""What `flipgate init` writes: a starter `.flipgate.yml`, workflow and first case (pure text).

The workflow is the one docs/action.md recommends: `pull_request` for the
automatic check, `issue_comment` for a maintainer's `/flipgate run`, and the
three permissions flipgate needs.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flipgate.config.review_setting import REVIEW_REQUIRED
from flipgate.config.schema import (
    ARTIFACT_NAME,
    DEFAULT_CACHE_DIR,
    DEFAULT_CONFIG,
    DEFAULT_MIN_CASES_PER_CATEGORY,
    DEFAULT_OUT_DIR,
    PROVIDER_GITHUB,
)

# v7 uploads a single file unzipped (`archive: false`) and outputs its `artifact-url`.
UPLOAD_ARTIFACT = "actions/upload-artifact@v7"
HTML_FILE = "report.html"               # output/html.py writes it; config may not import output
DEFAULT_CASES = "eval/cases.jsonl"
DEFAULT_WORKFLOW = ".github/workflows/flipgate.yml"
DEFAULT_ACTION = "OWNER/flipgate@v1"   # the README's stand-in for wherever the action comes from
EXAMPLE_CATEGORY = "general"
JUDGE_MODELS = {"openai": "gpt-4.1-mini", "github": "openai/gpt-4.1-mini"}
# GitHub Models names a model publisher/name, and sends it as written.
EMBEDDING_MODELS = {"github": "openai/text-embedding-3-small"}
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
# The application's dependencies go to this directory of the ref's copy, which starts the
# command's PYTHONPATH (generator/reach.py): one `setup` for a venv, a distribution's Python
# (PEP 668: no `--user`), a laptop as a user or as root, and the action's container.
SITE_DIRECTORY = ".flipgate-site"
SETUP_INSTALL = f"-m pip install --target {SITE_DIRECTORY} -q"

# Sample inputs that hold the question, and the retrieved context, most likely first.
_QUERY_NAMES = ("query", "question", "input", "user_input", "user_query", "prompt", "message")
_CONTEXT_NAMES = ("context", "documents", "sources", "retrieved", "retrieval", "passages", "docs")
_RESERVED = ("id", "category")


@dataclass(frozen=True)
class Starter:
    """The choices a starter set is built from; paths are repository-relative (POSIX)."""

    generator: str
    generator_type: str = "openai"        # the Prompty's configuration type: openai | azure_openai
    generator_model: str | None = None
    config: str = DEFAULT_CONFIG
    cases: str = DEFAULT_CASES
    workflow: str = DEFAULT_WORKFLOW
    action: str = DEFAULT_ACTION
    # A template file or a constant: the mapping's key for it (template | python), the
    # constant's NAME, and the mapping's other lines (format, model, variables).
    generator_key: str | None = None
    generator_constant: str | None = None
    generator_keys: tuple[str, ...] = ()
    command: str | None = None            # `--command`: the application's own code answers
    setup: str | None = None
    watch: tuple[str, ...] = ()
    provider: str | None = None           # --provider: openai | azure | github (None: the generator's)

    @property
    def judge_provider(self) -> str:
        if self.provider is not None:
            return self.provider
        return "azure" if self.generator_type == "azure_openai" else "openai"

    @property
    def generator_on_github(self) -> bool:
        """The generator's requests go to GitHub Models too (an OpenAI-type file's model)."""
        return self.judge_provider == PROVIDER_GITHUB and self.generator_type != "azure_openai"

    @property
    def secrets(self) -> list[str]:
        """The action inputs of the keys this set-up needs; none when everything is GitHub Models."""
        generator = "github" if self.generator_on_github else (
            "azure" if self.generator_type == "azure_openai" else "openai")
        needed = {self.judge_provider, generator} - {PROVIDER_GITHUB}
        return [_SECRETS[name] for name in ("openai", "azure") if name in needed]


_SECRETS = {"openai": "openai-api-key: ${{ secrets.OPENAI_API_KEY }}",
            "azure": "azure-openai-api-key: ${{ secrets.AZURE_OPENAI_API_KEY }}"}


def _relative(path: str, config: str) -> str:
    """`path` as the configuration names it: relative to the configuration's directory."""
    return posixpath.relpath(path, posixpath.dirname(config) or ".")


def command_watch(command: str, tracked: list[str]) -> tuple[str, ...]:
    """What counts as a change of the application's answers, guessed from the command: the
    top directory of the module (`-m app.answer`) or script it names, and the dependency
    files; every Python file when neither is found."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    roots = []
    for before, word in zip(["", *words], words, strict=False):
        if before == "-m":
            top = word.split(".")[0]
        elif word.endswith(".py"):
            top = word.split("/")[0]
        else:
            continue
        if any(path.startswith(top + "/") for path in tracked):
            roots.append(f"{top}/**")
        elif top in tracked or top + ".py" in tracked:
            roots.append(top if top in tracked else top + ".py")
    deps = [name for name in ("requirements.txt", "pyproject.toml") if name in tracked]
    return tuple(dict.fromkeys([*(roots or ["**/*.py"]), *deps]))


def command_python(command: str) -> str:
    """The interpreter the command names (`python`, `python3.12`, a path), else `python3`:
    `setup` installs with the Python that will import what it installs."""
    try:
        first = shlex.split(command)[0]
    except (ValueError, IndexError):
        return "python3"
    return first if posixpath.basename(first).startswith("python") else "python3"


def command_setup(command: str, tracked: list[str]) -> str | None:
    """An install of the application's dependencies into `SITE_DIRECTORY` of the ref's copy,
    with the command's own Python."""
    python = command_python(command)
    if "requirements.txt" in tracked:
        return f"{python} {SETUP_INSTALL} -r requirements.txt"
    if "pyproject.toml" in tracked:
        return f"{python} {SETUP_INSTALL} ."
    return None


def _generator_lines(starter: Starter) -> str:
    if starter.command is None:
        return generator_text(starter)
    setup = f"\n  setup: {json.dumps(starter.setup)}   # once a ref, in its copy" if starter.setup else ""
    return f"""\
# The application's own code answers each case (docs/generator-command.md): a JSON case a
# line on stdin, {{"id", "response"}} lines on stdout, run at each ref in a copy of it.
generator:
  command: {json.dumps(starter.command)}{setup}
  env: [OPENAI_API_KEY]          # the only variables it receives (with PATH, HOME, LANG)
  timeout: 60                    # seconds a case
  watch: [{", ".join(json.dumps(w) for w in starter.watch)}]   # what counts as a change"""


def config_text(starter: Starter) -> str:
    provider = starter.judge_provider
    model = JUDGE_MODELS.get(provider) or starter.generator_model or "YOUR-JUDGE-DEPLOYMENT"
    model_note = ("  # the pinned judge model" if provider != "azure"
                  else "  # azure: the deployment that judges (set endpoint and version below or "
                       "in AZURE_OPENAI_ENDPOINT / OPENAI_API_VERSION)")
    return f"""\
# flipgate: gate prompt and model changes on groundedness flips.
# Every key: docs/configuration.md. Read from the pull request's BASE branch.
version: 1
cases: {_relative(starter.cases, starter.config)}
{_generator_lines(starter)}
judge:
  provider: {provider}
  model: {model}{model_note}
gate:
  # Categories whose confirmed regressions block the merge (a case's "category").
  blocking_categories: [{EXAMPLE_CATEGORY}]
  # Why: below this many cases one judge's wobble could decide, so flips are held back; strict: true blocks.
  min_cases_per_category: {DEFAULT_MIN_CASES_PER_CATEGORY}
  strict: false
  # A held-back flip keeps the status pending until a maintainer labels it or comments /flipgate accept.
  review: {REVIEW_REQUIRED}
relevance:
  threshold: 0.7
  embedding_model: {EMBEDDING_MODELS.get(provider, DEFAULT_EMBEDDING_MODEL)}
"""


def generator_text(starter: Starter) -> str:
    """The `generator:` line (a Prompty or GitHub Models file), or its mapping (a template
    file, `FILE.py:NAME` for a constant)."""
    path = _relative(starter.generator, starter.config)
    endpoint = (["  endpoint: {provider: github}  # GitHub Models, with the workflow's own token"]
                if starter.generator_on_github else [])
    if starter.generator_key is None:
        keys = [f"  {line}" for line in starter.generator_keys]
        return "\n".join(["generator:", f"  path: {path}", *keys, *endpoint]) \
            if endpoint or keys else f"generator: {path}"
    named = f"{path}:{starter.generator_constant}" if starter.generator_constant else path
    return "\n".join(["generator:", f"  {starter.generator_key}: {named}",
                      *(f"  {line}" for line in starter.generator_keys), *endpoint])


def template_variables(names: Iterable[str]) -> dict[str, str]:
    """A template's names that read the question or the context, mapped to those case fields."""
    mapped = {}
    for name in sorted(names):
        lowered = name.lower()
        if name in ("query", "context"):
            continue
        if name in _QUERY_NAMES or "query" in lowered or "question" in lowered:
            mapped[name] = "query"
        elif name in _CONTEXT_NAMES or "context" in lowered:
            mapped[name] = "context"
    return mapped


def _first_text(values: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = values.get(name)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return "\n\n".join(value)
    return None


def example_case(sample: Mapping[str, Any], number: int = 1) -> dict[str, Any]:
    """One case from a Prompty's sample inputs (or one `testData` entry of a `.prompt.yml`):
    its question and context when it names them, its `expected` answer as the ground truth,
    every other value kept as a field the template reads."""
    sample = dict(sample)
    expected = sample.pop("expected", None)
    query = _first_text(sample, _QUERY_NAMES)
    context = _first_text(sample, _CONTEXT_NAMES)
    case: dict[str, Any] = {
        "id": f"example-{number:03d}",
        "category": EXAMPLE_CATEGORY,
        "query": query or "A question your users ask",
        "context": context or "The exact text your retrieval returned for that question.",
    }
    if isinstance(expected, str) and expected.strip():
        case["ground_truth"] = expected
    for name, value in sample.items():  # the template reads them by their own names
        if name not in case and name not in _RESERVED:
            case[name] = value
    return case


def cases_text(sample: Mapping[str, Any], more: Sequence[Mapping[str, Any]] = ()) -> str:
    """The cases file: the example case, then one a further sample (a `testData` entry)."""
    cases = [example_case(one, number) for number, one in enumerate([sample, *more], start=1)]
    return "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases)


def test_data(document: Any) -> list[dict[str, Any]]:
    """A GitHub Models prompt file's `testData`: its entries that are mappings of text."""
    entries = document.get("testData") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        return []
    return [dict(entry) for entry in entries
            if isinstance(entry, dict) and entry and all(isinstance(k, str) for k in entry)]


# The job's `if:` and concurrency group, the same in docs/action.md: every pull request
# event but an edit that keeps the base; of comments, only those on a pull request by an
# owner, member or collaborator with a line that starts `/flipgate` after at most three
# spaces: every line github/event.command_lines may read (it decides; flipgate checks the
# permission).
JOB_FILTER = """\
    if: >-
      (github.event_name == 'pull_request' &&
       (github.event.action != 'edited' || github.event.changes.base)) ||
      (github.event_name == 'issue_comment' && github.event.issue.pull_request &&
       contains(fromJSON('["OWNER", "MEMBER", "COLLABORATOR"]'),
                github.event.comment.author_association) &&
       (startsWith(github.event.comment.body, '/flipgate') ||
        startsWith(github.event.comment.body, ' /flipgate') ||
        startsWith(github.event.comment.body, '  /flipgate') ||
        startsWith(github.event.comment.body, '   /flipgate') ||
        contains(github.event.comment.body, fromJSON('"\\n/flipgate"')) ||
        contains(github.event.comment.body, fromJSON('"\\n /flipgate"')) ||
        contains(github.event.comment.body, fromJSON('"\\n  /flipgate"')) ||
        contains(github.event.comment.body, fromJSON('"\\n   /flipgate"'))))"""
CONCURRENCY_GROUP = ("flipgate-${{ github.event.pull_request.number || github.event.issue.number "
                     "}}-${{ github.event.comment.id || 'pull' }}")


def _install_note(starter: Starter) -> str:
    if starter.command is None:
        return ""
    return ("      # The application is installed by generator.setup inside the action's container,\n"
            "      # once for the base and once for the head, each in a copy of its own commit.\n")


def workflow_text(starter: Starter) -> str:
    inputs = starter.secrets + ([] if starter.config == DEFAULT_CONFIG else [f"config: {starter.config}"])
    with_inputs = "".join(f"\n          {line}" for line in inputs)
    with_block = f"\n        with:{with_inputs}" if inputs else ""
    models = ("\n  models: read          # GitHub Models: the judge's requests, on this token"
              if PROVIDER_GITHUB == starter.judge_provider else "")
    number = "github.event.pull_request.number || github.event.issue.number"
    return f"""\
# flipgate on every pull request, and on a maintainer's `/flipgate run` comment
# (how a fork's pull request gets evaluated). See docs/action.md.
name: flipgate

on:
  pull_request:
    types: [opened, synchronize, reopened, edited]  # edited: only a new base runs (the if:)
  issue_comment:
    types: [created]

permissions:
  contents: read        # check out the repository, fetch the PR's commits
  pull-requests: write  # the comment, replies and reactions on a PR
  statuses: write       # the `flipgate` commit status{models}

jobs:
  flipgate:
{JOB_FILTER}
    runs-on: ubuntu-latest
    timeout-minutes: 30
    concurrency:
      # A push or a new base cancels the PR's older run; each comment has its own group,
      # so no comment cancels another's run (docs/action.md, "Concurrency").
      group: {CONCURRENCY_GROUP}
      cancel-in-progress: ${{{{ github.event_name == 'pull_request' }}}}
    steps:
      - uses: actions/checkout@v4
      - uses: actions/cache@v4
        with:
          path: {DEFAULT_CACHE_DIR}
          key: flipgate-${{{{ {number} }}}}-${{{{ github.run_id }}}}
          restore-keys: |
            flipgate-${{{{ {number} }}}}-
            flipgate-
{_install_note(starter)}      - id: flipgate
        uses: {starter.action}{with_block}
      # report.html alone, not zipped: the browser opens it from the run in one click.
      - id: page
        if: always()
        uses: {UPLOAD_ARTIFACT}
        with:
          path: {DEFAULT_OUT_DIR}/{HTML_FILE}
          archive: false
          if-no-files-found: ignore
      # Hands the page's URL back: the comment this run posted links it (nothing else runs).
      - if: always() && steps.page.outputs.artifact-url != ''
        uses: {starter.action}
        with:
          relink: ${{{{ steps.page.outputs.artifact-url }}}}
      - if: always()
        uses: {UPLOAD_ARTIFACT}
        with:
          name: {ARTIFACT_NAME}
          path: {DEFAULT_OUT_DIR}/
          if-no-files-found: ignore
"""
