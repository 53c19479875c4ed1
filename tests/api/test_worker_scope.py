"""Exclude and include through the API touch only the campaign's own workers (issue 27, L3).

The API took any worker of the platform: a 200 and a QualificationEvent about a worker who never
worked in the campaign, and a 400 "no worker" for a name unknown anywhere (telling who exists).
Now, like the workers page's form: the same 404 for both, and nothing written."""

from __future__ import annotations

import pytest
from django.test import Client

from hits.models import QualificationEvent, Worker
from tests.api.conftest import api_world, client_for, submitted_assignment  # noqa: F401 - fixture used by name

pytestmark = pytest.mark.django_db


def test_exclude_and_include_answer_404_for_anyone_outside_the_campaign(api_world):
    from django.utils import timezone

    from annotation.models import Campaign
    from annotation.services.pipeline import launch_campaign
    from hits.models import HIT, Assignment

    submitted_assignment(api_world)  # crowd1 works in the owner's campaign
    launch_campaign(api_world["other"])
    other_hit = HIT.objects.filter(batch_id=Campaign.objects.get(pk=api_world["other"].pk).batch_id).first()
    now = timezone.now()
    Assignment.objects.create(  # "elsewhere" works only in another researcher's campaign
        hit=other_hit, worker=Worker.objects.create(external_id="elsewhere"), state=Assignment.State.SUBMITTED,
        accepted_at=now, expires_at=now, submitted_at=now,
    )
    api = client_for(api_world, "owner")
    browser = Client()
    browser.force_login(api_world["users"]["owner"])
    slug = api_world["campaign"].slug
    answers = {}
    for name in ("elsewhere", "nobody-at-all"):
        for action in ("exclude", "include"):
            response = api.post(f"/api/campaigns/{slug}/workers/{action}/", {"worker": name}, format="json")
            answers[(name, action)] = (response.status_code, response.json())
        form = browser.post(f"/campaigns/{slug}/workers/action/", {"worker": name, "action": "exclude"})
        assert form.status_code == 404
    assert all(answer == (404, {"detail": "No such worker in this campaign."}) for answer in answers.values()), answers
    assert not QualificationEvent.objects.exists()
    # The campaign's own worker is still excluded and included.
    assert api.post(f"/api/campaigns/{slug}/workers/exclude/", {"worker": "crowd1"}, format="json").status_code == 200
    assert api.post(f"/api/campaigns/{slug}/workers/include/", {"worker": "crowd1"}, format="json").status_code == 200
    assert set(QualificationEvent.objects.values_list("worker__external_id", flat=True)) == {"crowd1"}
