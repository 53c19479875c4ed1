"""What a worker who failed a qualification test is told, item by item (and that gold checks are never explained)."""

from __future__ import annotations

from types import SimpleNamespace

from annotation.services.qualification_tests import generation_feedback, presence_feedback, verification_feedback

SENTENCE = "Police blamed the driver for the crash."


def _item(payload, key, answers, kind="qualification", hit_id=1):
    return SimpleNamespace(hit=SimpleNamespace(payload=payload, answer_key=key, kind=kind), hit_id=hit_id, answers=answers)


def test_generation_feedback_names_every_key_argument_and_what_was_written():
    item = _item(
        {"inline": {"sentence": SENTENCE, "start": 7, "end": 13}},
        {"arguments": [["Police"], ["the driver"], ["the crash", "crash"]]},
        {"questions": [{"question": "Who blamed someone?", "answers": ["Police"]}]},
    )
    [(right, line)] = generation_feedback([item])
    assert not right and line.startswith(f"“{SENTENCE}”: expected")
    assert "“Police”, “the driver”, “the crash / crash”" in line
    assert "You wrote: Who blamed someone? → Police." in line
    assert "no answer covers 'the driver'" in line


def test_verification_feedback_per_question_in_order_of_the_page():
    item = _item(
        {"inline": {"sentence": SENTENCE, "start": 7, "end": 13, "questions": [
            {"id": "k1", "question": "Who blamed someone?", "answers": ["Police"]},
            {"id": "k2", "question": "Who blamed the driver?", "answers": ["Police"]},
        ]}},
        {"verdicts": {"k1": {"valid": True, "answers": ["Police"]}, "k2": {"valid": False, "answers": []}}},
        {"verdicts": [{"unit": "k1", "valid": True, "answers": ["the driver"]}, {"unit": "k2", "valid": False, "answers": []}]},
    )
    # One short line per question, each with its own mark (issue 39).
    first, second = verification_feedback([item])
    assert first == (False, "“Who blamed someone?”: expected valid, answer “Police”; you said valid, answer “the driver”.")
    assert second == (True, "“Who blamed the driver?”: expected invalid; you said invalid.")


def test_only_qualification_items_are_explained():
    pairs = {"inline": {"candidate": "Homes lost power.", "pairs": [{"id": "g1", "question": "What lost something?", "answer": "Homes"}]}}
    test = _item(pairs, {"labels": {"g1": True}}, {"labels": [{"unit": "g1", "present": False}]})
    gold = _item(pairs, {"labels": {"g1": True}}, {"labels": [{"unit": "g1", "present": False}]}, kind="gold", hit_id=2)
    assert presence_feedback([gold]) == []
    assert presence_feedback([test, gold]) == [
        (False, "“What lost something? Homes” in “Homes lost power.”: expected present; you said not present.")
    ]
