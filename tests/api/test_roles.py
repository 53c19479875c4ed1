"""Roles: admin, researcher (group, owner or shared-with) and worker-only; sharing; create_researcher."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.services import roles
from annotation.services.campaign_import import import_campaign
from hits.models import Worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(small_files, researcher):
    refs, sums = small_files
    return import_campaign(name="Roles", owner=researcher, references=refs, summaries=sums).campaign


def test_roles_follow_ownership_sharing_group_and_staff(campaign, researcher, other_researcher, django_user_model):
    from django.contrib.auth.models import AnonymousUser

    staff = django_user_model.objects.create_user("boss", is_staff=True)
    crowd = django_user_model.objects.create_user("crowd")
    Worker.objects.create(external_id="crowd", user=crowd)

    assert roles.is_admin(staff) and roles.is_researcher(staff)
    assert roles.is_researcher(researcher) and not roles.is_admin(researcher)
    assert not roles.is_researcher(other_researcher) and roles.is_worker_only(other_researcher)
    assert roles.is_worker_only(crowd) and not roles.is_worker_only(AnonymousUser())

    assert roles.can_view_campaign(researcher, campaign) and roles.can_manage_campaign(researcher, campaign)
    assert roles.can_view_campaign(staff, campaign) and roles.can_manage_campaign(staff, campaign)
    for outsider in (other_researcher, crowd, AnonymousUser()):
        assert not roles.can_view_campaign(outsider, campaign)
        assert not roles.can_manage_campaign(outsider, campaign)


def test_share_and_unshare(campaign, researcher, other_researcher, django_user_model):
    crowd = django_user_model.objects.create_user("crowd")
    with pytest.raises(PermissionDenied):
        roles.share_campaign(campaign, crowd, by=other_researcher)
    with pytest.raises(roles.SharingError, match="owns"):
        roles.share_campaign(campaign, researcher, by=researcher)
    # Sharing never turns a crowd worker into a researcher (who would see the answer keys of their tests).
    Worker.objects.create(external_id="crowd", user=crowd)
    with pytest.raises(roles.SharingError, match="not a researcher"):
        roles.share_campaign(campaign, crowd, by=researcher)
    assert roles.is_worker_only(crowd) and not campaign.shared_with.filter(pk=crowd.pk).exists()

    assert roles.share_campaign(campaign, other_researcher, by=researcher) is True
    assert roles.share_campaign(campaign, other_researcher, by=researcher) is False
    assert roles.can_manage_campaign(other_researcher, campaign)
    assert roles.is_researcher(other_researcher)

    assert roles.unshare_campaign(campaign, other_researcher, by=researcher) is True
    assert not roles.can_view_campaign(other_researcher, campaign)
    # Stays a researcher (group membership), just without this campaign.
    assert roles.is_researcher(other_researcher)
    assert roles.unshare_campaign(campaign, other_researcher, by=researcher) is False


def test_create_researcher_command(monkeypatch, django_user_model):
    monkeypatch.setenv("RESEARCHER_PW", "a-long-secret-pass")
    call_command("create_researcher", "nina", "--password-from-env", "RESEARCHER_PW")
    user = django_user_model.objects.get(username="nina")
    assert user.check_password("a-long-secret-pass")
    assert roles.is_researcher(user) and not roles.is_admin(user)

    with pytest.raises(CommandError, match="NOT_SET"):
        call_command("create_researcher", "nina", "--password-from-env", "NOT_SET")
    # Existing user: promoted without touching the password.
    crowd = django_user_model.objects.create_user("crowd", password="worker-pass-123")
    call_command("create_researcher", "crowd")
    crowd.refresh_from_db()
    assert roles.is_researcher(crowd) and crowd.check_password("worker-pass-123")


def test_demo_account_is_a_researcher(django_user_model):
    call_command("load_demo", "--password", "demo-pass-1234")
    user = django_user_model.objects.get(username="researcher")
    assert user.groups.filter(name=roles.RESEARCHERS_GROUP).exists()
    assert roles.is_researcher(user)
