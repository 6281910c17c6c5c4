"""Reading a judge's reply: strict, pure, and never a guess.

A reply that does not say exactly what the rubric asked for is a judge error,
never a score. The readers raise `JudgeReplyError` with a message fit for the
report; `flipgate.llm.client.LLM.chat(validate=...)` uses the same readers, so a
rejected reply is never cached.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from flipgate.text.escaping import snippet
from flipgate.model import Score, Statement, StatementLabel

SCORE_MIN, SCORE_MAX = 1, 5
_SNIPPET = 80
# Some OpenAI-compatible servers wrap JSON mode output in a Markdown fence.
_FENCE = re.compile(r"\A```(?:json)?\s*\n(.*)\n```\Z", re.DOTALL | re.IGNORECASE)


class JudgeReplyError(ValueError):
    """The judge answered, but not in the shape its rubric asked for."""


@dataclass(frozen=True)
class Questions:
    """The relevance judge's reading of an answer."""

    questions: tuple[str, ...]
    noncommittal: bool


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string {json.dumps(snippet(value, _SNIPPET))}"
    if isinstance(value, (list, dict)):
        return "array" if isinstance(value, list) else "object"
    return f"number {value!r}"


def _refuse_constant(name: str) -> float:
    raise JudgeReplyError(f"reply is not valid JSON: it contains {name}")


def read_object(content: str) -> dict[str, Any]:
    """The reply as a JSON object, or a JudgeReplyError saying why not."""
    text = (content or "").strip()
    if not text:
        raise JudgeReplyError("empty reply")
    if (fenced := _FENCE.match(text)) is not None:
        text = fenced.group(1).strip()
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except JudgeReplyError:
        raise
    except ValueError:
        raise JudgeReplyError(f"reply is not valid JSON: {json.dumps(snippet(text, _SNIPPET))}") from None
    if not isinstance(value, dict):
        raise JudgeReplyError(f"reply is a JSON {_type_name(value).split()[0]}, not an object")
    return value


def _check_status(reply: dict[str, Any]) -> None:
    if "status" not in reply:
        return
    status = reply["status"]
    if status == "skipped":
        reason = reply.get("reason")
        why = f": {snippet(reason, _SNIPPET)}" if isinstance(reason, str) and reason.strip() else ""
        raise JudgeReplyError(f"judge skipped the evaluation{why}")
    if status != "completed":
        raise JudgeReplyError(f"status must be \"completed\", got {_type_name(status)}")


def _check_score(reply: dict[str, Any]) -> int:
    if "score" not in reply:
        raise JudgeReplyError("reply has no score")
    score = reply["score"]
    # bool is an int in Python; a judge saying `true` has not given a level.
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise JudgeReplyError(f"score must be a whole number {SCORE_MIN}-{SCORE_MAX}, "
                              f"got {_type_name(score)}")
    if isinstance(score, float):
        if not math.isfinite(score) or not score.is_integer():
            raise JudgeReplyError(f"score must be a whole number {SCORE_MIN}-{SCORE_MAX}, got {score}")
        score = int(score)  # 4.0 names level 4 exactly
    if not SCORE_MIN <= score <= SCORE_MAX:
        raise JudgeReplyError(f"score {score} is outside {SCORE_MIN}-{SCORE_MAX}")
    return score


# What judges write before their reason proper ("Let's think step by step:"): it says
# nothing a reviewer needs, and starts every reason the same way.
_LEAD_IN = re.compile(
    r"^\s*(?:"
    r"(?:(?:let'?s|let us|we(?:'ll| will)?)\s+(?:think|go|reason|work)(?:\s+through\s+(?:it|this))?"
    r"\s+step[\s-]+by[\s-]+step|step[\s-]+by[\s-]+step(?:\s+(?:reasoning|analysis))?)"
    r"\s*[:.,\-–—]*"
    r"|(?:my\s+)?(?:reasoning|explanation|analysis|rationale|thoughts?|chain[\s-]+of[\s-]+thought)"
    r"\s*[:\-–—]+)\s*", re.IGNORECASE)


def strip_lead_in(reason: str) -> str:
    """A judge's reason without its boilerplate lead-in; the first letter is kept as written."""
    stripped = reason.strip()
    while (match := _LEAD_IN.match(stripped)) and match.end() < len(stripped):
        stripped = stripped[match.end():]
    return stripped


def _check_reason(reply: dict[str, Any]) -> str:
    reason = reply.get("reason")
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise JudgeReplyError(f"reason must be a string, got {_type_name(reason)}")
    return strip_lead_in(reason)


def read_score(content: str) -> Score:
    """A 1-5 rubric reply (groundedness or fluency): `{"reason", "score", "status"?}`.

    `status` is optional (the fluency rubric does not ask for it), but when
    present it must be "completed": "skipped" is a judge error, not a score.
    """
    reply = read_object(content)
    _check_status(reply)
    score = _check_score(reply)
    return Score(value=score, reason=_check_reason(reply))


def read_questions(content: str) -> Questions:
    """The relevance reply: `{"questions": [...], "noncommittal": bool}`."""
    reply = read_object(content)
    if "noncommittal" not in reply:
        raise JudgeReplyError("reply has no noncommittal flag")
    noncommittal = reply["noncommittal"]
    if not isinstance(noncommittal, bool):
        raise JudgeReplyError(f"noncommittal must be true or false, got {_type_name(noncommittal)}")
    if "questions" not in reply:
        raise JudgeReplyError("reply has no questions")
    questions = reply["questions"]
    if not isinstance(questions, list):
        raise JudgeReplyError(f"questions must be an array of strings, got {_type_name(questions)}")
    for index, question in enumerate(questions):
        if not isinstance(question, str) or not question.strip():
            raise JudgeReplyError(f"question {index + 1} must be a non-empty string, "
                                  f"got {_type_name(question)}")
    if not questions and not noncommittal:
        raise JudgeReplyError("reply has no questions for an answer it calls committal")
    return Questions(questions=tuple(q.strip() for q in questions), noncommittal=noncommittal)


_LABELS = tuple(label.value for label in StatementLabel)


def _flat(text: str) -> str:
    """Whitespace runs as one space: a statement copied across a line break is still verbatim."""
    return " ".join(text.split())


def read_statements(content: str, *, answer: str, context: str) -> tuple[Statement, ...]:
    """The statements reply, each statement checked against the answer it claims to quote.

    `{"statements": [{"text", "label", "span"}]}`. A `text` that is not in the
    answer (paraphrased, invented), or a `span` that is not in the context, makes
    the whole reply a judge error: a made-up quote is not evidence.
    """
    reply = read_object(content)
    if "statements" not in reply:
        raise JudgeReplyError("reply has no statements")
    items = reply["statements"]
    if not isinstance(items, list):
        raise JudgeReplyError(f"statements must be an array, got {_type_name(items)}")
    if not items and answer.strip():
        raise JudgeReplyError("reply lists no statements for a non-empty answer")
    flat_answer, flat_context = _flat(answer), _flat(context)
    statements = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise JudgeReplyError(f"statement {number} must be an object, got {_type_name(item)}")
        text, label, span = item.get("text"), item.get("label"), item.get("span")
        if not isinstance(text, str) or not text.strip():
            raise JudgeReplyError(f"statement {number} has no text")
        if label not in _LABELS:
            raise JudgeReplyError(f"statement {number} label must be one of {', '.join(_LABELS)}, "
                                  f"got {_type_name(label)}")
        if span is not None and not isinstance(span, str):
            raise JudgeReplyError(f"statement {number} span must be a string or null, got {_type_name(span)}")
        if _flat(text) not in flat_answer:
            raise JudgeReplyError(f"statement {number} is not in the answer (paraphrased or invented): "
                                  f"{json.dumps(snippet(text, _SNIPPET))}")
        span = span.strip() if span and span.strip() else None
        if span is not None and _flat(span) not in flat_context:
            raise JudgeReplyError(f"statement {number} quotes a span that is not in the context: "
                                  f"{json.dumps(snippet(span, _SNIPPET))}")
        statements.append(Statement(text=text.strip(), label=StatementLabel(label),
                                    span=None if label == StatementLabel.NOT_A_CLAIM.value else span))
    return tuple(statements)
