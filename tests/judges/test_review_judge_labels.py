"""Review of a budgeted campaign: the units left to its judge say so (issue 28), instead of "none yet"."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import AutoPresence, Campaign, ContentUnit, PresenceCandidate, PresenceRound
from annotation.selectors.hybrid import latest_labelling
from annotation.services.pipeline import launch_campaign
from tests.judges.test_hybrid_campaign import budgeted_campaign

pytestmark = pytest.mark.django_db


def _row(page, summary_id, unit_id):
    block = page.split(f'id="summary-{summary_id}"')[1].split("<tbody>")[1].split("</table>")[0]
    text = ContentUnit.objects.get(pk=unit_id).text
    return next(r for r in block.split("<tr>") if text in r)


def test_review_names_the_judge_for_the_units_left_to_it(tmp_path, researcher, eager_celery, django_capture_on_commit_callbacks):
    campaign = budgeted_campaign(tmp_path, human_presence_share=0.25)
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    with django_capture_on_commit_callbacks(execute=True):  # the routing pass runs after the launch commits
        launch_campaign(campaign)
    campaign.refresh_from_db()
    left = PresenceCandidate.objects.filter(campaign=campaign, hit__isnull=True).select_related("summary").first()
    example = left.summary.example_id
    routed = PresenceCandidate.objects.filter(campaign=campaign, hit__isnull=False).first()
    client = Client()
    client.force_login(researcher)
    url = f"/campaigns/{campaign.slug}/review/{example}/"
    # The routing pass labelled every unit it left to the judge: review says so, with the judge's verdict.
    label = AutoPresence.objects.get(run=latest_labelling(campaign), summary=left.summary, unit_id=left.units[0])
    verdict = "present" if label.present else "not present"
    row = _row(client.get(url).content.decode(), left.summary_id, left.units[0])
    assert f"labelled by the judge: {verdict} (p = {label.probability:.2f})" in row and "none yet" not in row
    assert label.run.judge_version in row
    # Before a labelling pass exists (say it was lost), such a unit is still shown as left to the judge.
    PresenceRound.objects.filter(campaign=campaign).update(labelling_run=None)
    row = _row(client.get(url).content.decode(), left.summary_id, left.units[0])
    assert "left to the judge" in row and "none yet" not in row
    # A unit routed to people and not judged yet is still "none yet".
    page = client.get(f"/campaigns/{campaign.slug}/review/{routed.summary.example_id}/").content.decode()
    assert "none yet" in _row(page, routed.summary_id, routed.units[0])
