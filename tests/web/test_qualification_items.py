"""Qualification items created and changed in the browser, one form per item, with the JSON import's checks;
a refused item comes back with everything typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from annotation.services.qualification_tests import build_qualification_hits, define_qualifications
from hits.models import HIT, Assignment, TaskType, Worker

pytestmark = pytest.mark.django_db

DEMO = json.loads((Path(__file__).resolve().parents[2] / "annotation/demo/qualifications.json").read_text())


def _new(client, campaign, section, data):
    return client.post(reverse("campaign-qualification-item-new", args=[campaign.slug]) + f"?kind={section}", data)


def _items(campaign):
    campaign.refresh_from_db()
    return HIT.objects.filter(batch_id=campaign.batch_id, kind__in=["qualification", "gold"]).exclude(state="cancelled").order_by("pk")


def _form_data(response) -> dict:
    form = response.context["form"]
    return {name: ("" if form[name].value() is None else form[name].value()) for name in form.fields}


def test_a_generation_item_made_in_the_browser_equals_the_imported_one(client_rita, draft):
    page = client_rita.get(reverse("campaign-qualifications", args=[draft.slug])).content.decode()
    new = reverse("campaign-qualification-item-new", args=[draft.slug])
    assert f"{new}?kind=generation" in page and f"{new}?kind=presence_gold" in page
    assert client_rita.get(f"{new}?kind=generation").status_code == 200
    response = _new(client_rita, draft, "generation", {
        "sentence": "The mayor opened the new library on Monday.", "predicate": "opened",
        "arguments": "The mayor\nthe new library | new library\non Monday",
    })
    assert response.status_code == 302, response.content.decode()[-3000:]
    (hit,) = _items(draft)
    (imported,) = build_qualification_hits(draft, {"generation": [{
        "sentence": "The mayor opened the new library on Monday.", "predicate": "opened",
        "arguments": [["The mayor"], ["the new library", "new library"], ["on Monday"]],
    }]})
    assert (hit.payload, hit.answer_key, hit.kind) == (imported.payload, imported.answer_key, "qualification")
    # As with the import, the task type now asks for the test.
    assert TaskType.objects.get(slug="generation").requires_qualification
    listing = client_rita.get(reverse("campaign-qualifications", args=[draft.slug])).content.decode()
    assert f'data-item="{hit.pk}"' in listing and "The mayor opened the new library" in listing


def test_a_refused_item_keeps_what_was_typed(client_rita, draft):
    typed = {
        "sentence": "Heavy snow closed the mountain pass overnight.", "predicate": "closed",
        "q1_question": "What closed something?", "q1_answers": "Heavy snow", "q1_valid": "valid",
        "q2_question": "What did something close?", "q2_answers": "the valley road", "q2_valid": "valid",
        "q3_question": "When did something close something?", "q3_answers": "overnight",  # no verdict
    }
    response = _new(client_rita, draft, "verification", typed)
    html = response.content.decode()
    assert response.status_code == 400
    assert "This item, question 2: answer &#x27;the valley road&#x27; is not a substring of the sentence. Nothing was saved." in html
    for value in ("Heavy snow closed the mountain pass overnight.", 'value="What did something close?"', 'value="the valley road"',
                  'value="When did something close something?"', '<option value="valid" selected>'):
        assert value in html
    assert not _items(draft).exists()
    # Fixed, the verdict still missing on question 3: named too.
    typed["q2_answers"] = "the mountain pass"
    html = _new(client_rita, draft, "verification", typed).content.decode()
    assert "This item, question 3: &#x27;valid&#x27; must be true or false" in html
    typed["q3_valid"] = "invalid"
    assert _new(client_rita, draft, "verification", typed).status_code == 302
    (hit,) = _items(draft)
    assert [q["question"] for q in hit.payload["inline"]["questions"]][1] == "What did something close?"
    assert hit.answer_key["verdicts"]["k3"] == {"valid": False, "answers": []}


def test_a_gold_item_pays_like_presence_and_a_missing_sentence_is_a_field_error(client_rita, draft):
    response = _new(client_rita, draft, "presence_gold", {
        "candidate": "Rain flooded several roads.", "reference": "Officials urged drivers to stay home.", "predicate": "urged",
        "p1_question": "Who urged someone to do something?", "p1_answer": "Officials", "p1_present": "absent",
        "p2_question": "What flooded something?", "p2_answer": "", "p2_present": "present",
    })
    assert response.status_code == 400 and "This item, pair 2: &#x27;answer&#x27; must be a non-empty string" in response.content.decode()
    response = _new(client_rita, draft, "presence_gold", {
        "candidate": "Rain flooded several roads.", "reference": "Officials urged drivers to stay home.", "predicate": "urged",
        "p1_question": "Who urged someone to do something?", "p1_answer": "Officials", "p1_present": "absent",
    })
    assert response.status_code == 302
    (gold,) = _items(draft)
    assert gold.kind == "gold" and gold.reward == draft.reward_presence and gold.answer_key == {"labels": {"g1": False}}
    missing = _new(client_rita, draft, "generation", {"sentence": "", "predicate": "opened", "arguments": "The mayor"})
    assert missing.status_code == 400 and "This field is required." in missing.content.decode()
    assert 'value="opened"' in missing.content.decode()
    assert client_rita.get(reverse("campaign-qualification-item-new", args=[draft.slug]) + "?kind=nonsense").status_code == 404


def test_every_demo_item_survives_a_round_trip_and_can_be_changed(client_rita, draft):
    define_qualifications(draft, DEMO)
    before = {h.pk: (h.payload, h.answer_key, h.kind) for h in _items(draft)}
    assert len(before) == sum(len(v) for v in DEMO.values())
    for pk in before:
        url = reverse("campaign-qualification-item-edit", args=[draft.slug, pk])
        shown = client_rita.get(url)
        assert shown.status_code == 200
        assert client_rita.post(url, _form_data(shown)).status_code == 302
    after = {h.pk: (h.payload, h.answer_key, h.kind) for h in _items(draft)}
    assert after == before

    # Change one item no worker has taken: in place.
    hit = _items(draft).filter(task_type__slug="verification").first()
    url = reverse("campaign-qualification-item-edit", args=[draft.slug, hit.pk])
    data = _form_data(client_rita.get(url))
    data["q4_valid"] = "valid"
    data["q4_question"] = "Why did someone praise someone?"
    data["q4_answers"] = "for their effort"
    assert client_rita.post(url, data).status_code == 302
    hit.refresh_from_db()
    assert hit.answer_key["verdicts"]["k4"] == {"valid": True, "answers": ["for their effort"]}
    # An item a worker has taken: withdrawn (the answers kept), and the new version added.
    taken = _items(draft).filter(task_type__slug="generation").first()
    worker = Worker.objects.create(external_id="tess")
    Assignment.objects.create(hit=taken, worker=worker, state="submitted", accepted_at=taken.created_at, expires_at=taken.created_at,
                              submitted_at=taken.created_at, answers={"questions": []})
    HIT.objects.filter(pk=taken.pk).update(n_taken=1, n_submitted=1)
    url = reverse("campaign-qualification-item-edit", args=[draft.slug, taken.pk])
    data = _form_data(client_rita.get(url))
    data["arguments"] = "The mayor\nthe new library"
    assert client_rita.post(url, data).status_code == 302
    taken.refresh_from_db()
    assert taken.state == "cancelled" and taken.assignments.count() == 1
    newest = _items(draft).filter(task_type__slug="generation").order_by("-pk").first()
    assert newest.pk != taken.pk and newest.answer_key == {"arguments": [["The mayor"], ["the new library"]]}
    assert client_rita.get(url).status_code == 404  # a withdrawn item is no longer edited


def test_only_the_campaigns_researchers_edit_its_tests(draft, django_user_model):
    from annotation.services.roles import make_researcher

    define_qualifications(draft, {"generation": DEMO["generation"][:1]})
    hit = _items(draft).get()
    olga = django_user_model.objects.create_user("olga")
    make_researcher(olga)
    client = Client()
    client.force_login(olga)
    assert client.get(reverse("campaign-qualification-item-edit", args=[draft.slug, hit.pk])).status_code == 404
    assert client.post(reverse("campaign-qualification-item-new", args=[draft.slug]), {}).status_code == 404
