"""A Jinja2 template file with a system file and an include, read and rendered by the
sandboxed child from a real git ref, its names mapped by `variables` as the contract's
example writes them ({question: query, documents: context})."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from flipgate.model import Case
from flipgate.prompts import inspect_isolated, render_isolated
from flipgate.prompts.forms import FormSpec

from support.gitrepo import GitRepo

TEMPLATE = "{% include 'rules.j2' %}\nDocuments: {{ documents }}\n\nuser:\n{{ question }}\n"


def test_a_jinja_template_renders_in_the_child_with_its_system_file_include_and_variables(
        tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo")
    sha = repo.commit({"prompts/answer.j2": TEMPLATE, "prompts/rules.j2": "Cite the documents.",
                       "prompts/system.md": "You answer {{ category }} questions."})
    inspected = inspect_isolated(TEMPLATE.encode(), path="prompts/answer.j2", source="prompts/answer.j2",
                                 repo=repo.path, sha=sha, environ={},
                                 form=FormSpec(form="template", format="jinja", system="prompts/system.md"))
    # the include is one of its files (a change to it is a prompt change); names past it are not guessed
    assert inspected.files == {"prompts/answer.j2", "prompts/rules.j2", "prompts/system.md"}
    assert inspected.names is None
    prompt = dataclasses.replace(inspected.prompt, variables={"question": "query", "documents": "context"})
    case = Case(id="c1", query="How long for a refund?", context="Refunds: 30 days.", category="policy")
    rendered = render_isolated(prompt, [case], repo=repo.path, sha=sha, strict_undefined=True)
    assert list(rendered.messages["c1"]) == [
        {"role": "system", "content": "You answer policy questions."},
        {"role": "user", "content": "Cite the documents.\nDocuments: Refunds: 30 days."},
        {"role": "user", "content": "How long for a refund?"}]
    assert "prompts/rules.j2" in rendered.loaded
