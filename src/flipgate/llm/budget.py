"""The run's spending cap: a request is sent only if its worst case still fits.

Before each send the LLM door reserves the request's worst case: its prompt
bounded from above (a token is at least one UTF-8 byte, so a text's byte
count never under-counts its tokens, plus a few tokens a message for the
chat format), every other field of the body the provider may bill as prompt
(`tools`, `functions`, `response_format` schemas, `user`, `stop`, any field
the endpoint lock lets through: its JSON, keys included, a token a byte),
plus the most it may generate (`max_tokens`,
`max_completion_tokens`, or `budget.completion_ceiling` when the request
sets neither). The reply's reported usage replaces the reservation; a reply
without usage, a timeout or a cancelled request is counted at its worst case.
So the tokens spent never pass `budget.max_tokens` by more than the
provider's own miscount, and no request is sent that could.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# What a request that sets no completion limit is assumed to be able to generate.
from flipgate.config.schema import DEFAULT_COMPLETION_CEILING
from flipgate.errors import IncompleteError

# Chat format tokens around each message and before the reply (role markers and the like).
MESSAGE_OVERHEAD = 8
REPLY_OVERHEAD = 8


class BudgetExceeded(IncompleteError):
    pass


def _text_bytes(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, Mapping):
        return sum(_text_bytes(v) for v in value.values())
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return sum(_text_bytes(v) for v in value)
    return len(str(value).encode("utf-8")) if value is not None else 0


def _field_bytes(body: Mapping[str, Any]) -> int:
    """The JSON bytes of every field beside `messages` that can carry text: a schema's
    property names are billed too, so keys count. A number or a flag carries none."""
    billed = {name: value for name, value in body.items()
              if name != "messages" and not isinstance(value, (int, float, bool, type(None)))}
    if not billed:
        return 0
    return len(json.dumps(billed, ensure_ascii=False, separators=(",", ":"),
                          default=str).encode("utf-8"))


def chat_worst_case(body: Mapping[str, Any], *, completion_ceiling: int = DEFAULT_COMPLETION_CEILING) -> int:
    """An upper bound on the tokens one chat completion request can cost."""
    messages = body.get("messages") or ()
    prompt = (sum(_text_bytes(message) + MESSAGE_OVERHEAD for message in messages)
              + _field_bytes(body) + REPLY_OVERHEAD)
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    completion = limit if isinstance(limit, int) and limit > 0 else completion_ceiling
    n = body.get("n")
    choices = n if isinstance(n, int) and n > 1 else 1
    return prompt + completion * choices


def embedding_worst_case(texts: Sequence[str]) -> int:
    """An upper bound on the tokens one embeddings request can cost."""
    return sum(len(text.encode("utf-8")) + 1 for text in texts)


@dataclass
class Budget:
    """Requests and tokens: spent (replied or cancelled), reserved (in flight), refused."""

    max_requests: int | None = None
    max_tokens: int | None = None
    completion_ceiling: int = DEFAULT_COMPLETION_CEILING
    requests: int = 0  # sent and counted
    tokens: int = 0  # spent
    reserved_requests: int = 0
    reserved_tokens: int = 0
    refused_requests: int = 0
    refused_tokens: int = 0  # the worst cases of the refused requests

    def reserve(self, worst_case: int = 0) -> None:
        """Hold room for one request costing at most `worst_case` tokens, or refuse it."""
        if self.max_requests is not None and self.requests + self.reserved_requests >= self.max_requests:
            self._refuse(worst_case, f"budget.max_requests ({self.max_requests}) reached after "
                                     f"{self.requests} requests and {self.tokens} tokens")
        if self.max_tokens is not None and self.tokens + self.reserved_tokens + worst_case > self.max_tokens:
            left = max(0, self.max_tokens - self.tokens - self.reserved_tokens)
            self._refuse(worst_case, f"budget.max_tokens ({self.max_tokens}): a request that may cost "
                                     f"up to {worst_case} tokens does not fit in the {left} left "
                                     f"({self.tokens} spent, {self.reserved_tokens} reserved by "
                                     f"requests in flight)")
        self.reserved_requests += 1
        self.reserved_tokens += worst_case

    def _refuse(self, worst_case: int, why: str) -> None:
        self.refused_requests += 1
        self.refused_tokens += worst_case
        raise BudgetExceeded(f"{why}; refused it, nothing more is sent")

    def settle(self, worst_case: int, *, spent: int | None) -> None:
        """The request came back (or was cut off): count `spent`, or its worst case when unknown."""
        self._unreserve(worst_case)
        self.requests += 1
        self.tokens += worst_case if spent is None else spent

    def cancel(self, worst_case: int) -> None:
        """The request was refused before any work (a 429): nothing was spent."""
        self._unreserve(worst_case)

    def _unreserve(self, worst_case: int) -> None:
        self.reserved_requests -= 1
        self.reserved_tokens -= worst_case

    # Kept for callers that cannot see a request's size (a third-party evaluator).
    def reserve_request(self) -> None:
        self.reserve(0)
        self._unreserve(0)
        self.requests += 1

    def spend_tokens(self, tokens: int) -> None:
        self.tokens += tokens

    def stats(self) -> dict[str, int | None]:
        return {"max_requests": self.max_requests, "max_tokens": self.max_tokens,
                "spent_requests": self.requests, "spent_tokens": self.tokens,
                "reserved_tokens": self.reserved_tokens, "refused_requests": self.refused_requests,
                "refused_tokens": self.refused_tokens}
