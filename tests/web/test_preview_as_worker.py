"""Issue 40, preview as a worker: a task type's HIT page as a worker gets it, with the campaign's data and
instructions, before and after launch; nothing can be submitted and nothing is recorded."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.test import Client

from annotation.models import Campaign, ContentUnit, Predicate
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from hits.models import HIT

pytestmark = pytest.mark.django_db


def all_rows() -> dict[str, int]:
    """Rows of every model of the project's apps: a preview as a worker must change none."""
    return {m._meta.label: m.objects.count() for app in ("hits", "annotation") for m in apps.get_app_config(app).get_models()}


def test_before_launch_the_generation_page_shows_the_campaigns_sentence_and_rules(draft, client_rita):
    Campaign.objects.filter(pk=draft.pk).update(max_questions_per_predicate=3, writer_valid_threshold=0.8)
    predicate = Predicate.objects.filter(example__campaign=draft).select_related("sentence").order_by("example__position", "pk").first()
    before = all_rows()
    response = client_rita.get(f"/campaigns/{draft.slug}/preview-as-worker/generation/")
    page = response.content.decode()
    assert response.status_code == 200
    # The sentence as the worker's page shows it (one span per token), the predicate marked.
    assert f'data-text="{predicate.sentence.text}"' in page and f'predicate" data-start="{predicate.start}"' in page
    assert response.context["task"]["sentence"] == predicate.sentence.text
    assert "(up to 3)" in page and "more than 80% of your question" in page
    assert 'id="submit" disabled' in page and "Nothing can be submitted and nothing is recorded" in page
    # The worker's own template: its question rows are there.
    assert 'name="q1"' in page and 'name="q3"' in page and 'name="q4"' not in page
    assert all_rows() == before


def test_a_forced_post_records_nothing(draft, client_rita):
    before = all_rows()
    response = client_rita.post(f"/campaigns/{draft.slug}/preview-as-worker/generation/",
                                {"action": "submit", "q1": "Who opened something?", "q1_a1": "The mayor"})
    assert response.status_code == 405 and response["Allow"] == "GET"
    assert "nothing was submitted or recorded" in response.content.decode()
    assert all_rows() == before


def test_verification_before_any_pair_says_what_will_show(draft, client_rita):
    response = client_rita.get(f"/campaigns/{draft.slug}/preview-as-worker/verification/")
    assert response.status_code == 200 and "no QA pairs yet" in response.content.decode()


def test_verification_and_presence_use_the_campaigns_pairs_when_it_has_some(draft, client_rita):
    predicate = Predicate.objects.filter(example__campaign=draft).select_related("sentence").first()
    ContentUnit.objects.create(example=predicate.example, predicate=predicate, kind="qa", index=0,
                               question="Who did something odd?", answers=["x"], text="Who did something odd? x", state="kept")
    verification = client_rita.get(f"/campaigns/{draft.slug}/preview-as-worker/verification/").content.decode()
    assert "Who did something odd?" in verification and predicate.sentence.text in verification
    presence = client_rita.get(f"/campaigns/{draft.slug}/preview-as-worker/presence/").content.decode()
    summary = predicate.example.summaries.order_by("pk").first()
    assert "Who did something odd?" in presence and summary.text in presence


def test_after_launch_the_page_is_a_real_hit_of_the_campaign(draft, client_rita):
    launch_campaign(draft)
    first = HIT.objects.filter(batch__campaign=draft, task_type__slug="generation").order_by("pk").first()
    predicate = Predicate.objects.select_related("sentence").get(pk=first.payload["predicate"])
    before = all_rows()
    response = client_rita.get(f"/campaigns/{draft.slug}/preview-as-worker/generation/")
    page = response.content.decode()
    assert response.context["hit"].pk == first.pk and response.context["task"]["sentence"] == predicate.sentence.text
    assert "made of the campaign&#x27;s data" not in page and "made of the campaign's data" not in page
    assert all_rows() == before


def test_unknown_task_types_and_other_researchers_get_nothing(draft, client_rita, django_user_model):
    assert client_rita.get(f"/campaigns/{draft.slug}/preview-as-worker/nonsense/").status_code == 404
    other = django_user_model.objects.create_user(username="otto", password="a-long-test-password")
    make_researcher(other)
    client = Client()
    client.force_login(other)
    assert client.get(f"/campaigns/{draft.slug}/preview-as-worker/generation/").status_code in (403, 404)


def test_the_pilot_page_links_a_preview_per_task_type(draft, client_rita):
    page = client_rita.get(f"/campaigns/{draft.slug}/pilot/").content.decode()
    for slug in ("generation", "verification", "presence"):
        assert f"/campaigns/{draft.slug}/preview-as-worker/{slug}/" in page


def test_an_scu_campaign_previews_presence_with_its_units_and_pilots_it(tmp_path, rita):
    from annotation.services import pilot
    from tests.conftest import launched_scu_campaign

    campaign = launched_scu_campaign(tmp_path, "Units", [("e1", "The cat sat on the mat.", "A cat sat.", ["A cat sat", "It was on a mat"])],
                                     launch=False)
    Campaign.objects.filter(pk=campaign.pk).update(owner=rita)
    client = Client()
    client.force_login(rita)
    page = client.get(f"/campaigns/{campaign.slug}/preview-as-worker/presence/").content.decode()
    assert "A cat sat." in page and "It was on a mat" in page and "Statements" in page
    assert client.get(f"/campaigns/{campaign.slug}/preview-as-worker/generation/").status_code == 404
    assert pilot.start_pilot(campaign, 3) == {"presence": 1}
