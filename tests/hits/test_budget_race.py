"""The budget cap under concurrency (PostgreSQL, real threads, one database connection each): a publish, extra
places, approvals and bonuses racing on MTurk and on Prolific, against the stand-ins.  Whatever the interleaving,
what the market holds or was told to pay never passes the cap, and every refusal names the cap and the amounts.

The markets answer slowly here (a few milliseconds more per call that commits money) so that the other calls
really do run while a publish is between its calls, as they would against the real markets."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.db.models import Q, Sum

from hits import payments
from hits.models import HIT, Assignment, Batch, LedgerEntry, TaskType, Worker
from hits.services import PlacesRefused, add_places
from tests.concurrently import at_once

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_SECONDS = 0.03
# A study's create or places call: long enough for bonuses to be given while it is out.
SLOW_STUDY_SECONDS = 0.3


def on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("row locks (SELECT ... FOR UPDATE) across connections are exercised on PostgreSQL")


def race(*jobs):
    """Run every job in a thread of its own (its own connection), all released at once; returns what each job
    returned (or raised), in order."""
    return at_once(jobs, timeout=300)


def bonus(assignment_id: int, amount: str, after: float = 0.0):
    """A researcher's bonus, given ``after`` seconds into the race (spread, so some land while a call is out)."""

    def give():
        time.sleep(after)
        return payments.pay_bonus(Assignment.objects.get(pk=assignment_id), Decimal(amount), "Thorough work")

    return give


def approval(assignment_id: int):
    return lambda: payments.approve_assignment(Assignment.objects.get(pk=assignment_id))


def extra_place(hit_id: int):
    """A researcher's replacement place (e.g. for excluded work), in its own transaction as the views do."""

    def add():
        with transaction.atomic():
            return add_places(HIT.objects.get(pk=hit_id), 1)

    return add


def given_on(batch) -> Decimal:
    """Bonuses and their fees the ledger holds for the market to pay (sent or about to be)."""
    total = (
        LedgerEntry.objects.filter(batch=batch)
        .filter(Q(kind=LedgerEntry.Kind.BONUS) | Q(fee_for__kind=LedgerEntry.Kind.BONUS))
        .exclude(state=LedgerEntry.State.REFUSED)
        # A Prolific session's reward that paid no HIT is a bonus-kind line the study's places hold already.
        .exclude(request_token__startswith="prolific-session-")
        .aggregate(s=Sum("amount"))["s"]
    )
    return Decimal(total or 0)


def refusals(results, cap: Decimal) -> list[str]:
    """The refusals among the results; any other failure fails the test."""
    refused = []
    for result in results:
        if isinstance(result, (payments.BudgetExceeded, PlacesRefused)):
            refused.append(str(result))
        elif isinstance(result, BaseException):
            raise AssertionError(f"a racing call failed: {result!r}") from result
        elif getattr(result, "stopped", "").startswith("budget cap"):
            refused.append(result.stopped)
    for message in refused:
        assert f"budget cap of ${cap}" in message and "$" in message.replace(f"${cap}", ""), message
    return refused


# --- MTurk ------------------------------------------------------------------------------------------------------

@pytest.fixture
def mturk_standin(monkeypatch, settings, eager_celery):
    from hits.mturk.client import MTurk
    from hits.mturk.standin import StandIn

    server = StandIn(port=0).start()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "rehearsal")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "rehearsal")
    settings.MTURK_ENDPOINT_URL = server.url
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"
    settings.MTURK_RETRY_BASE_SECONDS = 0.0
    call = MTurk.call

    def slow(self, operation, **params):
        if operation in ("CreateHIT", "CreateAdditionalAssignmentsForHIT", "SendBonus"):
            time.sleep(SLOW_SECONDS)
        return call(self, operation, **params)

    monkeypatch.setattr(MTurk, "call", slow)
    yield server
    server.stop()


def mturk_spend(server, batch) -> Decimal:
    """What MTurk holds for the account's HITs (every place paid in full, with MTurk's commission, as the stand-in
    prices it) plus the bonuses and fees the ledger gave."""
    from hits.mturk.standin.common import reward_fee

    held = Decimal("0")
    for hit in server.dump()["hits"]:
        reward, places = Decimal(hit["Reward"]), int(hit["MaxAssignments"])
        held += (reward + reward_fee(reward, places)) * places
    return held + given_on(batch)


def mturk_work(server, published_hits) -> list[int]:
    """Three workers submit on each published HIT, through the stand-in; their assignments here, submitted."""
    from hits.mturk.models import MTurkAssignment
    from tests.mturk.conftest import submitted_assignment

    done = []
    for n, published in enumerate(published_hits):
        for i in range(published.max_assignments):
            worker_id = f"A{n}W{i}"
            took = server.accept(published.mturk_hit_id, worker_id)
            server.submit(took["AssignmentId"], [("ok", "1")])
            worker = Worker.objects.create(external_id=f"mturk:{worker_id}", mturk_worker_id=worker_id)
            assignment = submitted_assignment(HIT.objects.get(pk=published.hit_id), worker)
            MTurkAssignment.objects.create(
                mturk_assignment_id=took["AssignmentId"], mturk_hit=published, assignment=assignment,
                mturk_worker_id=worker_id, submit_to=server.url,
            )
            done.append(assignment.pk)
    return done


def test_mturk_publish_places_approvals_and_bonuses_racing_never_pass_the_cap(mturk_standin):
    """The issue's case: 10 bonuses sent during a 20-HIT publish, with extra places and approvals at the same time."""
    from hits.mturk import fees
    from hits.mturk.models import MTurkHIT
    from hits.mturk.publishing import publish_batch

    on_postgresql()
    task_type = TaskType.objects.create(slug="race", name="Race", description="Race.", keywords="race", assignment_duration=600)
    batch = Batch.objects.create(name="race", reference="test:race-mturk", backend=Batch.Backend.MTURK_SANDBOX)
    for _ in range(20):  # $0.20 x 3 places + 20% commission: $0.72 a HIT, $14.40 in all
        HIT.objects.create(batch=batch, task_type=task_type, payload={"n": 1}, max_assignments=3, reward=Decimal("0.20"))
    publish_batch(batch, limit=4)
    work = mturk_work(mturk_standin, MTurkHIT.objects.filter(hit__batch=batch).order_by("pk"))
    cap = Decimal("13.20")
    Batch.objects.filter(pk=batch.pk).update(budget_cap=cap)
    batch.refresh_from_db()
    grown = list(MTurkHIT.objects.filter(hit__batch=batch).values_list("hit_id", flat=True)[:2])

    jobs = [lambda: publish_batch(Batch.objects.get(pk=batch.pk))]
    jobs += [bonus(pk, "0.50") for pk in work[:10]]  # $0.60 each with the commission
    jobs += [approval(pk) for pk in work]
    jobs += [extra_place(pk) for pk in grown]
    results = race(*jobs)
    # The next sync publishes what waits (new HITs and extra places), still under the cap.
    publish_batch(Batch.objects.get(pk=batch.pk))

    refused = refusals(results, cap)
    spend = mturk_spend(mturk_standin, batch)
    assert spend <= cap, f"MTurk holds or was told to pay ${spend}, over the ${cap} cap; refusals: {refused}"
    assert fees.committed(batch) <= cap
    assert refused, "nothing was refused, though everything asked for costs more than the cap"
    assert Assignment.objects.filter(pk__in=work, state=Assignment.State.APPROVED).count() == len(work)


# --- Prolific ---------------------------------------------------------------------------------------------------

@pytest.fixture
def prolific_market(monkeypatch, settings, eager_celery):
    from hits.prolific.client import Prolific
    from hits.prolific.standin import running_standin

    with running_standin(token="race-token") as standin:
        settings.PROLIFIC_API_URL = standin.url
        settings.PROLIFIC_API_TOKEN = "race-token"
        settings.PROLIFIC_COMPLETION_URL = standin.url + "/submissions/complete"
        settings.PROLIFIC_RETRY_BASE_SECONDS = 0.0
        settings.PROLIFIC_APPROVE_AFTER_HOURS = 1000
        settings.PUBLIC_BASE_URL = "https://studio.example.org"
        request = Prolific.request

        def slow(self, method, path, *args, **kwargs):
            if method in ("POST", "PATCH") and "/studies/" in path:
                time.sleep(SLOW_STUDY_SECONDS)
            return request(self, method, path, *args, **kwargs)

        monkeypatch.setattr(Prolific, "request", slow)
        yield standin


def prolific_spend(standin, batch) -> Decimal:
    """What Prolific holds for the batch's studies (the places it has, each paid its study's reward, a whole
    session's, with the fee) plus the bonuses and fees the ledger gave."""
    from hits.prolific.models import ProlificStudy
    from hits.prolific.publishing import study_commitment

    places = {s["id"]: int(s["total_available_places"]) for s in standin.state()["studies"]}
    held = Decimal("0")
    for study in ProlificStudy.objects.filter(batch=batch).exclude(prolific_id=None):
        held += study_commitment(study.reward, places.get(study.prolific_id, 0), batch.prolific_fee_rate)
    return held + given_on(batch)


def test_prolific_places_approvals_and_bonuses_racing_never_pass_the_cap(prolific_market, small_files):
    from annotation.models import Campaign
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign, task_type
    from hits.prolific import fees
    from hits.prolific.models import ProlificStudy
    from hits.prolific import publishing
    from hits.prolific.publishing import ensure_places, publish_batch
    from tests.prolific.pd_world import do_hits, start

    on_postgresql()
    refs, sums = small_files
    campaign = import_campaign(name="Race", slug="race", references=refs, summaries=sums,
                               campaign_settings={"backend": "prolific"}).campaign
    Campaign.objects.filter(pk=campaign.pk).update(reward_presence=Decimal("0.27"))
    campaign.refresh_from_db()
    launch_campaign(campaign)
    campaign.refresh_from_db()
    batch = campaign.batch
    publish_batch(batch)
    study = ProlificStudy.objects.get(batch=batch, kind=ProlificStudy.Kind.MAIN)
    work = [a.pk for a in do_hits(start(prolific_market, study), 6, state=Assignment.State.SUBMITTED)]
    # Later HITs (a redo round, say): more sessions wanted, grown by one PATCH of the study's places.
    for _ in range(6):
        HIT.objects.create(batch=batch, task_type=task_type("generation"), max_assignments=1, reward=Decimal("0.32"), payload={})
    plan = next(p for p in publishing.plans(batch) if p.kind == ProlificStudy.Kind.MAIN)
    growth = publishing.plan_commitment(plan, plan.places - study.places, batch.prolific_fee_rate)
    assert growth > 0
    cap = fees.committed(batch) + growth + Decimal("2.00")  # the places and one bonus fit, not two more
    Batch.objects.filter(pk=batch.pk).update(budget_cap=cap)

    jobs = [lambda: ensure_places(Batch.objects.get(pk=batch.pk))]
    jobs += [bonus(pk, "1.00", after=0.1 * i) for i, pk in enumerate(work)]  # $1.33 each with Prolific's fee
    jobs += [approval(pk) for pk in work]
    results = race(*jobs)

    refused = refusals(results, cap)
    spend = prolific_spend(prolific_market, batch)
    assert spend <= cap, f"Prolific holds or was told to pay ${spend}, over the ${cap} cap; refusals: {refused}"
    assert fees.committed(batch) <= cap
    assert refused, "nothing was refused, though everything asked for costs more than the cap"
