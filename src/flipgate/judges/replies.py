"""Reading a judge's reply: strict, pure, and never a guess.

One reader serves both engines (the openai judge and azure-ai-evaluation), under
the contract's "Judge replies" rule. A reply is read when it says one score
unambiguously, in one of the shapes real models send:

- the JSON object the rubric asked for, alone, inside a ```json fence, or after
  some prose;
- azure-ai-evaluation's tags, `<S0>thoughts</S0><S1>reason</S1><S2>score</S2>`;
- one integer 1-5 and nothing else (what promptflow-evals' prompts ask for).

Everything else is a `JudgeReplyError`, never a score: two scores that differ
(duplicate JSON keys, two `<S2>` tags, prose beside the object naming another
score), a score outside 1-5, a fraction, a string or a boolean where a number
belongs. Numbers are read exactly, as decimals of their literal text and never through
a binary float: `4.0` and `3e0` name a level, `2.99999999999999999` is a fraction
however close to 3, and so a judge error. `flipgate.llm.client.LLM.chat(validate=...)` uses the same readers, so a
rejected reply is never cached.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from flipgate.model import Score, Statement, StatementLabel
from flipgate.text.escaping import snippet

SCORE_MIN, SCORE_MAX = 1, 5
_SNIPPET = 80
QUOTE_LIMIT = 200  # at most this much of an unreadable reply goes into the judge error
# A reply that is one Markdown fence, ```json or bare.
_FENCE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n(.*?)\n?```\Z", re.DOTALL | re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_TAG = re.compile(r"<(/?)S([0-9]+)>", re.IGNORECASE)
# Prose beside a score that names a score of its own: "score: 2", "rating is 4",
# "4/5", "4 out of 5", "I'd give it a 3", a "score" key. Any such number that is not the
# reply's score makes the reply ambiguous.
_CLAIMS = (
    re.compile(r"\b(?:score|rating|rated|grade|level)s?\b[^0-9\n<>{}]{0,24}?(" + _NUMBER.pattern + r")",
               re.IGNORECASE),
    re.compile(r"(" + _NUMBER.pattern + r")\s*(?:/|out\s+of)\s*(?:5|10|100)\b", re.IGNORECASE),
    re.compile(r"\bgive\s+(?:it|this|the\s+\w+)\s+an?\s+(" + _NUMBER.pattern + r")", re.IGNORECASE),
)


class JudgeReplyError(ValueError):
    """The judge answered, but not in the shape its rubric asked for."""


def describe_bad_reply(problem: str, content: str | None, *, model: str) -> str:
    """A judge error for an unreadable reply: what was wrong, the model, and at most
    `QUOTE_LIMIT` characters of what it said (escaped downstream like any judge text)."""
    quote = json.dumps((content or "")[:QUOTE_LIMIT], ensure_ascii=False)
    cut = " (cut)" if content and len(content) > QUOTE_LIMIT else ""
    return f"{problem} (model {model}; reply {quote}{cut})"


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
    return f"number {value}"


def _refuse_constant(name: str) -> float:
    raise JudgeReplyError(f"reply is not valid JSON: it contains {name}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`object_pairs_hook`: a key said twice may say two different things, so neither counts."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            same = "" if seen[key] == value else f" with different values ({_type_name(seen[key])}, " \
                                                  f"{_type_name(value)})"
            raise JudgeReplyError(f"reply has the key {json.dumps(key)} twice{same}")
        seen[key] = value
    return seen


def _decode(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys,
                      parse_float=Decimal)


@dataclass(frozen=True)
class _Located:
    """A JSON object found in a reply, and the prose around it."""

    value: dict[str, Any]
    prose: str


def _locate_object(text: str) -> _Located:
    """The reply's JSON object: the whole reply, one fence, or prose then the object
    (fenced or not) ending the reply. Text after the object is refused."""
    if (fenced := _FENCE.match(text)) is not None:
        text = fenced.group(1).strip()
    if not text.startswith("{"):
        try:
            value = _decode(text)
        except JudgeReplyError:
            raise
        except ValueError:
            pass  # prose, perhaps with an object after it
        else:
            raise JudgeReplyError(f"reply is a JSON {_type_name(value).split()[0]}, not an object")
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_refuse_constant,
                               parse_float=Decimal)
    starts = re.finditer(r"^[ \t]*(```[ \t]*(?:json)?[ \t]*\n[ \t]*)?\{", text, re.MULTILINE | re.IGNORECASE)
    for match in starts:
        start = match.end() - 1
        try:
            value, end = decoder.raw_decode(text, start)
        except JudgeReplyError:
            raise
        except ValueError:
            if start == 0:
                break  # a broken object, not prose
            continue
        rest = text[end:].strip()
        if match.group(1) and rest.startswith("```"):
            rest = rest[3:].strip()  # the fence the object opened in
        if rest:
            raise JudgeReplyError("reply has text after its JSON object: "
                                  f"{json.dumps(snippet(rest, _SNIPPET))}")
        return _Located(value, text[:match.start()])
    raise JudgeReplyError("reply is not valid JSON")


def read_object(content: str) -> dict[str, Any]:
    """The reply as a JSON object, or a JudgeReplyError saying why not.

    Prose before the object may not name a score: an object that carries no score
    (relevance, statements) has no score for prose to agree with."""
    located = _locate_object(_text_of(content))
    _check_prose(located.prose, score=None)
    return located.value


def _text_of(content: str) -> str:
    text = (content or "").strip()
    if not text:
        raise JudgeReplyError("empty reply")
    return text


def _check_prose(prose: str, *, score: int | None) -> None:
    """Prose beside a score must not name a different one."""
    for pattern in _CLAIMS:
        for claim in pattern.finditer(prose):
            number = claim.group(1)
            said = json.dumps(snippet(claim.group(0), _SNIPPET))
            if score is None:
                raise JudgeReplyError(f"reply names a score ({said}) beside an object that has none")
            if Decimal(number) != score:
                raise JudgeReplyError(f"reply names two scores: {said} beside the score {score}")
    if "{" in prose and re.search(r'"score"\s*:', prose):
        raise JudgeReplyError("reply has a second score, a JSON \"score\", beside its own")
    if _TAG.search(prose):
        raise JudgeReplyError("reply mixes <S0>/<S1>/<S2> tags with a JSON object")


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
    if isinstance(score, bool) or not isinstance(score, (int, Decimal)):
        raise JudgeReplyError(f"score must be a whole number {SCORE_MIN}-{SCORE_MAX}, "
                              f"got {_type_name(score)}")
    return _level(Decimal(score), where="score")


def _is_whole(number: Decimal) -> bool:
    """Exactly an integer, read from the digits themselves (no rounding to any precision):
    `4.0`, `3e0` and `30e-1` are, `2.99999999999999999` and `3.0000000000000001` are not."""
    _, digits, exponent = number.as_tuple()
    if not isinstance(exponent, int):
        return False  # NaN or infinity: the JSON reader refuses them before this
    return exponent >= 0 or not any(digits[exponent:])


def _level(number: Decimal, *, where: str) -> int:
    """A whole number 1-5, compared exactly; any fraction is a judge error."""
    if not _is_whole(number):
        raise JudgeReplyError(f"{where} must be a whole number {SCORE_MIN}-{SCORE_MAX}, got {number}")
    if not SCORE_MIN <= number <= SCORE_MAX:
        shown = int(number) if abs(number) < 10**6 else number
        raise JudgeReplyError(f"score {shown} is outside {SCORE_MIN}-{SCORE_MAX}")
    return int(number)


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


def _whole_level(text: str, *, where: str) -> int:
    """A score written as text (a bare reply, an <S2> tag): an integer 1-5, nothing else."""
    if _NUMBER.fullmatch(text) is None:
        raise JudgeReplyError(f"{where} must be a whole number {SCORE_MIN}-{SCORE_MAX}, "
                              f"got {json.dumps(snippet(text, _SNIPPET))}")
    return _level(Decimal(text), where=where)  # "4.0" names level 4 exactly, as JSON's 4.0 does


def _read_tags(text: str) -> Score:
    """azure-ai-evaluation's tagged reply: <S0>thoughts</S0> <S1>reason</S1> <S2>score</S2>.

    Each tag at most once and closed; the score tag exactly once; the text outside
    the tags may not name another score."""
    spans: dict[str, str] = {}
    outside = []
    position = 0
    for opening in _TAG.finditer(text):
        if opening.start() < position:
            continue  # the closing tag of the span just read
        if opening.group(1):
            raise JudgeReplyError(f"reply closes <S{opening.group(2)}> that it never opened")
        number = opening.group(2)
        closing = re.compile(rf"</S{number}>", re.IGNORECASE).search(text, opening.end())
        if closing is None:
            raise JudgeReplyError(f"reply opens <S{number}> and never closes it")
        body = text[opening.end():closing.start()]
        if _TAG.search(body):
            raise JudgeReplyError(f"reply nests a tag inside <S{number}>")
        if number in spans:
            what = "two scores" if number == "2" else "a tag twice"
            raise JudgeReplyError(f"reply has {what}: <S{number}> appears twice")
        spans[number] = body.strip()
        outside.append(text[position:opening.start()])
        position = closing.end()
    outside.append(text[position:])
    if "2" not in spans:
        raise JudgeReplyError("reply has <S0>/<S1> tags but no <S2> score")
    score = _whole_level(spans["2"], where="the <S2> score")
    _check_prose("\n".join(outside), score=score)
    return Score(value=score, reason=strip_lead_in(spans.get("1") or spans.get("0") or ""))


def read_score(content: str) -> Score:
    """A 1-5 rubric reply (groundedness or fluency), in any shape the rule reads.

    The JSON object is `{"reason", "score", "status"?}`. `status` is optional (the
    fluency rubric does not ask for it), but when present it must be "completed":
    "skipped" is a judge error, not a score.
    """
    text = _text_of(content)
    if _NUMBER.fullmatch(text) is not None:
        return Score(value=_whole_level(text, where="score"), reason="")
    if _TAG.search(text) and not text.startswith(("{", "```")):
        return _read_tags(text)
    located = _locate_object(text)
    reply = located.value
    _check_status(reply)
    score = _check_score(reply)
    _check_prose(located.prose, score=score)
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
