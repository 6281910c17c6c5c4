"""Generators the tests commit: the smallest Prompty file that answers from its context."""

from __future__ import annotations

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
