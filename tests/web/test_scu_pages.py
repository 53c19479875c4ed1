"""An "scu" campaign's settings and progress pages show only what applies to it (issue 28): its units are
imported, so there is no QA generation or verification to configure or follow."""

from __future__ import annotations

import pytest

from annotation.models import Campaign
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from tests.judges.test_hybrid_campaign import write_folder

pytestmark = pytest.mark.django_db

QA_FIELDS = ("assignments_generation", "reward_verification", "max_questions_per_predicate", "review_duplicates",
             "writer_valid_threshold", "verifier_agreement_threshold")


@pytest.fixture
def scu(tmp_path, rita):
    campaign = import_campaign(name="Units", folder=write_folder(tmp_path / "data", n_examples=2)).campaign
    Campaign.objects.filter(pk=campaign.pk).update(owner=rita)
    campaign.refresh_from_db()
    return campaign


def test_scu_settings_show_only_presence_settings_and_saving_keeps_the_rest(client_rita, scu):
    url = f"/campaigns/{scu.slug}/settings/"
    page = client_rita.get(url).content.decode()
    assert 'name="assignments_presence"' in page and 'name="reward_presence"' in page
    assert not any(f'name="{name}"' in page for name in QA_FIELDS)
    assert "QA generation rules" not in page and "QA presence" not in page
    assert "verification and redo rounds" not in page and "content units" in page
    assert 'data-stage="generation"' not in page and 'data-stage="presence"' in page
    response = client_rita.post(url, {"action": "save", **_posted(page), "assignments_presence": "5"})
    assert response.status_code == 302
    scu.refresh_from_db()
    assert scu.assignments_presence == 5 and scu.assignments_generation == 1 and scu.max_redo_rounds == 2


def _posted(page: str) -> dict:
    """The values the settings form shows (what a browser would post back unchanged)."""
    from annotation.web.forms import CampaignSettingsForm

    scu = Campaign.objects.get()
    form = CampaignSettingsForm(instance=scu)
    data = {}
    for name, field in form.fields.items():
        value = form.initial.get(name)
        if isinstance(value, bool):
            if value:
                data[name] = "on"
        elif value is not None:
            data[name] = str(value)
    return data


def test_scu_progress_shows_only_the_presence_stage(client_rita, scu):
    launch_campaign(scu)
    page = client_rita.get(f"/campaigns/{scu.slug}/progress/").content.decode()
    assert 'data-stage="presence"' in page
    assert 'data-stage="generation"' not in page and 'data-stage="verification"' not in page
    assert "Predicates settled" not in page and ">Redo<" not in page
    status = client_rita.get(f"/campaigns/{scu.slug}/progress/status/").json()
    assert list(status["stages"]) == ["presence"]


def test_qa_campaign_keeps_its_qa_settings_and_stages(client_rita, draft):
    page = client_rita.get(f"/campaigns/{draft.slug}/settings/").content.decode()
    assert all(f'name="{name}"' in page for name in QA_FIELDS) and "paper: True" not in page and "paper: yes" in page
    launch_campaign(draft)
    page = client_rita.get(f"/campaigns/{draft.slug}/progress/").content.decode()
    assert 'data-stage="generation"' in page and "Predicates settled" in page


def test_scu_progress_shows_its_cost_estimate_with_its_gold_checks(client_rita, scu):
    """The progress page's estimate was for QA campaigns only, so an "scu" campaign's gold checks (its gold
    share of presence HITs) appeared in no estimate there."""
    from annotation.services.costs import campaign_cost_preview

    Campaign.objects.filter(pk=scu.pk).update(gold_share=0.5)
    scu.refresh_from_db()
    preview = campaign_cost_preview(scu, redo_share=0.0)
    gold = next(s for s in preview.stages if s.task_type == "gold")
    launch_campaign(scu)
    page = client_rita.get(f"/campaigns/{scu.slug}/progress/").content.decode()
    assert f'id="estimate">${preview.total:.2f}<' in page
    assert 'id="estimate-gold"' in page and f"(${gold.total})" in page
    assert "go round again" not in page
