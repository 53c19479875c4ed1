"""The generation page's example question is grammatical for every verb (issue 21: "Who see something?")."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from annotation.web.hit_pages import example_question


@pytest.mark.parametrize(
    ("lemma", "question"),
    [
        ("see", "e.g. Who sees something?"),
        ("watch", "e.g. Who watches something?"),
        ("carry", "e.g. Who carries something?"),
        ("play", "e.g. Who plays something?"),
        ("be", "e.g. Who is something?"),
        ("have", "e.g. Who has something?"),
        ("go", "e.g. Who goes something?"),
        ("fix", "e.g. Who fixes something?"),
        ("give up", "e.g. Who gives up something?"),
        ("", "e.g. Who did something?"),
    ],
)
def test_example_question(lemma, question):
    assert example_question(SimpleNamespace(lemma=lemma)) == question
