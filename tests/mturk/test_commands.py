"""mturk_publish / mturk_balance / mturk_sync / mturk_expire on a campaign."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Campaign
from annotation.services.campaign_import import import_campaign
from annotation.services.costs import campaign_cost_preview
from hits.models import HIT
from hits.mturk.models import MTurkHIT

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def mturk_settings(settings):
    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.MTURK_LOCALES = []
    settings.MTURK_MIN_APPROVAL_RATE = 0


@pytest.fixture
def campaign(small_files):
    refs, sums = small_files
    return import_campaign(name="Cmd", slug="cmd", references=refs, summaries=sums).campaign


def test_dry_run_prints_requests_and_costs_without_aws(stubbed, campaign, capsys):
    call_command("mturk_publish", campaign="cmd", sandbox=True, dry_run=True, format="json")
    result = json.loads(capsys.readouterr().out)
    n_predicates = campaign.examples.values("sentences__predicates").exclude(sentences__predicates=None).count()
    assert len(result["requests"]) == n_predicates  # the launch's generation HITs
    first = result["requests"][0]
    assert first["Reward"] == "0.32" and first["MaxAssignments"] == 1 and re.fullmatch(r"qapyr-[0-9a-f]{12}-\d+", first["UniqueRequestToken"])
    assert "<ExternalURL>https://studio.example.org/work/mturk/hit/</ExternalURL>" in first["Question"]
    assert result["requests_cost"] == str((Decimal("0.38") * n_predicates).quantize(Decimal("0.01")))
    assert result["cost_preview"] == campaign_cost_preview(campaign, "mturk-sandbox").as_dict()
    # Nothing happened: still a local draft with no HIT (and the Stubber saw no call).
    campaign.refresh_from_db()
    assert campaign.state == "draft" and campaign.backend == "local" and not HIT.objects.exists()


def test_dry_run_previews_at_a_given_redo_share_and_crowd_and_refuses_bad_ones(stubbed, campaign, capsys):
    # 3 predicates: half of them again means 2 more generation and verification rounds ($0.38 + 2 x $0.20 each).
    call_command("mturk_publish", campaign="cmd", sandbox=True, dry_run=True, format="json", redo_share=0.5)
    preview = json.loads(capsys.readouterr().out)["cost_preview"]
    plain = campaign_cost_preview(campaign, "mturk-sandbox", redo_share=0)
    assert {s["task_type"]: s["hits"] for s in preview["stages"]}["generation"] == 5
    assert Decimal(preview["total"]) == plain.total + 2 * (Decimal("0.38") + Decimal("0.40"))
    with pytest.raises(CommandError, match="--redo-share must be between 0 and the campaign's max_redo_rounds"):
        call_command("mturk_publish", campaign="cmd", sandbox=True, dry_run=True, redo_share=-0.1)
    with pytest.raises(CommandError, match="--judges must be at least 1"):
        call_command("mturk_publish", campaign="cmd", sandbox=True, dry_run=True, judges=0)


def test_local_campaign_needs_an_mturk_backend(campaign):
    with pytest.raises(CommandError, match="local workers"):
        call_command("mturk_publish", campaign="cmd", dry_run=True)
    with pytest.raises(CommandError, match="no campaign"):
        call_command("mturk_publish", campaign="nope", dry_run=True)


def test_launch_is_refused_when_the_balance_cannot_cover_the_preview(stubbed, campaign):
    total = campaign_cost_preview(campaign, "mturk-sandbox").total
    stubbed.add_response("get_account_balance", {"AvailableBalance": "1.00"}, {})
    with pytest.raises(CommandError, match=rf"balance of \$1.00 cannot cover \${total}"):
        call_command("mturk_publish", campaign="cmd", sandbox=True)
    campaign.refresh_from_db()
    assert campaign.state == "draft" and not HIT.objects.exists()


def test_publish_launches_and_publishes_under_the_budget_cap(stubbed, campaign, capsys):
    stubbed.add_response("get_account_balance", {"AvailableBalance": "500.00"}, {})  # the launch's check
    stubbed.add_response("get_account_balance", {"AvailableBalance": "500.00"}, {})  # the publish's check
    stubbed.add_response("create_hit", {"HIT": {"HITId": "H1", "HITTypeId": "T"}}, None)
    stubbed.add_response("create_hit", {"HIT": {"HITId": "H2", "HITTypeId": "T"}}, None)
    call_command("mturk_publish", campaign="cmd", sandbox=True, budget_cap="0.80")  # $0.38 per generation HIT
    out = capsys.readouterr().out
    assert "Launched 'cmd'" in out and "Published 2 HITs" in out and "budget cap of $0.80 reached" in out
    campaign.refresh_from_db()
    assert campaign.state == "running" and campaign.backend == "mturk-sandbox" and campaign.batch.budget_cap == Decimal("0.80")
    assert MTurkHIT.objects.count() == 2


def test_balance_command(stubbed, campaign, capsys):
    Campaign.objects.filter(pk=campaign.pk).update(backend="mturk-sandbox")
    stubbed.add_response("get_account_balance", {"AvailableBalance": "10000.00"}, {})
    call_command("mturk_balance", campaign="cmd")
    assert "The balance covers the cost preview" in capsys.readouterr().out
    stubbed.add_response("get_account_balance", {"AvailableBalance": "0.50"}, {})
    with pytest.raises(CommandError, match="cannot cover"):
        call_command("mturk_balance", campaign="cmd")


def test_sync_and_expire_need_a_campaign_on_mturk(campaign):
    for command in ("mturk_sync", "mturk_expire"):
        with pytest.raises(CommandError, match="MTurk"):
            call_command(command, campaign="cmd")


def test_background_publish_goes_through_celery_and_reports_progress(stubbed, campaign, capsys, settings):
    settings.MTURK_PUBLISH_CHUNK = 100
    Campaign.objects.filter(pk=campaign.pk).update(backend="mturk-sandbox")
    n = campaign_cost_preview(campaign, "mturk-sandbox", redo_share=0).stages[0].hits  # one generation HIT per predicate
    stubbed.add_response("get_account_balance", {"AvailableBalance": "500.00"}, {})  # the launch's check
    stubbed.add_response("get_account_balance", {"AvailableBalance": "500.00"}, {})  # the task's check
    for i in range(n):
        stubbed.add_response("create_hit", {"HIT": {"HITId": f"H{i}", "HITTypeId": "T"}}, None)
    call_command("mturk_publish", campaign="cmd", background=True)
    assert "Publishing handed to Celery" in capsys.readouterr().out
    call_command("mturk_publish", campaign="cmd", progress=True)
    assert json.loads(capsys.readouterr().out) == {"on_mturk": n, "waiting": 0, "committed": str(Decimal("0.38") * n), "budget_cap": None}
