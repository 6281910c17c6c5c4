"""Real prompts from public RAG apps and libraries (tests/fixtures/rag-prompts, sources in its
README), read with the parser and rendered for a case.

- Constants: the user message is what the library itself makes of the template, `str.format`
  with the same values (LangChain's PromptTemplate, kotaemon's and LlamaIndex's call it).
- corpus.json: prompt objects and `generator.messages`, each compared with the messages its
  own library built for the same values (expected.json, written by
  scripts/rag_prompt_reference.py in a one-off run with langchain-core and llama-index-core),
  or refused in the one line recorded there."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from flipgate.errors import InputError
from flipgate.model import Case
from flipgate.prompts.forms import FormSpec, read_generator
from flipgate.prompts.render import render_cases

from support.rag_corpus import flipgate_messages

CORPUS = Path(__file__).parent.parent / "fixtures" / "rag-prompts"
CASE = Case(id="refund-007", query="How long do I have to return a kettle?",
            context="Refunds are accepted within 30 days of purchase.\nThe kettle costs {brand} $40.",
            category="policy", extra={"lang": "English"})
LANGCHAIN = "langchain-ai+langchain/libs/langchain/langchain/chains/retrieval_qa/prompt.py"
KOTAEMON = "Cinnamon+kotaemon/libs/kotaemon/kotaemon/indices/qa/citation_qa.py"
CREATE_LLAMA = ("run-llama+create-llama/packages/create-llama/templates/components/use-cases/python/"
                "agentic_rag/citation.py")
LLAMA_INDEX = "llama-index-core/llama_index/core/prompts/default_prompts.py"
QUESTION = {"question": "query"}
LLAMA = {"context_str": "context", "query_str": "query"}

CONSTANTS = [
    (LANGCHAIN, "prompt_template", QUESTION),
    (KOTAEMON, "DEFAULT_QA_TEXT_PROMPT", QUESTION),
    (KOTAEMON, "DEFAULT_QA_TABLE_PROMPT", QUESTION),
    (KOTAEMON, "DEFAULT_QA_CHATBOT_PROMPT", QUESTION),
    (KOTAEMON, "DEFAULT_QA_FIGURE_PROMPT", QUESTION),
    (CREATE_LLAMA, "CITATION_PROMPT", LLAMA),
    (LLAMA_INDEX, "DEFAULT_TEXT_QA_PROMPT_TMPL", LLAMA),
    (LLAMA_INDEX, "DEFAULT_SIMPLE_INPUT_TMPL", {"query_str": "query"}),
]


def constant_value(path: str, name: str) -> str:
    """The library's own value of the constant: the module's source evaluated alone, never
    imported (its imports are not installed here); only the test's trusted fixture is run."""
    namespace: dict[str, object] = {}
    import ast
    tree = ast.parse((CORPUS / path).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            namespace[name] = eval(compile(ast.Expression(node.value), path, "eval"), {})  # noqa: S307
    value = namespace[name]
    assert isinstance(value, str)
    return value


def rendered(path: str, name: str, variables: dict[str, str], *, system: str | None = None) -> list[dict]:
    spec = FormSpec(form="python", constant=name, system=system)
    data = {path: (CORPUS / path).read_bytes()}
    prompt = read_generator(data[path], path=path, source=path, spec=spec,
                             read=lambda p: (CORPUS / p).read_bytes() if (CORPUS / p).exists() else None)
    prompt = dataclasses.replace(prompt, variables=variables)
    return list(render_cases(prompt, [CASE], read=lambda p: None, strict_undefined=True).messages[CASE.id])


@pytest.mark.parametrize(("path", "name", "variables"), CONSTANTS, ids=[c[1] for c in CONSTANTS])
def test_a_real_constant_renders_as_its_library_formats_it(path: str, name: str,
                                                           variables: dict[str, str]) -> None:
    values = CASE.template_vars()
    expected = constant_value(path, name).format(**{n: values[f] for n, f in variables.items()},
                                                 **{k: v for k, v in values.items() if k not in variables.values()})
    assert rendered(path, name, variables) == [{"role": "user", "content": expected}]
    if "context" in variables.values():
        assert "{brand}" in expected      # a brace in the case's own text stays as it is


def test_a_system_constant_from_the_same_file_is_the_system_message() -> None:
    messages = rendered(CREATE_LLAMA, "CITATION_PROMPT", LLAMA, system=f"{CREATE_LLAMA}:CITATION_SYSTEM_PROMPT")
    assert messages[0] == {"role": "system", "content": constant_value(CREATE_LLAMA, "CITATION_SYSTEM_PROMPT").strip()}
    assert [m["role"] for m in messages] == ["system", "user"]


ENTRIES = json.loads((CORPUS / "corpus.json").read_text())["entries"]
EXPECTED = json.loads((CORPUS / "expected.json").read_text())


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_a_real_prompt_sends_what_its_library_builds_or_is_refused_in_one_line(entry: dict) -> None:
    expected = EXPECTED[entry["id"]]
    if "refused" in expected:
        with pytest.raises(InputError) as caught:
            flipgate_messages(entry)
        assert len(caught.value.problems) == 1 and str(caught.value) == expected["refused"]
        return
    sent, _ = flipgate_messages(entry)
    assert sent == expected["messages"]


def test_the_corpus_holds_forty_prompts_and_every_refusal_says_what_would_work() -> None:
    assert len(ENTRIES) >= 40 and set(EXPECTED) == {e["id"] for e in ENTRIES}
    refusals = [v["refused"] for v in EXPECTED.values() if "refused" in v]
    assert all("generator.messages" in r or "generator.python" in r for r in refusals)
    assert sum("prompt hub" in r for r in refusals) == 6   # chat-langchain's pull_prompt(...)
