"""Bonuses on Prolific: what is due, grouped per study into one bulk bonus, created then paid once.

Due as a bonus (pending ledger entries of a study's confirmed sessions): every approved HIT's reward beyond
the one the submission's reward pays (``hits.prolific.review``), every approved HIT of a returned or timed-out
session (Prolific pays no reward for those), every approved HIT of a rejected submission, and the bonuses a
researcher gives (``hits.payments.pay_bonus``).

Prolific's two steps, and what is recorded before each (``ProlificBonus.state``):

1. ``recorded``: the CSV (``participant id,amount`` per line, one line per participant, amounts in the study's
   currency, which Prolific reads them in)
   and the ledger entries it pays are fixed here, in one transaction, before the create call
   (``POST /submissions/bonus-payments/``).  Creating pays nothing, so after an ambiguous create (no answer)
   the same recorded set is simply created again by the next sync: a bulk bonus whose id never reached us is
   never paid (only an id we hold is), so Prolific's records (no bonus on the submissions) prove the first
   create moved no money.  The create call is claimed first (``recorded`` -> ``creating``, a conditional
   update), and Prolific's id is recorded only on the set this sync claimed: two overlapping syncs never
   both create and pay one set.  A refused create or pay (4xx) marks it ``failed`` and is never re-sent as
   it was: a set of several participants is recorded again one set per participant; a refused
   one-participant set keeps its entry and is flagged for the researcher (``flagged``, payout page).
2. ``created`` (Prolific's id) -> ``paying``: ``pay_recorded_at`` is committed BEFORE the pay call
   (``POST /bulk-bonus-payments/{id}/pay/``), which is sent once.  Answered -> ``paid``, and the entries and
   their fees are paid in the ledger (the fees Prolific answered for the bulk, spread over its lines and
   entries: ``line_fees``).  Refused (4xx: Prolific did nothing) -> ``failed``, entries due again.  No
   answer or a 5xx -> ``unknown``: from then on the sync only READS Prolific's records (each line's
   submission's ``bonus_payments``, ``GET /submissions/{id}/``) and marks it paid when every line shows there; the pay call is never sent
   again by the platform.  Still not shown ``PROLIFIC_BONUS_FLAG_HOURS`` after the pay call: flagged for the
   researcher with the facts (``last_error``, payout page), to settle with Prolific's support.

One failing bonus set never stops the others: each study's set is tried on its own.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from hits.markets.money import money
from hits.models import Batch, LedgerEntry
from hits.prolific import fees
from hits.prolific.client import Prolific, ProlificError
from hits.prolific.pricing import cents
from hits.prolific.models import ProlificBonus, ProlificSession, ProlificStudy
from hits.prolific.money import bonus_charges
from hits.prolific.review import APPROVE, REJECT, mark_entries_paid, outcome, session_assignments

log = logging.getLogger(__name__)

ENDED = (ProlificSession.State.RETURNED, ProlificSession.State.TIMED_OUT)
FLAG = "FLAGGED"
# A pay call recorded this long ago with no outcome recorded (its process died) is treated as a lost reply.
STUCK = timedelta(minutes=15)


def due_entries(study: ProlificStudy) -> list[LedgerEntry]:
    """The study's pending ledger entries to pay as a bonus now (see the module's notes)."""
    taken = held().values("entries")
    due = []
    sessions = study.sessions.filter(
        # only those whose participant has money pending in the batch (settled sessions are not looked at again)
        confirmed_at__isnull=False, worker__ledger__batch_id=study.batch_id, worker__ledger__state=LedgerEntry.State.PENDING,
    ).exclude(state=ProlificSession.State.DISCARDED).distinct().order_by("pk")
    for session in sessions:
        entries = LedgerEntry.objects.filter(
            assignment__in=session_assignments(session), state=LedgerEntry.State.PENDING,
            kind__in=[LedgerEntry.Kind.REWARD, LedgerEntry.Kind.BONUS],
        ).exclude(pk__in=taken).order_by("pk")
        if session.state in ENDED:
            rewards_due = outcome(session) is not None  # once every HIT of it is reviewed
        else:
            # Approved: the submission's reward paid the base entry when the decision was recorded (same
            # transaction, ``review.record_decision``), so every reward still pending is a bonus.  Rejected: all.
            rewards_due = session.decision in (APPROVE, REJECT)
        for entry in entries:
            if entry.kind == LedgerEntry.Kind.REWARD and not rewards_due:
                continue
            due.append(entry)
    return due


def held():
    """Bulk bonuses whose entries are not due again: all but the failed, and a refused one-participant set
    (flagged for the researcher: Prolific refused exactly that line, so it is not sent again by itself)."""
    return ProlificBonus.objects.exclude(Q(state=ProlificBonus.State.FAILED) & Q(csv_bonuses__contains="\n"))


def csv_lines(entries: list[LedgerEntry]) -> tuple[str, Decimal]:
    """``participant id,amount`` per participant (sorted), and the total."""
    per: dict[str, Decimal] = defaultdict(lambda: Decimal("0.00"))
    for entry in entries:
        per[entry.worker.prolific_pid] += entry.amount
    lines = [f"{pid},{amount:.2f}" for pid, amount in sorted(per.items())]
    return "\n".join(lines), sum(per.values(), Decimal("0.00"))


def record_bonus(study: ProlificStudy) -> ProlificBonus | None:
    """Fix the study's due bonus set before anything is sent (None when nothing is due)."""
    with transaction.atomic():
        ProlificStudy.objects.select_for_update().get(pk=study.pk)  # two syncs at once record one set
        entries = [e for e in due_entries(study) if e.worker.prolific_pid]
        # Nothing to pay (a screening study's test items reward 0: the submission's reward pays the test):
        # settled here, never a "pid,0.00" line Prolific refuses.
        mark_entries_paid([e for e in entries if e.amount == 0])
        entries = [e for e in entries if e.amount > 0]
        if not entries:
            return None
        if study.bonuses.filter(state=ProlificBonus.State.FAILED).exists():
            # After a refusal, one set per participant: a refused line never blocks the study's other bonuses.
            per: dict[str, list[LedgerEntry]] = defaultdict(list)
            for entry in entries:
                per[entry.worker.prolific_pid].append(entry)
            groups = [per[pid] for pid in sorted(per)]
        else:
            groups = [entries]
        for group in groups:
            csv, total = csv_lines(group)
            bonus = ProlificBonus.objects.create(batch_id=study.batch_id, study=study, csv_bonuses=csv, amount=total)
            bonus.entries.set(group)
    return bonus


REFUSED = "REFUSED"


def _fail(bonus: ProlificBonus, what: str, exc: Exception, report) -> None:
    """Prolific refused the set (it did nothing): not sent again by itself.  Its entries are due again, one set
    per participant, when it had several lines; a refused one-line set keeps its entry and is flagged for the
    researcher (payout page) with Prolific's answer."""
    single = "\n" not in bonus.csv_bonuses.strip()
    detail = getattr(exc, "detail", None)
    note = (f"{REFUSED}: {what}: {exc}{f' {detail}' if detail and str(detail) not in str(exc) else ''}. " + (
        "Not sent again by the platform: correct the cause, then pay this participant by hand on Prolific."
        if single else "Its participants' bonuses are sent again, one set per participant."))
    ProlificBonus.objects.filter(pk=bonus.pk).update(state=ProlificBonus.State.FAILED, last_error=note[:1000])
    report.error(f"{what} (bulk bonus {bonus.pk})", exc)


def create(client: Prolific, bonus: ProlificBonus, report, now=None) -> bool:
    """Claim the recorded set (``recorded`` -> ``creating``: one sync only), send the create call, and record
    Prolific's id only on the set this sync claimed.  False when nothing is to be paid by this sync."""
    now = now or timezone.now()
    S = ProlificBonus.State
    if not ProlificBonus.objects.filter(pk=bonus.pk, state=S.RECORDED).update(state=S.CREATING, create_claimed_at=now):
        return False  # another sync took it
    try:
        answer = client.request("POST", "/submissions/bonus-payments/", safe=False, json={
            "study_id": bonus.study.prolific_id, "csv_bonuses": bonus.csv_bonuses,
        })
    except ProlificError as exc:
        if exc.ambiguous:  # back to recorded: created again next time (creating pays nothing)
            ProlificBonus.objects.filter(pk=bonus.pk, state=S.CREATING).update(state=S.RECORDED, last_error=f"create: {exc}"[:1000])
            report.error(f"creating bulk bonus {bonus.pk}", exc)
        else:
            _fail(bonus, "create refused", exc, report)
        return False
    fee, vat = bonus_charges(answer)  # fees with VAT, as Prolific states them
    taken = ProlificBonus.objects.filter(pk=bonus.pk, state=S.CREATING, prolific_id__isnull=True).update(
        prolific_id=answer["id"], state=S.CREATED, fees=fee, vat=vat, last_error="",
    )
    if not taken:  # the claim was given up meanwhile (thought dead): this id is never paid
        report.errors.append(f"bulk bonus {answer['id']} created for set {bonus.pk} after its claim was given up: not paid")
        return False
    bonus.refresh_from_db()
    return True


def pay(client: Prolific, bonus: ProlificBonus, report, now) -> None:
    """Record the pay call, then send it once (see the module's notes)."""
    with transaction.atomic():
        claimed = ProlificBonus.objects.filter(
            pk=bonus.pk, state=ProlificBonus.State.CREATED, prolific_id__isnull=False,
        ).update(state=ProlificBonus.State.PAYING, pay_recorded_at=now)
    if not claimed:
        return  # another sync took it
    bonus.refresh_from_db()  # the id this claim covers, never one held in memory
    try:
        client.request("POST", f"/bulk-bonus-payments/{bonus.prolific_id}/pay/", safe=False)
    except ProlificError as exc:
        if exc.ambiguous:
            ProlificBonus.objects.filter(pk=bonus.pk, state=ProlificBonus.State.PAYING).update(
                state=ProlificBonus.State.UNKNOWN, last_error=f"pay: {exc}"[:1000])
            report.error(f"paying bulk bonus {bonus.prolific_id} (reply lost: Prolific's records will be read, never paid again)", exc)
        else:
            _fail(bonus, "pay refused", exc, report)
        return
    settle(bonus)
    report.bonuses += 1


def line_fees(bonus: ProlificBonus) -> dict[str, Decimal]:
    """The fee (with its VAT) Prolific charges on each line (participant) of a bulk bonus: what its create answer
    states for the whole bulk (``fees``: ``total_amount`` - ``amount``), spread over the lines in proportion to
    their amounts (``fees.split_fee``); the rate's estimate when Prolific's answer stated none."""
    lines = parse_csv(bonus.csv_bonuses)
    amounts = [amount for _, amount in lines]
    total = bonus.fees if bonus.fees is not None else fees.fee(sum(amounts, Decimal("0.00")), fees.fee_rate(bonus.batch))
    return {pid: share for (pid, _), share in zip(lines, fees.split_fee(total, amounts))}


def settle(bonus: ProlificBonus) -> None:
    """The bulk bonus is paid: its entries and their fees are paid; the fee entries of each line add up to
    Prolific's fee on that line (``line_fees``), so the ledger's fees are what Prolific charged."""
    entries = list(bonus.entries.select_related("worker", "fee").order_by("pk"))
    per: dict[str, list[LedgerEntry]] = defaultdict(list)
    for entry in entries:
        per[entry.worker.prolific_pid].append(entry)
    charged = line_fees(bonus)
    with transaction.atomic():
        for pid, group in per.items():
            for entry, share in zip(group, fees.split_fee(charged[pid], [e.amount for e in group])):
                fee = getattr(entry, "fee", None)
                if fee is not None and fee.amount != share:
                    LedgerEntry.objects.filter(pk=fee.pk).update(amount=share)
        mark_entries_paid(entries)
        ProlificBonus.objects.filter(pk=bonus.pk).update(state=ProlificBonus.State.PAID, settled_at=timezone.now(), last_error="")


def paid_on_prolific(client: Prolific, bonus: ProlificBonus) -> bool:
    """Whether Prolific's records show the bulk bonus paid: every line's participant has, on their submission in the
    study, bonus payments covering this line on top of the study's other bulk bonuses whose pay call was sent.

    Each submission is read on its own (``GET /submissions/{id}/``): Prolific documents ``bonus_payments`` there,
    not in the study's list of submissions."""
    earlier: dict[str, int] = defaultdict(int)
    # Every other set whose pay call was sent counts as earlier (paid or not known): two lost-reply sets of one
    # participant are settled only when the records show both, never one unpaid set on the other's payment.
    sent = [ProlificBonus.State.PAYING, ProlificBonus.State.UNKNOWN, ProlificBonus.State.PAID]
    for other in ProlificBonus.objects.filter(study=bonus.study, state__in=sent).exclude(pk=bonus.pk):
        for pid, amount in parse_csv(other.csv_bonuses):
            earlier[pid] += cents(amount)
    ids = submission_ids(client, bonus.study, [pid for pid, _ in parse_csv(bonus.csv_bonuses)])
    for pid, amount in parse_csv(bonus.csv_bonuses):
        if pid not in ids:
            return False
        shown = sum(int(c) for c in client.get(f"/submissions/{ids[pid]}/").get("bonus_payments") or [])
        if shown < earlier[pid] + cents(amount):
            return False
    return True


def submission_ids(client: Prolific, study: ProlificStudy, participants: list[str]) -> dict[str, str]:
    """The id of each participant's submission in the study: their session's here, else as Prolific lists it."""
    ids = dict(ProlificSession.objects.filter(study=study, participant_id__in=participants).exclude(
        state=ProlificSession.State.DISCARDED).values_list("participant_id", "session_id"))
    if len(ids) < len(set(participants)):
        for item in client.paginate(f"/studies/{study.prolific_id}/submissions/"):
            if item.get("participant_id") in participants:
                ids.setdefault(item["participant_id"], item["id"])
    return ids


def parse_csv(csv: str) -> list[tuple[str, Decimal]]:
    return [(pid, Decimal(amount)) for pid, amount in (line.split(",") for line in csv.splitlines() if line.strip())]


def check_unknown(client: Prolific, bonus: ProlificBonus, report, now) -> None:
    """A pay call whose reply was lost: read Prolific's records only; paid when they show it, flagged after a long
    time when they do not.  Never sends the pay call again."""
    try:
        shown = paid_on_prolific(client, bonus)
    except ProlificError as exc:
        report.error(f"reading the records of bulk bonus {bonus.prolific_id}", exc)
        return
    if shown:
        settle(bonus)
        report.bonuses += 1
        return
    since = bonus.pay_recorded_at or bonus.created_at
    if now - since >= timedelta(hours=settings.PROLIFIC_BONUS_FLAG_HOURS) and not bonus.last_error.startswith(FLAG):
        facts = (
            f"{FLAG}: the pay call of bulk bonus {bonus.prolific_id} ({money(bonus.amount, bonus.batch)}, {len(parse_csv(bonus.csv_bonuses))} "
            f"participant(s)) was sent at {since:%Y-%m-%d %H:%M} UTC and its reply lost; Prolific's records still do not "
            "show it paid. The platform will not send it again: check with Prolific's support before paying by hand."
        )
        ProlificBonus.objects.filter(pk=bonus.pk).update(last_error=facts)
        report.errors.append(facts[:300])


def flagged(batch: Batch):
    """Bulk bonuses the researcher must look at (payout page): pay reply lost and still unpaid after a long time,
    and one-participant sets Prolific refused (not sent again by the platform)."""
    S = ProlificBonus.State
    return ProlificBonus.objects.filter(
        Q(state=S.UNKNOWN, last_error__startswith=FLAG)
        | (Q(state=S.FAILED, last_error__startswith=REFUSED) & ~Q(csv_bonuses__contains="\n")),
        batch=batch,
    ).order_by("pk")


def carry_on(client: Prolific, bonus: ProlificBonus, report, now) -> None:
    """One bulk bonus one step further; every step is a conditional update, so two syncs never both act."""
    S = ProlificBonus.State
    if bonus.state == S.CREATING and bonus.create_claimed_at and now - bonus.create_claimed_at > STUCK:
        # The sync that claimed the create died: no id reached us, so nothing of it can be paid; create again.
        ProlificBonus.objects.filter(pk=bonus.pk, state=S.CREATING, prolific_id__isnull=True,
                                     create_claimed_at=bonus.create_claimed_at).update(state=S.RECORDED)
        bonus.refresh_from_db()
    if bonus.state == S.RECORDED and not create(client, bonus, report, now):
        return
    if bonus.state == S.CREATED:
        pay(client, bonus, report, now)
    elif bonus.state == S.UNKNOWN:
        check_unknown(client, bonus, report, now)
    elif bonus.state == S.PAYING and now - bonus.pay_recorded_at > STUCK:
        # The process sending it stopped before recording the answer: it may have been sent.
        ProlificBonus.objects.filter(pk=bonus.pk, state=S.PAYING).update(state=S.UNKNOWN)
    # Otherwise CREATING or PAYING: a call in flight in another process (its outcome is recorded there).


def pay_bonuses(batch: Batch, client: Prolific, report, now=None) -> None:
    """Every study's due bonus set, created and paid; earlier sets carried on.  One set's trouble never stops
    another's."""
    now = now or timezone.now()
    for study in ProlificStudy.objects.filter(batch=batch, prolific_id__isnull=False).order_by("pk"):
        try:
            record_bonus(study)
            for bonus in study.bonuses.exclude(state__in=[ProlificBonus.State.PAID, ProlificBonus.State.FAILED]).order_by("pk"):
                try:
                    carry_on(client, bonus, report, now)
                except Exception as exc:  # noqa: BLE001 - one set's trouble must not stop the study's others
                    log.exception("Prolific bulk bonus %s", bonus.pk)
                    ProlificBonus.objects.filter(pk=bonus.pk).update(last_error=f"{type(exc).__name__}: {exc}"[:1000])
                    report.error(f"bulk bonus {bonus.pk}", exc)
        except Exception as exc:  # noqa: BLE001 - one study's bonuses must not stop another's
            log.exception("Prolific bonuses of study %s", study.prolific_id)
            report.error(f"bonuses of study {study.prolific_id}", exc)


__all__ = ["flagged", "line_fees", "parse_csv", "pay_bonuses", "record_bonus", "settle"]
