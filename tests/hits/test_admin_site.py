"""The Django admin: every quality-control model is there, and no form steps around a logged service."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from hits.models import HIT, Assignment, QualificationEvent, Worker
from hits.services import accept_next, worker_for_user
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-test-password"


@pytest.fixture
def world(tmp_path, django_user_model):
    admin = django_user_model.objects.create_superuser("ada", password=PASSWORD)
    rita = django_user_model.objects.create_user("rita", password=PASSWORD)
    make_researcher(rita)
    crowd = django_user_model.objects.create_user("crowd-member", password=PASSWORD)
    worker = worker_for_user(crowd)
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    campaign = import_campaign(name="Admin view", references=refs, summaries=sums, owner=rita).campaign
    launch_campaign(campaign)
    accept_next(worker, HIT.objects.first().task_type)
    client = Client()
    client.force_login(admin)
    return {"admin": admin, "client": client, "worker": worker, "campaign": campaign, "rita": rita, "crowd": crowd}


def test_every_quality_control_model_is_listed(world):
    client = world["client"]
    for model in ("invitation", "hit", "assignment", "qualification", "qualificationevent", "tasktype", "batchblock"):
        assert client.get(f"/admin/hits/{model}/").status_code == 200, model


def test_hits_and_assignments_are_read_only_and_answer_keys_hidden(world):
    client = world["client"]
    hit = HIT.objects.first()
    page = client.get(f"/admin/hits/hit/{hit.pk}/change/")
    assert page.status_code == 200 and "answer_key" not in page.content.decode()
    assert client.post(f"/admin/hits/hit/{hit.pk}/change/", {"state": "cancelled"}).status_code == 403
    assignment = Assignment.objects.first()
    assert client.post(f"/admin/hits/assignment/{assignment.pk}/change/", {"state": "approved"}).status_code == 403
    assert client.get("/admin/hits/hit/add/").status_code == 403


def test_blocking_in_the_worker_form_is_the_logged_block(world):
    client, worker = world["client"], world["worker"]
    page = client.get(f"/admin/hits/worker/{worker.pk}/change/")
    assert page.status_code == 200
    response = client.post(
        f"/admin/hits/worker/{worker.pk}/change/",
        {"external_id": worker.external_id, "mturk_worker_id": "", "user": worker.user_id, "blocked": "on",
         "blocked_reason": "spam answers", "auto_accept_next": "on"},
    )
    assert response.status_code == 302
    worker.refresh_from_db()
    assert worker.blocked and worker.blocked_reason == "spam answers"
    event = QualificationEvent.objects.get(worker=worker, action="block")
    assert event.decided_by == world["admin"] and event.reason == "spam answers" and event.batch is None
    client.post(
        f"/admin/hits/worker/{worker.pk}/change/",
        {"external_id": worker.external_id, "mturk_worker_id": "", "user": worker.user_id, "blocked_reason": "", "auto_accept_next": "on"},
    )
    worker.refresh_from_db()
    assert not worker.blocked and QualificationEvent.objects.filter(worker=worker, action="unblock", decided_by=world["admin"]).exists()


def test_the_campaign_form_has_no_state_select_and_no_workers_as_owners(world):
    client, campaign = world["client"], world["campaign"]
    page = client.get(f"/admin/annotation/campaign/{campaign.pk}/change/").content.decode()
    assert 'name="state"' not in page
    owner_select = page.split('name="owner"')[1].split("</select>")[0]
    sharers = page.split('name="shared_with"')[1].split("</select>")[0]
    assert ">rita<" in owner_select and ">ada<" in owner_select
    assert "crowd-member" not in owner_select and "crowd-member" not in sharers
    # A researcher whose account is switched off is no longer offered (as roles.is_researcher says).
    from annotation.services.roles import make_researcher

    gone = type(world["rita"]).objects.create_user("gone-researcher", password=PASSWORD, is_active=False)
    make_researcher(gone)
    page = client.get(f"/admin/annotation/campaign/{campaign.pk}/change/").content.decode()
    assert "gone-researcher" not in page.split('name="owner"')[1].split("</select>")[0]


def test_an_invitation_cannot_get_fewer_uses_than_it_has_had(world):
    """A clear form error, not a database error (the admin form skips the check on read-only ``uses``)."""
    from hits.models import Invitation

    invitation = Invitation.objects.create(max_uses=10, uses=5, note="spring")
    url = f"/admin/hits/invitation/{invitation.pk}/change/"
    response = world["client"].post(url, {"note": "spring", "batch": "", "max_uses": "2", "expires_at_0": "", "expires_at_1": ""})
    assert response.status_code == 200 and "At least 5" in response.content.decode()
    assert Invitation.objects.get(pk=invitation.pk).max_uses == 10
    ok = world["client"].post(url, {"note": "spring", "batch": "", "max_uses": "6", "expires_at_0": "", "expires_at_1": ""})
    assert ok.status_code == 302 and Invitation.objects.get(pk=invitation.pk).max_uses == 6


def test_the_admin_refuses_a_reserved_slug_like_every_other_way(world, rf):
    """'new' and 'jobs' are pages under /campaigns/: a campaign there could never be opened."""
    from django.contrib import admin as django_admin
    from django.forms.models import model_to_dict

    from annotation.models import Campaign

    campaign = world["campaign"]
    original = campaign.slug
    request = rf.get("/admin/")
    request.user = world["admin"]
    form_class = django_admin.site._registry[Campaign].get_form(request, campaign)
    data = {k: v for k, v in model_to_dict(campaign).items() if v is not None}
    data["shared_with"] = [u.pk for u in data.get("shared_with", [])]
    assert form_class(data={**data}, instance=campaign).is_valid(), form_class(data={**data}, instance=campaign).errors
    for reserved in ("jobs", "new"):
        form = form_class(data={**data, "slug": reserved}, instance=campaign)
        assert not form.is_valid() and "address of a page" in str(form.errors["slug"])
    assert Campaign.objects.get(pk=campaign.pk).slug == original


def test_the_admin_lists_who_registered_through_each_invitation(world):
    """Issue 28: the admin could not see who registered through which invitation."""
    from hits.models import Invitation

    spring, autumn = Invitation.objects.create(note="spring"), Invitation.objects.create(note="autumn")
    for name in ("una", "vic"):
        Client().post(f"/join/{spring.token}/", {"username": name, "password1": "pw-long-enough-42", "password2": "pw-long-enough-42"})
    Client().post(f"/join/{autumn.token}/", {"username": "wes", "password1": "pw-long-enough-42", "password2": "pw-long-enough-42"})
    client = world["client"]
    page = client.get(f"/admin/hits/invitation/{spring.pk}/change/").content.decode()
    section = page.split("Registrations through this link")[1]
    assert "(una)" in section and "(vic)" in section and "(wes)" not in section
    una = Worker.objects.get(user__username="una")
    assert f"/admin/hits/worker/{una.pk}/change/" in section
    listing = client.get("/admin/hits/invitation/").content.decode()
    assert "Registered" in listing
    workers = client.get(f"/admin/hits/worker/?invitation__id__exact={autumn.pk}").content.decode()
    assert "wes" in workers and "una" not in workers
    # A link nobody used says so.
    unused = Invitation.objects.create(note="unused")
    assert "Nobody yet." in client.get(f"/admin/hits/invitation/{unused.pk}/change/").content.decode()


def test_admin_model_names_are_spelled_right(world):
    """Issue 28: "Ledger entrys" in the admin."""
    index = world["client"].get("/admin/").content.decode()
    assert "entrys" not in index.lower()
    assert "Ledger entries" in index
    assert "Ledger entries" in world["client"].get("/admin/hits/ledgerentry/").content.decode()
    # The models the admin does not list are named right too (deletion summaries and errors name them).
    from django.apps import apps

    names = {m._meta.label: str(m._meta.verbose_name_plural) for m in apps.get_models()}
    assert not [label for label, plural in names.items() if plural.endswith("ys") or plural.endswith("entrys")]
    assert names["hits.FollowUp"] == "follow-ups" and names["hits.HITExclusion"] == "HIT exclusions"
    assert names["hits.MTurkUnknownSubmission"] == "MTurk submissions not made through the HIT page"
