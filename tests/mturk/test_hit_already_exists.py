"""Issue 38, finding 10: MTurk's ``HitAlreadyExists`` means the HIT was created.

On the stand-in over HTTP: a CreateHIT whose reply is lost, re-sent and answered ``HitAlreadyExists`` (CreateHIT's
documented TurkErrorCode) while ListHITs fails, is never filed as "Refused by MTurk": the HIT is shown as on
MTurk (its money committed), never created a second time (not even once MTurk has forgotten the token), and the
next sync that can read ListHITs records its HITId, whatever the batch's state.
"""

from __future__ import annotations

import json
import urllib.request
from decimal import Decimal

import pytest

from hits.models import Batch, TaskType
from hits.mturk import fees
from hits.mturk.models import MTurkHIT
from hits.mturk.publishing import publish_batch, request_token
from hits.mturk.sync import sync_batch
from tests.mturk.conftest import make_hit
from tests.mturk.test_misbehaving_market import mturk_campaign  # noqa: F401 - the researcher's MTurk campaign

pytestmark = pytest.mark.django_db


def _state(server) -> dict:
    with urllib.request.urlopen(f"{server.url}/_standin/state", timeout=30) as response:
        return json.loads(response.read())


def _created_on_mturk(server) -> list[dict]:
    return [h for h in _state(server)["hits"] if not h["Deleted"]]


@pytest.fixture
def lost_then_already_exists(standin, mturk_campaign, settings):  # noqa: F811
    """One HIT whose first CreateHIT took effect on the stand-in but whose reply was lost; the re-sent CreateHIT
    is answered HitAlreadyExists; ListHITs fails throughout (until the test clears the faults)."""
    settings.MTURK_MAX_RETRIES = 0
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    campaign, batch, client = mturk_campaign
    kind = TaskType.objects.create(slug="t", name="Label it", description="Label one thing.", keywords="label", assignment_duration=600)
    hit = make_hit(batch, kind)
    standin.inject("CreateHIT", "lost_reply", count=1)
    standin.inject("ListHITs", "service_fault", count=None)
    first = publish_batch(batch)
    assert first.published == 0 and [u["hit"] for u in first.unsettled] == [hit.pk]  # reply lost, records unread
    report = sync_batch(batch)  # re-sent with the same token: HitAlreadyExists; ListHITs fails again
    assert report.published == 0 and report.refused == 0
    return campaign, batch, client, hit


def test_hit_already_exists_is_shown_on_mturk_not_refused_and_its_money_committed(standin, lost_then_already_exists):
    campaign, batch, client, hit = lost_then_already_exists
    hit.refresh_from_db()
    assert hit.publish_error == ""  # not "Refused by MTurk": no Retry that could create it a second time
    page = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert "Refused by MTurk" not in page
    assert "Created on MTurk, HIT id still to be read (1)" in page and f"HIT {hit.pk}" in page
    api = client.get(f"/api/campaigns/{campaign.slug}/progress/").json()
    assert api["mturk"]["made_hits"] == [hit.pk] and api["mturk"]["refused_hits"] == []
    # The money MTurk holds for it counts against the budget cap.
    assert fees.committed(batch) == fees.hit_commitment(Decimal("0.20"), 3) > 0
    assert len(_created_on_mturk(standin)) == 1


def test_the_next_sync_that_can_list_hits_records_it_and_nothing_is_created_twice(standin, lost_then_already_exists):
    campaign, batch, client, hit = lost_then_already_exists
    # A day passes (MTurk forgets the token) while ListHITs still fails: the HIT is not created again.
    standin.advance(25 * 3600)
    sync_batch(batch)
    assert len(_created_on_mturk(standin)) == 1
    standin.clear_faults()
    report = sync_batch(batch)
    assert report.found == 1
    [on_mturk] = _created_on_mturk(standin)
    recorded = MTurkHIT.objects.get(hit=hit)
    assert recorded.mturk_hit_id == on_mturk["HITId"] and recorded.request_token == request_token(hit)
    assert (recorded.max_assignments, recorded.reward) == (3, Decimal("0.20"))
    page = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert "Created on MTurk, HIT id still to be read" not in page and "HITs published: <strong>1</strong>" in page
    sync_batch(batch)
    assert len(_created_on_mturk(standin)) == 1


def test_a_finished_batch_still_finds_the_hit_and_takes_it_down(standin, lost_then_already_exists):
    """The campaign ended before the HITId was read: the sync still finds the HIT (live, money on hold) and
    expires and deletes it on MTurk like the batch's other HITs."""
    campaign, batch, client, hit = lost_then_already_exists
    Batch.objects.filter(pk=batch.pk).update(state=Batch.State.FINISHED)
    hit.state = hit.State.CANCELLED
    hit.save(update_fields=["state"])
    standin.clear_faults()
    report = sync_batch(batch)
    assert report.found == 1 and report.expired == 1 and report.deleted == 1
    assert _created_on_mturk(standin) == []
