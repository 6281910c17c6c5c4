"""Shared fixtures. Loopback servers live in tests/support/ and register here."""

import os
import tempfile

# What flipgate's entry point (cli.main) does for the process: the azure-ai-evaluation
# SDK, imported in-process by the azure engine's tests, reads it on import and would
# otherwise print tracebacks to stdout.
os.environ.setdefault("PF_LOGGING_LEVEL", "CRITICAL")
# A run without a model key keeps its cache key in the user's cache directory: a temporary
# one for the tests, never the real home.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="flipgate-tests-xdg-")

pytest_plugins: list[str] = [
    "support.openai_server",   # the OpenAI-compatible loopback server
    "support.github_server",   # the GitHub REST loopback server
    "support.action_harness",  # the action's workspace, events and recording check runner
]
