"""Shared fixtures. Loopback servers live in tests/support/ and register here."""

pytest_plugins: list[str] = [
    "support.openai_server",   # the OpenAI-compatible loopback server
    "support.github_server",   # the GitHub REST loopback server
    "support.action_harness",  # the action's workspace, events and recording check runner
]
