"""The LLM judge on the wire: groundedness, relevance and fluency over `flipgate.llm.client.LLM`.

Every request is a chat completion in JSON mode to the pinned judge model,
with the inputs verbatim in the messages (prompts.py). A reply that breaks
its rubric's shape is asked again once, with the very same request (the
`LLM` never caches a rejected reply, so the second ask reaches the server);
if it is still bad, or the API fails after the LLM door's retries, the
row gets a judge error. Nothing here raises for one row's failure, except
`flipgate.llm.client.BudgetExceeded`, which stops the run.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from flipgate.config.schema import DEFAULT_QUESTIONS
from flipgate.judges import prompts
from flipgate.judges.base import EMPTY_ANSWER, RUBRIC_VERSION
from flipgate.judges.replies import (
    JudgeReplyError,
    Questions,
    describe_bad_reply,
    read_questions,
    read_score,
    read_statements,
)
from flipgate.llm.client import LLM
from flipgate.llm.failures import is_api_error
from flipgate.llm.workpool import map_bounded, pool_size
from flipgate.model import Case, JudgeInfo, Relevance, Score, Statements

if TYPE_CHECKING:
    import openai

T = TypeVar("T")

# Judge replies are one short JSON object. Reasoning models spend hidden
# reasoning tokens out of the same allowance, so they get more room.
MAX_TOKENS = 800
# A statement list quotes the whole answer back, with spans of the context.
STATEMENTS_MAX_TOKENS = 4000
REASONING_MAX_COMPLETION_TOKENS = 4000
# A reasoning model spends some tokens before it can say anything at all.
PROBE_MAX_TOKENS = 16


class JudgeFailure(Exception):
    """One judgement could not be obtained; the message goes into the report."""


def describe_api_error(exc: openai.OpenAIError, *, retries: int | None) -> str:
    """A one-line account of an API failure, with how often it was really sent
    (`retries=None`: a caller that retries on its own and says so itself)."""
    import openai

    from flipgate.llm.failures import attempts_note, provider_message

    attempts = "" if retries is None else f" ({attempts_note(exc, retries)})"
    if isinstance(exc, openai.APITimeoutError):
        return f"request timed out{attempts}"
    if isinstance(exc, openai.APIConnectionError):
        return f"could not connect{attempts}: {exc}"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}{attempts}: {provider_message(exc)}"
    return f"{type(exc).__name__}: {exc}"


def mean_cosine(questions: Sequence[Sequence[float]], query: Sequence[float]) -> float:
    """The mean cosine similarity of each question vector to the query vector."""
    def cosine(a: Sequence[float], b: Sequence[float]) -> float:
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
        return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0

    return sum(cosine(q, query) for q in questions) / len(questions) if questions else 0.0


def _batches(groups: Iterable[list[int]], *, cost: Callable[[int], int], size: int) -> Iterator[list[int]]:
    """Whole groups into batches of at most `size` texts (a group larger than that goes alone)."""
    batch: list[int] = []
    used = 0
    for group in groups:
        need = sum(cost(index) for index in group)
        if batch and used + need > size:
            yield batch
            batch, used = [], 0
        batch.extend(group)
        used += need
    if batch:
        yield batch


class OpenAIJudge:
    """The `Judge` protocol on an OpenAI-compatible chat completions API."""

    def __init__(self, llm: LLM, *, info: JudgeInfo, reasoning: bool = False,
                 questions: int = DEFAULT_QUESTIONS, seed: int | None = None):
        if not info.embedding_model:
            raise ValueError("the judge needs an embedding model for relevance")
        self.llm = llm
        self._info = info
        self.reasoning = reasoning
        self.questions = questions
        self.seed = seed
        # What the provider said it ran (model version, system fingerprint), in order seen.
        self._returned_models: dict[str, None] = {}
        self._fingerprints: dict[str, None] = {}

    @property
    def info(self) -> JudgeInfo:
        """The instrument as configured, plus what the provider returned so far."""
        return dataclasses.replace(self._info, returned_models=tuple(self._returned_models),
                                   system_fingerprints=tuple(self._fingerprints))

    # -- the protocol

    async def groundedness(self, case: Case, response: str, *, sample: int = 0) -> Score:
        if not response.strip():
            return EMPTY_ANSWER  # never send a judge nothing to grade
        messages = prompts.groundedness_messages(query=case.query, context=case.context,
                                                 response=response, mode=self._info.mode)
        return await self._score("groundedness", messages, sample=sample)

    async def statements(self, case: Case, response: str) -> Statements:
        """The answer split into atomic statements, each checked against the context."""
        if not response.strip():
            return Statements()
        messages = prompts.statements_messages(context=case.context, response=response)

        def read(content: str) -> Statements:
            return Statements(items=read_statements(content, answer=response, context=case.context))

        try:
            return await self._ask("statements", messages, read=read, sample=0,
                                   max_tokens=STATEMENTS_MAX_TOKENS)
        except JudgeFailure as exc:
            return Statements(error=str(exc))

    async def fluency(self, response: str) -> Score:
        if not response.strip():
            return Score.failed("fluency: empty answer, nothing to rate (no judge was asked)")
        return await self._score("fluency", prompts.fluency_messages(response=response), sample=0)

    async def relevance(self, items: Sequence[tuple[Case, str]]) -> list[Relevance]:
        """One questions call per distinct answer, then batched embeddings.

        A batch holds whole cases (both answers' questions and their query) up
        to the provider's input limit, so a small run is one request, and each
        batch's vectors are reduced to its items' scores as soon as it returns:
        no run holds more vectors than one batch per request in flight.
        """
        workers = pool_size(self.llm.limiter.limit)
        answers = list(dict.fromkeys(response for _, response in items if response.strip()))
        replies = await map_bounded(self._questions_for, answers, workers=workers)
        readings: dict[str, Questions | str] = dict(zip(answers, replies, strict=True))

        results: list[Relevance | None] = [None] * len(items)
        embedded: dict[str, list[int]] = {}  # case id -> its items that need vectors
        for index, (case, response) in enumerate(items):
            reading = readings.get(response)
            if isinstance(reading, Questions) and not reading.noncommittal and case.query.strip():
                embedded.setdefault(case.id, []).append(index)
            else:
                results[index] = self._relevance_of(case, response, reading, {}, None)

        def texts_of(index: int) -> tuple[str, ...]:
            case, response = items[index]
            reading = readings[response]
            assert isinstance(reading, Questions)
            return (*reading.questions, case.query)

        async def one_batch(batch: list[int]) -> None:
            texts = list(dict.fromkeys(text for index in batch for text in texts_of(index)))
            vectors, error = await self._embed(texts)
            for index in batch:
                case, response = items[index]
                results[index] = self._relevance_of(case, response, readings[response], vectors, error)

        batches = _batches(embedded.values(), cost=lambda index: len(texts_of(index)),
                           size=self.llm.embedding_batch)
        await map_bounded(one_batch, batches, workers=workers)
        return [result for result in results if result is not None]

    async def _embed(self, texts: list[str]) -> tuple[dict[str, list[float]], str | None]:
        try:
            vectors = await self.llm.embed(model=self._info.embedding_model or "", texts=texts)
        except Exception as exc:  # noqa: BLE001 - API errors become the batch's error
            if not is_api_error(exc):
                if isinstance(exc, ValueError):  # the provider returned the wrong number of vectors
                    return {}, f"relevance embeddings: {exc}"
                raise
            self._stop_if_fatal(exc, model=self.info.embedding_model or "", role="embeddings model")
            retries = getattr(self.llm.client, "max_retries", 0)
            return {}, f"relevance embeddings: {describe_api_error(exc, retries=retries)}"
        return dict(zip(texts, vectors, strict=True)), None

    async def probe(self) -> None:
        """One tiny request to the judge model and one to the embeddings model."""
        params = self._params()
        params.pop("max_tokens", None)
        params.pop("max_completion_tokens", None)
        params["max_completion_tokens" if self.reasoning else "max_tokens"] = PROBE_MAX_TOKENS
        await self.llm.probe(model=self.info.model, params=params, role="judge model",
                             embedding_model=self.info.embedding_model)

    async def aclose(self) -> None:
        await self.llm.client.close()

    def _stop_if_fatal(self, exc: BaseException, *, model: str, role: str) -> None:
        """A refusal no retry can fix (401, 403, 404, 400) stops the whole run at once."""
        from flipgate.llm.failures import failure_of, is_fatal

        if is_fatal(exc):
            raise failure_of(exc, endpoint=self.llm.endpoint, model=model, role=role,
                             retries=self.llm.retry.max_retries) from None

    # -- the parts

    def _params(self, max_tokens: int = MAX_TOKENS) -> dict[str, Any]:
        params: dict[str, Any] = {"response_format": {"type": "json_object"}}
        if self.reasoning:
            # Reasoning models refuse `temperature` and `max_tokens`.
            params["max_completion_tokens"] = max(REASONING_MAX_COMPLETION_TOKENS, max_tokens)
        else:
            params.update(temperature=0, max_tokens=max_tokens)
        if self.seed is not None:
            params["seed"] = self.seed
        return params

    async def _ask(self, metric: str, messages: list[dict[str, str]], *,
                   read: Callable[[str], T], sample: int, max_tokens: int = MAX_TOKENS) -> T:
        """Ask once; a reply that breaks the rubric is asked again, exactly once."""
        # The rubric's version and the hash of its text are part of the key: a
        # verdict cached under another rubric is never reused.
        tag = {"rubric": RUBRIC_VERSION, "rubric_hash": prompts.text_hash(messages[0]["content"]),
               "metric": metric, "sample": sample, "mode": self._info.mode,
               "sdk": dict(self._info.sdk) if self._info.sdk is not None else None}
        problem, content = "", ""
        for _attempt in range(2):
            try:
                completion = await self.llm.chat(model=self._info.model, messages=messages,
                                                 params=self._params(max_tokens), cache_tag=tag,
                                                 validate=read)
            except Exception as exc:
                if not is_api_error(exc):
                    raise
                self._stop_if_fatal(exc, model=self.info.model, role="judge model")
                retries = getattr(self.llm.client, "max_retries", 0)
                raise JudgeFailure(f"{metric} judge: {describe_api_error(exc, retries=retries)}") \
                    from exc
            if completion.model:
                self._returned_models[completion.model] = None
            if completion.system_fingerprint:
                self._fingerprints[completion.system_fingerprint] = None
            content = completion.content
            try:
                return read(content)
            except JudgeReplyError as exc:
                problem = str(exc)
                if completion.finish_reason == "length":
                    problem += " (the reply was cut off at the token limit)"
        raise JudgeFailure(f"{metric} judge answered nonsense twice: "
                           f"{describe_bad_reply(problem, content, model=self._info.model)}")

    async def _score(self, metric: str, messages: list[dict[str, str]], *, sample: int) -> Score:
        try:
            return await self._ask(metric, messages, read=read_score, sample=sample)
        except JudgeFailure as exc:
            return Score.failed(str(exc))

    async def _questions_for(self, response: str) -> Questions | str:
        messages = prompts.relevance_messages(response=response, count=self.questions)
        try:
            return await self._ask("relevance", messages, read=read_questions, sample=0)
        except JudgeFailure as exc:
            return str(exc)

    @staticmethod
    def _relevance_of(case: Case, response: str, reading: Questions | str | None,
                      vectors: dict[str, list[float]], embedding_error: str | None) -> Relevance:
        if not response.strip():
            return Relevance(score=0.0, noncommittal=True)  # answers nothing at all
        if isinstance(reading, str) or reading is None:
            return Relevance(score=None, error=reading or "relevance judge was not asked")
        if reading.noncommittal:
            return Relevance(score=0.0, questions=reading.questions, noncommittal=True)
        if not case.query.strip():
            return Relevance(score=None, questions=reading.questions,
                             error="relevance: the case has an empty query")
        if embedding_error is not None:
            return Relevance(score=None, questions=reading.questions, error=embedding_error)
        score = mean_cosine([vectors[q] for q in reading.questions], vectors[case.query])
        return Relevance(score=score, questions=reading.questions)
