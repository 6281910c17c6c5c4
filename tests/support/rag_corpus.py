"""The prompts of tests/fixtures/rag-prompts/corpus.json as flipgate reads and renders them
(in process), for one set of values: shared by the corpus test and by
scripts/rag_prompt_reference.py, which renders the same values with each prompt's library."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from flipgate.prompts.forms import FormSpec, names_read, read_generator
from flipgate.prompts.render import render_values

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "rag-prompts"
# The values every prompt is rendered with; a name a prompt reads beyond these gets "<name>".
BASE: dict[str, Any] = {
    "query": "How long do I have to return a kettle?",
    "question": "How long do I have to return a kettle?",
    "query_str": "How long do I have to return a kettle?",
    "context": "Refunds are accepted within 30 days of purchase.\nThe kettle costs {brand} $40.",
    "context_str": "Refunds are accepted within 30 days of purchase.\nThe kettle costs {brand} $40.",
    "chat_history": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}],
    "language": "English",
}


def read(path: str) -> bytes | None:
    file = CORPUS / path
    return file.read_bytes() if file.is_file() else None


def spec_of(entry: dict[str, Any]) -> FormSpec:
    if "python" in entry:
        return FormSpec(form="python", constant=entry["python"])
    kinds = ("python", "template", "text")
    return FormSpec(form="messages", messages=tuple((m["role"], kind, m[kind]) for m in entry["messages"]
                                                    for kind in kinds if kind in m))


def flipgate_messages(entry: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(the messages flipgate sends, the values they were rendered with); InputError: refused."""
    data = read(entry["file"])
    assert data is not None, entry["file"]
    prompt = read_generator(data, path=entry["file"], source=entry["file"], spec=spec_of(entry), read=read)
    prompt = dataclasses.replace(prompt, jinja=entry.get("jinja", {}))
    values = {**BASE, **{name: f"<{name}>" for name in names_read(prompt).names if name not in BASE}}
    rendered = render_values(prompt, {"case": values}, read=read, strict_undefined=True)
    assert not rendered.missing, rendered.missing
    return list(rendered.messages["case"]), values
