"""The contract's "Judge replies" rule, as tables: what reads as a score, and what is a
judge error instead. Both engines use these readers (tests/integration covers the wire)."""

from __future__ import annotations

import pytest

from flipgate.judges.replies import (
    QUOTE_LIMIT,
    JudgeReplyError,
    Questions,
    describe_bad_reply,
    read_object,
    read_questions,
    read_score,
)
from flipgate.model import Score

THOUGHTS = "<S0>Let's think step by step: the fee is in the context.</S0>"


# -- a reply is read when it says one score unambiguously ---------------------------

@pytest.mark.parametrize("content, expected", [
    # the JSON object asked for
    ('{"reason": "all backed", "score": 5, "status": "completed"}', Score(5, "all backed")),
    ('{"score": 1, "status": "completed"}', Score(1, "")),
    ('{"reason": " padded ", "score": 3}', Score(3, "padded")),          # fluency: no status
    ('{"reason": null, "score": 2}', Score(2, "")),
    ('{"score": 4.0, "reason": "r"}', Score(4, "r")),                    # a float naming a level exactly
    ('  \n{"score": 4}\n', Score(4, "")),
    ('{"score": 5, "reason": "r", "extra": [1, 2]}', Score(5, "r")),     # extra keys are harmless
    # ... inside a ```json fence
    ('```json\n{"score": 4, "reason": "fenced"}\n```', Score(4, "fenced")),
    ('```\n{"score": 4, "reason": "bare fence"}\n```', Score(4, "bare fence")),
    ('```JSON\n{"score": 2}```', Score(2, "")),
    # ... after a line of prose
    ('Here is my evaluation:\n{"score": 3, "reason": "vague"}', Score(3, "vague")),
    ('Sure.\n\n```json\n{"score": 5, "reason": "ok"}\n```', Score(5, "ok")),
    ('The response matches the context, a score of 4.\n{"score": 4, "reason": "r"}', Score(4, "r")),
    # the <S0>/<S1>/<S2> tags of azure-ai-evaluation's prompts
    (f"{THOUGHTS}\n<S1>Fully grounded.</S1>\n<S2>5</S2>", Score(5, "Fully grounded.")),
    (f"{THOUGHTS}<S1>Adds a fee.</S1><S2> 2 </S2>", Score(2, "Adds a fee.")),
    (f"{THOUGHTS}\n<S2>3</S2>", Score(3, "the fee is in the context.")),  # no <S1>: the thoughts
    ("<S2>4</S2>", Score(4, "")),
    # one integer 1-5 and nothing else
    ("5", Score(5, "")),
    (" 1\n", Score(1, "")),
    ("4.0", Score(4, "")),
])
def test_one_unambiguous_score_is_read(content: str, expected: Score) -> None:
    assert read_score(content) == expected


# -- these are judge errors, never a score -------------------------------------------

@pytest.mark.parametrize("content, message", [
    # two scores that differ: duplicate JSON keys
    ('{"score": 2, "reason": "adds a fee", "score": 5}', 'the key "score" twice with different values'),
    ('{"score": 4, "score": 4}', 'the key "score" twice'),
    ('{"status": "skipped", "status": "completed", "score": 4}', 'the key "status" twice'),
    ('{"score": 4, "reason": {"why": 1, "why": 2}}', 'the key "why" twice'),
    ('```json\n{"score": 2, "score": 5}\n```', 'the key "score" twice'),
    # ... two tags
    (f"{THOUGHTS}<S1>r</S1><S2>5</S2><S2>2</S2>", "two scores: <S2> appears twice"),
    (f"{THOUGHTS}<S1>r</S1><S1>s</S1><S2>5</S2>", "<S1> appears twice"),
    # ... a JSON object beside another number that names a score
    ('Score: 2\n{"score": 5, "reason": "r"}', 'two scores: "Score: 2" beside the score 5'),
    ('I would rate this 3/5.\n{"score": 4}', "two scores"),
    ('My rating is 1.\n```json\n{"score": 5}\n```', "two scores"),
    ('{"score": 4}\nActually the score is 2.', "text after its JSON object"),
    ('{"score": 4}\n{"score": 2}', "text after its JSON object"),
    (f"{THOUGHTS}<S1>r</S1><S2>4</S2>\nFinal score: 2", 'two scores: "score: 2" beside the score 4'),
    (f'{THOUGHTS}<S1>r</S1><S2>4</S2>\n{{"score": 2}}', "two scores"),
    (f'{THOUGHTS}<S1>r</S1><S2>4</S2>\n{{"score": 4}}', "a second score, a JSON"),
    # a score outside 1-5
    ('{"score": 0}', "score 0 is outside 1-5"),
    ('{"score": 6}', "score 6 is outside 1-5"),
    ('{"score": -3}', "score -3 is outside 1-5"),
    ('{"score": 10.0}', "score 10 is outside 1-5"),
    ("7", "score 7 is outside 1-5"),
    ("0", "score 0 is outside 1-5"),
    (f"{THOUGHTS}<S2>9</S2>", "score 9 is outside 1-5"),
    # a fraction
    ('{"score": 4.5}', "must be a whole number 1-5, got 4.5"),
    ("3.5", "must be a whole number 1-5, got 3.5"),
    (f"{THOUGHTS}<S2>4.5</S2>", "must be a whole number 1-5, got 4.5"),
    ('{"score": 1e400}', "score 1E+400 is outside 1-5"),   # read exactly, never infinity
    # a string or a boolean where a number belongs (both engines: the SDK alone took "2" as 2)
    ('{"score": "4"}', 'got string "4"'),
    ('{"score": "2", "reason": "r", "status": "completed"}', 'got string "2"'),
    ('{"score": true}', "got boolean true"),
    ('{"score": false}', "got boolean false"),
    (f"{THOUGHTS}<S2>five</S2>", 'got "five"'),
    (f"{THOUGHTS}<S2>4/5</S2>", 'got "4/5"'),
    # not a shape the rule reads
    ("", "empty reply"),
    ("   ", "empty reply"),
    ("The score is 5.", "reply is not valid JSON"),
    ("5 - fully grounded", "reply is not valid JSON"),
    ("# Result\n5", "reply is not valid JSON"),
    ('{"score": 5', "reply is not valid JSON"),
    ("```\nnot json\n```", "reply is not valid JSON"),
    ('[{"score": 5}]', "reply is a JSON array, not an object"),
    ('"5"', "reply is a JSON string, not an object"),
    ("null", "reply is a JSON null, not an object"),
    ("<S0>thinking</S0><S1>r</S1>", "no <S2> score"),
    ("<S0>thinking<S2>4</S2>", "never closes"),
    ("</S2>4", "never opened"),
    ('{"reason": "fine"}', "reply has no score"),
    ('{"score": null, "status": "completed"}', "got null"),
    ('{"score": NaN}', "it contains NaN"),
    ('{"score": Infinity}', "it contains Infinity"),
    ('{"score": [4]}', "got array"),
    ('{"score": {"value": 4}}', "got object"),
    ('{"score": null, "status": "skipped", "reason": "no context given"}',
     "judge skipped the evaluation: no context given"),
    ('{"score": 5, "status": "skipped"}', "judge skipped the evaluation"),  # skipped beats a score
    ('{"score": 5, "status": "done"}', 'status must be "completed", got string "done"'),
    ('{"score": 5, "status": null}', 'status must be "completed", got null'),
    ('{"score": 5, "reason": 42}', "reason must be a string, got number 42"),
])
def test_anything_else_is_a_judge_error(content: str, message: str) -> None:
    with pytest.raises(JudgeReplyError) as caught:
        read_score(content)
    assert message in str(caught.value)


def test_long_garbage_is_described_short() -> None:
    with pytest.raises(JudgeReplyError) as caught:
        read_score("x" * 5000)
    assert len(str(caught.value)) < 120


def test_an_unreadable_reply_names_the_model_and_quotes_at_most_200_characters() -> None:
    reply = "Well... " + "the answer seems fine " * 40
    text = describe_bad_reply("reply is not valid JSON", reply, model="gpt-4o-2024-08-06")
    assert text.startswith("reply is not valid JSON (model gpt-4o-2024-08-06; reply \"Well... the answer")
    assert text.endswith('" (cut))')
    quoted = text.split('reply "', 1)[1].rsplit('" (cut)', 1)[0]
    assert len(quoted) == QUOTE_LIMIT
    assert describe_bad_reply("empty reply", "", model="m") == 'empty reply (model m; reply "")'


# -- the same rule for relevance and statements replies -------------------------------

@pytest.mark.parametrize("content, expected", [
    ('{"questions": ["What is the fee?", " When is it charged? "], "noncommittal": false}',
     Questions(("What is the fee?", "When is it charged?"), False)),
    ('{"questions": ["Anything?"], "noncommittal": true}', Questions(("Anything?",), True)),
    ('{"questions": [], "noncommittal": true}', Questions((), True)),
    ('```json\n{"questions": ["q?"], "noncommittal": false}\n```', Questions(("q?",), False)),
    ('Here are the questions:\n{"questions": ["q?"], "noncommittal": false}', Questions(("q?",), False)),
])
def test_well_formed_questions_are_read(content: str, expected: Questions) -> None:
    assert read_questions(content) == expected


@pytest.mark.parametrize("content, message", [
    ("", "empty reply"),
    ("questions: a, b", "reply is not valid JSON"),
    ("4", "reply is a JSON number, not an object"),
    ("<S0>a</S0><S1>b</S1><S2>4</S2>", "reply is not valid JSON"),
    ('["q?"]', "reply is a JSON array, not an object"),
    ('{"questions": ["a?"], "noncommittal": false, "noncommittal": true}', 'the key "noncommittal" twice'),
    ('{"questions": ["a?"], "questions": ["b?"], "noncommittal": false}', 'the key "questions" twice'),
    ('Score: 4\n{"questions": ["q?"], "noncommittal": false}',
     "names a score (\"Score: 4\") beside an object that has none"),
    ('{"questions": ["q?"]}', "reply has no noncommittal flag"),
    ('{"noncommittal": false}', "reply has no questions"),
    ('{"questions": ["q?"], "noncommittal": "false"}', 'noncommittal must be true or false, got string'),
    ('{"questions": ["q?"], "noncommittal": 0}', "noncommittal must be true or false, got number 0"),
    ('{"questions": ["q?"], "noncommittal": null}', "noncommittal must be true or false, got null"),
    ('{"questions": "q?", "noncommittal": false}', "questions must be an array of strings"),
    ('{"questions": ["q?", 3], "noncommittal": false}', "question 2 must be a non-empty string"),
    ('{"questions": ["q?", "  "], "noncommittal": false}', "question 2 must be a non-empty string"),
    ('{"questions": [null], "noncommittal": false}', "question 1 must be a non-empty string, got null"),
    ('{"questions": [], "noncommittal": false}', "no questions for an answer it calls committal"),
])
def test_malformed_questions_are_judge_errors(content: str, message: str) -> None:
    with pytest.raises(JudgeReplyError) as caught:
        read_questions(content)
    assert message in str(caught.value)


def test_statement_objects_share_the_locator_and_the_duplicate_check() -> None:
    assert read_object('Sure:\n```json\n{"statements": []}\n```') == {"statements": []}
    with pytest.raises(JudgeReplyError, match='the key "label" twice'):
        read_object('{"statements": [{"text": "a", "label": "supported", "label": "unsupported"}]}')
