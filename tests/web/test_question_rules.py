"""The generation and verification pages' rules: what the pages say, and what the server refuses."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Campaign, ContentUnit, Predicate
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.text.questions import mentions_verb, starts_with_question_word, verb_forms
from hits.handlers import AnswerErrors
from hits.models import TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "question, predicate, lemma, expected",
    [
        ("What did someone blame something on?", "blamed", "blame", True),
        ("Who was given something?", "gave", "give", True),
        ("Who was given something?", "gave", "", True),  # a test item without a lemma: irregular forms still match
        ("Who stopped something?", "stops", "stop", True),
        ("Who tried to do something?", "tries", "try", True),
        ("What could something get stuck in?", "get", "get", True),
        ("Who gave up something?", "given up", "give up", True),
        ("Who is out?", "is", "be", True),
        ("Who left something?", "blamed", "blame", False),
        ("Who did someone accuse?", "blamed", "blame", False),
    ],
)
def test_the_verb_in_any_inflection(question, predicate, lemma, expected):
    assert mentions_verb(question, predicate, lemma) is expected


def test_question_words_and_forms():
    assert starts_with_question_word("Whom did someone blame?") and starts_with_question_word("how much did something cost?")
    assert not starts_with_question_word("Someone blamed whom?") and not starts_with_question_word("Did someone blame someone?")
    assert {"blamed", "blames", "blaming"} <= verb_forms("blame") and {"stopped", "stopping"} <= verb_forms("stop")


@pytest.fixture
def campaign(tmp_path):
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "The driver was blamed."}])
    campaign = import_campaign(name="Rules", references=refs, summaries=sums, predicates="none").campaign
    example = campaign.examples.get()
    sentence = example.sentences.get()
    sentence.predicates.create(example=example, start=7, end=13, text="blamed", lemma="blame")
    Campaign.objects.filter(pk=campaign.pk).update(max_questions_per_predicate=4, writer_valid_threshold=0.9, writer_min_questions_per_predicate=2.5)
    launch_campaign(campaign)
    return campaign


def _accept(name, slug):
    worker = Worker.objects.get_or_create(external_id=name)[0]
    return worker, accept_next(worker, TaskType.objects.get(slug=slug))


@pytest.mark.parametrize(
    "question, message",
    [
        ("Someone blamed whom?", "Start the question with a question word"),
        ("Did police blame someone?", "Start the question with a question word"),
        ("Who accused someone?", "Use the highlighted verb “blamed” in the question"),
    ],
)
def test_the_server_refuses_a_question_breaking_a_rule(campaign, question, message):
    worker, assignment = _accept("w", "generation")
    with pytest.raises(AnswerErrors) as info:
        submit_assignment(worker, assignment.pk, {"q1": question, "q1_a1": "Police"})
    assert any(message in m for m in info.value.errors["q1"])
    assert not ContentUnit.objects.exists()


def test_content_words_are_a_warning_the_writer_confirms(campaign):
    worker, assignment = _accept("w", "generation")
    data = {"q1": "Who blamed the driver?", "q1_a1": "Police", "q2": "Who did someone blame?", "q2_a1": "the driver"}
    with pytest.raises(AnswerErrors) as info:
        submit_assignment(worker, assignment.pk, data)
    assert "repeats “driver” from the sentence" in info.value.errors["q1"][0] and "q2" not in info.value.errors
    submit_assignment(worker, assignment.pk, {**data, "q1_keep": "1"})
    assert set(ContentUnit.objects.values_list("question", flat=True)) == {"Who blamed the driver?", "Who did someone blame?"}


def test_a_refused_page_keeps_the_text_and_offers_keep_as_written(campaign, django_user_model):
    user = django_user_model.objects.create_user(username="ann", password="pw-123456789")
    client = Client()
    client.force_login(user)
    page = client.post("/work/generation/start/", follow=True)
    assert page.status_code == 200 and page.redirect_chain
    html = page.content.decode()
    assert "as many questions as apply to the verb" in html and "(up to 4)" in html
    assert "more than 90% of your question–answer pairs" in html and "at least 2.5 questions per verb" in html
    assert "Who blamed the corruption scandal on local officials?" in html and 'id="question-rules"' in html
    assignment_url = page.redirect_chain[-1][0]
    response = client.post(assignment_url, {"q1": "Someone blamed whom?", "q1_a1": "Police", "q2": "Who blamed the driver?", "q2_a1": "Police"})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'value="Someone blamed whom?"' in html and 'value="Who blamed the driver?"' in html
    assert "Start the question with a question word" in html
    assert 'name="q2_keep"' in html and 'name="q1_keep"' not in html
    assert not ContentUnit.objects.exists()


def test_the_verification_page_repeats_every_rule(campaign):
    _, generation = _accept("writer", "generation")
    submit_assignment(generation.worker, generation.pk, {"q1": "Who blamed someone?", "q1_a1": "Police", "q2": "Who did someone blame?", "q2_a1": "the driver"})
    from hits.views import _page_context
    from hits.handlers import task_handler

    verifier, assignment = _accept("v1", "verification")
    context = _page_context(task_handler("verification"), assignment.hit, assignment, None, verifier)
    from django.template.loader import render_to_string

    html = render_to_string("annotation/hits/verification.html", {**context, "collapsed": False})
    for rule in ("Question slots", "someone</em>, <em>something</em> or <em>do something</em> stand for every other participant",
                 "get stuck in", "What <strong>is</strong> an example?", "Who <strong>is</strong> out?",
                 "Verb relevance", "Who blamed the corruption scandal on local officials?", "breaks <strong>any</strong> of them is <strong>Invalid</strong>",
                 "more than 85% agreement"):
        assert rule in html, rule


@pytest.mark.parametrize(
    "sentence, verb, question, answer",
    [
        # The preposition slot: a preposition the sentence uses is no content word to replace with something.
        ("Bundles of notes spilled onto Interstate 20 on Friday.", "spilled", "What did something spill onto?", "Interstate 20"),
        ("Midfielder Adam scored a goal during the game.", "scored", "What did someone score during?", "the game"),
        ("Catherine Nevin was allowed out despite being jailed.", "allowed", "What was someone allowed despite?", "being jailed"),
        ("She slept outdoors because of aftershocks.", "slept", "What did someone sleep because of?", "aftershocks"),
        ("He was made infertile due to cancer treatment.", "made", "What was someone made something due to?", "cancer treatment"),
        ("ESPN suspended the reporter amid investigation.", "suspended", "What did someone suspend someone amid?", "investigation"),
        ("The name sounds like slang words in Arabic.", "sounds", "What does something sound like?", "slang words in Arabic"),
        ("Godfrey Elfwick was recruited via Twitter.", "recruited", "What was someone recruited via?", "Twitter"),
        ("Strikes were launched against rebels.", "launched", "Who was something launched against?", "rebels"),
        # A typographic apostrophe's contraction: its verb is "be", which spaCy's lemma "’" hid.
        ("She says she ’s not happy with it.", "’s", "Who is not something?", "she"),
    ],
)
def test_the_server_takes_a_sound_question_of_a_realsumm_sentence(tmp_path, sentence, verb, question, answer):
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": sentence}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Something happened."}])
    campaign = import_campaign(name="Sound", references=refs, summaries=sums).campaign
    launch_campaign(campaign)
    for i in range(20):  # the sentence's generation HITs, one per predicate: the one about ``verb``
        worker, assignment = _accept(f"w{i}", "generation")
        if Predicate.objects.get(pk=assignment.hit.payload["predicate"]).text.split()[0] == verb:
            break
    else:
        pytest.fail(f"no generation HIT about {verb!r}")
    submit_assignment(worker, assignment.pk, {"q1": question, "q1_a1": answer})  # raises AnswerErrors if refused
    assert ContentUnit.objects.filter(question=question).exists()
