"""Judge replies are read strictly: anything but the rubric's shape is a judge error."""

from __future__ import annotations

import pytest

from flipgate.judges.replies import JudgeReplyError, Questions, read_questions, read_score
from flipgate.model import Score


@pytest.mark.parametrize("content, expected", [
    ('{"reason": "all backed", "score": 5, "status": "completed"}', Score(5, "all backed")),
    ('{"score": 1, "status": "completed"}', Score(1, "")),
    ('{"reason": " padded ", "score": 3}', Score(3, "padded")),          # fluency: no status
    ('{"reason": null, "score": 2}', Score(2, "")),
    ('{"score": 4.0, "reason": "r"}', Score(4, "r")),                    # a float naming a level exactly
    ('  \n{"score": 4}\n', Score(4, "")),
    ('```json\n{"score": 4, "reason": "fenced"}\n```', Score(4, "fenced")),
    ('{"score": 5, "reason": "r", "extra": [1, 2]}', Score(5, "r")),     # extra keys are harmless
])
def test_well_formed_scores_are_read(content: str, expected: Score) -> None:
    assert read_score(content) == expected


@pytest.mark.parametrize("content, message", [
    ("", "empty reply"),
    ("   ", "empty reply"),
    ("The score is 5.", "reply is not valid JSON"),
    ('{"score": 5', "reply is not valid JSON"),
    ("```\nnot json\n```", "reply is not valid JSON"),
    ('[{"score": 5}]', "reply is a JSON array, not an object"),
    ("5", "reply is a JSON number, not an object"),
    ('"5"', "reply is a JSON string, not an object"),
    ("null", "reply is a JSON null, not an object"),
    ('{"reason": "fine"}', "reply has no score"),
    ('{"score": null, "status": "completed"}', "got null"),
    ('{"score": 0}', "score 0 is outside 1-5"),
    ('{"score": 6}', "score 6 is outside 1-5"),
    ('{"score": -3}', "score -3 is outside 1-5"),
    ('{"score": 10.0}', "score 10 is outside 1-5"),
    ('{"score": 4.5}', "must be a whole number 1-5, got 4.5"),
    ('{"score": 1e400}', "must be a whole number 1-5, got inf"),
    ('{"score": NaN}', "it contains NaN"),
    ('{"score": Infinity}', "it contains Infinity"),
    ('{"score": true}', "got boolean true"),
    ('{"score": false}', "got boolean false"),
    ('{"score": "4"}', 'got string "4"'),
    ('{"score": [4]}', "got array"),
    ('{"score": {"value": 4}}', "got object"),
    ('{"score": null, "status": "skipped", "reason": "no context given"}',
     "judge skipped the evaluation: no context given"),
    ('{"score": 5, "status": "skipped"}', "judge skipped the evaluation"),  # skipped beats a score
    ('{"score": 5, "status": "done"}', 'status must be "completed", got string "done"'),
    ('{"score": 5, "status": null}', 'status must be "completed", got null'),
    ('{"score": 5, "reason": 42}', "reason must be a string, got number 42"),
])
def test_malformed_scores_are_judge_errors(content: str, message: str) -> None:
    with pytest.raises(JudgeReplyError) as caught:
        read_score(content)
    assert message in str(caught.value)


def test_long_garbage_is_quoted_short() -> None:
    with pytest.raises(JudgeReplyError) as caught:
        read_score("x" * 5000)
    assert len(str(caught.value)) < 120


@pytest.mark.parametrize("content, expected", [
    ('{"questions": ["What is the fee?", " When is it charged? "], "noncommittal": false}',
     Questions(("What is the fee?", "When is it charged?"), False)),
    ('{"questions": ["Anything?"], "noncommittal": true}', Questions(("Anything?",), True)),
    ('{"questions": [], "noncommittal": true}', Questions((), True)),
    ('```json\n{"questions": ["q?"], "noncommittal": false}\n```', Questions(("q?",), False)),
])
def test_well_formed_questions_are_read(content: str, expected: Questions) -> None:
    assert read_questions(content) == expected


@pytest.mark.parametrize("content, message", [
    ("", "empty reply"),
    ("questions: a, b", "reply is not valid JSON"),
    ('["q?"]', "reply is a JSON array, not an object"),
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
