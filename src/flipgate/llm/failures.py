"""Which failed requests are retried, which stop the run, and how a failure is said: the
HTTP statuses no retry can fix (`FATAL_STATUSES`), the transient ones and their backoff,
and the one line that names status, host, model and how often the request went out.

`LLM._post` (client.py) applies the rule; the judges and the replay say its failures
through `describe_failure` / `failure_of`.
"""

from __future__ import annotations

import random
import sys
from typing import TYPE_CHECKING, TypeGuard
from urllib.parse import urlsplit

from flipgate.errors import IncompleteError
from flipgate.llm.endpoints import Endpoint

if TYPE_CHECKING:
    import openai

# HTTP statuses no retry can fix: a wrong key, a missing permission, a model or
# deployment that does not exist, a request the provider refuses. The openai
# client sends these once; the run stops at the first one.
FATAL_STATUSES = frozenset({400, 401, 403, 404})
# What the openai client retries: timeouts, conflicts, rate limits, server errors.
_RETRIED_STATUSES = frozenset({408, 409, 429})


class ProviderError(IncompleteError):
    """A provider refused a request in a way no retry can fix: the run stops (exit 3)."""


def is_fatal(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.APIStatusError) and exc.status_code in FATAL_STATUSES


def attempts_note(exc: BaseException, retries: int) -> str:
    """How often the request really went out: as `LLM._post` noted on the error, else as
    the openai client retries."""
    import openai

    noted = getattr(exc, "flipgate_retries", None)
    if noted is not None:
        return noted or "sent once"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retried = status in _RETRIED_STATUSES or status >= 500
    else:
        retried = isinstance(exc, openai.APIConnectionError)  # timeouts included
    if not retried or not retries:
        return "sent once"
    return f"after {retries} retr{'y' if retries == 1 else 'ies'}"


def provider_message(exc: BaseException) -> str:
    """The provider's own words: `error.message` of its JSON body, else the client's."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = found if isinstance(found := body.get("error"), dict) else body
        message = inner.get("message")
        if isinstance(message, str) and message.strip():
            return message.strip()
    return str(getattr(exc, "message", None) or exc).strip()


def describe_failure(exc: BaseException, *, endpoint: Endpoint, model: str, role: str,
                     retries: int) -> str:
    """One line with everything needed to fix a failed request: the HTTP status, the
    host (the URL when nothing answered), the model or deployment and the provider's
    message, with how often it was really sent. `role`: "judge model", "embeddings
    model", "candidate model", ..."""
    import openai

    what = f"{role} {model}"
    attempts = attempts_note(exc, retries)
    if isinstance(exc, openai.APITimeoutError):
        return f"{what}: no answer from {endpoint.base_url} in time ({attempts})"
    if isinstance(exc, openai.APIConnectionError):
        return f"{what}: could not connect to {endpoint.base_url} ({attempts})"
    if isinstance(exc, openai.APIStatusError):
        host = urlsplit(endpoint.base_url).netloc or endpoint.base_url
        return (f"HTTP {exc.status_code} from {host} for the {what} ({attempts}): "
                f"{provider_message(exc)}")
    return f"{what}: {type(exc).__name__}: {exc}"


def failure_of(exc: BaseException, *, endpoint: Endpoint, model: str, role: str,
               retries: int) -> IncompleteError:
    """The error that stops a run for a failed request: a `ProviderError` when no retry
    could help, else a plain `IncompleteError`."""
    text = describe_failure(exc, endpoint=endpoint, model=model, role=role, retries=retries)
    return ProviderError(text) if is_fatal(exc) else IncompleteError(text)


def is_transient(status: int) -> bool:
    """A status worth sending again (`max_retries` times): a timeout, a conflict, a server error."""
    return status >= 500 or status in (408, 409)


def backoff_seconds(failures: int) -> float:
    """Seconds to wait before the next try after `failures` transient failures (jittered)."""
    return min(0.5 * 2 ** (failures - 1), 8.0) * (0.75 + 0.25 * random.random())


def after_retries(failures: int) -> str:
    return f"after {failures} retr{'y' if failures == 1 else 'ies'}" if failures else ""


def explain(exc: BaseException, how: str) -> None:
    """Say on the error how hard it was tried, for the one-line account (`describe_failure`)."""
    exc.flipgate_retries = how  # type: ignore[attr-defined]


def is_api_error(exc: BaseException) -> TypeGuard[openai.OpenAIError]:
    """An error from the openai client (if the SDK was never imported, none can be)."""
    openai = sys.modules.get("openai")
    return openai is not None and isinstance(exc, openai.OpenAIError)
