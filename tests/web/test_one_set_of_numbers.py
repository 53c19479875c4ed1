"""Issue 40: the settings, progress and agreement pages state the same gold-check count, the same judges per gold
check and the same presence-judges rule (each computed by one function); pages have a favicon that loads."""

from __future__ import annotations

import re

import pytest

from annotation.models import Campaign, GoldPresence
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from hits.models import HIT
from tests.judges.test_hybrid_campaign import write_folder

pytestmark = pytest.mark.django_db


@pytest.fixture
def scu(tmp_path, rita):
    """2 examples x 4 systems x 2 presence HITs of 4 units; only system "alpha" has imported labels, so only its
    4 HITs can become gold checks: half of them, 2, where half of all 16 HITs would be 8."""
    campaign = import_campaign(name="Numbers", folder=write_folder(tmp_path / "data", n_examples=2)).campaign
    GoldPresence.objects.filter(origin="imported").exclude(summary__system__name="alpha").delete()
    Campaign.objects.filter(pk=campaign.pk).update(owner=rita, gold_share=0.5, presence_judges="adaptive")
    campaign.refresh_from_db()
    return campaign


def gold_figures(page: str, pattern: str) -> tuple[int, int]:
    found = re.search(pattern, page)
    assert found, pattern
    return int(found["hits"]), int(found["judges"])


SETTINGS_GOLD = r"the estimate assumes (?P<judges>\d+) judges meet each of the (?P<hits>\d+) gold checks?"
PROGRESS_GOLD = r"It includes (?P<hits>\d+) gold checks?, each paid to (?P<judges>\d+) judges"
STATEMENT = "2 judges on every presence HIT, one more at a time where they disagree (at most 3)"


def test_settings_and_progress_state_the_gold_checks_there_are_and_the_same_judges(client_rita, scu):
    launch_campaign(scu)
    drawn = HIT.objects.filter(batch_id=Campaign.objects.get(pk=scu.pk).batch_id, kind=HIT.Kind.GOLD).count()
    assert drawn == 2
    settings = client_rita.get(f"/campaigns/{scu.slug}/settings/").content.decode()
    progress = client_rita.get(f"/campaigns/{scu.slug}/progress/").content.decode()
    assert gold_figures(settings, SETTINGS_GOLD) == gold_figures(progress, PROGRESS_GOLD) == (drawn, 3)
    assert re.search(r'data-stage="gold"><td>Gold</td><td class="num">2</td><td class="num">3</td>', settings)
    # The presence rule, in one wording, on every page that states it.
    agreement = client_rita.get(f"/campaigns/{scu.slug}/agreement/").content.decode()
    for page in (settings, progress):
        assert f'<span class="judges-statement">{STATEMENT}</span>' in page
    assert "With these values: " + STATEMENT in settings
    assert "2, and a third" not in settings + progress + agreement and "3 always" not in settings


def test_the_rule_statement_follows_the_judges_setting():
    assert Campaign(assignments_presence=3, presence_judges="fixed").presence_judges_statement == "3 judges on every presence HIT"
    assert Campaign(assignments_presence=5, presence_judges="adaptive").presence_judges_statement == (
        "3 judges on every presence HIT, one more at a time where they disagree (at most 5)")
    assert Campaign(assignments_presence=1, presence_judges="adaptive").presence_judges_statement == "1 judge on every presence HIT"


def test_every_page_has_a_favicon_that_loads(client_rita, scu):
    for url in ("/", f"/campaigns/{scu.slug}/settings/", "/accounts/login/"):
        page = client_rita.get(url).content.decode()
        icon = re.search(r'<link rel="icon" href="([^"]+)"', page)
        assert icon, url
        response = client_rita.get(icon.group(1))
        assert response.status_code == 200 and response["Content-Type"].startswith("image/svg")
    redirect = client_rita.get("/favicon.ico")
    assert redirect.status_code == 301 and client_rita.get(redirect["Location"]).status_code == 200
