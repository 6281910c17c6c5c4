"""Real GitHub Models prompt files (tests/fixtures/github-models-corpus, sources in its
README), read by flipgate and rendered for a case, against what GitHub Models itself
sends: `expected_request` restates its loader (github/gh-models `pkg/prompt`:
yaml into the File struct, `TemplateString`'s ReplaceAll of `{{key}}` for each
test-data key, `BuildChatCompletionOptions`) line by line, written from that source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from flipgate.errors import InputError
from flipgate.prompts.forms import FormSpec, read_generator
from flipgate.prompts.forms.github_models import go_value
from flipgate.prompts.render import render_values

CORPUS = Path(__file__).parent.parent / "fixtures" / "github-models-corpus"
FILES = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.yml"))
REFUSED = {
    "actions+ai-inference/__fixtures__/prompts/invalid-role.prompt.yml":
        (2, "'messages[0].role' 'not_a_valid_role' must be one of system, user, assistant"),
    "actions+ai-inference/__fixtures__/prompts/missing-messages.prompt.yml":
        (1, "'messages' is missing"),
}


def expected_request(text: str, data: dict[str, Any]) -> dict[str, Any]:
    """What gh-models sends for this file and one test-data item."""
    file = yaml.safe_load(text)
    request: dict[str, Any] = {"model": str(file.get("model") or ""), "messages": []}
    for message in file.get("messages") or []:
        content = message.get("content") or ""
        for key, value in data.items():                                   # TemplateString
            content = content.replace("{{" + key + "}}", value if isinstance(value, str) else go_value(value))
        role = message["role"].lower()                                    # GetAzureChatMessageRole
        assert role in ("system", "user", "assistant")
        request["messages"].append({"role": role, "content": content})
    parameters = file.get("modelParameters") or {}
    for field, key in (("maxTokens", "max_tokens"), ("temperature", "temperature"), ("topP", "top_p")):
        if parameters.get(field) is not None:
            request[key] = parameters[field]
    if file.get("responseFormat") is not None:
        request["response_format"] = {"type": file["responseFormat"]}
        if file.get("jsonSchema") is not None:
            request["response_format"]["json_schema"] = json.loads(file["jsonSchema"])
    return request


def case_values(text: str) -> dict[str, Any]:
    """The file's first test-data item, else a value for every placeholder it has."""
    file = yaml.safe_load(text)
    if file.get("testData"):
        return dict(file["testData"][0])
    names = {part.split("}}", 1)[0] for message in file.get("messages") or []
             for part in (message.get("content") or "").split("{{")[1:]}
    return {name: f"<value of {name}>" for name in names}


def flipgate_request(path: str, data: dict[str, Any]) -> dict[str, Any]:
    prompt = read_generator((CORPUS / path).read_bytes(), path=path, source=path,
                             spec=FormSpec(form="github"), read=lambda name: None)
    rendered = render_values(prompt, {"case": data}, read=lambda name: None)
    return {"model": prompt.model or "", "messages": list(rendered.messages["case"]), **prompt.parameters}


def test_the_corpus_has_at_least_twenty_files() -> None:
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", [p for p in FILES if p not in REFUSED])
def test_a_real_prompt_file_is_read_to_the_request_github_models_sends(path: str) -> None:
    text = (CORPUS / path).read_text()
    data = case_values(text)
    assert flipgate_request(path, data) == expected_request(text, data)


@pytest.mark.parametrize("path", sorted(REFUSED))
def test_a_real_prompt_file_github_models_refuses_is_refused_naming_key_and_line(path: str) -> None:
    with pytest.raises(InputError) as caught:
        flipgate_request(path, {})
    (problem,) = caught.value.problems
    line, message = REFUSED[path]
    assert (problem.path, problem.line) == (path, line) and message in problem.message


def test_a_file_written_for_another_loader_keeps_only_what_github_models_reads() -> None:
    path = "gauthamchandra+kinglet/.github/prompts/security-expert.prompt.yml"
    request = flipgate_request(path, {"diff": "+ eval(input())"})
    assert request["model"] == ""                       # no model: .flipgate.yml must name one
    assert "top_p" not in request and request["temperature"] == 0.6     # `top_p` is not `topP`
    assert [m["role"] for m in request["messages"]] == ["user"]         # the top-level `system:` is ignored
    assert "+ eval(input())" in request["messages"][0]["content"]
