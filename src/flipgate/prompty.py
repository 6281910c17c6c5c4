"""Prompty generators: parse the file, render its messages in Jinja2's sandbox.

A Prompty file is YAML front matter between `---` lines, then a Jinja2 body
split into chat messages by lines that read `system:`, `user:` or
`assistant:`. The file may come from a pull request, so it is untrusted:

- the front matter is read with PyYAML's safe loader;
- the body is rendered by `ImmutableSandboxedEnvironment` with strict
  undefined variables, hardened as `sandbox.py` describes (templates that
  reach for Python internals are refused, with file and line, before
  anything renders; operations that allocate without bound are checked);
- `{% include %}` / `{% extends %}` / `{% import %}` resolve, relative to
  the including file, only to files of the same git ref inside the
  repository (read through a callable, never from the work tree);
- `render_isolated` renders in a child process with memory and CPU limits
  and a wall-clock timeout, so a template that loops or grows without end
  stops the run with a SecurityError instead of hanging it.

Lines in every message are the file's own: the front matter is blanked, not
cut, before the body is handed to Jinja2.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.model import Case
from flipgate.sandbox import Limits, Refused, check_template, make_environment
from flipgate.textinput import decode_utf8, load_yaml_located

ROLES = ("system", "user", "assistant")
_ROLE_LINE = re.compile(rf"^[ \t]*#?[ \t]*({'|'.join(ROLES)})[ \t]*:[ \t]*$",
                        re.IGNORECASE | re.MULTILINE)
# Inserted before a role-like line inside a case's value so that data can never
# start a new message; removed again after the messages are split.
_DATA_MARK = "\x00"
_MARKED_ROLE = re.compile(rf"\x00(?=[ \t]*#?[ \t]*(?:{'|'.join(ROLES)})[ \t]*:)", re.IGNORECASE)

CONFIGURATION_KEYS = ("type", "model", "azure_deployment", "base_url", "azure_endpoint",
                      "api_version", "api_key")
CONFIGURATION_TYPES = ("openai", "azure_openai")

Message = dict[str, str]
Reader = Callable[[str], "bytes | None"]


@dataclass(frozen=True)
class Prompty:
    """A parsed generator. `configuration` and `parameters` are raw (unexpanded)."""

    path: str        # repository path
    source: str      # how messages name it, e.g. "prompts/answer.prompty@1a2b3c4d5e6f"
    text: str
    configuration: Mapping[str, Any]
    parameters: Mapping[str, Any]
    template: str    # the body, front matter blanked so line numbers are the file's
    key_lines: Mapping[tuple[str, ...], int] = field(default_factory=dict)

    @property
    def body(self) -> str:
        """The message templates alone, as a reviewer wants to diff them."""
        return self.template.lstrip("\n")

    @property
    def model(self) -> str | None:
        value = self.configuration.get("model") or self.configuration.get("azure_deployment")
        return value if isinstance(value, str) else None

    def line_of(self, *key: str) -> int | None:
        for length in range(len(key), 0, -1):
            if (line := self.key_lines.get(key[:length])) is not None:
                return line
        return None


@dataclass(frozen=True)
class Rendered:
    """Every case's messages, and every file the templates read (the generator included)."""

    messages: Mapping[str, tuple[Message, ...]]
    loaded: frozenset[str]


# --- parsing -----------------------------------------------------------------------

def _compose_front_matter(text: str, source: str, first_line: int) -> tuple[Any, dict[tuple[str, ...], int]]:
    """The YAML's value and the file line of every mapping key."""
    return load_yaml_located(text, source=source, first_line=first_line, what="YAML front matter")


def _scalar_text(value: Any) -> Any:
    """YAML reads `api_version: 2024-10-21` as a date; configuration values are text."""
    if isinstance(value, (datetime.date, int, float)) and not isinstance(value, bool):
        return value.isoformat() if isinstance(value, datetime.date) else str(value)
    return value


def parse_prompty(data: bytes | str, *, path: str, source: str | None = None) -> Prompty:
    """Parse a Prompty file; every problem names the file and line."""
    source = source or path
    text = decode_utf8(data, source)
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r").strip() != "---":
        raise InputError(Problem(source, 1, "a Prompty file starts with a '---' line "
                                 "that opens its YAML front matter"))
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r").strip() == "---"), None)
    if end is None:
        raise InputError(Problem(source, 1, "the front matter is never closed by a '---' line"))
    front, key_lines = _compose_front_matter("\n".join(lines[1:end]), source, first_line=2)
    problems: list[Problem] = []

    def problem(key: tuple[str, ...], message: str) -> None:
        line = next((key_lines[key[:n]] for n in range(len(key), 0, -1) if key[:n] in key_lines), 1)
        problems.append(Problem(source, line, message))

    if front is None:
        front = {}
    if not isinstance(front, dict):
        raise InputError(Problem(source, 2, "the front matter must be a mapping (key: value)"))
    template_kind = front.get("template", "jinja2")
    if isinstance(template_kind, dict):
        template_kind = template_kind.get("format", "jinja2")
    if template_kind != "jinja2":
        problem(("template",), f"template format {template_kind!r} is not supported (use jinja2)")

    model = front.get("model")
    configuration: dict[str, Any] = {}
    parameters: dict[str, Any] = {}
    if not isinstance(model, dict):
        problem(("model",), "'model' must be a mapping with 'configuration' (and optional 'parameters')")
    else:
        if model.get("api", "chat") != "chat":
            problem(("model", "api"), "only 'api: chat' generators are supported")
        raw_configuration = model.get("configuration")
        if not isinstance(raw_configuration, dict):
            problem(("model", "configuration"), "'model.configuration' must be a mapping")
        else:
            configuration = {str(k): _scalar_text(v) for k, v in raw_configuration.items()}
            for key, value in configuration.items():
                where = ("model", "configuration", str(key))
                if key not in CONFIGURATION_KEYS:
                    problem(where, f"unsupported key 'model.configuration.{key}' "
                                   f"(known: {', '.join(CONFIGURATION_KEYS)})")
                elif not isinstance(value, str) or not value.strip():
                    problem(where, f"'model.configuration.{key}' must be a non-empty string")
            kind = configuration.get("type")
            if kind not in CONFIGURATION_TYPES:
                problem(("model", "configuration", "type"),
                        f"'model.configuration.type' must be one of {', '.join(CONFIGURATION_TYPES)}")
            elif kind == "openai" and "model" not in configuration:
                problem(("model", "configuration"), "'model.configuration.model' is required for type openai")
            elif kind == "azure_openai" and not ({"azure_deployment", "model"} & set(configuration)):
                problem(("model", "configuration"),
                        "'model.configuration.azure_deployment' is required for type azure_openai")
        raw_parameters = model.get("parameters", {})
        if raw_parameters is None:
            raw_parameters = {}
        if not isinstance(raw_parameters, dict):
            problem(("model", "parameters"), "'model.parameters' must be a mapping")
        else:
            parameters = {str(k): v for k, v in raw_parameters.items()}
    if problems:
        raise InputError(problems)
    blanked = "\n" * (end + 1) + "\n".join(lines[end + 1:])
    return Prompty(path=path, source=source, text=text, configuration=configuration,
                   parameters=parameters, template=blanked, key_lines=key_lines)


def split_messages(text: str) -> list[Message]:
    """Split rendered text at role lines; text before the first role is a system message."""
    messages: list[Message] = []
    role, start = "system", 0
    for match in _ROLE_LINE.finditer(text):
        messages.append({"role": role, "content": text[start:match.start()]})
        role, start = match.group(1).lower(), match.end()
    messages.append({"role": role, "content": text[start:]})
    out = []
    for message in messages:
        content = _MARKED_ROLE.sub("", message["content"]).strip()
        if content:
            out.append({"role": message["role"], "content": content})
    return out


def _mark_data(value: Any) -> Any:
    """Case values with a marker before each role-like line, so data can't start a message."""
    if isinstance(value, str):
        return _ROLE_LINE.sub(lambda m: _DATA_MARK + m.group(0), value)
    if isinstance(value, dict):
        return {k: _mark_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark_data(v) for v in value]
    return value


class _RefLoader:
    """Templates of one git ref, by repository path; remembers what it loaded."""

    def __init__(self, main: Prompty, read: Reader, limits: Limits):
        from jinja2 import BaseLoader

        self.main, self.read, self.limits = main, read, limits
        self.sources: dict[str, str] = {main.path: main.template}
        self.raw: dict[str, bytes | None] = {}
        owner = self

        class Loader(BaseLoader):
            def get_source(self, environment: Any, template: str) -> tuple[str, str, Callable[[], bool]]:
                return owner.get_source(environment, template)

        self.jinja_loader = Loader()

    def read_cached(self, name: str) -> bytes | None:
        if name not in self.raw:
            self.raw[name] = self.read(name)
        return self.raw[name]

    def get_source(self, environment: Any, name: str) -> tuple[str, str, Callable[[], bool]]:
        from jinja2 import TemplateNotFound

        if name not in self.sources:
            if len(self.sources) >= self.limits.max_files:
                raise Refused(f"more than {self.limits.max_files} templates loaded")
            try:
                data = self.read_cached(name)
            except InputError as exc:
                raise Refused(str(exc)) from None
            if data is None:
                raise TemplateNotFound(name)
            if len(data) > self.limits.max_template_bytes:
                raise Refused(f"template {name!r} is larger than {self.limits.max_template_bytes} bytes")
            self.sources[name] = decode_utf8(data, name)
        source = self.sources[name]
        check_template(environment, source, name=name)
        return source, name, lambda: True


def _template_line(tb: TracebackType | None, files: Iterable[str]) -> tuple[str | None, int | None]:
    """The innermost template frame of a traceback (Jinja2 rewrites them to template lines)."""
    known = set(files)
    where: tuple[str | None, int | None] = (None, None)
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in known:
            where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return where


def _classify(exc: BaseException, *, loader: _RefLoader) -> tuple[type[InputError], Problem]:
    """Anything a render raised, as (InputError or SecurityError, a located problem)."""
    from jinja2 import TemplateNotFound, TemplateSyntaxError, UndefinedError
    from jinja2.exceptions import SecurityError as JinjaSecurityError

    if isinstance(exc, InputError):
        first = exc.problems[0] if exc.problems else str(exc)
        problem = first if isinstance(first, Problem) else Problem(loader.main.path, None, str(first))
        return type(exc), problem
    path, line = _template_line(exc.__traceback__, loader.sources)
    path = path or loader.main.path
    if isinstance(exc, TemplateSyntaxError):
        return InputError, Problem(exc.filename or path, exc.lineno,
                                   f"template syntax error: {exc.message}")
    if isinstance(exc, TemplateNotFound):
        return InputError, Problem(path, line, f"included template '{exc.name}' is not in this git ref")
    if isinstance(exc, UndefinedError):
        return InputError, Problem(path, line, str(exc.message))
    security = {Refused: str(exc), JinjaSecurityError: f"refused by the sandbox: {exc}",
                OverflowError: f"refused by the sandbox: {exc}",
                RecursionError: "templates nest too deeply, or include or call each other without end",
                MemoryError: "rendering ran out of memory"}
    for kind, message in security.items():
        if isinstance(exc, kind):
            return SecurityError, Problem(path, line, message)
    return InputError, Problem(path, line, f"template error: {type(exc).__name__}: {exc}")


def _checked_template(prompty: Prompty, env: Any, loader: _RefLoader, limits: Limits) -> Any:
    """The compiled generator, after every template it names has been checked."""
    from jinja2 import TemplateNotFound

    try:
        template = env.get_template(prompty.path)
        paths, _ = referenced_files(prompty, read=loader.read_cached, limits=limits)
        for path in sorted(paths - {prompty.path}):
            try:
                env.get_template(path)
            except TemplateNotFound:
                pass  # reported by the render that needs it ("ignore missing" may not)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes a located problem
        kind, problem = _classify(exc, loader=loader)
        raise kind(problem) from None
    return template


def render_cases(prompty: Prompty, cases: Sequence[Case], *, read: Reader,
                 limits: Limits = Limits()) -> Rendered:
    """Render every case's messages in-process (see `render_isolated` for untrusted input).

    Every template the generator names is checked before the first case
    renders; rendering problems are collected across cases, one line per
    distinct problem with the cases it hit.
    """
    loader = _RefLoader(prompty, read, limits)
    env = make_environment(loader.jinja_loader, limits)
    template = _checked_template(prompty, env, loader, limits)

    messages: dict[str, tuple[Message, ...]] = {}
    failures: dict[tuple[type[InputError], Problem], list[str]] = {}
    for case in cases:
        try:
            text = _render_one(template, _mark_data(case.template_vars()), limits)
        except Exception as exc:  # noqa: BLE001
            failures.setdefault(_classify(exc, loader=loader), []).append(case.id)
            continue
        split = split_messages(text)
        if not split:
            key = (InputError, Problem(prompty.path, None, "renders no message"))
            failures.setdefault(key, []).append(case.id)
            continue
        messages[case.id] = tuple(split)
    if failures:
        problems = []
        for (_, problem), ids in failures.items():
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            label = "cases" if len(ids) > 1 else "case"
            problems.append(Problem(problem.path, problem.line, f"{problem.message} ({label} {shown})"))
        kind = SecurityError if any(k is SecurityError for k, _ in failures) else InputError
        raise kind(problems)
    return Rendered(messages=messages, loaded=frozenset(loader.sources))


def _render_one(template: Any, variables: Mapping[str, Any], limits: Limits) -> str:
    parts: list[str] = []
    size = 0
    stream = template.generate(dict(variables))
    try:
        for piece in stream:
            size += len(piece)
            if size > limits.max_output_chars:
                raise Refused(f"the rendered prompt is longer than {limits.max_output_chars} characters")
            parts.append(piece)
    finally:
        stream.close()
    return "".join(parts)


# --- static discovery of included files ---------------------------------------------

def referenced_files(prompty: Prompty, *, read: Reader, limits: Limits = Limits()) -> tuple[frozenset[str], bool]:
    """Files the generator can load (itself, includes, parents, imports), without rendering.

    Returns (paths, complete): `complete` is False when a template computes a
    name at run time or does not parse, so the set may miss files. Missing
    files are still listed (one appearing at the other ref is a change).
    """
    from jinja2 import TemplateSyntaxError, meta

    env = make_environment(None, limits)
    found: dict[str, bool] = {}
    complete = True
    queue = [(prompty.path, prompty.template)]
    while queue:
        name, source = queue.pop()
        found[name] = True
        try:
            ast = env.parse(source, name, name)
        except (TemplateSyntaxError, RecursionError):  # rendering reports either, located
            complete = False
            continue
        for reference in meta.find_referenced_templates(ast):
            if reference is None:
                complete = False
                continue
            try:
                path = env.join_path(reference, name)
            except Refused:
                complete = False
                continue
            if path in found or len(found) >= limits.max_files:
                continue
            found[path] = True
            try:
                data = read(path)
            except InputError:
                data = None
            if data is not None and len(data) <= limits.max_template_bytes:
                try:
                    queue.append((path, decode_utf8(data, path)))
                except InputError:
                    complete = False
    return frozenset(found), complete


# --- rendering in a child process ---------------------------------------------------

# What the child may see of the environment: enough to start Python and run git.
# An allowlist, because secrets hide under any name (GH_PAT, DATABASE_URL, a proxy
# URL with a password, ...).
_CHILD_VARIABLES = frozenset({
    "PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
    "PYTHONPATH", "PYTHONHOME", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONDONTWRITEBYTECODE",
    "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT",
})


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the rendering child gets: never the run's credentials."""
    return {name: value for name, value in environ.items()
            if name.upper() in _CHILD_VARIABLES or name.upper().startswith("LC_")}


def render_isolated(prompty: Prompty, cases: Sequence[Case], *, repo: str | os.PathLike[str],
                    sha: str, limits: Limits = Limits()) -> Rendered:
    """`render_cases` in a child process with memory and CPU limits and a timeout.

    The child reads included files from the same git ref itself. A child that
    runs out of time or memory is a SecurityError: the template, not the
    machine, is at fault.
    """
    payload = {
        "path": prompty.path, "source": prompty.source, "text": prompty.text,
        "repo": str(repo), "sha": sha,
        "cases": [{"id": c.id, "query": c.query, "context": c.context, "category": c.category,
                   "ground_truth": c.ground_truth, "extra": dict(c.extra), "line": c.line}
                  for c in cases],
        "limits": dataclasses.asdict(limits),
    }
    command = [sys.executable, "-c", "from flipgate.prompty import _child_main; _child_main()"]
    # Defence in depth: the child needs git and Python, never the run's credentials.
    environment = child_environment(os.environ)
    try:
        result = subprocess.run(command, input=json.dumps(payload).encode("utf-8"),
                                capture_output=True, timeout=limits.timeout_seconds, check=False,
                                env=environment)
    except subprocess.TimeoutExpired:
        raise SecurityError(Problem(prompty.source, None,
                                    f"rendering took longer than {limits.timeout_seconds:g}s "
                                    "(a template that loops without end?); stopped")) from None
    try:
        answer = json.loads(result.stdout.decode("utf-8"))
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise SecurityError(Problem(prompty.source, None,
                                    "rendering exceeded its memory or CPU limit and was stopped "
                                    f"(exit status {result.returncode})"))
    if "error" in answer:
        problems = [Problem(p, line, message) for p, line, message in answer["problems"]]
        raise (SecurityError if answer["error"] == "security" else InputError)(problems)
    messages = {case_id: tuple(dict(m) for m in items) for case_id, items in answer["messages"].items()}
    return Rendered(messages=messages, loaded=frozenset(answer["loaded"]))


def _set_child_limits(limits: Limits) -> None:
    try:
        import resource
    except ImportError:  # not POSIX: the parent's timeout still applies
        return
    for which, value in ((resource.RLIMIT_AS, limits.memory_bytes),
                         (resource.RLIMIT_CPU, int(limits.timeout_seconds) + 1)):
        try:
            _, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, hard))
        except (ValueError, OSError):
            pass


def _child_main() -> None:
    """The child of `render_isolated`: JSON in on stdin, JSON out on stdout."""
    from pathlib import Path

    from flipgate import gitrefs

    payload = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    limits = Limits(**payload["limits"])
    _set_child_limits(limits)
    repo, sha = Path(payload["repo"]), payload["sha"]
    prompty = parse_prompty(payload["text"], path=payload["path"], source=payload["source"])
    cases = [Case(id=c["id"], query=c["query"], context=c["context"], category=c["category"],
                  ground_truth=c["ground_truth"], extra=c["extra"], line=c["line"])
             for c in payload["cases"]]
    try:
        rendered = render_cases(prompty, cases, read=lambda p: gitrefs.read(repo, sha, p),
                                limits=limits)
        out: dict[str, Any] = {"messages": {k: list(v) for k, v in rendered.messages.items()},
                               "loaded": sorted(rendered.loaded)}
    except InputError as exc:
        out = {"error": "security" if isinstance(exc, SecurityError) else "input",
               "problems": [[p.path, p.line, p.message] if isinstance(p, Problem) else
                            [prompty.source, None, str(p)] for p in exc.problems]}
    except MemoryError:
        out = {"error": "security",
               "problems": [[prompty.source, None, "rendering ran out of memory; stopped"]]}
    sys.stdout.write(json.dumps(out))
    sys.stdout.flush()
