"""The isolated child: all parsing and rendering of a generator happens here.

A generator (and what it includes) may come from a pull request. Parsing its
YAML, compiling its templates, finding its includes and rendering it all
take time and memory the author controls, so none of it runs in flipgate's
own process: the parent hands the file's bytes to a child process with
memory and CPU limits and a wall-clock timeout, and reads back plain JSON.
The parent itself only reads bytes and checks their size.

Size caps (see `sandbox.Limits`): the generator file and each template it
includes at most `max_template_bytes` (512 KB), all of them together at most
`max_total_template_bytes` (1 MB), at most `max_files` (200) templates;
`timeout_seconds` (30 s) of wall clock and `memory_bytes` (1 GiB) of address
space per child. The caps are set so that parsing what they allow fits well
inside the time limit; anything larger is refused with a message before
it is parsed.

The child gets an allowlisted environment (enough to start Python and run
git), never the run's credentials.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flipgate.errors import InputError, Problem, SecurityError
from flipgate.git import repository as gitrefs
from flipgate.model import Case
from flipgate.prompts.forms import FormSpec, names_read, prompty_file, read_generator
from flipgate.prompts.frontmatter import data_files
from flipgate.prompts.parts import ChatPart
from flipgate.prompts.prompt import InputSpec, Prompt
from flipgate.prompts.references import has_sample, sample_values
from flipgate.prompts.render import Rendered, referenced_files, refuse_missing, render_values
from flipgate.prompts.sandbox import Limits

# What the child may see of the environment: enough to start Python and run git.
# An allowlist, because secrets hide under any name (GH_PAT, DATABASE_URL, a proxy
# URL with a password, ...).
_CHILD_VARIABLES = frozenset({
    "PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
    "PYTHONPATH", "PYTHONHOME", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONDONTWRITEBYTECODE",
    "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT",
})


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the child gets: never the run's credentials."""
    return {name: value for name, value in environ.items()
            if name.upper() in _CHILD_VARIABLES or name.upper().startswith("LC_")}


@dataclasses.dataclass(frozen=True)
class Inspected:
    """A generator parsed in the child, and the files it can load (see `referenced_files`)."""

    prompt: Prompt
    files: frozenset[str]
    complete: bool
    names: frozenset[str] | None = None   # the names its templates read (None: not known)


def check_size(data: bytes, *, source: str, limits: Limits) -> None:
    """The parent's only look at a generator's content: its size."""
    if len(data) > limits.max_template_bytes:
        raise InputError(Problem(source, None,
                                 f"is {len(data):,} bytes; a generator may be at most "
                                 f"{limits.max_template_bytes:,} bytes (templates it includes "
                                 f"at most {limits.max_total_template_bytes:,} together)"))


def _run_child(request: dict[str, Any], *, source: str, limits: Limits,
               environ: Mapping[str, str], what: str) -> dict[str, Any]:
    request["limits"] = dataclasses.asdict(limits)
    command = [sys.executable, "-c", "from flipgate.prompts.child import main; main()"]
    try:
        result = subprocess.run(command, input=json.dumps(request).encode("utf-8"),
                                capture_output=True, timeout=limits.timeout_seconds, check=False,
                                env=child_environment(environ))
    except subprocess.TimeoutExpired:
        raise SecurityError(Problem(source, None,
                                    f"{what} took longer than {limits.timeout_seconds:g}s "
                                    "(a template too large, or one that loops without end?); "
                                    "stopped")) from None
    try:
        answer = json.loads(result.stdout.decode("utf-8"))
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise SecurityError(Problem(source, None,
                                    f"{what} exceeded its memory or CPU limit and was stopped "
                                    f"(exit status {result.returncode})"))
    if "error" in answer:
        problems = [Problem(p, line, message) for p, line, message in answer["problems"]]
        raise (SecurityError if answer["error"] == "security" else InputError)(problems)
    return answer


def inspect_isolated(data: bytes, *, path: str, source: str, repo: str | os.PathLike[str], sha: str,
                     environ: Mapping[str, str], limits: Limits = Limits(),
                     form: FormSpec = FormSpec()) -> Inspected:
    """Parse a generator (in its `form`) and find the files it includes, in the child."""
    check_size(data, source=source, limits=limits)
    answer = _run_child({"job": "inspect", "path": path, "source": source,
                         "text": data.decode("utf-8", "surrogateescape"), "repo": str(repo), "sha": sha,
                         "form": dataclasses.asdict(form)},
                        source=source, limits=limits, environ=environ, what="reading the generator")
    names = answer.get("names")
    return Inspected(prompt=_prompt_from_json(answer["prompt"]), files=frozenset(answer["files"]),
                     complete=answer["complete"], names=None if names is None else frozenset(names))


def sample_isolated(data: bytes, *, path: str, source: str, repo: str | os.PathLike[str], sha: str,
                    environ: Mapping[str, str], limits: Limits = Limits(),
                    strict_undefined: bool = False) -> tuple[Prompt, Rendered]:
    """Parse a generator and render its own sample (`replay --sample`), in one child."""
    check_size(data, source=source, limits=limits)
    answer = _run_child({"job": "sample", "path": path, "source": source,
                         "text": data.decode("utf-8", "surrogateescape"), "repo": str(repo), "sha": sha,
                         "strict_undefined": strict_undefined},
                        source=source, limits=limits, environ=environ, what="rendering the sample")
    return _prompt_from_json(answer["prompt"]), _rendered_from_json(answer)


def sample_values_isolated(data: bytes, *, path: str, source: str, repo: str | os.PathLike[str],
                           sha: str, environ: Mapping[str, str],
                           limits: Limits = Limits()) -> tuple[Prompt, dict[str, Any]]:
    """Parse a generator and read its own sample's values (what `flipgate init` turns into
    a first case), in the child; nothing is rendered."""
    check_size(data, source=source, limits=limits)
    answer = _run_child({"job": "values", "path": path, "source": source,
                         "text": data.decode("utf-8", "surrogateescape"), "repo": str(repo), "sha": sha},
                        source=source, limits=limits, environ=environ, what="reading the sample")
    return _prompt_from_json(answer["prompt"]), answer["values"]


def render_isolated(prompt: Prompt, cases: Sequence[Case], *, repo: str | os.PathLike[str],
                    sha: str, environ: Mapping[str, str] | None = None, limits: Limits = Limits(),
                    strict_undefined: bool = False, cases_source: str = "cases",
                    per_case: bool = False) -> Rendered:
    """Every case's messages, rendered in the child (which reads included files from
    the same git ref itself). A child that runs out of time or memory is a
    SecurityError: the template, not the machine, is at fault. Strict, a case that
    lacks a variable the template uses is an InputError naming `cases_source` and its line.
    `per_case`: a case whose render fails is named in `Rendered.failed` (see render_values)."""
    values = {case.id: prompt.with_defaults(case.template_vars()) for case in cases}
    rendered = render_values_isolated(prompt, values, repo=repo, sha=sha, environ=environ or {},
                                      limits=limits, strict_undefined=strict_undefined,
                                      per_case=per_case)
    refuse_missing(rendered, cases, cases_source=cases_source, template=prompt)
    return rendered


def render_values_isolated(prompt: Prompt, values: Mapping[str, Mapping[str, Any]], *,
                           repo: str | os.PathLike[str], sha: str, environ: Mapping[str, str],
                           limits: Limits = Limits(), strict_undefined: bool = False,
                           per_case: bool = False) -> Rendered:
    answer = _run_child({"job": "render", "path": prompt.path, "source": prompt.source,
                         "text": prompt.text, "repo": str(repo), "sha": sha,
                         "form": {"form": prompt.form},
                         "prompt": None if prompt.form == "prompty" else _prompt_to_json(prompt),
                         "values": {key: dict(v) for key, v in values.items()},
                         "strict_undefined": strict_undefined, "per_case": per_case},
                        source=prompt.source, limits=limits, environ=environ, what="rendering")
    return _rendered_from_json(answer)


def _rendered_from_json(answer: dict[str, Any]) -> Rendered:
    messages = {key: tuple(dict(m) for m in items) for key, items in answer["messages"].items()}
    return Rendered(messages=messages, loaded=frozenset(answer["loaded"]),
                    undefined={name: tuple(ids) for name, ids in answer["undefined"].items()},
                    missing={key: (name, path, line)
                             for key, (name, path, line) in answer.get("missing", {}).items()},
                    failed=dict(answer.get("failed", {})))


# --- the Prompty as JSON, across the process boundary ---------------------------------

def _prompt_to_json(prompt: Prompt) -> dict[str, Any]:
    fields = dataclasses.asdict(prompt)
    fields["key_lines"] = [[list(key), line] for key, line in prompt.key_lines.items()]
    fields["aliases"] = [[list(k), list(v)] for k, v in prompt.aliases.items()]
    return fields


def _prompt_from_json(fields: dict[str, Any]) -> Prompt:
    fields = dict(fields)
    fields["key_lines"] = {tuple(key): line for key, line in fields["key_lines"]}
    fields["aliases"] = {tuple(k): tuple(v) for k, v in fields["aliases"]}
    fields["inputs"] = tuple(InputSpec(**spec) for spec in fields["inputs"])
    fields["messages"] = tuple((role, content) for role, content in fields["messages"])
    fields["chat"] = tuple(ChatPart(**part) for part in fields.get("chat", ()))
    return Prompt(**fields)


def _plain_json(prompt: Prompt) -> None:
    """Front matter values must survive JSON unchanged (no dates or binary in parameters)."""
    for name, value in prompt.parameters.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            raise InputError(Problem(prompt.source, prompt.line_of("model", "parameters", name),
                                     f"model.parameters.{name} must be plain JSON data")) from None
    for label, value in (("sample", prompt.sample),
                         *((f"inputs.{s.name}", [s.default, s.example]) for s in prompt.inputs)):
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            raise InputError(Problem(prompt.source, prompt.line_of(*label.split(".")),
                                     f"'{label}' must be plain JSON data")) from None


# --- the child's side -------------------------------------------------------------------

def _set_limits(limits: Limits) -> None:
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


def _job(request: dict[str, Any], limits: Limits) -> dict[str, Any]:
    repo, sha = Path(request["repo"]), request["sha"]

    def read(path: str) -> bytes | None:
        return gitrefs.read(repo, sha, path)

    spec = FormSpec.from_json(request.get("form", {}))
    data = request["text"].encode("utf-8", "surrogateescape")
    extra_files: set[str] = set()
    if spec.form == "prompty":
        parsed, prompt = prompty_file.read_parsed(data, path=request["path"], source=request["source"],
                                                   read=read)
        extra_files = data_files(parsed)
    elif request["job"] == "render":
        prompt = _prompt_from_json(request["prompt"])  # read by an earlier child, as sent back
    else:
        prompt = read_generator(data, path=request["path"], source=request["source"], spec=spec,
                                 read=read)
        if request["job"] in ("sample", "values"):
            raise InputError(Problem(request["source"], None, f"a {spec.form} generator has no "
                                     "sample of its own (only a Prompty file does)"))
    if request["job"] == "inspect" and spec.form != "prompty":
        _plain_json(prompt)
        read_names = names_read(prompt)
        files, complete = referenced_files(prompt, read=read, limits=limits)  # a Jinja2 include
        files = files | ({prompt.system_path} if prompt.system_path else set())
        return {"prompt": _prompt_to_json(prompt), "files": sorted(files), "complete": complete,
                "names": sorted(read_names.names) if read_names.known else None}
    if request["job"] == "inspect":
        _plain_json(prompt)
        files, complete = referenced_files(prompt, read=read, limits=limits)
        files = files | extra_files | data_files(prompt)
        return {"prompt": _prompt_to_json(prompt), "files": sorted(files), "complete": complete,
                "names": None}
    if request["job"] == "values":
        _plain_json(prompt)
        return {"prompt": _prompt_to_json(prompt), "values": sample_values(prompt, read=read)}
    strict = request["strict_undefined"]
    if request["job"] == "sample":
        _plain_json(prompt)
        values = {"sample": sample_values(prompt, read=read)}
        strict = strict and has_sample(prompt)  # without one, every input renders empty
    else:
        values = request["values"]
    rendered = render_values(prompt, values, read=read, limits=limits, strict_undefined=strict,
                             per_case=bool(request.get("per_case")))
    if request["job"] == "sample" and rendered.missing:
        name, path, line = rendered.missing["sample"]
        raise InputError(Problem(request["source"] if path == prompt.path else path, line,
                                 f"the sample has no {name!r}, which the template reads here "
                                 "(add it to the sample; generator.strict_undefined: false "
                                 "renders it empty)"))
    out = {"messages": {k: list(v) for k, v in rendered.messages.items()},
           "loaded": sorted(rendered.loaded),
           "undefined": {k: list(v) for k, v in rendered.undefined.items()},
           "missing": {k: list(v) for k, v in rendered.missing.items()},
           "failed": dict(rendered.failed)}
    if request["job"] == "sample":
        out["prompt"] = _prompt_to_json(prompt)
    return out


def main() -> None:
    """JSON in on stdin, JSON out on stdout."""
    request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    limits = Limits(**request["limits"])
    _set_limits(limits)
    source = request["source"]
    try:
        out = _job(request, limits)
    except InputError as exc:
        out = {"error": "security" if isinstance(exc, SecurityError) else "input",
               "problems": [[p.path, p.line, p.message] if isinstance(p, Problem) else
                            [source, None, str(p)] for p in exc.problems]}
    except MemoryError:
        out = {"error": "security", "problems": [[source, None, "ran out of memory; stopped"]]}
    except RecursionError:
        out = {"error": "security", "problems": [[source, None, "nests too deeply; stopped"]]}
    sys.stdout.write(json.dumps(out))
    sys.stdout.flush()
