"""Money spent and committed per stage, presence cost per system and under the paper's protocol (issue 29, item 4)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Campaign, Example, PresenceCandidate, System, SystemSummary
from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from annotation.selectors.spending import campaign_spending
from annotation.services.pipeline import ensure_batch, task_type
from hits import payments
from hits.models import HIT, Assignment, Batch, Worker

D = Decimal


def hit(campaign, slug, *, places, reward, state=HIT.State.OPEN, kind=HIT.Kind.REGULAR, payload=None):
    return HIT.objects.create(
        batch=campaign.batch, task_type=task_type(slug), kind=kind, payload=payload or {}, max_assignments=places,
        reward=D(reward), state=state,
    )


def work(h, *states):
    """Assignments of ``h`` by new workers, submitted then approved or left awaiting review."""
    now = timezone.now()
    for state in states:
        worker = Worker.objects.create(external_id=f"w{Worker.objects.count()}")
        a = Assignment.objects.create(
            hit=h, worker=worker, state=Assignment.State.SUBMITTED, accepted_at=now, expires_at=now + timedelta(hours=1),
            submitted_at=now, answers={},
        )
        h.n_taken += 1
        h.n_submitted += 1
        h.save(update_fields=["n_taken", "n_submitted"])
        if state == "approved":
            payments.approve_assignment(a)


@pytest.fixture
def small_campaign(researcher):
    """Two systems, one example with two predicates' presence HITs each, budgeted (one HIT routed away)."""
    c = Campaign.objects.create(
        name="Costs", slug="costs", owner=researcher, state=Campaign.State.RUNNING, human_presence_share=0.75,
        presence_judges=Campaign.PresenceJudges.ADAPTIVE,
    )
    ensure_batch(c)
    Batch.objects.filter(pk=c.batch_id).update(state=Batch.State.ACTIVE)
    c.refresh_from_db()
    example = Example.objects.create(campaign=c, external_id="e1", position=0)
    a, b = System.objects.create(campaign=c, name="A"), System.objects.create(campaign=c, name="B")
    sa = SystemSummary.objects.create(system=a, example=example, text="A's summary.")
    sb = SystemSummary.objects.create(system=b, example=example, text="B's summary.")
    # Generation done and paid ($0.32); verification: one verdict awaiting review, one place open (2 x $0.17).
    work(hit(c, GENERATION, places=1, reward="0.32", state=HIT.State.COMPLETED), "approved")
    work(hit(c, VERIFICATION, places=2, reward="0.17"), "submitted")
    # Presence, adaptive: A/p1 done by its two judges; A/p2's judges disagreed, a third place was added (still
    # open); B/p1 posted, nobody yet; B/p2 routed away (the judge labels it).
    h1 = hit(c, PRESENCE, places=2, reward="0.20", state=HIT.State.COMPLETED, payload={"summary": sa.pk, "predicate": 1, "units": []})
    work(h1, "approved", "approved")
    h2 = hit(c, PRESENCE, places=2, reward="0.20", payload={"summary": sa.pk, "predicate": 2, "units": []})
    work(h2, "approved", "approved")
    HIT.objects.filter(pk=h2.pk).update(max_assignments=3)
    h3 = hit(c, PRESENCE, places=2, reward="0.20", payload={"summary": sb.pk, "predicate": 1, "units": []})
    for summary, predicate, posted in ((sa, 1, h1), (sa, 2, h2), (sb, 1, h3), (sb, 2, None)):
        PresenceCandidate.objects.create(campaign=c, summary=summary, units=[], hit=posted, round=1 if posted else None)
    # A gold check met by one judge (paid $0.20), open to every other judge: nothing more committed for it.
    gold = hit(c, PRESENCE, places=32767, reward="0.20", kind=HIT.Kind.GOLD, payload={"summary": sb.pk, "units": []})
    work(gold, "approved")
    # An unpaid qualification test.
    work(hit(c, PRESENCE, places=32767, reward="0.00", kind=HIT.Kind.QUALIFICATION), "approved")
    return c


@pytest.mark.django_db
def test_spending_against_a_hand_count(small_campaign):
    s = campaign_spending(small_campaign)
    stages = {row["stage"]: row for row in s["stages"]}
    assert [row["stage"] for row in s["stages"]] == ["generation", "verification", "presence", "qualification", "gold"]
    assert (stages["generation"]["spent"], stages["generation"]["committed"]) == (D("0.32"), D("0.00"))
    assert (stages["verification"]["spent"], stages["verification"]["committed"]) == (D("0.00"), D("0.34"))
    assert stages["verification"]["open_places"] == 1 and stages["verification"]["awaiting_review"] == 1
    # Presence: 4 approved judgments ($0.80); the added third place of A/p2 and B/p1's two places ($0.60).
    assert (stages["presence"]["spent"], stages["presence"]["committed"]) == (D("0.80"), D("0.60"))
    assert stages["presence"]["paid_assignments"] == 4 and stages["presence"]["open_places"] == 3
    assert (stages["gold"]["spent"], stages["gold"]["committed"]) == (D("0.20"), D("0.00"))
    assert stages["qualification"]["total"] == D("0.00")
    assert (s["spent"], s["committed"], s["total"]) == (D("1.32"), D("0.94"), D("2.26"))

    systems = {row["system"]: row for row in s["systems"]}
    # A: 2 + 3 places, $0.80 spent + $0.20 committed; the paper: 2 HITs x 3 x $0.20 = $1.20.
    assert systems["A"]["hits"] == 2 and systems["A"]["assignments"] == 5
    assert (systems["A"]["cost"], systems["A"]["paper_cost"], systems["A"]["saving"]) == (D("1.00"), D("1.20"), D("0.20"))
    assert systems["A"]["saving_share"] == pytest.approx(0.1667, abs=1e-4)
    # B: one HIT posted ($0.40 committed); the paper posts the routed-away one too: 2 x 3 x $0.20 = $1.20.
    assert systems["B"]["hits"] == 1 and systems["B"]["paper_hits"] == 2 and systems["B"]["paper_assignments"] == 6
    assert (systems["B"]["cost"], systems["B"]["paper_cost"], systems["B"]["saving"]) == (D("0.40"), D("1.20"), D("0.80"))

    presence = s["presence"]
    assert (presence["cost"], presence["paper_cost"], presence["saving"]) == (D("1.40"), D("2.40"), D("1.00"))
    assert presence["saving_share"] == pytest.approx(1 / 2.4, abs=1e-4)
    # The whole campaign under the paper: $2.26 - $1.40 + $2.40.
    assert s["paper_total"] == D("3.26")
    assert s["saving_share_of_campaign"] == pytest.approx(1 / 3.26, abs=1e-4)


@pytest.mark.django_db
def test_on_mturk_committed_and_paper_figures_carry_the_commission(small_campaign):
    Batch.objects.filter(pk=small_campaign.batch_id).update(backend=Batch.Backend.MTURK_SANDBOX)
    small_campaign.refresh_from_db()
    s = campaign_spending(small_campaign)
    stages = {row["stage"]: row for row in s["stages"]}
    # 3 open presence places at $0.20 + 20% = $0.24 each; the paper: 4 HITs x 3 x $0.24.
    assert stages["presence"]["committed"] == D("0.72")
    assert s["presence"]["paper_cost"] == D("2.88")
    # The rewards approved while it was local carry no fee in the ledger: spent stays what was booked.
    assert stages["presence"]["spent"] == D("0.80")


@pytest.mark.django_db
def test_fixed_campaign_without_routing_counts_its_posted_hits(small_campaign):
    Campaign.objects.filter(pk=small_campaign.pk).update(human_presence_share=1.0, presence_judges="fixed")
    PresenceCandidate.objects.all().delete()
    small_campaign.refresh_from_db()
    s = campaign_spending(small_campaign)
    assert s["presence"]["paper_hits"] == 3
    assert s["presence"]["paper_cost"] == D("1.80")
    assert s["presence"]["saving"] == D("0.40")


@pytest.mark.django_db
def test_progress_page_and_api_show_the_money(small_campaign, researcher, client):
    client.force_login(researcher)
    page = client.get("/campaigns/costs/progress/").content.decode()
    assert 'id="spending"' in page and 'id="presence-cost"' in page
    assert '<td class="num" data-cell="cost">$1.00</td>' in page  # system A
    assert 'data-cell="paper_total">$3.26<' in page
    assert 'data-cell="saving">$1.00</strong> saved (31% of the whole campaign, 42% of its presence judging)' in page
    api = APIClient()
    api.force_authenticate(researcher)
    body = api.get("/api/campaigns/costs/progress/").json()
    spending = body["spending"]
    assert spending["total"] == "2.26" and spending["committed"] == "0.94"
    assert spending["presence"]["paper_cost"] == "2.40" and spending["presence"]["saving"] == "1.00"
    assert {row["system"]: row["cost"] for row in spending["systems"]} == {"A": "1.00", "B": "0.40"}


@pytest.mark.django_db
def test_scu_campaign_counts_no_generation_or_verification_and_a_draft_counts_nothing():
    c = Campaign.objects.create(name="Units", slug="units", unit_type=Campaign.UnitType.SCU)
    s = campaign_spending(c)
    assert [row["stage"] for row in s["stages"]] == ["presence", "qualification", "gold"]
    assert s["total"] == D("0.00") and s["presence"]["saving_share"] is None and s["systems"] == []


@pytest.mark.django_db
def test_on_prolific_committed_and_paper_figures_carry_its_service_fee(small_campaign):
    Batch.objects.filter(pk=small_campaign.batch_id).update(backend=Batch.Backend.PROLIFIC, prolific_fee_rate=D("0.3333"))
    small_campaign.refresh_from_db()
    s = campaign_spending(small_campaign)
    stages = {row["stage"]: row for row in s["stages"]}
    # 3 open presence places at $0.20 + 33.33% ($0.07) = $0.27 each; the paper: 4 HITs x 3 x $0.27.
    assert stages["presence"]["committed"] == D("0.81")
    assert s["presence"]["paper_cost"] == D("3.24")
    assert stages["presence"]["spent"] == D("0.80")
