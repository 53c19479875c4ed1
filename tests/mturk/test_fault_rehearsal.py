"""Rehearsing a campaign on the MTurk stand-in while MTurk misbehaves (issue 30).

The fixtures here start a seeded stand-in, point the platform at it, and give a test what it needs to inject
faults and compare both sides' money:

- ``rehearsal`` (a ``Rehearsal``): ``.standin`` (the ``StandIn``), ``.inject(operation, kind, count=1, rate=1.0)``
  (kinds: ``throttle``, ``service_fault``, ``lost_reply``, ``fault_after``; operation ``"*"`` for all),
  ``.clear_faults()``, ``.advance(hours=...)`` (the stand-in's clock: token expiry, auto-approval, deletion),
  ``.state()`` (``GET /_standin/state``), ``.requests(operation)`` (HTTP requests the stand-in received),
  ``.launch(small_files, name)`` (import a campaign on the MTurk sandbox backend and launch it: its HITs are
  published on the stand-in), ``.work(campaign, workers=6, seed=3)`` (simulated MTurk workers, syncs between
  rounds), ``.sync(campaign)``, ``.market_total()`` (everything the stand-in charged), ``.ledger_total(campaign)``
  (the platform's paid ledger entries), ``.market_hits(campaign)`` (HITs on the stand-in carrying the campaign's
  annotation prefix) and ``.local_hits(campaign)`` (the HITs the platform recorded).

The issue's whole end-to-end fault test (a lost CreateHIT and a lost SendBonus reply, each followed by a 25 h
jump and a sync, throttling, a refused CreateHIT, then ``mturk_reconcile``) builds on these once the client side
(request tokens re-checked after 23 h, reconciliation) is in place.
"""

from __future__ import annotations

import io
import json
import urllib.request
from decimal import Decimal

import pytest

from hits.mturk.standin import StandIn

SEED = 30


class Rehearsal:
    def __init__(self, standin: StandIn):
        self.standin = standin

    # faults and time
    def inject(self, operation: str, kind: str, count: int | None = 1, rate: float = 1.0) -> dict:
        return self.standin.inject(operation, kind, count=count, rate=rate)

    def clear_faults(self) -> int:
        return self.standin.clear_faults()

    def advance(self, hours: float = 0, seconds: float = 0) -> float:
        return self.standin.advance(hours * 3600 + seconds)

    def requests(self, operation: str) -> int:
        return self.standin.requests.get(operation, 0)

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.standin.url}/_standin/state", timeout=30) as response:
            return json.loads(response.read())

    # the campaign
    def launch(self, small_files, name: str = "Fault rehearsal"):
        from annotation.models import Campaign
        from annotation.services.campaign_import import import_campaign
        from annotation.services.pipeline import launch_campaign

        refs, sums = small_files
        campaign = import_campaign(name=name, references=refs, summaries=sums).campaign
        Campaign.objects.filter(pk=campaign.pk).update(backend=Campaign.Backend.MTURK_SANDBOX)
        campaign.refresh_from_db()
        launch_campaign(campaign)
        campaign.refresh_from_db()
        return campaign

    def work(self, campaign, workers: int = 6, seed: int = 3, max_seconds: float = 600):
        from annotation.management.simulation import simulate_mturk_crowd

        return simulate_mturk_crowd(campaign, workers, standin_url=self.standin.url, seed=seed, max_seconds=max_seconds)

    def sync(self, campaign):
        from hits.mturk.sync import sync_batch

        return sync_batch(campaign.batch)

    # both sides' records
    def market_total(self) -> Decimal:
        return Decimal(self.state()["total_charged"])

    def ledger_total(self, campaign) -> Decimal:
        from hits.models import LedgerEntry

        paid = LedgerEntry.objects.filter(batch=campaign.batch, state=LedgerEntry.State.PAID)
        return sum(paid.values_list("amount", flat=True), Decimal("0.00"))

    def local_hits(self, campaign) -> set[str]:
        from hits.mturk.models import MTurkHIT

        return set(MTurkHIT.objects.filter(hit__batch=campaign.batch).values_list("mturk_hit_id", flat=True))

    def market_hits(self, campaign) -> set[str]:
        """HITs on the stand-in (deleted ones included) carrying the campaign's annotation prefix."""
        from django.conf import settings

        prefix = f"{settings.MTURK_TOKEN_PREFIX}-{campaign.batch.key}-"
        return {h["HITId"] for h in self.state()["hits"] if (h.get("RequesterAnnotation") or "").startswith(prefix)}


@pytest.fixture
def rehearsal(monkeypatch, settings):
    server = StandIn(port=0, seed=SEED).start()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "rehearsal")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "rehearsal")
    settings.MTURK_ENDPOINT_URL = server.url
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"  # a rehearsal: the stand-in opens plain-HTTP pages
    settings.MTURK_RETRY_BASE_SECONDS = 0.0
    settings.MTURK_CONFIRM_GRACE = 0
    settings.MTURK_APPROVE_AFTER_HOURS = 0
    yield Rehearsal(server)
    server.stop()


@pytest.mark.django_db(transaction=True)
def test_throttling_and_a_lost_create_hit_reply_cost_nothing_extra(rehearsal, small_files, eager_celery):
    rehearsal.inject("*", "throttle", count=None, rate=0.1)
    rehearsal.inject("CreateHIT", "lost_reply", count=1)
    campaign = rehearsal.launch(small_files)
    assert rehearsal.requests("CreateHIT") > len(rehearsal.local_hits(campaign))  # the lost one was sent again
    report = rehearsal.work(campaign)
    assert report.campaign_state == "finished", report.lines()
    rehearsal.clear_faults()
    assert rehearsal.sync(campaign).failed == 0
    assert rehearsal.market_hits(campaign) == rehearsal.local_hits(campaign)  # no HIT made twice
    assert rehearsal.market_total() == rehearsal.ledger_total(campaign) > 0  # to the cent
    rewards = [e["AssignmentId"] for e in rehearsal.state()["ledger"] if e["kind"] == "reward"]
    assert len(rewards) == len(set(rewards))  # nothing paid twice


def _as_if_sent_hours_ago(hours: float) -> int:
    """The platform's side of a clock jump: every tokened call it has recorded was first sent ``hours`` ago
    (the stand-in's clock is moved by the same amount with ``rehearsal.advance``)."""
    from datetime import timedelta

    from django.db.models import F

    from hits.mturk.models import MTurkRequest

    return MTurkRequest.objects.filter(first_sent_at__isnull=False).update(first_sent_at=F("first_sent_at") - timedelta(hours=hours))


@pytest.mark.django_db(transaction=True)
def test_lost_replies_a_day_apart_throttling_and_a_refused_hit_reconcile_to_the_cent(
    rehearsal, small_files, eager_celery, settings, monkeypatch
):
    """The issue's end-to-end fault rehearsal: a lost CreateHIT reply and a lost SendBonus reply, each left
    unsettled (MTurk's records could not be read either) and retried after a 25 h jump of both clocks, when
    MTurk has forgotten their tokens; throttling throughout; one CreateHIT refused for a bad parameter.  Then
    ``mturk_reconcile`` finds no difference: no HIT made twice, no bonus paid twice, nothing charged unbooked."""
    from django.core.management import call_command

    from hits.models import HIT, LedgerEntry
    from hits.mturk import publishing
    from hits.mturk.models import MTurkAssignment
    from hits.mturk.publishing import publish_batch, retry_publish
    from hits.payments import pay_bonus

    tries = settings.MTURK_MAX_RETRIES + 1
    # 1. The first CreateHIT is done by MTurk but every reply to it is lost, and the ListHITs that would settle
    #    it fails too: the HIT exists on MTurk, the platform does not know it.
    rehearsal.inject("CreateHIT", "lost_reply", count=tries)
    rehearsal.inject("ListHITs", "service_fault", count=tries)
    # 2. One HIT's CreateHIT carries a reward MTurk refuses (a lasting refusal).
    real_request = publishing.create_hit_request
    refused_hit, seen = {}, []

    def one_bad_reward(hit, *args, **kwargs):
        """The second regular HIT sent (the first is the lost one) asks for a reward under MTurk's minimum."""
        params = real_request(hit, *args, **kwargs)
        if hit.kind == HIT.Kind.REGULAR and hit.pk not in seen:
            seen.append(hit.pk)
        if len(seen) > 1 and refused_hit.setdefault("pk", seen[1]) == hit.pk and "fixed" not in refused_hit:
            params["Reward"] = "0.00"
        return params

    monkeypatch.setattr(publishing, "create_hit_request", one_bad_reward)
    campaign = rehearsal.launch(small_files)
    # The lost HIT lives on MTurk only and waits, unsettled; the HIT with the bad reward is refused and waits for a
    # retry; neither stops the rest of the batch.
    lost = rehearsal.market_hits(campaign) - rehearsal.local_hits(campaign)
    assert len(lost) == 1 and rehearsal.local_hits(campaign) < rehearsal.market_hits(campaign)
    refused = HIT.objects.get(pk=refused_hit["pk"])
    assert refused.publish_error  # kept on the HIT, shown with a Retry
    unpublished = HIT.objects.filter(batch=campaign.batch, kind=HIT.Kind.REGULAR, state=HIT.State.OPEN, mturk__isnull=True)
    assert unpublished.count() == 2 and unpublished.filter(pk=refused.pk).exists()

    # 25 hours pass: MTurk forgets the lost CreateHIT's token.  The next publish must find that HIT in MTurk's
    # records, not make it again.
    rehearsal.advance(hours=25)
    _as_if_sent_hours_ago(25)
    publish_batch(campaign.batch)
    assert rehearsal.market_hits(campaign) == rehearsal.local_hits(campaign)  # adopted, not made twice
    assert list(unpublished.values_list("pk", flat=True)) == [refused.pk]
    before = len(rehearsal.market_hits(campaign))

    refused_hit["fixed"] = True  # the researcher fixed the reward, and pressed Retry on the progress page
    assert retry_publish(campaign.batch) == 1
    publish_batch(campaign.batch)
    assert rehearsal.market_hits(campaign) == rehearsal.local_hits(campaign)
    assert len(rehearsal.market_hits(campaign)) == before + 1  # only the refused HIT was added

    # 3. Work under throttling.
    rehearsal.inject("*", "throttle", count=None, rate=0.1)
    report = rehearsal.work(campaign)
    assert report.campaign_state == "finished", report.lines()

    # 4. A bonus whose SendBonus is done but whose replies, and the ListBonusPayments that would settle it, are lost.
    rehearsal.clear_faults()
    record = MTurkAssignment.objects.filter(mturk_hit__hit__batch=campaign.batch, assignment__state="approved").first() \
        or MTurkAssignment.objects.filter(mturk_hit__hit__batch=campaign.batch).exclude(assignment__state="discarded").first()
    rehearsal.inject("SendBonus", "lost_reply", count=tries)
    rehearsal.inject("ListBonusPayments", "service_fault", count=tries)
    bonus = pay_bonus(record.assignment, Decimal("1.20"), "Careful work")  # sent at once (tasks run eagerly)
    bonus.refresh_from_db()
    assert bonus.state != LedgerEntry.State.PAID  # unsettled: nothing known either way
    rehearsal.advance(hours=25)
    _as_if_sent_hours_ago(25)
    rehearsal.clear_faults()
    assert rehearsal.sync(campaign).failed == 0
    bonus.refresh_from_db()
    assert bonus.state == LedgerEntry.State.PAID
    paid = [b for b in rehearsal.state()["bonuses"] if b.get("AssignmentId") == record.mturk_assignment_id]
    assert len(paid) == 1  # paid once, though MTurk had forgotten the token

    # 5. Both sides agree, to the cent, and mturk_reconcile says so.
    assert rehearsal.sync(campaign).failed == 0
    assert rehearsal.market_total() == rehearsal.ledger_total(campaign) > 0
    out = io.StringIO()
    call_command("mturk_reconcile", "--campaign", campaign.slug, "--format", "json", stdout=out)  # exit 1 would raise
    result = json.loads(out.getvalue())
    assert result["differences"] == []
    assert Decimal(result["ledger_total"]) == Decimal(result["market_total"]) == rehearsal.market_total()
