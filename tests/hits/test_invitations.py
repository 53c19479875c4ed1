"""Invitation links: the "Invite workers" page, ``manage.py invite``, and the use limit under concurrent sign-ups."""

from __future__ import annotations

import io
import threading
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections
from django.test import Client
from django.utils import timezone

from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import ensure_batch
from annotation.services.roles import make_researcher
from hits.invitations import create_invitation
from hits.models import Invitation, Worker
from tests.conftest import write_jsonl

PASSWORD = "a-long-test-password"


def _campaign(tmp_path, name, owner=None):
    folder = tmp_path / name
    folder.mkdir()
    refs = write_jsonl(folder / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(folder / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    return import_campaign(name=name, references=refs, summaries=sums, owner=owner).campaign


def _sign_up(client, token, username):
    return client.post(f"/join/{token}/", {"username": username, "password1": PASSWORD, "password2": PASSWORD})


@pytest.mark.django_db
def test_invite_command_prints_a_link_with_its_limits(tmp_path):
    campaign = _campaign(tmp_path, "Invited")
    out, err = io.StringIO(), io.StringIO()
    call_command("invite", "--campaign", campaign.slug, "--uses", "3", "--expires", "2", stdout=out, stderr=err)
    invitation = Invitation.objects.get()
    assert out.getvalue().strip().endswith(f"/join/{invitation.token}/")
    assert invitation.max_uses == 3 and invitation.batch_id == type(campaign).objects.get(pk=campaign.pk).batch_id
    assert timedelta(days=1.99) < invitation.expires_at - timezone.now() < timedelta(days=2.01)
    assert "3 uses, until" in err.getvalue()
    with pytest.raises(CommandError, match="--uses"):
        call_command("invite", "--campaign", campaign.slug, "--uses", "0", stdout=io.StringIO(), stderr=io.StringIO())
    for option, value in (("--expires", "inf"), ("--expires", "nan"), ("--expires", "3000000"), ("--uses", "10000000"),
                          ("--note", "x" * 201)):
        with pytest.raises(CommandError, match=option):  # a clear error, not an OverflowError
            call_command("invite", "--campaign", campaign.slug, option, value, stdout=io.StringIO(), stderr=io.StringIO())
    assert Invitation.objects.count() == 1
    with pytest.raises(CommandError, match="no-such"):
        call_command("invite", "--campaign", "no-such", stdout=io.StringIO(), stderr=io.StringIO())


@pytest.mark.django_db
def test_the_invite_page_creates_lists_and_revokes_links_of_its_campaign_only(tmp_path, django_user_model):
    rita = django_user_model.objects.create_user("rita", password=PASSWORD)
    oscar = django_user_model.objects.create_user("oscar", password=PASSWORD)
    make_researcher(oscar)
    campaign = _campaign(tmp_path, "Ritas", owner=rita)
    client = Client()
    client.force_login(rita)
    page = client.get(f"/campaigns/{campaign.slug}/invitations/")
    assert page.status_code == 200 and "No links yet" in page.content.decode()
    bad = client.post(f"/campaigns/{campaign.slug}/invitations/", {"action": "create", "max_uses": "0", "expires_in_days": "3", "note": "hi"})
    assert bad.status_code == 400 and 'value="hi"' in bad.content.decode() and not Invitation.objects.exists()
    client.post(f"/campaigns/{campaign.slug}/invitations/", {"action": "create", "max_uses": "2", "expires_in_days": "3"})
    invitation = Invitation.objects.get()
    listed = client.get(f"/campaigns/{campaign.slug}/invitations/").content.decode()
    assert f"/join/{invitation.token}/" in listed and "0 of 2" in listed and "Copy" in listed
    # Another researcher neither sees nor revokes it.
    other = Client()
    other.force_login(oscar)
    assert other.get(f"/campaigns/{campaign.slug}/invitations/").status_code in (403, 404)
    assert other.post(f"/campaigns/{campaign.slug}/invitations/", {"action": "revoke", "invitation": invitation.pk}).status_code in (403, 404)
    assert Invitation.objects.get().revoked_at is None
    for garbage in ("abc", "²", "9" * 30):  # a 404, not a server error
        assert client.post(f"/campaigns/{campaign.slug}/invitations/", {"action": "revoke", "invitation": garbage}).status_code == 404
    # A worker joins; then the link is revoked and the next one is refused.
    assert _sign_up(Client(), invitation.token, "first-worker").status_code == 302
    assert Worker.objects.filter(user__username="first-worker").exists()
    client.post(f"/campaigns/{campaign.slug}/invitations/", {"action": "revoke", "invitation": invitation.pk})
    assert "revoked" in client.get(f"/campaigns/{campaign.slug}/invitations/").content.decode()
    assert _sign_up(Client(), invitation.token, "second-worker").status_code == 404
    assert not User.objects.filter(username="second-worker").exists()


@pytest.mark.django_db
def test_a_used_up_or_expired_link_creates_no_account():
    used = create_invitation(max_uses=1)
    assert _sign_up(Client(), used.token, "one").status_code == 302
    assert _sign_up(Client(), used.token, "two").status_code == 404
    expired = create_invitation(max_uses=5)
    Invitation.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert _sign_up(Client(), expired.token, "three").status_code == 404
    assert sorted(User.objects.values_list("username", flat=True)) == ["one"]
    assert Invitation.objects.get(pk=used.pk).uses == 1


@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_sign_ups_on_a_one_use_link_create_one_account():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent transactions are exercised on PostgreSQL (SQLite serialises writers)")
    invitation = create_invitation(max_uses=1)
    barrier = threading.Barrier(10)
    statuses, errors = [], []

    def sign_up(i):
        try:
            client = Client()
            barrier.wait(timeout=30)
            statuses.append(_sign_up(client, invitation.token, f"racer{i}").status_code)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sign_up, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert sorted(statuses) == [302] + [404] * 9
    assert User.objects.filter(username__startswith="racer").count() == 1
    assert Invitation.objects.get(pk=invitation.pk).uses == 1


@pytest.mark.django_db
def test_links_carry_the_address_the_page_was_asked_on_or_public_base_url(tmp_path, django_user_model, settings):
    rita = django_user_model.objects.create_user("rita", password=PASSWORD)
    campaign = _campaign(tmp_path, "Ritas", owner=rita)
    invitation = create_invitation(batch=ensure_batch(campaign))
    settings.PUBLIC_BASE_URL = ""
    client = Client(HTTP_HOST="localhost:8811")
    client.force_login(rita)
    page = client.get(f"/campaigns/{campaign.slug}/invitations/").content.decode()
    assert f'value="http://localhost:8811/join/{invitation.token}/"' in page
    assert "127.0.0.1:8000" not in page
    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    page = client.get(f"/campaigns/{campaign.slug}/invitations/").content.decode()
    assert f'value="https://studio.example.org/join/{invitation.token}/"' in page


@pytest.mark.django_db
def test_the_invite_command_prints_the_address_make_demo_serves_on(tmp_path, settings):
    import subprocess

    from tests.conftest import REPO

    campaign = _campaign(tmp_path, "Invited")
    settings.PUBLIC_BASE_URL = ""
    settings.DATA_DIR = tmp_path / "var"

    def printed():
        out = io.StringIO()
        call_command("invite", "--campaign", campaign.slug, stdout=out, stderr=io.StringIO())
        return out.getvalue().strip()

    assert printed().startswith("http://127.0.0.1:8000/join/")  # nothing served yet: Django's default address
    # `make demo PORT=8811` writes where it serves before it starts (the same target, run alone here).
    subprocess.run(["make", "--no-print-directory", "served-at", "PORT=8811", f"DATA_DIR={settings.DATA_DIR}"],
                   cwd=REPO, check=True, capture_output=True, timeout=60)
    link = printed()
    token = Invitation.objects.order_by("-pk").first().token
    assert link == f"http://127.0.0.1:8811/join/{token}/"
    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    assert printed().startswith("https://studio.example.org/join/")
