"""``mturk_reconcile``: the ledger against MTurk's own records, on the stand-in over HTTP with the real boto3
client.  A clean run agrees to the cent; money MTurk charged outside the ledger, money the ledger booked that
MTurk never charged and HITs with the campaign's annotation the platform never recorded are each reported;
a deleted HIT is read from the records kept; one failing call leaves only its HIT unchecked."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.models import Campaign
from annotation.services.campaign_import import import_campaign
from hits.models import LedgerEntry, Worker
from hits.mturk.client import MTurk, MTurkError
from hits.markets.models import Reconciliation
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.mturk.publishing import publish_batch
from hits.mturk.reconcile import annotation_prefix, reconcile_batch
from hits.mturk.sync import sync_batch
from hits.payments import approve_assignment, pay_bonus, reject_assignment
from tests.mturk.conftest import make_hit, submitted_assignment
from tests.mturk.test_standin_campaign import _state, standin  # noqa: F401 - the stand-in fixture

pytestmark = pytest.mark.django_db


def _worked(server, published: MTurkHIT, workers: list[str]) -> list:
    """Workers accept and submit on MTurk; their work is stored here as the framed page and the sync leave it."""
    done = []
    for worker_id in workers:
        accepted = server.accept(published.mturk_hit_id, worker_id)
        server.submit(accepted["AssignmentId"], [("answer", "x")])
        worker, _ = Worker.objects.get_or_create(external_id=f"mturk:{worker_id}", defaults={"mturk_worker_id": worker_id})
        assignment = submitted_assignment(published.hit, worker)
        MTurkAssignment.objects.create(
            mturk_assignment_id=accepted["AssignmentId"], mturk_hit=published, assignment=assignment,
            mturk_worker_id=worker_id, submit_to=server.url, status=MTurkAssignment.Status.SUBMITTED,
        )
        done.append(assignment)
    return done


@pytest.fixture
def reviewed(standin, mturk_batch, task_type, settings):  # noqa: F811
    """Two HITs on the stand-in, worked, reviewed (approvals, a rejection, a bonus) and settled by the sync."""
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    first, second = make_hit(mturk_batch, task_type), make_hit(mturk_batch, task_type, max_assignments=2)
    publish_batch(mturk_batch)
    on_mturk = {m.hit_id: m for m in MTurkHIT.objects.filter(hit__batch=mturk_batch)}
    a = _worked(standin, on_mturk[first.pk], ["AW1", "AW2", "AW3"])
    b = _worked(standin, on_mturk[second.pk], ["AW1", "AW2"])
    for assignment in (a[0], a[1], b[0], b[1]):
        approve_assignment(assignment)
    reject_assignment(a[2], "Does not match the sentence.")
    pay_bonus(a[0], Decimal("0.25"), "Careful work")
    report = sync_batch(mturk_batch)
    assert report.failed == 0, report.errors
    return mturk_batch, on_mturk[first.pk], on_mturk[second.pk], a, b


def test_a_clean_run_agrees_with_mturk_to_the_cent_and_is_stored(reviewed, standin):  # noqa: F811
    batch, *_ = reviewed
    result = reconcile_batch(batch)
    assert result.differences == []
    charged = Decimal(_state(standin)["total_charged"])
    # 4 approvals of $0.20 + $0.04 fee, a $0.25 bonus + $0.05 fee: 4 x 0.24 + 0.30
    assert result.ledger_total == result.market_total == charged == Decimal("1.26")
    stored = Reconciliation.objects.get(batch=batch)
    assert stored.agrees and stored.market_total == Decimal("1.26") and stored.hits_checked == 2


def test_every_kind_of_difference_is_reported_with_its_hit_assignment_and_amount(reviewed, standin, settings):  # noqa: F811
    batch, first, second, a, b = reviewed
    # MTurk pays a bonus the ledger never booked (sent straight to MTurk).
    standin.call("SendBonus", {"WorkerId": "AW2", "BonusAmount": "0.50", "AssignmentId": a[1].mturk.mturk_assignment_id,
                               "Reason": "outside the platform", "UniqueRequestToken": "outside-1"})
    # The ledger says more was paid than MTurk charged.
    reward = LedgerEntry.objects.get(assignment=b[0], kind=LedgerEntry.Kind.REWARD)
    LedgerEntry.objects.filter(pk=reward.pk).update(amount=reward.amount + Decimal("0.05"))
    # A HIT with the campaign's annotation that the platform never recorded (a lost CreateHIT reply, sent again).
    ghost = standin.call("CreateHIT", {
        "Title": "Label it", "Description": "Label one thing.", "Reward": "0.20", "MaxAssignments": 1,
        "LifetimeInSeconds": 3600, "AssignmentDurationInSeconds": 600, "AutoApprovalDelayInSeconds": 3600,
        "Question": first_question(standin, first), "RequesterAnnotation": f"{annotation_prefix(batch)}99999",
    })["HIT"]["HITId"]
    taken = standin.accept(ghost, "AW9")
    standin.submit(taken["AssignmentId"], [("answer", "x")])
    standin.call("ApproveAssignment", {"AssignmentId": taken["AssignmentId"]})

    result = reconcile_batch(batch)
    found = {(d.kind, d.hit, d.assignment): d.amount for d in result.differences}
    assert found == {
        ("charged_not_booked", first.mturk_hit_id, a[1].mturk.mturk_assignment_id): Decimal("0.60"),
        ("booked_not_charged", second.mturk_hit_id, b[0].mturk.mturk_assignment_id): Decimal("0.05"),
        ("unknown_hit", ghost, None): Decimal("0.24"),
    }
    assert result.ledger_total == Decimal("1.31")
    assert result.market_total == Decimal(_state(standin)["total_charged"]) == Decimal("2.10")


def first_question(server, published: MTurkHIT) -> str:
    return server.call("GetHIT", {"HITId": published.mturk_hit_id})["HIT"]["Question"]


def test_a_deleted_hit_is_read_from_the_records_kept_and_still_agrees(reviewed, standin):  # noqa: F811
    batch, first, second, a, b = reviewed
    standin.call("DeleteHIT", {"HITId": second.mturk_hit_id})
    MTurkHIT.objects.filter(pk=second.pk).update(deleted_at="2026-01-01T00:00:00Z")
    result = reconcile_batch(batch)
    assert result.differences == [] and result.hits_from_records == 1
    assert result.market_total == result.ledger_total == Decimal("1.26")
    # A reward the records say was approved but the ledger lacks is still found on the deleted HIT.
    LedgerEntry.objects.filter(assignment=b[1]).update(state=LedgerEntry.State.PENDING)
    result = reconcile_batch(batch)
    assert [(d.kind, d.hit, d.assignment, d.amount) for d in result.differences] == [
        ("charged_not_booked", second.mturk_hit_id, b[1].mturk.mturk_assignment_id, Decimal("0.24"))
    ]
    assert "pending" in result.differences[0].detail


class _OneHITDown(MTurk):
    """MTurk failing every listing of one HIT; every List call is also cut into pages of one item."""

    def __init__(self, down: str):
        super().__init__(sandbox=True)
        self.down = down

    def call(self, operation, **params):
        if params.get("HITId") == self.down and operation.startswith("List"):
            raise MTurkError(operation, "ServiceUnavailable", "Service unavailable (request id 1234)")
        if "MaxResults" in params:
            params["MaxResults"] = 1
        return super().call(operation, **params)


def test_a_failing_call_on_one_hit_leaves_only_that_hit_unchecked_and_every_page_is_read(reviewed, settings):
    batch, first, second, a, b = reviewed
    settings.MTURK_MAX_RETRIES = 0
    result = reconcile_batch(batch, mturk=_OneHITDown(first.mturk_hit_id))
    assert [(d.kind, d.hit) for d in result.differences] == [("unchecked", first.mturk_hit_id)]
    assert "ServiceUnavailable" in result.differences[0].detail
    # The other HIT was compared, one item per page: its two approvals are MTurk's side.
    assert result.hits_checked == 1 and result.market_total == Decimal("0.48")


def test_the_command_prints_json_exits_non_zero_on_a_difference_and_the_payout_page_shows_it(
    reviewed, small_files, client, django_user_model  # noqa: F811
):
    batch, first, second, a, b = reviewed
    refs, sums = small_files
    campaign = import_campaign(name="Reconciled", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(batch=batch, backend=Campaign.Backend.MTURK_SANDBOX)
    import io

    out = io.StringIO()
    call_command("mturk_reconcile", campaign=campaign.slug, format="json", stdout=out)  # exit 0: no SystemExit
    data = json.loads(out.getvalue())
    assert set(data) == {"ledger_total", "market_total", "currency", "differences"}
    assert data["ledger_total"] == data["market_total"] == "1.26" and data["differences"] == []

    LedgerEntry.objects.filter(assignment=b[0]).update(state=LedgerEntry.State.PENDING)
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("mturk_reconcile", campaign=campaign.slug, format="json", stdout=out)
    assert exited.value.code == 1
    data = json.loads(out.getvalue())
    assert data["differences"] == [
        {"kind": "charged_not_booked", "hit": second.mturk_hit_id, "assignment": b[0].mturk.mturk_assignment_id,
         "amount": "0.24"}
    ]

    owner = django_user_model.objects.create_superuser("owner", password="pw-123456789")
    Campaign.objects.filter(pk=campaign.pk).update(owner=owner)
    client.force_login(owner)
    page = client.get(f"/campaigns/{campaign.slug}/payouts/").content.decode()
    assert 'id="reconciliation"' in page and "charged_not_booked" not in page
    assert "Charged by MTurk, not booked" in page and b[0].mturk.mturk_assignment_id in page and "$0.24" in page
