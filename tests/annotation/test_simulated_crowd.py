"""A whole campaign from import to presence judgments, done by the simulated crowd over HTTP."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import Campaign, ContentUnit, GoldPresence, PresenceJudgment, SystemSummary

pytestmark = pytest.mark.django_db(transaction=True)


def test_simulated_crowd_completes_the_demo_campaign(capsys):
    call_command("load_demo", password="demo-pass-123")
    call_command("simulate_crowd", campaign="demo-news", workers=8, seed=3)
    out = capsys.readouterr().out
    assert "campaign finished" in out
    for stage in ("generation", "verification", "presence"):
        assert f"{stage}: " in out
    campaign = Campaign.objects.get(slug="demo-news")
    assert campaign.state == "finished"
    kept = ContentUnit.objects.filter(example__campaign=campaign, state="kept")
    assert kept.count() >= 20
    # Every system summary has presence judgments, three per kept unit.
    for summary in SystemSummary.objects.filter(system__campaign=campaign):
        n_units = kept.filter(example=summary.example_id).count()
        assert PresenceJudgment.objects.filter(summary=summary).count() == 3 * n_units
        assert GoldPresence.objects.filter(summary=summary).count() == n_units
