"""Grading rules of qualification tests and the strict thresholds of the cross-checks."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from annotation.selectors.quality import threshold_check
from annotation.services.qualification_tests import (
    grade_generation_item,
    grade_generation_test,
    grade_presence_test,
    grade_verification_test,
)
from annotation.text.questions import content_word_violations, token_f1

SENTENCE = "Police blamed the driver for the crash."


def _assignment(payload, key, answers):
    return SimpleNamespace(hit=SimpleNamespace(payload=payload, answer_key=key), answers=answers)


def _generation(questions):
    payload = {"inline": {"sentence": SENTENCE, "start": 7, "end": 13}}
    key = {"arguments": [["Police"], ["the driver"], ["the crash"]]}
    return _assignment(payload, key, {"questions": questions})


def test_token_f1():
    assert token_f1("the driver", "the driver") == 1.0
    assert token_f1("driver", "the driver") == 1.0  # function words do not count
    assert token_f1("the crash", "the driver") == 0.0
    assert token_f1("drunk driver", "the driver") == pytest.approx(2 / 3)
    assert token_f1("", "x") == 0.0


def test_generation_item_right_soft_and_hard():
    right = grade_generation_item(_generation([
        {"question": "Who blamed someone?", "answers": ["Police"]},
        {"question": "Who did someone blame?", "answers": ["the driver"]},
        {"question": "What did someone blame someone for?", "answers": ["the crash"]},
    ]))
    assert right == {"right": True, "soft": False, "problems": []}
    # Naming the driver in the question breaks the someone/something rule: a soft problem (review).
    soft = grade_generation_item(_generation([
        {"question": "Who blamed the driver?", "answers": ["Police"]},
        {"question": "Who did someone blame?", "answers": ["the driver"]},
        {"question": "What did someone blame someone for?", "answers": ["the crash"]},
    ]))
    assert soft["soft"] and not soft["right"] and "repeats words of the sentence: driver" in soft["problems"][0]
    # An argument nobody covers is a hard failure.
    hard = grade_generation_item(_generation([{"question": "Who blamed someone?", "answers": ["Police"]}]))
    assert not hard["right"] and not hard["soft"]
    assert "no answer covers 'the driver'" in hard["problems"]
    # Partial cover (overlap between 0.3 and 0.5) is soft.
    partial = grade_generation_item(_generation([
        {"question": "Who blamed someone?", "answers": ["Police"]},
        {"question": "Who did someone blame?", "answers": ["Police blamed the driver for the crash"]},
        {"question": "What did someone blame someone for?", "answers": ["the crash"]},
    ]))
    assert partial["soft"] and any("partly covered" in p for p in partial["problems"])


def test_generation_test_all_right_passes_soft_goes_to_review_hard_fails():
    good = [{"question": "Who blamed someone?", "answers": ["Police"]}, {"question": "Who did someone blame?", "answers": ["the driver"]}, {"question": "What did someone blame someone for?", "answers": ["the crash"]}]
    soft = [{"question": "Who blamed the driver?", "answers": ["Police"]}] + good[1:]
    assert grade_generation_test([_generation(good)] * 4).passed is True
    assert grade_generation_test([_generation(good)] * 3 + [_generation(soft)]).passed is None
    result = grade_generation_test([_generation(good)] * 3 + [_generation(good[:1])])
    assert result.passed is False and result.score == 0.75


def test_question_word_rule_is_hard():
    item = grade_generation_item(_generation([
        {"question": "Someone blamed who?", "answers": ["the driver"]},
        {"question": "Who blamed someone?", "answers": ["Police"]},
        {"question": "What did someone blame someone for?", "answers": ["the crash"]},
    ]))
    assert not item["soft"] and "does not start with a question word" in item["problems"][0]


def test_content_words_allow_the_predicate_in_other_forms():
    assert content_word_violations("Who blames someone?", SENTENCE, "blamed") == []
    assert content_word_violations("Who blamed the driver?", SENTENCE, "blamed") == ["driver"]


def _presence(labels, key, pass_above=0.9):
    return _assignment({"pass_above": pass_above}, {"labels": key}, {"labels": labels})


def test_presence_test_threshold_is_strict():
    key = {f"g{i}": i % 2 == 0 for i in range(10)}
    all_right = [{"unit": k, "present": v} for k, v in key.items()]
    nine_right = [dict(x) for x in all_right]
    nine_right[0]["present"] = not nine_right[0]["present"]
    assert grade_presence_test([_presence(all_right, key)]).passed is True
    exactly = grade_presence_test([_presence(nine_right, key)])
    assert exactly.score == pytest.approx(0.9) and exactly.passed is False


def test_verification_test_checks_verdicts_and_answer_overlap():
    key = {"verdicts": {"k1": {"valid": True, "answers": ["the driver"]}, "k2": {"valid": False, "answers": []}}}
    payload = {"pass_above": 0.85}
    right = _assignment(payload, key, {"verdicts": [{"unit": "k1", "valid": True, "answers": ["the driver"]}, {"unit": "k2", "valid": False, "answers": []}]})
    wrong_answer = _assignment(payload, key, {"verdicts": [{"unit": "k1", "valid": True, "answers": ["crash"]}, {"unit": "k2", "valid": False, "answers": []}]})
    assert grade_verification_test([right]).passed is True
    graded = grade_verification_test([wrong_answer])
    assert graded.score == 0.5 and graded.passed is False


@pytest.mark.parametrize(
    "right, n, grace, status",
    [(0, 0, 20, "pending"), (17, 19, 20, "pending"), (17, 20, 20, "ok"), (18, 20, 20, "ok"), (17, 20, 0, "ok")],
)
def test_grace_period(right, n, grace, status):
    assert threshold_check(right, n, 0.8, grace).status == status


@pytest.mark.parametrize("right, n, status", [(85, 100, "failing"), (86, 100, "ok"), (84, 100, "failing"), (17, 20, "failing")])
def test_threshold_is_strict_around_85_percent(right, n, status):
    assert threshold_check(right, n, 0.85, 20).status == status
