"""A test item's verb, known only as it stands in the sentence, leads back to its base (issue 39): "Who did
someone fire?" is accepted for "fired"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.text.questions import mentions_verb, verb_bases
from tests.conftest import SHARED_DATA

DEMO_TESTS = Path(__file__).resolve().parents[2] / "annotation" / "demo" / "qualifications.json"


def _demo_items():
    return json.loads(DEMO_TESTS.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "question, verb",
    [
        ("Who did someone fire?", "fired"),
        ("What was blamed?", "blamed"),
        ("Who blamed someone?", "blamed"),
        ("Who did someone blame?", "blamed"),
        ("Who fires someone?", "fired"),
        ("What did someone stop?", "stopped"),
        ("What did someone try?", "tried"),
        ("What did someone make?", "making"),
        ("What did someone watch?", "watches"),
        ("What did someone give?", "gave"),
        ("What was planted?", "planted"),
        ("Who did someone plant?", "planted"),
        ("What did someone open?", "opened"),
        ("Who did someone warn?", "warned"),
        ("Who did someone praise?", "praised"),
        ("What did someone carry?", "carried"),
        ("What was lying somewhere?", "lie"),
        ("Where did someone lie?", "lying"),
    ],
)
def test_a_question_with_the_base_of_the_verb_passes_without_a_lemma(question, verb):
    assert mentions_verb(question, verb)


@pytest.mark.parametrize("question, verb", [("Who said something?", "fired"), ("What was given?", "blamed"), ("Who used it?", "fired")])
def test_a_question_without_the_verb_is_still_refused(question, verb):
    assert not mentions_verb(question, verb)


def test_bases_come_from_inverting_ed_ing_and_s_and_the_irregular_list():
    assert {"fire", "blame", "stop", "try", "make", "give"} <= (
        verb_bases("fired") | verb_bases("blamed") | verb_bases("stopped") | verb_bases("tried") | verb_bases("making") | verb_bases("gave")
    )
    assert "call" in verb_bases("called") and "cal" not in verb_bases("called")


def test_every_demo_test_item_accepts_questions_with_the_base_of_its_verb():
    """The demo's own test items: the generation items' verbs in their base form, and every question the
    verification items call valid."""
    demo = _demo_items()
    from annotation.text.predicates import english_pipeline

    nlp = english_pipeline()
    for item in demo["generation"] + demo["verification"]:
        sentence, verb = item["sentence"], item["predicate"]
        (token,) = [t for t in nlp(sentence) if t.text == verb.split()[0]][:1]
        base = token.lemma_.lower()
        assert mentions_verb(f"Who did someone {base}?", verb), (verb, base)
        assert mentions_verb(f"What did someone {base}?", verb), (verb, base)
        for q in item.get("questions", []):
            if q["valid"]:
                assert mentions_verb(q["question"], verb), (q["question"], verb)


@pytest.mark.skipif(not (SHARED_DATA / "realsumm").exists(), reason="shared REALSumm data not present")
def test_fifty_realsumm_predicates_accept_their_base_form_without_a_lemma():
    """50 predicates found in REALSumm references: a question with the verb's base form ("Who did someone
    fire?") passes for the form in the sentence ("fired"), as a test item made from them has no lemma."""
    from annotation.text.predicates import analyse_references, strip_sentence_tags

    lines = (SHARED_DATA / "realsumm" / "references.txt").read_text(encoding="utf-8").splitlines()[:12]
    texts, bounds = zip(*(strip_sentence_tags(line) for line in lines))
    predicates = [p for sentences in analyse_references(list(texts), list(bounds)) for s in sentences for p in s.predicates]
    inflected = [p for p in predicates if p.text.split()[0].lower() != p.lemma.split()[0].lower()]
    sample = (inflected + [p for p in predicates if p not in inflected])[:50]
    assert len(sample) == 50 and len(inflected) >= 25
    refused = [(p.text, p.lemma) for p in sample if not mentions_verb(f"What did someone {p.lemma.split()[0]}?", p.text)]
    assert not refused


@pytest.mark.django_db
def test_the_demo_generation_test_accepts_who_did_someone_fire(tmp_path):
    from annotation.services.qualification_tests import build_qualification_hits
    from hits.handlers import task_handler
    from tests.conftest import launched_scu_campaign

    campaign = launched_scu_campaign(tmp_path / "c", "Verbs", [("d0", "A reference .", "A summary .", ["a fact"])])
    (fired,) = [item for item in _demo_items()["generation"] if item["predicate"] == "fired"]
    (hit,) = build_qualification_hits(campaign, {"generation": [fired]})
    answers = task_handler("generation").clean(hit, {"q1": "Who did someone fire?", "q1_a1": "its chief executive",
                                                     "q2": "Who fired someone?", "q2_a1": "The company"})
    assert [q["question"] for q in answers["questions"]] == ["Who did someone fire?", "Who fired someone?"]
