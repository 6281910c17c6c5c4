"""Shared fixtures. Loopback servers live in tests/support/ and register here."""

import os

# What flipgate's entry point (cli.main) does for the process: the azure-ai-evaluation
# SDK, imported in-process by the azure engine's tests, reads it on import and would
# otherwise print tracebacks to stdout.
os.environ.setdefault("PF_LOGGING_LEVEL", "CRITICAL")

pytest_plugins: list[str] = [
    "support.openai_server",   # the OpenAI-compatible loopback server
    "support.github_server",   # the GitHub REST loopback server
    "support.action_harness",  # the action's workspace, events and recording check runner
]
