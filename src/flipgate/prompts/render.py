"""Rendering a generator's messages for every case, in Jinja2's sandbox or Mustache.

The template comes from a pull request, so it is untrusted:

- Jinja2 bodies render in `ImmutableSandboxedEnvironment`, hardened as
  `sandbox.py` describes (templates that reach for Python internals are
  refused, with file and line, before anything renders; operations that
  allocate without bound are checked);
- Mustache bodies render with pystache over plain JSON data, with no
  partials: a tag can reach nothing but the inputs;
- `{% include %}` / `{% extends %}` / `{% import %}` resolve, relative to the
  including file, only to files of the same git ref inside the repository
  (read through a callable, never from the work tree);
- `child.py` runs all of this in a child process with memory and CPU limits
  and a wall-clock timeout.

With `strict_undefined` (`generator.strict_undefined`, true by default) a case
that lacks a variable the template uses is bad input: the render notes it in
`Rendered.missing`, and `refuse_missing` names the cases file, line, case id
and variable. Without it, undefined variables render as the reference runtimes
render them (empty and falsy), and every name that was undefined for some case
is reported, so a typo still shows.

Line numbers in messages are the file's own: the front matter becomes a
template comment of the same height, so the body renders exactly as the
reference's (which drops the front matter and the blank lines after it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.model import Case
from flipgate.prompts.forms import fstring, github_models, substitute
from flipgate.prompts.frontmatter import split_front_matter
from flipgate.prompts.mapped import LoopsOverText, wrap_mapped
from flipgate.prompts.messages import (
    DATA_MARK,
    Message,
    expand_rich_inputs,
    mark_data,
    split_roles,
    split_v1,
    split_v2,
    thread_marks,
)
from flipgate.prompts.parts import TEXT, ChatPart, keys
from flipgate.prompts.prompt import Prompt
from flipgate.prompts.sandbox import Limits, Refused, check_template, make_environment
from flipgate.text.parsing import decode_utf8

Reader = Callable[[str], "bytes | None"]


@dataclass(frozen=True)
class Rendered:
    """Every case's messages, every file the templates read (the generator included),
    and each variable that was undefined, with the cases where it was."""

    messages: Mapping[str, tuple[Message, ...]]
    loaded: frozenset[str]
    undefined: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # strict: each id whose values lack a variable the template uses (then it has no
    # messages): (variable, template file, its line)
    missing: Mapping[str, tuple[str, str, int | None]] = field(default_factory=dict)
    # per case (`render_values(per_case=True)`): each id whose render failed, and why (a
    # located line); such a case has no messages, and its row is a generator error
    failed: Mapping[str, str] = field(default_factory=dict)


def renderable_body(prompt: Prompt) -> str:
    """The body as the template engine sees it: the front matter (and the blank lines the
    reference drops after it) folded into a comment, so every line keeps its number."""
    return template_body(prompt.template, mustache=prompt.format == "mustache")


def template_body(text: str, *, mustache: bool = False) -> str:
    """`text` (front matter already blanked) without its leading blank lines, which become
    a Jinja2 comment of the same height (Mustache has no multi-line comment: dropped)."""
    stripped = text.lstrip()
    height = "\n" * text[:len(text) - len(stripped)].count("\n")
    return stripped if mustache or not height else "{#" + height + "#}" + stripped


def loader_stripped(text: str) -> str:
    """`text` as a loader that calls `.strip()` hands it to Jinja2 (`generator.jinja.strip`); the
    leading blank lines become a comment of the same height, so errors keep the file's lines."""
    return template_body(text.rstrip())


def _recording_undefined(seen: set[str]) -> type:
    """Jinja2's default Undefined (empty, falsy), noting each missing top-level name."""
    from jinja2 import Undefined
    from jinja2.exceptions import SecurityError as SandboxRefusal
    from jinja2.utils import missing

    class Recording(Undefined):
        __slots__ = ()

        def __init__(self, hint: Any = None, obj: Any = missing, name: Any = None,
                     exc: Any = None) -> None:
            if exc is SandboxRefusal:  # the sandbox's "unsafe" placeholder: refuse, never render ""
                raise SandboxRefusal(hint)
            kwargs = {} if exc is None else {"exc": exc}
            super().__init__(hint, obj, name, **kwargs)
            if obj is missing and isinstance(name, str):
                seen.add(name)

    return Recording


def _strict_undefined(seen: set[str]) -> type:
    """Jinja2's StrictUndefined (any use is an error), noting each missing top-level name
    so a failed render can say which variable the case lacks."""
    from jinja2 import StrictUndefined
    from jinja2.utils import missing

    class Strict(StrictUndefined):
        __slots__ = ()

        def __init__(self, hint: Any = None, obj: Any = missing, name: Any = None,
                     exc: Any = None) -> None:
            kwargs = {} if exc is None else {"exc": exc}
            super().__init__(hint, obj, name, **kwargs)
            if obj is missing and isinstance(name, str):
                seen.add(name)

    return Strict


def _missing_variable(exc: BaseException, seen: set[str]) -> str | None:
    """The top-level variable whose use failed a strict render, if that is what failed."""
    from jinja2 import UndefinedError
    from pystache.context import KeyNotFoundError

    if isinstance(exc, KeyNotFoundError):
        return str(exc.key)
    if isinstance(exc, UndefinedError):
        return next((name for name in sorted(seen) if exc.message == f"{name!r} is undefined"), None)
    return None


def _included_source(text: str, name: str) -> str:
    """An included template; another Prompty file contributes its body (as the reference's
    loader does), its front matter blanked."""
    if not name.endswith(".prompty"):
        return text
    front, _, body_start = split_front_matter(text, name)
    if front is None:
        return text
    lines = text.split("\n")
    return template_body("\n" * body_start + "\n".join(lines[body_start:]))


def _check_sizes(name: str, data: bytes, loaded: int, limits: Limits) -> None:
    """Refuse a template before parsing it when it, or all loaded so far, is too large."""
    if len(data) > limits.max_template_bytes:
        raise Refused(f"template {name!r} is {len(data):,} bytes; more than the "
                      f"{limits.max_template_bytes:,} a template may be")
    if loaded + len(data) > limits.max_total_template_bytes:
        raise Refused(f"the generator and the templates it includes are more than "
                      f"{limits.max_total_template_bytes:,} bytes together (at {name!r})")


def system_name(prompt: Prompt) -> str | None:
    """How the system message's template is named: its file, or (a constant of the generator's
    own file) that file marked as the system's."""
    if prompt.system_path is None:
        return None
    return prompt.system_path + (" (system)" if prompt.system_path == prompt.path else "")


class _RefLoader:
    """Templates of one git ref, by repository path; remembers what it loaded."""

    def __init__(self, main: Prompt, read: Reader, limits: Limits):
        from jinja2 import BaseLoader

        self.main, self.read, self.limits = main, read, limits
        # The other forms' text is the template exactly (a Prompty body drops its leading lines).
        self.sources: dict[str, str] = {main.path: renderable_body(main) if main.form == "prompty"
                                        else main.template}
        self.system_name = system_name(main)
        for part, key in zip(main.chat, keys(main.chat), strict=True):
            if part.placeholder is None:
                self.sources[key] = part.text
        if main.system is not None and self.system_name is not None:
            self.sources[self.system_name] = main.system
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
            _check_sizes(name, data, sum(len(s) for s in self.sources.values()), self.limits)
            self.sources[name] = _included_source(decode_utf8(data, name), name)
        source = self.sources[name]
        check_template(environment, source, name=name)
        return source, name, lambda: True


# --- static discovery of included files ---------------------------------------------

def referenced_files(prompt: Prompt, *, read: Reader, limits: Limits = Limits()) -> tuple[frozenset[str], bool]:
    """Files the generator can load (itself, includes, parents, imports), without rendering.

    Returns (paths, complete): `complete` is False when a template computes a
    name at run time or does not parse, so the set may miss files. Missing
    files are still listed (one appearing at the other ref is a change).
    """
    from jinja2 import TemplateSyntaxError, meta

    if prompt.chat:  # each message's file, and what its Jinja2 templates include
        files, complete = {prompt.path} | {p.path for p in prompt.chat if p.path}, True
        for part in prompt.chat:
            if part.format == "jinja2" and part.placeholder is None:
                alone = dataclasses.replace(prompt, chat=(), path=part.path or part.source, text=part.text,
                                            template=part.text, form="template", format="jinja2")
                more, done = referenced_files(alone, read=read, limits=limits)
                files |= more - ({part.source} if not part.path else set())
                complete = complete and done
        return frozenset(files), complete
    if prompt.format in ("mustache", "fstring", "github", "dollar", "llamaindex"):  # nothing else is read
        return frozenset({prompt.path} | ({prompt.system_path} if prompt.system_path else set())), True
    env = make_environment(None, limits)
    found: dict[str, bool] = {}
    complete = True
    total = len(prompt.text.encode("utf-8", "surrogateescape"))
    queue = [(prompt.path, renderable_body(prompt))]
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
            if data is not None:
                try:
                    _check_sizes(path, data, total, limits)
                except Refused as exc:
                    raise InputError(Problem(name, None, str(exc))) from None
                total += len(data)
                try:
                    queue.append((path, _included_source(decode_utf8(data, path), path)))
                except InputError:
                    complete = False
    return frozenset(found), complete


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
    if isinstance(exc, LoopsOverText):
        return InputError, Problem(path, line, str(exc))
    security = {Refused: str(exc), JinjaSecurityError: f"refused by the sandbox: {exc}",
                OverflowError: f"refused by the sandbox: {exc}",
                RecursionError: "templates nest too deeply, or include or call each other without end",
                MemoryError: "rendering ran out of memory"}
    for kind, message in security.items():
        if isinstance(exc, kind):
            return SecurityError, Problem(path, line, message)
    if type(exc).__module__.startswith("pystache"):
        return InputError, Problem(path, None, f"mustache template error: {exc}")
    return InputError, Problem(path, line, f"template error: {type(exc).__name__}: {exc}")


def _checked_template(prompt: Prompt, env: Any, loader: _RefLoader, limits: Limits) -> Any:
    """The compiled generator, after every template it names has been checked."""
    from jinja2 import TemplateNotFound

    try:
        template = env.get_template(prompt.path)
        paths, _ = referenced_files(prompt, read=loader.read_cached, limits=limits)
        for path in sorted(paths - {prompt.path}):
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


def _stream(template: Any, variables: Mapping[str, Any], limits: Limits) -> str:
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


def _chevron_escape(text: str) -> str:
    """HTML escaping as the reference's Mustache library does it (no `'`)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class _Mustache:
    """pystache over plain data: no partials, no file system, nothing but the inputs.
    A missing name renders empty (as the reference's library does) and is noted in `seen`."""

    def __init__(self, source: str, *, strict: bool, limits: Limits, seen: set[str]):
        import pystache
        from pystache.context import KeyNotFoundError
        from pystache.renderengine import context_get

        class Renderer(pystache.Renderer):
            def _make_resolve_context(self) -> Callable[[Any, str], Any]:
                def resolve(stack: Any, name: str) -> Any:
                    try:
                        return context_get(stack, name)
                    except KeyNotFoundError:
                        if strict:
                            raise
                        seen.add(name)
                        return ""
                return resolve

        self.source, self.limits = source, limits
        self.renderer = Renderer(partials={}, escape=_chevron_escape, string_encoding="utf-8",
                                 missing_tags="ignore")

    def render(self, variables: Mapping[str, Any]) -> str:
        text = self.renderer.render(self.source, dict(variables))
        if len(text) > self.limits.max_output_chars:
            raise Refused(f"the rendered prompt is longer than {self.limits.max_output_chars} characters")
        return text


def _variables(prompt: Prompt, values: Mapping[str, Any],
               marks: Mapping[str, str]) -> dict[str, Any]:
    """What the template sees: the values with role-like data lines marked, and each
    rich (thread, media) input replaced by its marker."""
    variables = mark_data(dict(values))
    for mark, name in marks.items():
        variables[name] = mark
    return wrap_mapped(variables, prompt.variables) if prompt.format == "jinja2" else variables


def _messages(prompt: Prompt, text: str, *, values: Mapping[str, Any], marks: Mapping[str, str],
              read: Reader) -> list[Message]:
    if prompt.form in ("template", "python"):
        return split_roles(text)
    if prompt.version == 1:
        directory = prompt.path.rpartition("/")[0] or "."
        return split_v1(text, directory=directory, read=read)
    messages = split_v2(text, attributes=not prompt.strict_roles)
    return expand_rich_inputs(messages, marks, values, prompt.rich_inputs)


def jinja_options(prompt: Prompt) -> dict[str, bool]:
    """Jinja2's whitespace settings for the generator: `generator.jinja` over the form's own
    default (a Prompty v2 body keeps its final newline, as its runtime does; everything else
    renders with Jinja2's defaults, which drop it). `strip` is the loader's, not Jinja2's."""
    keep = prompt.version == 2 if prompt.form == "prompty" else False
    return {"trim_blocks": False, "lstrip_blocks": False, "keep_trailing_newline": keep,
            **{key: value for key, value in prompt.jinja.items() if key != "strip"}}


def _engine(prompt: Prompt, name: str, loader: _RefLoader, *, limits: Limits, strict: bool,
            seen: set[str], fmt: str | None = None, first_line: int = 1,
            where: str | None = None, inline: bool = False) -> Callable[[Mapping[str, Any]], str]:
    """The render of one template of the generator (its body, its system message, or one
    message of a chat, in `fmt`). With `generator.jinja.strip` a Jinja2 template read from the
    repository (not `inline` text of `.flipgate.yml`, not what it includes) is stripped first."""
    source = loader.sources[name]
    fmt = fmt or prompt.format
    if fmt in ("fstring", "dollar", "llamaindex"):
        if name == prompt.path:
            first_line = prompt.key_lines.get(("template",), 1)
        where = where or name
        fields = fstring.parse(source, source=where, first_line=first_line) if fmt == "fstring" else ()
        substitute_render = substitute.render_dollar if fmt == "dollar" else substitute.render_llama

        def render_fields(variables: Mapping[str, Any]) -> str:
            text = (fstring.render(fields, variables, path=where, strict=strict, seen=seen) if fmt == "fstring"
                    else substitute_render(source, variables, path=where, first_line=first_line,
                                           strict=strict, seen=seen))
            if len(text) > limits.max_output_chars:
                raise Refused(f"the rendered prompt is longer than {limits.max_output_chars} characters")
            return text
        return render_fields
    if fmt == "mustache":
        return _Mustache(source, strict=strict, limits=limits, seen=seen).render
    if prompt.jinja.get("strip") and not inline:
        loader.sources[name] = loader_stripped(source)
    undefined = _strict_undefined(seen) if strict else _recording_undefined(seen)
    env = make_environment(loader.jinja_loader, limits, undefined=undefined, **jinja_options(prompt))
    if name == prompt.path and not prompt.chat:
        template = _checked_template(prompt, env, loader, limits)
    else:
        try:
            template = env.get_template(name)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a located problem
            kind, problem = _classify(exc, loader=loader)
            raise kind(problem) from None
    return lambda variables: _stream(template, variables, limits)


HISTORY_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
                 "system": "system"}


def _history(part: ChatPart, raw: Mapping[str, Any], *, strict: bool, seen: set[str],
             shown: str) -> list[Message]:
    """A history placeholder's messages: the case field, a list of {role, content}
    (LangChain's roles human and ai read as user and assistant)."""
    name = part.placeholder or ""
    if name not in raw:
        if strict and not part.optional:
            raise fstring.MissingName(name, shown, part.line)
        if not part.optional:
            seen.add(name)
        return []
    value = raw[name]
    entries = value if isinstance(value, list) else None
    if entries is None or not all(isinstance(e, dict) and HISTORY_ROLES.get(str(e.get("role"))) is not None
                                  and isinstance(e.get("content"), str) for e in entries):
        raise InputError(Problem(shown, part.line, f"the history placeholder reads the case field "
                                 f"{name!r}, which must be a list of {{role, content}} (roles "
                                 f"{', '.join(HISTORY_ROLES)})"))
    return [{"role": HISTORY_ROLES[str(e["role"])], "content": e["content"]} for e in entries]


def _chat(prompt: Prompt, loader: _RefLoader, *, limits: Limits, strict: bool,
          seen: set[str]) -> Callable[[Mapping[str, Any]], list[Message]]:
    """A chat prompt's messages for one case: each part rendered in its own format and sent
    as rendered (never split at role lines or stripped), a placeholder's history in its place."""
    def shown(part: ChatPart) -> str:
        return part.path if part.path == prompt.path else part.source
    engines = [None if part.placeholder is not None or part.format == TEXT else
               _engine(prompt, key, loader, limits=limits, strict=strict, seen=seen,
                       fmt=part.format, first_line=part.line, where=shown(part), inline=not part.path)
               for part, key in zip(prompt.chat, keys(prompt.chat), strict=True)]

    def produce(raw: Mapping[str, Any]) -> list[Message]:
        messages: list[Message] = []
        for part, engine in zip(prompt.chat, engines, strict=True):
            if part.placeholder is not None:
                messages.extend(_history(part, raw, strict=strict, seen=seen, shown=shown(part)))
            else:
                content = part.text if engine is None else engine(dict(raw))
                messages.append({"role": part.role, "content": content})
        if sum(len(str(m["content"])) for m in messages) > limits.max_output_chars:
            raise Refused(f"the rendered prompt is longer than {limits.max_output_chars} characters")
        return messages
    return produce


def _unmark_all(text: str) -> str:
    return text.replace(DATA_MARK, "").strip()


def _render_github(prompt: Prompt, values: Mapping[str, Mapping[str, Any]], limits: Limits) -> Rendered:
    """A GitHub Models prompt file: each message's `{{name}}` replaced (github_models.py)."""
    messages: dict[str, tuple[Message, ...]] = {}
    for key, raw in values.items():
        rendered = tuple({"role": role, "content": github_models.render_message(content, raw)}
                         for role, content in prompt.messages)
        if sum(len(m["content"]) for m in rendered) > limits.max_output_chars:
            raise SecurityError(Problem(prompt.source, None, "the rendered prompt is longer than "
                                        f"{limits.max_output_chars} characters (case {key})"))
        messages[key] = rendered
    if not prompt.messages:
        raise InputError(Problem(prompt.source, prompt.line_of("messages"), "has no message"))
    return Rendered(messages=messages, loaded=frozenset({prompt.path}))


def render_values(prompt: Prompt, values: Mapping[str, Mapping[str, Any]], *, read: Reader,
                  limits: Limits = Limits(), strict_undefined: bool = False,
                  per_case: bool = False) -> Rendered:
    """Render the messages for each set of input values (by id) in-process
    (see child.py for untrusted input).

    Every template the generator names is checked before the first render;
    rendering problems are collected across ids, one line per distinct
    problem with the ids it hit. With `per_case`, a render that fails for some ids but
    not all (not one the sandbox refused) is those ids' failure in `Rendered.failed`, not
    the run's: it depends on a case's data. One that fails for every id is the template's.
    """
    if prompt.form == "github":
        return _render_github(prompt, values, limits)
    loader = _RefLoader(prompt, read, limits)
    seen: set[str] = set()
    chat = _chat(prompt, loader, limits=limits, strict=strict_undefined, seen=seen) if prompt.chat else None
    render = (_engine(prompt, prompt.path, loader, limits=limits, strict=strict_undefined, seen=seen)
              if chat is None else None)
    system = (None if loader.system_name is None else
              _engine(prompt, loader.system_name, loader, limits=limits, strict=strict_undefined,
                      seen=seen))

    messages: dict[str, tuple[Message, ...]] = {}
    undefined_in: dict[str, list[str]] = {}
    missing: dict[str, tuple[str, str, int | None]] = {}
    failures: dict[tuple[type[InputError], Problem], list[str]] = {}
    for key, raw in values.items():
        marks = thread_marks(prompt.rich_inputs)
        seen.clear()
        try:
            if chat is not None:
                split = chat(raw)
            else:
                assert render is not None
                text = render(_variables(prompt, raw, marks))
                split = _messages(prompt, text, values=raw, marks=marks, read=loader.read_cached)
            if system is not None:
                split = [{"role": "system", "content": _unmark_all(system(_variables(prompt, raw, marks)))},
                         *split]
        except fstring.MissingName as exc:
            missing[key] = (exc.name, exc.path, exc.line)
            continue
        except Exception as exc:  # noqa: BLE001
            name = _missing_variable(exc, seen) if strict_undefined else None
            if name is not None:
                path, line = _template_line(exc.__traceback__, loader.sources)
                missing[key] = (name, path or prompt.path, line)
                continue
            failures.setdefault(_classify(exc, loader=loader), []).append(key)
            continue
        for name in sorted(seen):
            undefined_in.setdefault(name, []).append(key)
        if not split:
            failures.setdefault((InputError, Problem(prompt.path, None, "renders no message")), []).append(key)
            continue
        messages[key] = tuple(split)
    failed: dict[str, str] = {}
    if per_case and sum(len(ids) for ids in failures.values()) < len(values):
        for (kind, problem), ids in list(failures.items()):
            if kind is not SecurityError:
                failed.update(dict.fromkeys(ids, str(problem)))
                del failures[(kind, problem)]
    if failures:
        problems = []
        for (_, problem), ids in failures.items():
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            label = "cases" if len(ids) > 1 else "case"
            problems.append(Problem(problem.path, problem.line, f"{problem.message} ({label} {shown})"))
        kind = SecurityError if any(k is SecurityError for k, _ in failures) else InputError
        raise kind(problems)
    read_files = {name for name, data in loader.raw.items() if data is not None}  # images too
    return Rendered(messages=messages, loaded=frozenset(loader.sources) | read_files,
                    undefined={name: tuple(ids) for name, ids in undefined_in.items()},
                    missing=missing, failed=failed)


MAX_MISSING_SHOWN = 10


def refuse_missing(rendered: Rendered, cases: Sequence[Case], *, cases_source: str,
                   template: Prompt) -> None:
    """Exit 2 (InputError) when a strict render found cases that lack a variable the
    template uses: one line a case (the first ten), naming the cases file and line, the
    case id, the variable and the template line that reads it."""
    if not rendered.missing:
        return
    problems: list[Problem] = []
    everywhere = len(rendered.missing) == len(cases) and len({m[0] for m in rendered.missing.values()}) == 1
    for case in cases:
        if case.id not in rendered.missing:
            continue
        name, path, line = rendered.missing[case.id]
        where = template.source if path == template.path else path
        field = template.variables.get(name)
        what = (f"field {field!r} (generator.variables: {name} <- {field})" if field
                else repr(name))
        advice = ("no case has it: map the template's name to a case field with "
                  f"generator.variables ({name}: FIELD)" if everywhere and not field else
                  "add it to the case; generator.strict_undefined: false renders it empty")
        problems.append(Problem(cases_source, case.line or None,
                                f"case {case.id} has no {what}, which {where}"
                                f"{f':{line}' if line else ''} reads ({advice})"))
    if len(problems) > MAX_MISSING_SHOWN:
        more = len(problems) - MAX_MISSING_SHOWN
        problems = [*problems[:MAX_MISSING_SHOWN],
                    Problem(cases_source, None, f"and {more} more case(s) lack a variable "
                            f"{template.source} reads")]
    raise InputError(problems)


def render_cases(prompt: Prompt, cases: Sequence[Case], *, read: Reader,
                 limits: Limits = Limits(), strict_undefined: bool = False,
                 cases_source: str = "cases") -> Rendered:
    """Every case's messages, by case id; a case's fields are the template's variables
    (v2 input defaults fill the ones a case lacks)."""
    values = {case.id: prompt.with_defaults(case.template_vars()) for case in cases}
    rendered = render_values(prompt, values, read=read, limits=limits,
                             strict_undefined=strict_undefined)
    refuse_missing(rendered, cases, cases_source=cases_source, template=prompt)
    return rendered
