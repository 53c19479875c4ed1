"""The ledger against MTurk's own records: what MTurk charged for a batch, and what the ledger booked as paid.

``reconcile_batch`` reads MTurk's side from MTurk itself, every List call
followed to its last page:

- ListAssignmentsForHIT for every HIT the platform ever created (every
  ``MTurkHIT`` of the batch, expired and deleted ones included): an
  assignment MTurk lists as Approved was charged its HIT's reward plus the
  fee (``fees.mturk_fee``: 20%, 40% at 10+ assignments, at least $0.01);
- ListBonusPayments per HIT: every bonus plus its fee (``fees.bonus_fee``);
- ListHITs over the account: a HIT whose RequesterAnnotation carries the
  batch's prefix (``<MTURK_TOKEN_PREFIX>-<batch key>-``) but which the
  platform has no record of is an unknown HIT (a CreateHIT whose reply was
  lost and which was sent again), and what it charged counts too.

A HIT MTurk has deleted can no longer be listed (MTurk answers that it does
not exist).  For such a HIT (``deleted_at`` or ``gone_at`` set here, or
"does not exist" in MTurk's answer) MTurk's side is read from the records
the platform kept of MTurk's own listings before the deletion (the status of
each ``MTurkAssignment`` and ``MTurkUnknownSubmission``, and the HIT's reward
and MaxAssignments as MTurk was told), and its bonuses from ListBonusPayments
per assignment.  The platform deletes a HIT only once every assignment of it
is approved or rejected, so those statuses are final.  Such HITs are counted
in ``hits_from_records``.

The ledger's side is its ``paid`` entries (rewards, bonuses and their
fees).  Both sides are compared per MTurk assignment, rewards and bonuses
apart, and every difference is reported:

- ``charged_not_booked``: MTurk charged more than the ledger booked as paid
  (e.g. work MTurk auto-approved that the ledger has pending or not at all);
- ``booked_not_charged``: the ledger booked as paid more than MTurk charged;
- ``unknown_hit``: a HIT with the batch's annotation that the platform never
  recorded (amount: what MTurk charged on it);
- ``unchecked``: an MTurk call failed; that HIT (or the account listing) could
  not be compared, and its ledger entries are left out of the comparison.

A failing call on one HIT never stops the others.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from decimal import Decimal

from django.conf import settings

from hits.markets.models import Reconciliation
from hits.markets.reconcile import (  # noqa: F401 - also this module's names
    BONUS,
    BOOKED_NOT_CHARGED,
    CHARGED_NOT_BOOKED,
    REWARD,
    UNCHECKED,
    UNKNOWN_HIT,
    ZERO,
    Difference,
    ReconcileResult,
    compare,
)
from hits.models import Batch, LedgerEntry
from hits.mturk.client import MTurk, MTurkError, does_not_exist, for_batch
from hits.mturk.fees import CENT, bonus_fee, mturk_fee
from hits.mturk.models import MTurkAssignment, MTurkHIT, MTurkUnknownSubmission

log = logging.getLogger(__name__)

DIFFERENCE_LABELS = {
    CHARGED_NOT_BOOKED: "Charged by MTurk, not booked",
    BOOKED_NOT_CHARGED: "Booked, not charged by MTurk",
    UNKNOWN_HIT: "HIT unknown to the platform",
    UNCHECKED: "Not checked (MTurk call failed)",
}

class _Counting:
    """Counts the MTurk requests made (every page of a List call is one)."""

    def __init__(self, mturk: MTurk):
        self.mturk = mturk
        self.calls = 0

    def pages(self, operation: str, key: str, **params) -> list[dict]:
        items = []
        token = None
        while True:
            self.calls += 1
            page = self.mturk.call(operation, **params, **({"NextToken": token} if token else {}))
            items.extend(page.get(key, []))
            token = page.get("NextToken")
            if not token:
                return items


def annotation_prefix(batch: Batch) -> str:
    """The RequesterAnnotation every HIT of the batch carries (``publishing.request_token`` minus the HIT id)."""
    return f"{settings.MTURK_TOKEN_PREFIX}-{batch.key}-"


def _charge(reward: Decimal, max_assignments: int) -> Decimal:
    return Decimal(reward) + mturk_fee(Decimal(reward), max_assignments)


def _bonuses(client: _Counting, **where) -> dict[str, Decimal]:
    """Bonus + fee charged per assignment id (ListBonusPayments by HITId or AssignmentId, every page)."""
    out: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for item in client.pages("ListBonusPayments", "BonusPayments", MaxResults=100, **where):
        amount = Decimal(str(item["BonusAmount"]))
        out[item["AssignmentId"]] += amount + bonus_fee(amount)
    return out


def _listed(client: _Counting, hit_id: str, reward: Decimal, max_assignments: int) -> dict[str, Decimal]:
    """Reward + fee charged per assignment MTurk lists as Approved on the HIT."""
    charged = {}
    for item in client.pages(
        "ListAssignmentsForHIT", "Assignments", HITId=hit_id, AssignmentStatuses=["Submitted", "Approved", "Rejected"],
        MaxResults=100,
    ):
        charged[item["AssignmentId"]] = _charge(reward, max_assignments) if item["AssignmentStatus"] == "Approved" else ZERO
    return charged


def _from_records(client: _Counting, record: MTurkHIT) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
    """A deleted HIT: rewards from the statuses kept at its last listing, bonuses per assignment from MTurk."""
    charge = _charge(record.reward, record.max_assignments)
    rewards: dict[str, Decimal] = {}
    statuses = dict(MTurkAssignment.objects.filter(mturk_hit=record).values_list("mturk_assignment_id", "status"))
    for assignment_id, status in statuses.items():
        rewards[assignment_id] = charge if status == MTurkAssignment.Status.APPROVED else ZERO
    for unknown in MTurkUnknownSubmission.objects.filter(mturk_hit=record):
        statuses[unknown.mturk_assignment_id] = unknown.status
        paid = unknown.paid if unknown.paid is not None else (charge if unknown.status == "Approved" else ZERO)
        rewards[unknown.mturk_assignment_id] = Decimal(paid)
    bonuses: dict[str, Decimal] = defaultdict(lambda: ZERO)
    # A bonus can only go to submitted work: ids never listed (made-up ones, discarded) are not asked about.
    submitted = [a for a, status in statuses.items() if status in ("Submitted", "Approved", "Rejected")]
    for assignment_id in submitted:
        for key, amount in _bonuses(client, AssignmentId=assignment_id).items():
            bonuses[key] += amount
    return rewards, bonuses


def _ledger(batch: Batch) -> tuple[dict, dict, Decimal]:
    """The ledger's paid money per (MTurk assignment id or "local:<id>", reward|bonus), the HIT of each key,
    and the paid total."""
    mturk_ids = dict(
        MTurkAssignment.objects.filter(mturk_hit__hit__batch=batch).values_list("assignment_id", "mturk_assignment_id")
    )
    hit_of = dict(
        MTurkAssignment.objects.filter(mturk_hit__hit__batch=batch).values_list(
            "mturk_assignment_id", "mturk_hit__mturk_hit_id"
        )
    )
    booked: dict[tuple[str, str], Decimal] = defaultdict(lambda: ZERO)
    total = ZERO
    entries = LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PAID).values_list(
        "assignment_id", "kind", "fee_for__kind", "amount"
    )
    for assignment_id, kind, fee_for_kind, amount in entries:
        group = BONUS if kind == LedgerEntry.Kind.BONUS or fee_for_kind == LedgerEntry.Kind.BONUS else REWARD
        key = mturk_ids.get(assignment_id, f"local:{assignment_id}")
        booked[(key, group)] += amount
        total += amount
    return booked, hit_of, total


def reconcile_batch(batch: Batch, mturk: MTurk | None = None, save: bool = True) -> ReconcileResult:
    """Compare the batch's ledger with MTurk's records; store the result (``Reconciliation``) unless ``save``
    is false."""
    client = _Counting(mturk or for_batch(batch))
    result = ReconcileResult()
    charged: dict[tuple[str, str], Decimal] = defaultdict(lambda: ZERO)
    hit_of: dict[str, str] = {}
    unchecked_hits: set[str] = set()

    # The account's HITs, for the batch's unknown ones and the reward / MaxAssignments MTurk holds.
    prefix = annotation_prefix(batch)
    on_account: dict[str, dict] | None
    try:
        on_account = {
            item["HITId"]: item for item in client.pages("ListHITs", "HITs", MaxResults=100)
            if str(item.get("RequesterAnnotation", "")).startswith(prefix)
        }
    except MTurkError as exc:
        on_account = None
        result.differences.append(Difference(UNCHECKED, None, None, None, f"ListHITs failed, unknown HITs not sought: {exc}"))

    records = list(MTurkHIT.objects.filter(hit__batch=batch).order_by("pk"))
    known = set(MTurkHIT.objects.values_list("mturk_hit_id", flat=True))
    for record in records:
        hit_id = record.mturk_hit_id
        listed = (on_account or {}).get(hit_id)
        reward = Decimal(str(listed["Reward"])) if listed else record.reward
        max_assignments = int(listed["MaxAssignments"]) if listed else record.max_assignments
        try:
            if record.deleted_at is not None or record.gone_at is not None:
                rewards, bonuses = _from_records(client, record)
                result.hits_from_records += 1
            else:
                try:
                    rewards = _listed(client, hit_id, reward, max_assignments)
                    bonuses = _bonuses(client, HITId=hit_id)
                except MTurkError as exc:
                    if not does_not_exist(exc):
                        raise
                    rewards, bonuses = _from_records(client, record)  # MTurk deleted it on its own (120 days)
                    result.hits_from_records += 1
        except MTurkError as exc:
            log.warning("reconcile: HIT %s not checked: %s", hit_id, exc)
            unchecked_hits.add(hit_id)
            result.differences.append(Difference(UNCHECKED, hit_id, None, None, f"not compared: {exc}"))
            continue
        result.hits_checked += 1
        for assignment_id, amount in rewards.items():
            charged[(assignment_id, REWARD)] += amount
            hit_of[assignment_id] = hit_id
        for assignment_id, amount in bonuses.items():
            charged[(assignment_id, BONUS)] += amount
            hit_of.setdefault(assignment_id, hit_id)

    # HITs with the batch's annotation the platform has no record of.
    for hit_id, item in sorted((on_account or {}).items()):
        if hit_id in known:
            continue
        try:
            rewards = _listed(client, hit_id, Decimal(str(item["Reward"])), int(item["MaxAssignments"]))
            bonuses = _bonuses(client, HITId=hit_id)
        except MTurkError as exc:
            result.differences.append(Difference(UNKNOWN_HIT, hit_id, None, None, f"not listed: {exc}"))
            continue
        amount = sum(rewards.values(), ZERO) + sum(bonuses.values(), ZERO)
        result.market_total += amount
        result.differences.append(Difference(
            UNKNOWN_HIT, hit_id, None, amount.quantize(CENT),
            f"annotation {item.get('RequesterAnnotation')}: {len(rewards)} assignment(s) listed, never recorded here",
        ))

    booked, booked_hit, ledger_total = _ledger(batch)
    result.ledger_total = ledger_total.quantize(CENT)
    result.market_total = (result.market_total + sum(charged.values(), ZERO)).quantize(CENT)
    pending = set(
        LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PENDING).values_list(
            "assignment__mturk__mturk_assignment_id", flat=True
        )
    )
    result.differences.extend(compare(
        charged, booked, {**booked_hit, **hit_of}, unchecked_hits, "MTurk",
        pending=pending, never_there="the assignment was never on MTurk",
    ))
    result.calls = client.calls
    if save:
        Reconciliation.objects.create(
            batch=batch,
            ledger_total=result.ledger_total,
            market_total=result.market_total,
            differences=[d.as_dict() for d in result.differences],
            hits_checked=result.hits_checked,
            hits_from_records=result.hits_from_records,
        )
    return result


def last_reconciliation(batch: Batch | None) -> Reconciliation | None:
    if batch is None:
        return None
    return Reconciliation.objects.filter(batch=batch).first()


