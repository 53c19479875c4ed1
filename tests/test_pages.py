"""Researcher pages: who sees what, and text shown safely."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.services.campaign_import import import_campaign
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db


def test_anonymous_home_offers_login_and_lists_nothing(client, small_files, researcher):
    refs, sums = small_files
    import_campaign(name="Private", owner=researcher, references=refs, summaries=sums)
    response = client.get("/")
    assert response.status_code == 200
    assert b"Log in" in response.content and b"Private" not in response.content
    detail = client.get(reverse("campaign-detail", args=["private"]))
    assert detail.status_code == 302 and detail["Location"].startswith("/accounts/login/")


def test_owner_sees_campaign_and_other_researcher_does_not(client, small_files, researcher, other_researcher):
    refs, sums = small_files
    import_campaign(name="Mine", owner=researcher, references=refs, summaries=sums)
    client.force_login(researcher)
    home = client.get("/")
    assert b'href="/campaigns/mine/"' in home.content
    page = client.get("/campaigns/mine/")
    assert page.status_code == 200
    assert b'<mark class="predicate" title="open">opened</mark>' in page.content
    client.force_login(other_researcher)
    assert b"/campaigns/mine/" not in client.get("/").content
    assert client.get("/campaigns/mine/").status_code == 404


def test_shared_campaign_is_visible_to_the_colleague(client, small_files, researcher, other_researcher):
    refs, sums = small_files
    campaign = import_campaign(name="Shared", owner=researcher, references=refs, summaries=sums).campaign
    campaign.shared_with.add(other_researcher)
    client.force_login(other_researcher)
    assert client.get("/campaigns/shared/").status_code == 200


def test_reference_text_is_escaped(client, tmp_path, researcher):
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "x", "reference": "Hackers wrote <script>alert(1)</script> here."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "x", "system": "s", "summary": "<b>bold</b>"}])
    import_campaign(name="Esc", owner=researcher, references=refs, summaries=sums)
    client.force_login(researcher)
    content = client.get("/campaigns/esc/").content
    assert b"<script>" not in content and b"</script>" not in content and b"<b>" not in content
    assert b"&lt;script&gt;" in content


def test_login_page_and_health_check(client, researcher):
    assert client.get("/healthz").json() == {"status": "ok"}
    response = client.post("/accounts/login/", {"username": "rita", "password": "a-long-test-password"})
    assert response.status_code == 302
    assert client.get("/").context["user"].username == "rita"
