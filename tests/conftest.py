"""Shared fixtures. Loopback servers live in tests/support/ and register here."""

import os
import tempfile

import pytest

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


# Tests that take seconds of CPU each, marked `slow` so the edit loop's quick subset
# (`pytest -q -m "not slow" tests/unit`, CONTRIBUTING.md) leaves them out; the whole suite
# runs them. Measured with `--durations`; a name here that no longer exists marks nothing.
SLOW = {
    # The comment and the job summary fitted to GitHub's limits, thousands of rows rendered
    # again at every size tried.
    "tests/unit/test_render.py": {"test_the_step_summary_keeps_more_within_its_mebibyte",
                                  "test_thousands_of_rows_fit_in_one_comment",
                                  "test_any_reasonable_budget_is_respected",
                                  "test_blocking_rows_are_the_last_to_go",
                                  "test_a_budget_below_the_shortest_comment_is_refused"},
    "tests/unit/test_render_suites.py": {
        "test_two_large_suites_share_one_comment_and_a_small_one_keeps_every_row"},
    "tests/unit/test_comment_context.py": {
        "test_blocking_rows_that_no_longer_fit_are_named_with_a_pointer_to_the_page",
        "test_the_issues_case_every_one_of_400_blocking_rows_keeps_its_query_claim_and_context"},
    "tests/unit/test_e2e_render.py": {"test_thousands_of_drift_rows_still_fit_one_comment"},
    "tests/unit/test_hostile_text.py": {
        "test_thousands_of_figures_are_each_checked_against_thousands_known"},
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = getattr(item, "originalname", item.name)  # without its parameters
        if name in SLOW.get(item.nodeid.split("::")[0], ()):
            item.add_marker(pytest.mark.slow)
