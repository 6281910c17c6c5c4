"""Generators the tests commit: the smallest Prompty file that answers from its context."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

# A v1 file on gpt-4o-mini whose user turn carries the query and the context.
ANSWER_FROM_CONTEXT = """---
model:
  configuration:
    type: openai
    model: gpt-4o-mini
---
system:
Answer from the context.
user:
{{ query }}
Context: {{ context }}
"""

# A v1 file on gen-1 at temperature 0 whose system turn is `{system}` (fill it with
# `.format(system=...)`; the doubled braces come out as the template's own).
WITH_SYSTEM = """\
---
name: answer
model:
  api: chat
  configuration:
    type: openai
    model: gen-1
  parameters:
    temperature: 0
---
system:
{system}

user:
Context: {{{{context}}}}
Question: {{{{query}}}}
"""


def fee_when_helpful(body: dict[str, Any]) -> str:
    """A generator for WITH_SYSTEM: it repeats the context's first line, and a system turn
    that says "helpful" makes it add a fee the context never states."""
    system = body["messages"][0]["content"]
    context = body["messages"][-1]["content"].split("Context: ", 1)[1].split("\n", 1)[0]
    return context + (" A $12 processing fee applies." if "helpful" in system else "")


def fee_when_helpful_for(case_ids: Collection[str]) -> Callable[[dict[str, Any]], str]:
    """`fee_when_helpful` for the cases whose context names their id as `(ID)` only."""
    def generate(body: dict[str, Any]) -> str:
        answer = fee_when_helpful(body)
        context = body["messages"][-1]["content"].split("Context: ", 1)[1].split("\n", 1)[0]
        return answer if any(f"({case_id})" in context for case_id in case_ids) else context
    return generate
