"""Prompts as the application builds them, read and rendered in process: the `.flipgate.yml`
keys (`python` targets, `messages`, `jinja`), prompt objects read with the parser, history
placeholders, and refusals whose advice fits the form."""

from __future__ import annotations

import dataclasses
import json

import pytest

from flipgate.config.schema import parse_config
from flipgate.errors import InputError
from flipgate.model import Case
from flipgate.prompts import Inspected
from flipgate.prompts.forms import FormSpec, names_read, read_generator
from flipgate.prompts.render import render_values
from flipgate.run.refs import refuse_unusable

CASE = Case(id="c1", query="How long for a refund?", context="Refunds: 30 days.", category="policy")
VALUES = {"question": "How long for a refund?", "context": "<b>30 days</b>"}


def config(generator: str):
    return parse_config(f"version: 1\ncases: c.jsonl\n{generator}")


def refused(generator: str) -> str:
    with pytest.raises(InputError) as caught:
        config(generator)
    return str(caught.value)


def read(source: str, target: str, files: dict[str, str] | None = None):
    files = {"app/chain.py": source, **(files or {})}
    return read_generator(source.encode(), path="app/chain.py", source="app/chain.py@abc",
                          spec=FormSpec(form="python", constant=target),
                          read=lambda p: files[p].encode() if p in files else None)


def sent(prompt, values=VALUES, strict=True) -> list[dict]:
    rendered = render_values(prompt, {"c": values}, read=lambda p: None, strict_undefined=strict)
    return list(rendered.messages.get("c", ()))


# --- .flipgate.yml ---------------------------------------------------------------------

def test_messages_name_the_generator_by_their_first_file_and_keep_their_order() -> None:
    options = config("generator:\n  messages:\n    - {role: system, python: app/p.py:SYSTEM}\n"
                     "    - {role: user, text: '{question}'}\n  jinja: {trim_blocks: true}\n"
                     "  model: m\n")
    assert (options.generator, options.generator_options.form) == ("app/p.py", "messages")
    assert options.generator_options.messages == (("system", "python", "app/p.py:SYSTEM"),
                                                  ("user", "text", "{question}"))
    assert options.generator_options.jinja == (("trim_blocks", True),)


@pytest.mark.parametrize("target", ['app/p.py:PROMPTS["qa"]', "app/p.py:PROMPTS['qa']", "app/p.py:Prompts.QA"])
def test_a_dict_entry_and_a_class_attribute_are_python_targets(target: str) -> None:
    loaded = config(f"generator:\n  python: {json.dumps(target)}\n  model: m\n")
    assert (loaded.generator, loaded.generator_options.constant) == ("app/p.py", target.partition(".py:")[2])


@pytest.mark.parametrize(("generator", "said"), [
    ("generator:\n  template: a.j2\n  messages: [{role: user, text: x}]\n", "names template and messages"),
    ("generator:\n  messages: [{role: human, python: 'a.py:X'}]\n", "'generator.messages[0].role' must be one of"),
    ("generator:\n  messages: [{role: user, text: x, template: a.j2}]\n", "needs exactly one of"),
    ("generator:\n  messages: [{role: user, text: '{query}'}]\n", "reads no file"),
    ("generator:\n  messages: [{role: user, python: a.py}]\n", "must be FILE.py:NAME"),
    ("generator:\n  messages: [{role: user, template: a.j2}]\n  system: s.md\n", "write it as the first"),
    ("generator:\n  template: a.j2\n  jinja: {autoescape: true}\n", "must map trim_blocks"),
    ("generator: {path: a.prompty, jinja: {trim_blocks: true}}\n", "'generator.jinja' belongs to"),
    ("generator:\n  template: a.j2\n  jinja: {strip: 1}\n", "keep_trailing_newline, strip to true or false"),
    ("generator:\n  template: a.j2\n  jinja: {rstrip: true}\n", "keep_trailing_newline, strip to true or false"),
])
def test_messages_and_jinja_off_the_contract_are_refused(generator: str, said: str) -> None:
    assert said in refused(generator)


# --- prompt objects ------------------------------------------------------------------

def test_langchain_mustache_and_jinja2_render_as_langchain_renders_them() -> None:
    source = ('from langchain_core.prompts import PromptTemplate\n'
              'M = PromptTemplate.from_template("{{context}} / {{{context}}}", template_format="mustache")\n'
              'J = PromptTemplate(template="{% if context %}\\n{{ context }}\\n{% endif %}\\n", '
              'input_variables=["context"], template_format="jinja2")\n')
    assert sent(read(source, "M")) == [{"role": "user", "content": "&lt;b&gt;30 days&lt;/b&gt; / <b>30 days</b>"}]
    assert sent(read(source, "J")) == [{"role": "user", "content": "\n<b>30 days</b>\n"}]   # no final newline


def test_a_llamaindex_template_leaves_doubled_braces_and_unknown_names_as_written() -> None:
    source = ('from llama_index.core import PromptTemplate\n'
              'QA = PromptTemplate("Context: {context} {{literal}} {a.b}\\nQ: {question}")\n')
    prompt = read(source, "QA")
    assert names_read(prompt).names == {"context", "question", "a.b"}
    assert sent(prompt, strict=False) == [{"role": "user", "content": "Context: <b>30 days</b> {{literal}} {a.b}\n"
                                                                       "Q: How long for a refund?"}]


def test_a_string_template_substitutes_dollar_names() -> None:
    prompt = read('import string\nT = string.Template("Q: $question (${context}) costs $$5")\n', "T")
    assert sent(prompt) == [{"role": "user", "content": "Q: How long for a refund? (<b>30 days</b>) costs $5"}]
    with pytest.raises(InputError, match="a '\\$' that starts no placeholder"):
        read('from string import Template\nT = Template("costs $5")\n', "T")


CHAT = ('from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder\n'
        'from langchain_core.messages import SystemMessage\n'
        'QA = ChatPromptTemplate.from_messages([SystemMessage(content="Be {brief}."), '
        'MessagesPlaceholder("history"), ("human", "{question}")])\n')


def test_a_history_placeholder_reads_a_case_field_of_messages() -> None:
    history = [{"role": "human", "content": "Hi"}, {"role": "ai", "content": "Hello"}]
    assert sent(read(CHAT, "QA"), {**VALUES, "history": history}) == [
        {"role": "system", "content": "Be {brief}."},           # a message class is sent as written
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "How long for a refund?"}]
    missing = render_values(read(CHAT, "QA"), {"c": VALUES}, read=lambda p: None, strict_undefined=True)
    assert missing.missing["c"][0] == "history"                 # required, as LangChain requires it
    with pytest.raises(InputError, match="must be a list of \\{role, content\\}"):
        sent(read(CHAT, "QA"), {**VALUES, "history": [{"role": "tool", "content": "x"}]})


@pytest.mark.parametrize(("source", "target", "said"), [
    ("from langchain_core.prompts import PromptTemplate\nP = PromptTemplate('{question}')\n", "P",
     "takes template= by keyword"),
    ("from langchain_core.prompts import PromptTemplate\n"
     "P = PromptTemplate.from_template('{question} {x}', partial_variables={'x': 'y'})\n", "P",
     "sets partial_variables"),
    ("from app import texts\nP = texts.SYSTEM\n", "P", "from the module app.texts: "),
    ("from langchain import hub\nP = hub.pull('rlm/rag-prompt')\n", "P", "pulled from a prompt hub"),
    ("P = {'qa': '{question}'}\n", 'P["other"]', "has no entry"),
    ("from langchain_core.prompts import ChatPromptTemplate\nP = ChatPromptTemplate.from_messages(build())\n",
     "P", "not a list written in the call"),
])
def test_what_only_running_the_code_gives_is_refused_saying_what_would_work(source: str, target: str,
                                                                              said: str) -> None:
    with pytest.raises(InputError) as caught:
        read(source, target)
    assert len(caught.value.problems) == 1 and said in str(caught.value)


# --- refusals that fit the form ------------------------------------------------------

def _refusal(prompt) -> str:
    loaded = config("generator: {python: 'app/chain.py:P', model: m}\n")
    inspected = Inspected(prompt=prompt, files=frozenset(), complete=True, names=names_read(prompt).names)
    with pytest.raises(InputError) as caught:
        refuse_unusable(loaded, inspected, [CASE])
    return str(caught.value)


def test_a_prompt_yml_without_placeholders_is_told_to_write_one_not_to_change_a_format() -> None:
    text = "model: openai/gpt-4.1\nmessages:\n  - role: system\n    content: Be brief.\n"
    prompt = read_generator(text.encode(), path="a.prompt.yml", source="a.prompt.yml@abc",
                             spec=FormSpec(form="github"), read=lambda p: None)
    said = _refusal(prompt)
    assert "{{query}}" in said and "generator.format" not in said and "generator.variables" not in said


def test_a_chat_prompt_reading_no_field_is_pointed_at_generator_messages() -> None:
    source = ("from langchain_core.prompts import ChatPromptTemplate\n"
              "P = ChatPromptTemplate.from_messages([('system', 'Be brief.')])\n")
    said = _refusal(read(source, "P"))
    assert "generator.messages" in said and "generator.format" not in said


def test_a_message_naming_a_prompt_object_renders_in_the_objects_own_format() -> None:
    source = ('from llama_index.core import PromptTemplate\n'
              'SYSTEM = PromptTemplate("Answer about {category}; keep {{braces}}.")\n')
    prompt = read_generator(source.encode(), path="app/chain.py", source="app/chain.py@abc",
                             spec=FormSpec(form="messages", messages=(("system", "python", "app/chain.py:SYSTEM"),
                                                                      ("user", "text", "{question}"))),
                             read=lambda p: source.encode() if p == "app/chain.py" else None)
    assert sent(prompt, {**VALUES, "category": "refunds"}) == [
        {"role": "system", "content": "Answer about refunds; keep {{braces}}."},   # LlamaIndex's rules
        {"role": "user", "content": "How long for a refund?"}]


# --- generator.jinja.strip ---------------------------------------------------------------

# Blank lines around it, as RAGFlow's files end in one: its loader strips them, Jinja2 drops one newline.
RAGFLOW_LIKE = "\n\n## Role\n{% if context %}\nContext: {{ context }}\n{% endif %}\nQ: {{ question }}\n\n"
STRIPPED = "## Role\nContext: <b>30 days</b>\nQ: How long for a refund?"


def _stripped_or_not(strip: bool, files: dict[str, str], spec: FormSpec, main: str) -> list[dict]:
    prompt = read_generator(files[main].encode(), path=main, source=f"{main}@abc", spec=spec,
                             read=lambda p: files[p].encode() if p in files else None)
    jinja = {"trim_blocks": True, "lstrip_blocks": True, "strip": strip}
    return sent(dataclasses.replace(prompt, jinja=jinja))


@pytest.mark.parametrize("strip", [False, True])
def test_strip_renders_a_template_file_as_a_loader_calling_strip_hands_it_to_jinja(strip: bool) -> None:
    spec = FormSpec(form="messages", format="jinja", messages=(("system", "template", "p/role.md"),
                                                               ("user", "text", "  {{ question }} ")))
    messages = _stripped_or_not(strip, {"p/role.md": RAGFLOW_LIKE}, spec, "p/role.md")
    assert messages[0]["content"] == (STRIPPED if strip else "\n\n" + STRIPPED + "\n")
    assert messages[1] == {"role": "user", "content": "  How long for a refund? "}   # inline text: as written


@pytest.mark.parametrize("strip", [False, True])
def test_strip_applies_to_a_jinja_constant_too(strip: bool) -> None:
    source = f"PROMPT = {RAGFLOW_LIKE!r}\n"
    spec = FormSpec(form="python", constant="PROMPT", format="jinja")
    content = _stripped_or_not(strip, {"app/p.py": source}, spec, "app/p.py")[0]["content"]
    assert content == (STRIPPED if strip else "\n\n" + STRIPPED + "\n")


def test_a_stripped_template_keeps_its_line_numbers_in_errors() -> None:
    spec = FormSpec(form="messages", messages=(("system", "template", "p/role.md"),))
    with pytest.raises(InputError) as caught:
        _stripped_or_not(True, {"p/role.md": "\n\n## Role\n{% if %}\n"}, spec, "p/role.md")
    assert str(caught.value).startswith("p/role.md:4: template syntax error")
