"""The generator's forms, read and rendered in process: the `.flipgate.yml` keys that
choose a form, and each reader's rules (a GitHub Models prompt file, a template's formats,
a Python constant)."""

from __future__ import annotations

import dataclasses

import pytest

from flipgate.config.schema import parse_config
from flipgate.errors import InputError
from flipgate.model import Case
from flipgate.prompts.forms import FormSpec, names_read, read_generator
from flipgate.prompts.forms.github_models import go_value, spaced_placeholder_warnings
from flipgate.prompts.messages import split_roles
from flipgate.prompts.render import render_cases

CASE = Case(id="c1", query="How long for a refund?", context="Refunds: 30 days.", category="policy")


def config(generator: str):
    return parse_config(f"version: 1\ncases: c.jsonl\n{generator}")


def problem_of(error: InputError) -> tuple[int | None, str]:
    (problem,) = error.problems
    return problem.line, problem.message


# --- .flipgate.yml ---------------------------------------------------------------------

@pytest.mark.parametrize(("generator", "form", "path"), [
    ("generator: prompts/a.prompty\n", "prompty", "prompts/a.prompty"),
    ("generator: prompts/a.prompt.yml\n", "github", "prompts/a.prompt.yml"),
    ("generator: {path: prompts/a.prompt.yaml}\n", "github", "prompts/a.prompt.yaml"),
    ("generator: {template: prompts/a.j2, model: m}\n", "template", "prompts/a.j2"),
    ("generator: {python: app/p.py:ANSWER, model: m}\n", "python", "app/p.py"),
])
def test_the_generator_key_names_its_form(generator: str, form: str, path: str) -> None:
    loaded = config(generator)
    assert (loaded.generator_options.form, loaded.generator) == (form, path)


def test_a_template_carries_its_model_parameters_format_system_and_variables() -> None:
    options = config("generator:\n  template: a.txt\n  format: fstring\n  system: s.md\n  model: m\n"
                     "  parameters: {temperature: 0}\n  variables: {question: query}\n").generator_options
    assert (options.format, options.system, options.model, options.parameters, options.variables) == \
        ("fstring", "s.md", "m", {"temperature": 0}, (("question", "query"),))


@pytest.mark.parametrize(("generator", "line", "said"), [
    ("generator:\n  template: a.txt\n  python: p.py:X\n", 3, "names template and python"),
    ("generator:\n  path: a.prompty\n  model: m\n", 5, "'generator.model' belongs to a template"),
    ("generator:\n  python: app/p.py\n", 4, "must be FILE.py:NAME"),
    ("generator:\n  template: a.txt\n  format: handlebars\n", 5, "must be one of jinja, fstring, mustache"),
    ("generator:\n  template: a.txt\n  variables: [query]\n", 5, "must map template names to case fields"),
])
def test_a_form_written_wrong_is_refused_naming_its_line(generator: str, line: int, said: str) -> None:
    with pytest.raises(InputError) as caught:
        config(generator)
    assert any(p.line == line and said in p.message for p in caught.value.problems), caught.value.problems


# --- the readers ---------------------------------------------------------------------------

def read(text: str, spec: FormSpec, files: dict[str, str] | None = None, path: str = "p"):
    data = {name: body.encode() for name, body in (files or {}).items()}
    return read_generator(text.encode(), path=path, source=path, spec=spec, read=data.get)


def render(prompt, case: Case = CASE, strict: bool = True) -> list[dict]:
    return list(render_cases(prompt, [case], read=lambda p: None, strict_undefined=strict).messages[case.id])


GH = FormSpec(form="github")


@pytest.mark.parametrize("spelling", ["maxTokens", "max_tokens"])
def test_a_prompt_file_takes_either_spelling_of_max_tokens(spelling: str) -> None:
    prompt = read(f"model: m\nmodelParameters:\n  {spelling}: 50\n  topP: 0.5\nmessages:\n"
                   "  - role: User\n    content: '{{query}}'\n", GH)
    assert prompt.parameters == {"max_tokens": 50, "top_p": 0.5}
    assert render(prompt) == [{"role": "user", "content": CASE.query}]


@pytest.mark.parametrize(("text", "line", "said"), [
    ("model: m\nmodelParameters:\n  maxTokens: lots\nmessages: []\n", 3, "maxTokens' must be a whole number"),
    ("model: m\nmodelParameters:\n  maxTokens: 1\n  max_tokens: 2\nmessages: []\n", 4, "both maxTokens and max_tokens"),
    ("model: m\nresponseFormat: yaml\nmessages: []\n", 2, "'responseFormat' 'yaml' must be one of"),
    ("model: m\nresponseFormat: json_schema\nmessages: []\n", 2, "json_schema needs 'jsonSchema'"),
    ("model: m\nresponseFormat: json_schema\njsonSchema: '{\"name\": \"x\"}'\nmessages: []\n", 3,
     "must contain 'schema'"),
    ("model: [a]\nmessages: []\n", 1, "'model' must be a model name"),
    ("model: m\nmessages:\n  - role: user\n    content: {a: b}\n", 4, "'messages[0].content' must be text"),
])
def test_a_prompt_file_off_the_schema_is_refused_naming_key_and_line(text: str, line: int, said: str) -> None:
    with pytest.raises(InputError) as caught:
        read(text, GH)
    assert any(p.line == line and said in p.message for p in caught.value.problems), caught.value.problems


def test_a_prompt_file_replaces_exact_names_and_writes_other_values_as_go_does() -> None:
    prompt = read("model: m\nmessages:\n  - role: user\n    content: '{{n}} {{ n }} {{f}} {{l}} {{x}}'\n", GH)
    case = dataclasses.replace(CASE, extra={"n": 3, "f": 1e6, "l": ["a", True]})
    assert render(prompt, case)[0]["content"] == "3 {{ n }} 1e+06 [a true] {{x}}"
    assert names_read(prompt).names == {"n", " n ", "f", "l", "x"}
    assert [go_value(v) for v in (0.5, 123456.0, None, {"b": 1, "a": 2})] == ["0.5", "123456", "<nil>", "map[a:2 b:1]"]


FSTRING = FormSpec(form="template", format="fstring")


def test_fstring_reads_as_str_format() -> None:
    text = "Q: {query!r:>30} {{literal}} {context}\n"
    assert render(read(text, FSTRING)) == [{"role": "user", "content": text.format(**CASE.template_vars())}]


@pytest.mark.parametrize(("text", "line", "said"), [
    ("line one\n{query.upper}\n", 2, "reads an attribute or an index"),
    ("{context[0]}", 1, "reads an attribute or an index"),
    ("a\nb {}\n", 2, "has no name"),
    ("{query:>99999999}", 1, "width above 10,000"),
    ("{query:{width}}", 1, "nests a field"),
    ("a } b", 1, "a literal brace is written {{ or }}"),
])
def test_fstring_refuses_what_langchain_refuses(text: str, line: int, said: str) -> None:
    with pytest.raises(InputError) as caught:
        read(text, FSTRING)
    found_line, message = problem_of(caught.value)
    assert found_line == line and said in message


def test_a_missing_name_under_fstring_names_the_case_and_the_mapping() -> None:
    prompt = dataclasses.replace(read("{question}", FSTRING), variables={"question": "question_text"})
    with pytest.raises(InputError) as caught:
        render(prompt)
    assert "case c1 has no field 'question_text' (generator.variables: question <- question_text), " \
           "which p:1 reads" in str(caught.value)


@pytest.mark.parametrize("tag", ["{{#query}}x{{/query}}", "{{^query}}x{{/query}}", "{{> part}}", "{{=<% %>=}}"])
def test_mustache_here_has_no_logic(tag: str) -> None:
    with pytest.raises(InputError) as caught:
        read(f"Q: {{{{query}}}}\n{tag}\n", FormSpec(form="template", format="mustache"))
    assert problem_of(caught.value)[0] == 2 and "is logic" in problem_of(caught.value)[1]


def test_role_lines_split_a_template_and_a_system_file_comes_first() -> None:
    prompt = read("user:\n{{ query }}\nassistant:\nNoted.\nuser:\nmore\n", FormSpec(form="template", system="s.md"),
                   {"s.md": "Context: {{ context }}\n"})
    assert [m["role"] for m in render(prompt)] == ["system", "user", "assistant", "user"]
    assert render(prompt)[0]["content"] == "Context: Refunds: 30 days."
    assert split_roles("no roles\n\n") == [{"role": "user", "content": "no roles\n\n"}]


PY = FormSpec(form="python", constant="ANSWER")


@pytest.mark.parametrize(("source", "value"), [
    ('ANSWER = "a {query}"\n', "a {query}"),
    ('ANSWER: str = ("a "\n    "{query}")\n', "a {query}"),
    ('ANSWER = f"a {{query}}" "!"\n', "a {query}!"),
    ('ANSWER = "old {query}"\nANSWER = "new {query}"\n', "new {query}"),
])
def test_a_constant_is_read_without_running_its_file(source: str, value: str) -> None:
    prompt = read("import os\nos.system('false')\n" + source, PY)
    assert prompt.template == value and prompt.form == "python"


@pytest.mark.parametrize(("source", "value"), [
    ('X = "Be brief."\nANSWER = f"{X} {{query}}"\n', "Be brief. {query}"),
    ('import textwrap\nANSWER = textwrap.dedent("""\n  {query}""")\n', "\n{query}"),
    ('OTHER = "  {query} "\nANSWER = OTHER.strip()\n', "{query}"),
    ('A = "a "\nANSWER = A + "{query}"\n', "a {query}"),
    ('class Prompts:\n    ANSWER = "{query}"\nANSWER = Prompts.ANSWER\n', None),
])
def test_text_built_from_constants_is_read_as_the_code_would_build_it(source: str, value: str | None) -> None:
    if value is None:   # an attribute of a class is named as Class.NAME, never followed
        with pytest.raises(InputError):
            read(source, PY)
        return
    assert read(source, PY).template == value


@pytest.mark.parametrize(("source", "line", "said"), [
    ('import user\nANSWER = f"{user.name} {{query}}"\n', 2, "an f-string whose field {user.name}"),
    ('ANSWER = build("{query}")\n', 1, "a call (build(...)) flipgate does not know"),
    ('ANSWER = OTHER\n', 1, "assigns no OTHER at the module level"),
    ('from app.texts import OTHER\nANSWER = OTHER\n', 2, "imported from app.texts"),
    ('ANSWER = "{query}" * 2\n', 1, "built with an operator (Mult)"),
    ('ANSWER = b"{query}"\n', 1, "is a bytes, not a string"),
    ('if True:\n    ANSWER = "{query}"\n', None, "assigns no ANSWER at the module level"),
    ('ANSWER = "unclosed\n', 1, "is not valid Python"),
])
def test_a_constant_that_needs_the_code_run_is_refused_saying_why_and_where(source: str, line: int | None,
                                                                          said: str) -> None:
    with pytest.raises(InputError) as caught:
        read(source, PY)
    found_line, message = problem_of(caught.value)
    assert found_line == line and said in message


def test_what_a_jinja_template_reads_is_not_guessed_past_an_include() -> None:
    plain = read("Context: {{ context }}\n{{ query | upper }}\n", FormSpec(form="template"))
    including = read("{% include 'rules.j2' %}\n", FormSpec(form="template"))
    assert names_read(plain).names == {"context", "query"} and names_read(plain).known
    assert not names_read(including).known     # never refused as "reads no field"


def test_a_mustache_template_reads_names_escaped_as_langchain_does() -> None:
    prompt = read("system:\nContext: {{context}}\nuser:\n{{{query}}} / {{query}}\n",
                   FormSpec(form="template", format="mustache"))
    case = dataclasses.replace(CASE, query="<b> & \"q\"")
    assert render(prompt, case) == [{"role": "system", "content": "Context: Refunds: 30 days."},
                                     {"role": "user", "content": '<b> & "q" / &lt;b&gt; &amp; &quot;q&quot;'}]


def test_variables_serve_a_prompty_file_too() -> None:
    loaded = config("generator:\n  path: prompts/a.prompty\n  variables: {question: query}\n")
    assert loaded.generator_options.variables == (("question", "query"),)
    prompt = read("---\nmodel:\n  configuration: {type: openai, model: m}\n---\nuser:\n{{ question }}\n",
                   FormSpec(), path="prompts/a.prompty")
    mapped = dataclasses.replace(prompt, variables=dict(loaded.generator_options.variables))
    assert render(mapped) == [{"role": "user", "content": CASE.query}]


# --- a mapped string looped over -------------------------------------------------------

LOOPS = "Context:\n{% for doc in documents %}- {{ doc }}\n{% endfor %}\n{{ query }}\n"


def test_a_loop_over_text_a_mapping_hands_in_names_the_mapping_and_its_line() -> None:
    prompt = dataclasses.replace(read(LOOPS, FormSpec(form="template")),
                                  variables={"documents": "context"})
    with pytest.raises(InputError) as caught:
        render(prompt)
    line, message = problem_of(caught.value)
    assert line == 2
    assert "loops over 'documents'" in message
    assert "generator.variables: documents <- context" in message and "(case c1)" in message


def test_mapped_text_renders_as_itself_and_a_list_still_loops() -> None:
    used = dataclasses.replace(read("{{ documents | upper }} {{ documents }}\n", FormSpec(form="template")),
                               variables={"documents": "context"})
    assert render(used)[0]["content"] == "REFUNDS: 30 DAYS. Refunds: 30 days."  # Jinja2 drops the final newline
    listed = Case(id="c2", query="q", context=["one", "two"], category="policy")
    looped = dataclasses.replace(read(LOOPS, FormSpec(form="template")),
                                 variables={"documents": "context"})
    assert render(looped, listed)[0]["content"] == "Context:\n- one\n- two\n\nq"


def test_a_placeholder_with_spaces_in_a_prompt_file_is_a_warning_naming_its_line() -> None:
    prompt = read("model: m\nmessages:\n  - role: system\n    content: Be brief.\n"
                   "  - role: user\n    content: |\n      Context: {{context}}\n"
                   "      Question: {{ query }}\n", GH)
    assert spaced_placeholder_warnings(prompt) == [
        "Warning: p:8: {{ query }} is sent to the model as written: GitHub Models replaces only "
        "{{query}}, without spaces inside the braces; write it that way"]
    assert render(prompt)[1]["content"].endswith("Question: {{ query }}\n")  # as GitHub sends it
    assert spaced_placeholder_warnings(read("model: m\nmessages:\n  - role: user\n"
                                            "    content: '{{query}}'\n", GH)) == []


def test_per_case_a_render_that_fails_for_some_cases_names_them_and_one_for_all_is_the_templates() -> None:
    from flipgate.prompts.render import render_values

    prompt = read("{{ query }} ({{ queue + 1 }})\n", FormSpec(form="template"))
    values = {"a": {"query": "q", "queue": 1}, "b": {"query": "q", "queue": "desk"}}
    rendered = render_values(prompt, values, read=lambda p: None, per_case=True)
    assert set(rendered.messages) == {"a"}
    assert rendered.failed["b"].startswith("p:1: template error: TypeError")
    with pytest.raises(InputError, match="TypeError"):
        render_values(prompt, {"b": values["b"]}, read=lambda p: None, per_case=True)
    with pytest.raises(InputError, match="TypeError"):
        render_values(prompt, values, read=lambda p: None)
