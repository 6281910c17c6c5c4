"""Each generator form gates end to end: a GitHub Models prompt file, a template file
(fstring, with a system file and `variables`), a Python string constant (Mustache and
Jinja templates render through the same path: tests/unit/test_generator_form_readers.py). Real git repos, the
real CLI and openai client, the loopback OpenAI-compatible server; the request log shows
the rendered messages each form sends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.gitrepo import GitRepo
from support.openai_server import FakeOpenAI
from support.runs import repo_with_base, run_base_head

CASES = [
    {"id": "refund-007", "query": "How long do I have to return a kettle?",
     "context": "Refunds are accepted within 30 days of purchase.", "category": "policy"},
    {"id": "card-002", "query": "How do I freeze my card?",
     "context": "Freeze your card in the app under Card settings.", "category": "cards"},
]


def grounded(body: dict) -> str:
    """A stand-in model: repeats the context it finds after 'Context:', and invents a refund
    policy when any message asks it to be creative."""
    text = "\n".join(m["content"] for m in body["messages"])
    context = text.split("Context: ", 1)[1].split("\n")[0]
    return "Refunds take 90 days and cost $15." if "creative" in text and "Refund" in context else context


def config(generator: str) -> str:
    return (f"version: 1\ncases: eval/cases.jsonl\n{generator}judge:\n  provider: offline\n"
            "gate:\n  blocking_categories: [policy]\n  strict: true\n")


def make_repo(tmp_path: Path, files: dict[str, str]) -> GitRepo:
    return repo_with_base(tmp_path, CASES, files)


run = run_base_head


def creative_request(server: FakeOpenAI) -> dict:
    """The head's request for the refund case (its prompt asks the model to be creative)."""
    return next(r.body for r in server.chat_requests("generation")
                if "creative" in json.dumps(r.body) and "Refunds" in json.dumps(r.body))


@pytest.fixture
def server(openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    monkeypatch.setenv("GITHUB_TOKEN", "test-github-token")  # GitHub Models' key, where it is read
    openai_server.on_generation(grounded)
    return openai_server


PROMPT_YML = """name: Bank answers
description: Answers a customer from the context only
model: openai/gpt-4.1-mini
modelParameters:
  maxTokens: 300
  temperature: 0.1
messages:
  - role: system
    content: |
      You answer bank questions from the context only.
      Context: {{context}}
  - role: user
    content: '{{query}} (ref {{ query }}, {{unknown}})'
testData:
  - query: ignored
    context: ignored
evaluators:
  - name: ignored
    string: {contains: x}
"""


def test_a_github_models_prompt_file_gates_a_change_and_sends_what_github_models_would(
        server: FakeOpenAI, tmp_path: Path) -> None:
    generator = ("generator:\n  path: prompts/answer.prompt.yml\n"
                 f"  endpoint: {{provider: github, base_url: '{server.base_url}'}}\n")
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), "prompts/answer.prompt.yml": PROMPT_YML})
    repo.commit({"prompts/answer.prompt.yml": PROMPT_YML.replace("context only.", "context only, creative.")})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 1, result.output          # the head invents a refund policy
    verdicts = {row["id"]: row["verdict"] for row in report["rows"]}
    assert verdicts == {"refund-007": "regression", "card-002": "unchanged"}
    sent = [r.body for r in server.chat_requests("generation")]
    card = next(b for b in sent if "freeze" in json.dumps(b) and "creative" not in json.dumps(b))
    assert card["model"] == "openai/gpt-4.1-mini" and card["max_tokens"] == 300 and card["temperature"] == 0.1
    assert card["messages"] == [
        {"role": "system", "content": "You answer bank questions from the context only.\n"
                                      "Context: Freeze your card in the app under Card settings.\n"},
        {"role": "user", "content": "How do I freeze my card? (ref {{ query }}, {{unknown}})"}]
    # `{{ query }}` with spaces goes out as written, as GitHub Models sends it: the run says so.
    [warning] = [note for note in report["notes"] if "sent to the model as written" in note]
    assert warning.startswith("Warning: prompts/answer.prompt.yml@") and ":13: {{ query }}" in warning


TEMPLATE = "Context: {context}\n\nQuestion: {question}\nAnswer in one sentence ({{{{strict}}}}).\n"


def test_a_template_whose_head_changes_only_the_model_is_replayed_with_the_new_model(
        server: FakeOpenAI, tmp_path: Path) -> None:
    def generator(model: str) -> str:
        return ("generator:\n  template: prompts/answer.txt\n  format: fstring\n"
                "  system: prompts/system.txt\n"
                f"  model: {model}\n  parameters: {{temperature: 0}}\n"
                "  variables: {question: query}\n")
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator("gpt-4.1-mini")),
                                "prompts/answer.txt": TEMPLATE,
                                "prompts/system.txt": "You are the {category} desk.\n"})
    repo.commit({".flipgate.yml": config(generator("gpt-4.1"))})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 0, result.output
    assert report["change"]["model"] == {"old": "gpt-4.1-mini", "new": "gpt-4.1"}
    assert any("takes generator.model from the pull request's .flipgate.yml" in n for n in report["notes"])
    sent = server.chat_requests("generation")
    assert {r.body["model"] for r in sent} == {"gpt-4.1-mini", "gpt-4.1"}
    refund = next(r.body for r in sent if "Refunds" in json.dumps(r.body))
    assert refund["messages"] == [
        {"role": "system", "content": "You are the policy desk."},
        {"role": "user", "content": TEMPLATE.format(context=CASES[0]["context"], question=CASES[0]["query"])}]
    assert "{strict}" in refund["messages"][1]["content"]       # {{ is a brace, as str.format reads it


CONSTANT_FILE = '''"""The app's prompts."""
import os

MODEL = os.environ.get("MODEL", "gpt-4.1-mini")

ANSWER_PROMPT = (
    "Use the context to answer.\\n"
    "Context: {context}\\n"
    "Question: {query}\\n"
)


def build():
    return ANSWER_PROMPT.format(context="", query="")
'''


def test_a_python_constant_is_gated_by_its_value_not_by_the_rest_of_its_file(
        server: FakeOpenAI, tmp_path: Path) -> None:
    generator = "generator:\n  python: app/prompts.py:ANSWER_PROMPT\n  model: gpt-4.1-mini\n"
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), "app/prompts.py": CONSTANT_FILE})
    repo.commit({"app/prompts.py": CONSTANT_FILE.replace("return ANSWER", "# unrelated\n    return ANSWER")})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 0, result.output
    assert report["conclusion"] == "skipped" and server.chat_requests() == []
    repo.commit({"app/prompts.py": CONSTANT_FILE.replace("Use the context", "Be creative, use the context")})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 1, result.output
    assert report["change"]["files"] == ["app/prompts.py"]
    sent = creative_request(server)
    assert sent["messages"] == [{"role": "user", "content": "Be creative, use the context to answer.\n"
                                                            f"Context: {CASES[0]['context']}\n"
                                                            f"Question: {CASES[0]['query']}\n"}]


CHAIN_FILE = '''from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

SYSTEM = """Use the context to answer. Cite it as [${{number}}].
Context: {context}"""

QA_CHAT = ChatPromptTemplate.from_messages([
    ("system", SYSTEM),
    MessagesPlaceholder("history", optional=True),
    ("human", "{question}"),
])


def chain(llm):
    return QA_CHAT | llm
'''


def test_a_langchain_chat_prompt_sends_its_messages_and_the_question(server: FakeOpenAI,
                                                                       tmp_path: Path) -> None:
    generator = ("generator:\n  python: app/chain.py:QA_CHAT\n  model: gpt-4.1-mini\n"
                 "  variables: {question: query}\n")
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), "app/chain.py": CHAIN_FILE})
    repo.commit({"app/chain.py": CHAIN_FILE.replace("def chain(llm):", "def chain(llm):  # unrelated")})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 0 and report["conclusion"] == "skipped", result.output
    repo.commit({"app/chain.py": CHAIN_FILE.replace("Use the context", "Be creative, use the context")})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 1, result.output
    sent = creative_request(server)
    assert sent["messages"] == [
        {"role": "system", "content": "Be creative, use the context to answer. Cite it as [${number}].\n"
                                      f"Context: {CASES[0]['context']}"},
        {"role": "user", "content": CASES[0]["query"]}]


SYSTEM_FILE = 'SYSTEM_PROMPT = "Use the context only."\n\ndef unrelated():\n    return 1\n'
# Jinja2's defaults would keep both tag lines; the leading blank line goes only with the loader's strip.
RULES = "\n  {% if category %}\nContext: {{ context }}\n  {% endif %}\n\n"


def test_messages_around_a_template_are_sent_in_order_rendered_with_the_apps_jinja_settings(
        server: FakeOpenAI, tmp_path: Path) -> None:
    generator = ("generator:\n  messages:\n    - {role: system, python: app/prompts.py:SYSTEM_PROMPT}\n"
                 "    - {role: system, template: prompts/rules.j2}\n    - {role: user, text: '{query}'}\n"
                 "  jinja: {trim_blocks: true, lstrip_blocks: true, strip: true}\n  model: gpt-4.1-mini\n")
    repo = make_repo(tmp_path, {".flipgate.yml": config(generator), "app/prompts.py": SYSTEM_FILE,
                                "prompts/rules.j2": RULES})
    repo.commit({"app/prompts.py": SYSTEM_FILE.replace("return 1", "return 2")})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 0 and report["conclusion"] == "skipped", result.output
    repo.commit({"app/prompts.py": SYSTEM_FILE.replace("Use the context only.", "Be creative.")})
    result, report = run(repo, tmp_path)
    assert result.exit_code == 1, result.output
    assert report["change"]["files"] == ["app/prompts.py"]
    sent = creative_request(server)
    assert sent["messages"] == [{"role": "system", "content": "Be creative."},
                                {"role": "system", "content": f"Context: {CASES[0]['context']}\n"},
                                {"role": "user", "content": CASES[0]["query"]}]
