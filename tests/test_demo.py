"""The demo campaign and account that `make demo` loads."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

from annotation.models import Campaign, Predicate, SystemSummary

pytestmark = pytest.mark.django_db


def test_load_demo_creates_account_and_campaign_once_and_the_home_page_lists_it(client, capsys):
    call_command("load_demo")
    out = capsys.readouterr().out
    password = re.search(r"password '([^']+)'", out).group(1)
    campaign = Campaign.objects.get(slug="demo-news")
    assert campaign.examples.count() == 6 and campaign.systems.count() == 4
    assert SystemSummary.objects.filter(system__campaign=campaign).count() == 24
    assert Predicate.objects.filter(sentence__example__campaign=campaign).count() >= 6 * 3
    call_command("load_demo")
    assert "already present" in capsys.readouterr().out
    assert Campaign.objects.count() == 1
    assert client.login(username="researcher", password=password) is False  # the second run set a new password
    call_command("load_demo", password="known-demo-password")
    assert client.login(username="researcher", password="known-demo-password")
    page = client.get("/")
    assert b"Demo news" in page.content and b'href="/campaigns/demo-news/"' in page.content
