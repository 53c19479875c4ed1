"""The Prolific cost preview includes the screening studies: every participant who takes a task type's qualification
test is paid for the whole test, pass or fail, and the preview states how many it expects per main-study place."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Campaign
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.qualification_tests import define_qualifications
from hits.prolific import pricing
from tests.conftest import DEMO_DIR
from tests.web.conftest import rita  # noqa: F401 - the researcher fixture

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_token(settings):
    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.PROLIFIC_API_TOKEN = ""


@pytest.fixture
def tested(small_files, rita):
    """Three predicates, two systems, on Prolific (the rewards its import chooses), a 4-item test per stage."""
    refs, sums = small_files
    campaign = import_campaign(name="Tested", slug="tested", owner=rita, references=refs, summaries=sums,
                               campaign_settings={"backend": "prolific"}).campaign
    Campaign.objects.filter(pk=campaign.pk).update(reward_presence=Decimal("0.27"))
    campaign.refresh_from_db()
    definition = json.loads((DEMO_DIR / "qualifications.json").read_text(encoding="utf-8"))
    define_qualifications(campaign, {slug: definition[slug] for slug in ("generation", "verification", "presence")})
    campaign.refresh_from_db()
    return campaign


def rows(html: str) -> dict:
    """The cost preview's table: {stage: [HITs, workers per HIT, reward, rewards, fees, total]}."""
    table = html.split('id="cost-preview"', 1)[1].split("</table>", 1)[0]
    found = {}
    for stage, cells in re.findall(r'<tr data-stage="([^"]+)">(.*?)</tr>', table, re.S):
        found[stage] = [c.strip() for c in re.findall(r'<td class="num">(.*?)</td>', cells, re.S)]
    return found


def test_the_settings_page_prices_the_screening_studies_and_states_the_assumption(tested, rita):
    client = Client()
    client.force_login(rita)
    html = client.get(reverse("campaign-settings", args=["tested"])).content.decode()
    table = rows(html)
    # Main-study places: a type's paid places over its HITs per session (generation 3 / 6, verification 6 / 12,
    # presence 18 / 6); test takers: 4 per place, each paid the 4 items and Prolific's fee on the whole test.
    assert table["screening: generation"] == ["4", "4", "$0.32", "$5.12", "$1.72", "$6.84"]
    assert table["screening: verification"] == ["4", "4", "$0.17", "$2.72", "$0.92", "$3.64"]
    assert table["screening: presence"] == ["4", "12", "$0.27", "$12.96", "$4.32", "$17.28"]
    assert table["presence"] == ["6", "3", "$0.27", "$4.86", "$1.62", "$6.48"]
    # A study's reward pays whole sessions: generation's 3 places and verification's 6 leave 3 and 6 HITs of their
    # last session unfilled, paid all the same (presence's 18 fill 3 sessions of 6).
    assert table["unused session share: generation"] == ["3", "1", "$0.32", "$0.96", "$0.33", "$1.29"]
    assert table["unused session share: verification"] == ["6", "1", "$0.17", "$1.02", "$0.36", "$1.38"]
    assert "unused session share: presence" not in table
    unused = " ".join(html.split('id="cost-unused-sessions">', 1)[1].split("</span>", 1)[0].split())
    assert "generation 3 HITs ($1.29; 3 HIT places in 1 session of 6); verification 6 HITs ($1.38; 6 HIT places" in unused
    # The total counts them: $9.15 of HITs, $2.67 of unused session shares and $27.76 of tests.
    assert 'id="cost-total"><strong>$39.58</strong>' in html
    assert "screening studies are not in the estimate" not in html
    said = " ".join(html.split('id="cost-screening">', 1)[1].split("</span>", 1)[0].split())
    assert said.startswith("Prolific's screening studies (the \"Screening\" lines) pay every participant who takes a "
                           "qualification test for all its items, pass or fail. The estimate assumes 4 test takers per "
                           "main-study place, as measured in the documentation's Prolific rehearsal (the Prolific guide):")
    assert "presence 3 places (18 HIT places, 6 per session), 12 test takers." in said
    assert pricing.TEST_TAKERS_PER_MAIN_PLACE == 4  # the constant the page states


def test_the_dry_run_and_the_progress_page_count_the_screening_studies(tested, rita, capsys):
    call_command("prolific_publish", campaign="tested", dry_run=True, format="json")
    preview = json.loads(capsys.readouterr().out)["cost_preview"]
    assert preview["total"] == "39.58" and preview["test_takers_per_main_place"] == 4.0
    assert [(s["task_type"], s["test_takers"]) for s in preview["screening"]] == [
        ("generation", 4), ("verification", 4), ("presence", 12)]
    launch_campaign(tested)
    client = Client()
    client.force_login(rita)
    html = client.get(reverse("campaign-progress", args=["tested"])).content.decode()
    assert 'id="estimate">$39.58</strong>' in html
    said = " ".join(html.split('id="estimate-screening">', 1)[1].split("</span>", 1)[0].split())
    assert said == ("It includes Prolific's screening studies: 4 generation test takers, 4 verification test takers, "
                    "12 presence test takers ($27.76), assuming 4 per main-study place.")
