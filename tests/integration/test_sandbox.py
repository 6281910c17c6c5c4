"""Untrusted templates: escapes into Python and resource exhaustion are refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flipgate.errors import SecurityError
from flipgate.model import Case
from flipgate.prompts import child_environment, parse_prompty, render_cases, render_isolated
from flipgate.prompts.sandbox import Limits

from support.gitrepo import GitRepo

FRONT = "---\nmodel:\n  configuration:\n    type: openai\n    model: m\n---\n"
CASES = [Case(id="c1", query="q", context="ctx", extra={"name": "__class__", "n": 10})]


def render(body: str, files: dict[str, str] | None = None, limits: Limits = Limits()):
    prompt = parse_prompty(FRONT + "user:\n" + body + "\n", path="prompts/p.prompty")
    data = {k: v.encode() for k, v in (files or {}).items()}
    return render_cases(prompt, CASES, read=data.get, limits=limits)


ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ query.__class__ }}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ joiner.__init__.__globals__ }}",
    "{{ lipsum.__globals__['os'] }}",
    "{{ lipsum(n=100000) }}",
    "{{ self._TemplateReference__context }}",
    "{{ self.__dict__ }}",
    "{{ namespace.__init__ }}",
    "{{ range.__self__ }}",
    "{{ query['__class__'] }}",
    "{{ query|attr('__class__') }}",
    "{{ query|attr(name) }}",                              # computed at run time
    "{{ query|attr('__cla' ~ 'ss__') }}",                  # computed at run time
    "{% set x = query|attr(name) %}{{ x.mro() }}",
    "{{ ().__class__.__base__.__subclasses__() }}",
    "{{ query.format_map.__globals__ }}",
    "{{ [].append(1) }}",                                   # mutating a builtin list
    "{% include '../../../etc/passwd' %}",
    "{% include '/etc/passwd' %}",
    "{% extends '../../outside.j2' %}",
    "{% import '../.git/config' as y %}",
]


@pytest.mark.parametrize("body", ESCAPES)
def test_reaching_for_python_internals_is_a_security_error(body: str) -> None:
    with pytest.raises(SecurityError):
        render(body)


def test_a_static_escape_is_refused_before_any_case_renders() -> None:
    prompt = parse_prompty(FRONT + "user:\n{{ query }}\n{{ query.__class__ }}\n", path="p.prompty")
    never = [Case(id="c1", query="q", context="c")]
    with pytest.raises(SecurityError) as caught:
        render_cases(prompt, never, read={}.get)
    assert str(caught.value) == ("p.prompty:9: the template reaches for Python internals "
                                 "(attribute '__class__'); refused by the sandbox")


def test_an_escape_hidden_in_an_include_is_located_in_the_include() -> None:
    with pytest.raises(SecurityError) as caught:
        render("{% include 'inc.j2' %}", {"prompts/inc.j2": "fine\n{{ self.__init__ }}"})
    assert str(caught.value).startswith("prompts/inc.j2:2: the template reaches for Python internals")


SMALL = Limits(max_built_chars=10_000, max_output_chars=50_000, max_power_bits=256)
EXHAUSTION = [
    ("{% for i in range(10**9) %}{% endfor %}", "Range too big"),
    ("{{ 'x' * 10**9 }}", "repeating a sequence"),
    ("{{ [query] * 10**9 }}", "repeating a sequence"),
    ("{{ 10 ** 10 ** 10 }}", "too large to compute"),
    ("{{ '%999999999d' % 1 }}", "format width"),
    ("{{ '%*d' % (n, 1) }}", "format width"),
    ("{{ '%999999999d'|format(1) }}", "format width"),
    ("{{ '{:999999999}'.format(1) }}", "format width"),
    ("{{ '{:{}}'.format(1, n) }}", "computed"),
    ("{{ query|center(999999999) }}", "center to width"),
    ("{{ query.ljust(999999999) }}", "ljust to width"),
    ("{{ query.zfill(999999999) }}", "zfill to width"),
    ("{{ query|indent(999999999) }}", "indent to width"),
    ("{{ ('\t' * 1000).expandtabs(999999) }}", "expandtabs"),
    ("{{ ('x' * 9000)|replace('', 'yyyyyyyy') }}", "replace would build"),
    ("{{ ('x' * 9000).replace('x', 'yyyyyyyy') }}", "replace would build"),
    ("{{ (['x' * 9000] * 100)|join }}", "join would build"),
    ("{{ '-'.join(['x' * 9000] * 100) }}", "join would build"),
    ("{% for i in range(60) %}{{ 'x' * 1000 }}{% endfor %}", "rendered prompt is longer"),
    ("{% include 'loop.j2' %}", "without end"),
]


@pytest.mark.parametrize("body, message", EXHAUSTION)
def test_templates_that_would_exhaust_the_machine_are_refused(body: str, message: str) -> None:
    files = {"prompts/loop.j2": "{% include 'loop.j2' %}"}
    with pytest.raises(SecurityError) as caught:
        render(body, files, limits=SMALL)
    assert message in str(caught.value)


@pytest.mark.parametrize("body, expected", [
    ("{{ 'ab' * 3 }}", "ababab"),
    ("{{ 2 ** 10 }}", "1024"),
    ("{{ '%05.1f' % 3.14159 }}", "003.1"),
    ("{{ '|{:>6}|'.format(query) }}", "|     q|"),
    ("{{ [query, context]|join(', ') }}", "q, ctx"),
    ("{{ ', '.join([query, context]|map('upper')) }}", "Q, CTX"),
    ("{{ query|center(5) }}", "q"),   # stripped: content is trimmed
    ("{{ context|replace('t', 'T') }}", "cTx"),
    ("{{ '%s has %d'|format(query, n) }}", "q has 10"),
])
def test_ordinary_use_of_the_guarded_operations_still_works(body: str, expected: str) -> None:
    assert render(body, limits=SMALL).messages["c1"][0]["content"] == expected


# --- the child process ------------------------------------------------------------------

@pytest.fixture
def repo(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo.create(tmp_path / "repo")
    return repo, repo.commit({"prompts/p.prompty": FRONT + "user:\n{{ query }}\n"})


def isolated(repo: tuple[GitRepo, str], body: str, limits: Limits):
    prompt = parse_prompty(FRONT + "user:\n" + body + "\n", path="prompts/p.prompty")
    return render_isolated(prompt, CASES, repo=repo[0].path, sha=repo[1], limits=limits)


def test_a_template_that_loops_without_end_is_stopped(repo: tuple[GitRepo, str]) -> None:
    body = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(SecurityError, match="took longer than 1s"):
        isolated(repo, body, Limits(timeout_seconds=1))


def test_a_template_that_doubles_a_string_without_end_runs_out_of_memory(repo: tuple[GitRepo, str]) -> None:
    # `~` concatenation is not an intercepted operator: the child's memory limit stops it.
    body = ("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}"
            "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}")
    with pytest.raises(SecurityError, match="memory"):
        isolated(repo, body, Limits(memory_bytes=400 * 1024 * 1024))


def test_the_child_reports_located_problems_like_the_parent(repo: tuple[GitRepo, str]) -> None:
    with pytest.raises(SecurityError) as caught:
        isolated(repo, "{{ query|attr(name) }}", Limits())
    assert str(caught.value) == ("prompts/p.prompty:8: refused by the sandbox: access to attribute "
                                 "'__class__' of 'str' object is unsafe. (case c1)")


def test_the_child_sees_no_credential_whatever_its_name() -> None:
    environ = {
        "PATH": "/usr/bin", "HOME": "/home/runner", "LC_ALL": "C.UTF-8", "PYTHONPATH": "/src",
        "OPENAI_API_KEY": "sk-1", "INPUT_GITHUB-TOKEN": "ghs_2", "ACTIONS_RUNTIME_TOKEN": "3",
        "GH_PAT": "ghp_4", "DATABASE_URL": "postgres://u:pw5@db/x", "NPM_AUTH": "6",
        "HTTPS_PROXY": "http://u:pw7@proxy:3128", "OPENAI_BASE_URL": "https://u:pw8@gw/v1",
        "GITHUB_WORKSPACE": "/github/workspace", "GIT_CONFIG_PARAMETERS": "'http.extraheader=x'",
    }
    assert child_environment(environ) == {
        "PATH": "/usr/bin", "HOME": "/home/runner", "LC_ALL": "C.UTF-8", "PYTHONPATH": "/src"}


def test_the_child_renders_with_only_that_environment(repo: tuple[GitRepo, str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name not in ("PATH", "HOME", "PYTHONPATH") and not name.startswith("LC_"):
            monkeypatch.delenv(name)
    sha = repo[0].commit({"prompts/inc.j2": "included"})
    rendered = isolated((repo[0], sha), "{{ query }} {% include 'inc.j2' %}", Limits())
    assert rendered.messages["c1"][0]["content"] == "q included"
