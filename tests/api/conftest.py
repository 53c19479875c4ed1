"""Fixtures of the API tests: one user per role and a campaign owned by one researcher, shared with another."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.services.roles import make_researcher, share_campaign
from annotation.services.campaign_import import import_campaign
from hits.models import Worker
from tests.conftest import write_jsonl

ROLES = ("anonymous", "worker", "owner", "other_researcher", "shared", "admin")


@pytest.fixture
def api_world(tmp_path, django_user_model):
    """Users of every role; ``campaign`` (owner's, shared with ``shared``) and ``other`` (other_researcher's)."""
    users = {
        "worker": django_user_model.objects.create_user("crowd1"),
        "owner": django_user_model.objects.create_user("owner1"),
        "other_researcher": django_user_model.objects.create_user("other1"),
        "shared": django_user_model.objects.create_user("shared1"),
        "admin": django_user_model.objects.create_user("admin1", is_staff=True),
    }
    Worker.objects.create(external_id="crowd1", user=users["worker"])
    for role in ("owner", "other_researcher"):
        make_researcher(users[role])
    refs = write_jsonl(
        tmp_path / "refs.jsonl",
        [
            {"id": "a", "reference": "The mayor opened a new park. Children played there all day."},
            {"id": "b", "reference": "Storms closed the airport on Monday."},
        ],
    )
    sums = write_jsonl(
        tmp_path / "sums.jsonl",
        [
            {"id": "a", "system": "alpha", "summary": "A park opened."},
            {"id": "b", "system": "alpha", "summary": "The airport closed."},
            {"id": "a", "system": "beta", "summary": "Children played in a new park."},
            {"id": "b", "system": "beta", "summary": "Storms hit on Monday."},
        ],
    )
    campaign = import_campaign(name="Parks", owner=users["owner"], references=refs, summaries=sums).campaign
    share_campaign(campaign, users["shared"], by=users["owner"])
    refs2 = write_jsonl(tmp_path / "refs2.jsonl", [{"id": "x", "reference": "Rain fell on the city."}])
    sums2 = write_jsonl(tmp_path / "sums2.jsonl", [{"id": "x", "system": "gamma", "summary": "It rained."}])
    other = import_campaign(name="Rain", owner=users["other_researcher"], references=refs2, summaries=sums2).campaign
    return {"users": users, "campaign": campaign, "other": other}


def client_for(world, role: str) -> APIClient:
    """An API client authenticated with the role's token (anonymous: no credentials)."""
    client = APIClient()
    if role != "anonymous":
        token, _ = Token.objects.get_or_create(user=world["users"][role])
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def submitted_assignment(world, external_id: str = "crowd1"):
    """Launch the owner's campaign and give ``external_id`` a generation assignment, submitted (awaiting review)."""
    from django.utils import timezone

    from annotation.services.pipeline import launch_campaign
    from hits.models import Assignment, TaskType
    from hits.services import accept_next

    campaign = world["campaign"]
    if campaign.batch_id is None:
        launch_campaign(campaign)
        campaign.refresh_from_db()
    worker, _ = Worker.objects.get_or_create(external_id=external_id)
    assignment = accept_next(worker, TaskType.objects.get(slug="generation"))
    Assignment.objects.filter(pk=assignment.pk).update(state=Assignment.State.SUBMITTED, submitted_at=timezone.now())
    assignment.refresh_from_db()
    return assignment
