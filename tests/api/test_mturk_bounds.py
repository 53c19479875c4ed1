"""Issue 30, item 3: MTurk's documented bounds on a HIT's times, refused where a researcher sets them (settings
form, API, import), and a launch refused when MTurk would pay work before a sync could see it."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.forms.models import model_to_dict

from annotation.models import Campaign
from annotation.services.campaign_import import CampaignImportError, import_campaign
from annotation.services.pipeline import LaunchError, launch_campaign
from annotation.web.forms import CampaignSettingsForm
from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db

OUT_OF_BOUNDS = [
    ("mturk_assignment_duration", 29, "AssignmentDurationInSeconds must be from 30 to 31,536,000 seconds; 29 is below 30"),
    ("mturk_assignment_duration", 31_536_001, "AssignmentDurationInSeconds must be from 30 to 31,536,000 seconds; 31536001 is above 31,536,000"),
    ("mturk_hit_lifetime", 10, "LifetimeInSeconds must be from 30 to 31,536,000 seconds; 10 is below 30"),
    ("mturk_auto_approval_delay", 2_592_001, "AutoApprovalDelayInSeconds must be from 0 to 2,592,000 seconds; 2592001 is above 2,592,000"),
]


def _form_data(campaign: Campaign, **changes) -> dict:
    form = CampaignSettingsForm(instance=campaign)
    data = {k: v for k, v in model_to_dict(campaign, fields=list(form.fields)).items() if v is not None and v is not False}
    data.update(changes)
    return data


@pytest.mark.parametrize("field,value,message", OUT_OF_BOUNDS)
def test_the_settings_form_refuses_times_outside_mturks_bounds_naming_the_bound(api_world, field, value, message):
    campaign = Campaign.objects.get(slug="parks")
    form = CampaignSettingsForm(_form_data(campaign, **{field: value}), instance=campaign)
    assert not form.is_valid() and message in form.errors[field][0]
    good = CampaignSettingsForm(_form_data(campaign, mturk_assignment_duration=30, mturk_hit_lifetime=31_536_000,
                                           mturk_auto_approval_delay=0), instance=campaign)
    assert good.is_valid(), good.errors


@pytest.mark.parametrize("field,value,message", OUT_OF_BOUNDS)
def test_the_api_refuses_times_outside_mturks_bounds_naming_the_bound(api_world, field, value, message):
    client = client_for(api_world, "owner")
    response = client.patch("/api/campaigns/parks/", {field: value}, format="json")
    assert response.status_code == 400 and message in response.json()[field][0]
    assert getattr(Campaign.objects.get(slug="parks"), field) is None
    ok = client.patch("/api/campaigns/parks/", {"mturk_hit_lifetime": 86400}, format="json")
    assert ok.status_code == 200 and ok.json()["mturk_hit_lifetime"] == 86400


def test_the_import_refuses_times_outside_mturks_bounds_naming_the_option_and_the_bound(small_files):
    refs, sums = small_files
    with pytest.raises(CampaignImportError) as refused:
        import_campaign(name="Too long", references=refs, summaries=sums,
                        campaign_settings={"mturk_hit_lifetime": 40_000_000, "mturk_auto_approval_delay": -1})
    text = " ".join(str(p) for p in refused.value.problems)
    assert "--mturk-hit-lifetime" in text and "LifetimeInSeconds must be from 30 to 31,536,000 seconds" in text
    assert "--mturk-auto-approval-delay" in text and "AutoApprovalDelayInSeconds must be from 0 to 2,592,000" in text
    assert not Campaign.objects.filter(name="Too long").exists()
    with pytest.raises(CommandError, match="AssignmentDurationInSeconds must be from 30"):
        call_command("import_campaign", "--name", "Cmd", "--references", str(refs), "--summaries", str(sums),
                     "--predicates", "none", "--mturk-assignment-duration", "5")
    call_command("import_campaign", "--name", "Cmd", "--references", str(refs), "--summaries", str(sums),
                 "--predicates", "none", "--mturk-auto-approval-delay", "86400")
    assert Campaign.objects.get(slug="cmd").mturk_auto_approval_delay == 86400


def test_launch_refuses_an_automatic_approval_sooner_than_three_syncs_with_the_reason(api_world, settings):
    settings.MTURK_SYNC_INTERVAL = 300
    campaign = Campaign.objects.get(slug="parks")
    Campaign.objects.filter(pk=campaign.pk).update(backend=Campaign.Backend.MTURK_SANDBOX, mturk_auto_approval_delay=600)
    with pytest.raises(LaunchError, match=r"sooner than 3 syncs \(3 x MTURK_SYNC_INTERVAL 300 s = 900 s\)"):
        launch_campaign(campaign)
    assert Campaign.objects.get(pk=campaign.pk).state == Campaign.State.DRAFT
    settings.MTURK_AUTO_APPROVAL_DELAY = 60  # the platform's own default is checked too
    Campaign.objects.filter(pk=campaign.pk).update(mturk_auto_approval_delay=None)
    with pytest.raises(LaunchError, match="set an automatic approval delay of at least 900 seconds"):
        launch_campaign(campaign)
    # Through the API the researcher reads the same reason.
    response = client_for(api_world, "owner").post("/api/campaigns/parks/launch/")
    assert response.status_code in (400, 409) and "900" in str(response.json())


def test_launched_times_are_what_the_hits_are_created_with(api_world, settings):
    from hits.mturk.publishing import create_hit_request

    settings.MTURK_SYNC_INTERVAL = 300
    campaign = Campaign.objects.get(slug="parks")
    Campaign.objects.filter(pk=campaign.pk).update(
        backend=Campaign.Backend.MTURK_SANDBOX, mturk_assignment_duration=3600, mturk_hit_lifetime=86400, mturk_auto_approval_delay=7200,
    )
    launch_campaign(campaign)
    campaign.refresh_from_db()
    hit = campaign.batch.hits.select_related("task_type", "batch").first()
    params = create_hit_request(hit)
    assert (params["AssignmentDurationInSeconds"], params["LifetimeInSeconds"], params["AutoApprovalDelayInSeconds"]) == (3600, 86400, 7200)
