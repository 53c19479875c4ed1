"""Issue 38, item 12: ``simulate_crowd --backend mturk`` fails loudly (CommandError, non-zero exit) with MTurk's own
error when the stand-in refuses the credentials, and when the work is stuck for a reason the platform can name."""

from __future__ import annotations

import json
import urllib.request

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Campaign
from annotation.services.campaign_import import import_campaign

pytestmark = pytest.mark.django_db(transaction=True)


def _mturk_campaign(small_files, name: str) -> Campaign:
    refs, sums = small_files
    campaign = import_campaign(name=name, references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(backend=Campaign.Backend.MTURK_SANDBOX)
    return campaign


def test_credentials_the_standin_refuses_end_the_command_with_mturks_error(standin, small_files, eager_celery):
    standin.access_key = "AKIDTHEACCOUNTONLY"  # the platform signs with AWS_ACCESS_KEY_ID=rehearsal
    campaign = _mturk_campaign(small_files, "Wrong key")
    with pytest.raises(CommandError, match="UnrecognizedClientException.*security token included in the request is invalid"):
        call_command("simulate_crowd", campaign=campaign.slug, backend="mturk", workers=2, max_seconds=60)
    campaign.refresh_from_db()
    assert campaign.state == Campaign.State.DRAFT  # nothing launched on a market that refuses us


def test_work_stuck_on_a_balance_too_small_ends_the_command_with_the_reason(standin, small_files, eager_celery, capsys):
    request = urllib.request.Request(f"{standin.url}/_standin/balance", data=json.dumps({"balance": "0.05"}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(request, timeout=10).close()
    campaign = _mturk_campaign(small_files, "No money")
    with pytest.raises(CommandError, match=r"stuck: open HITs wait unpublished: the MTurk balance of \$0\.05 cannot cover"):
        call_command("simulate_crowd", campaign=campaign.slug, backend="mturk", workers=2, max_seconds=60)
    assert "campaign running (stuck" in capsys.readouterr().out  # the figures are printed first
