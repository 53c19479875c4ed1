"""A researcher's review of a Prolific participant's HITs, mapped to their submission's transition.

The researcher approves and rejects HITs (assignments) one by one or in bulk, as for any campaign
(``hits.payments``).  A Prolific participant's submission is one session of HITs, and Prolific knows only the
submission, so once every HIT of a session is reviewed (none submitted, pending or held any more):

- at least one HIT approved: the submission is APPROVED (several of one study in one ``bulk-approve``
  call).  Its reward (the study's reward: the whole session's, ``hits.prolific.pricing``) pays the session's
  approved HITs, each at its reward, with their fees, when Prolific answers; what is left of it (a session the
  platform cut short, HITs rejected here) is booked as a line of its own (``book_base``).  Approved HITs
  beyond what the reward pays are paid as bonuses of their reward (``hits.prolific.bonuses``);
- every HIT rejected: the submission is REJECTED with the researcher's message and a rejection category, as
  Prolific requires (``REJECTION_CATEGORIES``; the message at least ``PROLIFIC_REJECT_MESSAGE_MIN``
  characters).  Nothing is paid.  A HIT approved later (the researcher changes their mind) is paid as a
  bonus: Prolific cannot approve a rejected submission;
- a returned or timed-out session is not reviewed on Prolific (Prolific does not allow it): its approved HITs
  are all paid as bonuses.

Unreviewed HITs are approved ``PROLIFIC_APPROVE_AFTER_HOURS`` after their submission (as MTurk's
``MTURK_APPROVE_AFTER_HOURS``), which completes the session's review; Prolific itself approves a submission
left unreviewed for 21 days, and the sync then approves its HITs here (the submission's status says so).

Prolific's rules for rejecting (researcher help, "Reviewing submissions: how do I decide who to
accept/reject?", https://researcher-help.prolific.co/hc/en-gb/articles/360009092394): reject only with
evidence of negligence: completed exceptionally fast (3 standard deviations below the mean), skipped crucial
questions, failed fair attention checks, or clearly low effort where the engagement needed was stated.  Not
for a participant who did the work with a completion code; a participant with a technical problem should be
asked to return the submission instead (``REJECTION_RULES``, shown on the review page).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from hits.markets.money import money
from hits.models import HIT, Assignment, Batch, LedgerEntry
from hits.prolific.client import Prolific, ProlificError
from hits.prolific.models import ProlificSession, ProlificStudy
from hits.prolific.pricing import REWARD_TOKENS, SESSION_SHARE_TOKEN  # noqa: F401 - also this module's names
from hits.prolific.sessions import session_assignments, unfinished_test

log = logging.getLogger(__name__)

APPROVE, REJECT = "APPROVE", "REJECT"

# Prolific's rejection categories (API reference, submission transition), with what they mean.
REJECTION_CATEGORIES = {
    "TOO_QUICKLY": "Completed too quickly",
    "TOO_SLOWLY": "Took too long",
    "FAILED_INSTRUCTIONS": "Did not follow the instructions",
    "INCOMP_LONGITUDINAL": "Incomplete longitudinal study",
    "FAILED_CHECK": "Failed an attention check",
    "LOW_EFFORT": "Low effort",
    "MALINGERING": "Malingering",
    "NO_CODE": "No completion code",
    "BAD_CODE": "Wrong completion code",
    "NO_DATA": "No data",
    "UNSUPP_DEVICE": "Unsupported device",
    "OTHER": "Other",
}

REJECTION_RULES = (
    "Prolific penalises participants for rejections, and allows them only with evidence of negligence: "
    "completed exceptionally fast (3 standard deviations below the mean), skipped crucial questions, failed fair "
    "attention checks, or clearly low effort where the engagement needed was stated. A participant who did the "
    "work and came back with the completion code should be paid; one with a technical problem should be asked "
    "to return the submission instead. The submission is rejected only when every HIT of the participant's "
    "session is; the message (at least {minimum} characters) and the category are sent to Prolific. "
    "Source: Prolific researcher help, \u201cReviewing submissions: how do I decide who to accept/reject?\u201d."
)


class ReviewRefused(Exception):
    """A Prolific review that cannot be made as asked (e.g. a rejection without a category)."""


def rejection_rules() -> str:
    return REJECTION_RULES.format(minimum=settings.PROLIFIC_REJECT_MESSAGE_MIN)


def check_rejection(message: str, category: str) -> None:
    """A rejection of a Prolific participant's work needs a category and a message long enough for Prolific."""
    message = (message or "").strip()
    if not category:
        raise ReviewRefused("Prolific needs a rejection category: choose one (" + ", ".join(REJECTION_CATEGORIES) + ")")
    if category not in REJECTION_CATEGORIES:
        raise ReviewRefused(f"'{category}' is not one of Prolific's rejection categories (" + ", ".join(REJECTION_CATEGORIES) + ")")
    minimum = settings.PROLIFIC_REJECT_MESSAGE_MIN
    if len(message) < minimum:
        raise ReviewRefused(
            f"Prolific needs a rejection message of at least {minimum} characters explaining why; this one has {len(message)}"
        )


def session_of(assignment: Assignment) -> ProlificSession | None:
    """The Prolific session an assignment was done in (None for work not done through Prolific): its worker's
    session in the study of its batch, task type and kind (``sessions.session_assignments`` the other way)."""
    kind = ProlificStudy.Kind.SCREENING if assignment.hit.kind == HIT.Kind.QUALIFICATION else ProlificStudy.Kind.MAIN
    return ProlificSession.objects.filter(
        worker_id=assignment.worker_id, study__batch_id=assignment.hit.batch_id,
        study__task_type_id=assignment.hit.task_type_id, study__kind=kind,
    ).first()


def note_rejection_category(assignment: Assignment, category: str) -> None:
    """Keep the category a researcher chose when rejecting a Prolific participant's HIT, for the submission."""
    session = session_of(assignment)
    if session is not None and category:
        ProlificSession.objects.filter(pk=session.pk).update(rejection_category=category)


UNREVIEWED = (Assignment.State.ASSIGNED, Assignment.State.PENDING, Assignment.State.SUBMITTED)


def outcome(session: ProlificSession) -> str | None:
    """APPROVE, REJECT, or None while the session's review is not complete (or it has no reviewed HIT)."""
    states = list(session_assignments(session).values_list("state", flat=True))
    if not states or any(state in UNREVIEWED for state in states):
        return None
    if Assignment.State.APPROVED in states:
        return APPROVE
    if Assignment.State.REJECTED in states:
        return REJECT
    return None


def base_entries(session: ProlificSession) -> list[LedgerEntry]:
    """The reward entries the submission's own reward pays: the session's approved HITs' in order, as many as the
    study's reward covers (the session's HITs on a main study; every item of the test on a screening study)."""
    approved = session_assignments(session).filter(state=Assignment.State.APPROVED)
    covered, total = [], Decimal("0")
    reward = session.study.reward
    for entry in LedgerEntry.objects.filter(assignment__in=approved, kind=LedgerEntry.Kind.REWARD).order_by("assignment_id"):
        if covered and total + entry.amount > reward:
            break
        covered.append(entry)
        total += entry.amount
    return covered


def match_submission_fee(entries: list[LedgerEntry], total: Decimal) -> None:
    """Prolific charges its fee (and VAT) on the submission's reward as one amount, ``total`` (what it states:
    ``fees.submission_fee``): the fee entries of the rewards it pays are set to add up to it to the cent
    (``fees.split_fee``)."""
    from hits.prolific import fees

    fee_entries = {f.fee_for_id: f for f in LedgerEntry.objects.filter(fee_for__in=entries, kind=LedgerEntry.Kind.FEE)}
    for entry, share in zip(entries, fees.split_fee(total, [e.amount for e in entries])):
        fee_entry = fee_entries.get(entry.pk)
        if fee_entry is not None and fee_entry.amount != share:
            LedgerEntry.objects.filter(pk=fee_entry.pk).update(amount=share)


#: Starts the note on a session whose reward Prolific paid with no reward pending here (payout page).
PAID_BY_PROLIFIC = "PAID BY PROLIFIC"
#: Starts the note on a submission completed late whose HITs were all paid already (not approved here).
PAID_ALREADY = "PAID ALREADY"




def book_base(session: ProlificSession) -> None:
    """Prolific paid the submission's reward (the study's ``reward``): booked as paid, with its fee.

    It pays the session's approved HITs (``base_entries``: as many as the reward covers; every test item on a
    screening study, each item booked at its share of the study's reward), each at its own reward.  The reward
    left over (a session cut short by the platform, or HITs the researcher rejected in an approved submission:
    Prolific pays the whole reward all the same) is booked as one line of its own on the session's last approved
    HIT (``unused_share``), so the entries add up to the reward to the cent and nothing is hidden in a HIT's share.
    When the entries add up to more (a HIT reward raised after the study was created), the last one is set so
    that they add up to the reward, and its reward beyond it stays due as a bonus.  With no such entry pending and
    in no bulk bonus (Prolific approved on its own a submission with no approved HIT here, or whose HITs were all
    paid as bonuses already) the reward is booked as paid by Prolific on its own and flagged for the researcher
    (payout page: ``hits.payouts.paid_by_mturk``)."""
    from hits.payments import record_entry
    from hits.prolific import fees

    study = session.study
    base = study.reward
    entries = base_entries(session)
    if not reward_left(entries):
        paid_unseen(session, base)
        return
    total = sum((entry.amount for entry in entries), Decimal("0"))
    last = entries[-1]
    if total > base and last.amount + (base - total) >= 0:
        rest = total - base
        amount = last.amount - rest
        LedgerEntry.objects.filter(pk=last.pk).update(amount=amount, reason=f"{last.reason} (Prolific's reward of the submission)"[:1000])
        last.amount = amount
        record_entry(last.assignment, LedgerEntry.Kind.BONUS, rest, "the HIT's reward beyond the submission's reward",
                     None, f"reward-{last.assignment_id}-rest")
    elif total < base:
        entries.append(unused_share(session, last, base - total))
    match_submission_fee(entries, fees.submission_fee(study))
    mark_entries_paid(entries)


def unused_share(session: ProlificSession, last: LedgerEntry, amount: Decimal) -> LedgerEntry:
    """The part of the submission's reward that pays for no approved HIT, as a ledger line of its own (pending, with
    its fee; ``book_base`` pays it with the reward): the platform could not hand out the session's whole size
    (``pricing.UNUSED_SHARE``), or the researcher rejected some of its HITs (``pricing.REJECTED_SHARE``)."""
    from hits.payments import record_entry
    from hits.prolific.pricing import REJECTED_SHARE, UNUSED_SHARE

    done = session_assignments(session).filter(state__in=[Assignment.State.APPROVED, Assignment.State.REJECTED]).count()
    why = REJECTED_SHARE if done >= session.study.hits_per_submission else UNUSED_SHARE
    reason = f"{why}: {session.study.hits_per_submission} HITs paid by submission {session.session_id}'s reward"
    return record_entry(last.assignment, LedgerEntry.Kind.BONUS, amount, reason, None,
                        f"{SESSION_SHARE_TOKEN}{session.session_id}"[:64])


def reward_left(entries: list[LedgerEntry]) -> bool:
    """Whether the submission's reward has HIT rewards to pay (``base_entries``): pending, and in no bulk bonus
    that may pay them (a timed-out or returned session's HITs are paid as bonuses)."""
    from hits.prolific.models import ProlificBonus

    return bool(entries) and all(
        entry.state == LedgerEntry.State.PENDING
        and not entry.prolific_bonuses.exclude(state=ProlificBonus.State.FAILED).exists()
        for entry in entries
    )


def paid_unseen(session: ProlificSession, amount) -> None:
    """The submission's reward Prolific paid with no reward pending here: booked paid, once, and flagged."""
    from hits.prolific import fees

    token = f"prolific-reward-{session.session_id}"[:64]
    note = (f"{PAID_BY_PROLIFIC}: Prolific approved submission {session.session_id} and paid its reward "
            f"{money(amount, session.study.batch)} with "
            "no reward pending here (its own approval, or a returned/timed-out submission): booked as paid; check it")
    ProlificSession.objects.filter(pk=session.pk).update(last_error=note[:1000])
    if amount <= 0 or LedgerEntry.objects.filter(request_token=token).exists():
        return
    assignment = session_assignments(session).order_by("pk").first()
    if assignment is None:  # no work here to book it on: the note on the session is all (reconcile shows it)
        log.warning("%s", note)
        return
    now = timezone.now()
    entry = LedgerEntry.objects.create(
        batch=session.study.batch, assignment=assignment, worker=session.worker, kind=LedgerEntry.Kind.BONUS,
        amount=amount, state=LedgerEntry.State.PAID, settled_at=now, request_token=token, reason=note[:1000],
        paid_by_mturk=True,
    )
    LedgerEntry.objects.create(
        batch=session.study.batch, assignment=assignment, worker=session.worker, kind=LedgerEntry.Kind.FEE,
        fee_for=entry, amount=fees.submission_fee(session.study), state=LedgerEntry.State.PAID,
        settled_at=now, request_token=f"{token}-fee"[:64], reason="Prolific service fee on its reward", paid_by_mturk=True,
    )


def mark_entries_paid(entries) -> None:
    """Ledger entries (and their fee entries) Prolific has now paid; their assignments' rewards paid too."""
    ids = [entry.pk for entry in entries]
    now = timezone.now()
    with transaction.atomic():
        LedgerEntry.objects.filter(pk__in=ids).update(state=LedgerEntry.State.PAID, settled_at=now, error="")
        LedgerEntry.objects.filter(fee_for_id__in=ids).update(state=LedgerEntry.State.PAID, settled_at=now)
        rewarded = LedgerEntry.objects.filter(pk__in=ids, kind=LedgerEntry.Kind.REWARD).values("assignment_id")
        Assignment.objects.filter(pk__in=rewarded).update(paid=True)


def approve_due(batch: Batch, now=None) -> int:
    """Approve Prolific participants' HITs submitted more than ``PROLIFIC_APPROVE_AFTER_HOURS`` ago that no
    researcher reviewed; returns how many."""
    from hits.payments import approve_assignment

    now = now or timezone.now()
    due = now - timedelta(hours=settings.PROLIFIC_APPROVE_AFTER_HOURS)
    done = 0
    for assignment in Assignment.objects.filter(hit__batch=batch, state=Assignment.State.SUBMITTED, submitted_at__lte=due):
        # only if still submitted when locked: a researcher's review made meanwhile stands
        if approve_assignment(assignment, "Thank you for your work.", settle=False, only_submitted=True).state == Assignment.State.APPROVED:
            done += 1
    return done


def record_decision(session: ProlificSession, decision: str, market_status: str | None = None) -> None:
    """The submission's decision, and with APPROVE its reward booked as paid (the base entry), in one transaction:
    from then on every pending reward of the session is a bonus (``hits.prolific.bonuses``)."""
    with transaction.atomic():
        first = ProlificSession.objects.filter(pk=session.pk, decision="").update(
            decision=decision, decided_at=timezone.now(), last_error="",
            market_status=market_status or ("APPROVED" if decision == APPROVE else "REJECTED"),
        )
        if decision == APPROVE and first:  # booked once: a second call would book Prolific's reward again
            book_base(ProlificSession.objects.select_related("study__batch", "worker").get(pk=session.pk))


def _decided(session: ProlificSession, decision: str, report) -> None:
    record_decision(session, decision)
    if decision == APPROVE:
        report.approved += 1
    else:
        report.rejected += 1


def _failed(sessions, what: str, exc: ProlificError, report) -> None:
    ProlificSession.objects.filter(pk__in=[s.pk for s in sessions]).update(last_error=f"{what}: {exc}"[:1000])
    report.error(what, exc)


def rejection_message(session: ProlificSession) -> str:
    """The researcher's messages on the session's rejected HITs, each once."""
    messages = []
    for message in session_assignments(session).filter(state=Assignment.State.REJECTED).order_by("pk").values_list("review_message", flat=True):
        if message and message not in messages:
            messages.append(message.strip())
    return " ".join(messages)


def send_decisions(batch: Batch, client: Prolific, report) -> None:
    """Send the submissions' transitions whose review is complete (see the module's notes).

    A session is decided once: APPROVE for several sessions of a study goes in one bulk-approve call; REJECT
    one by one.  A refused call is noted on its sessions and tried again by the next sync; it never stops the
    others."""
    undecided = ProlificSession.objects.filter(
        # Prolific lists it as awaiting review: the participant came back with the completion code (a session
        # still "working" here too: its HITs held are reviewed once they are submitted or expire).
        study__batch=batch, state__in=[ProlificSession.State.COMPLETED, ProlificSession.State.ACTIVE],
        confirmed_at__isnull=False, decision="", market_status="AWAITING REVIEW",
    ).select_related("study").order_by("pk")
    approve: dict[ProlificStudy, list[ProlificSession]] = defaultdict(list)
    for session in undecided:
        _isolated(session, report, _sort, session, approve, client, report)
    for study, sessions in approve.items():
        _isolated(None, report, _approve_study, client, study, sessions, report)


def _isolated(session: ProlificSession | None, report, function, *args) -> None:
    """One session's (or study's) step; an unexpected error is recorded on it and the others go on."""
    try:
        function(*args)
    except Exception as exc:  # noqa: BLE001 - one submission's trouble must not stop the others
        log.exception("Prolific review: %s", session or args)
        if session is not None:
            ProlificSession.objects.filter(pk=session.pk).update(last_error=f"{type(exc).__name__}: {exc}"[:1000])
        report.error(f"reviewing submission {session.session_id}" if session is not None else "reviewing submissions", exc)


def _sort(session: ProlificSession, approve: dict, client: Prolific, report) -> None:
    decision = outcome(session)
    if decision is None and not session_assignments(session).exists() and not session.last_error:
        # Nothing done here: for the researcher to decide on Prolific (ask for a return, or NO_DATA).
        note = "awaits review on Prolific with no HIT done here: ask the participant to return it, or decide on Prolific"
        ProlificSession.objects.filter(pk=session.pk).update(last_error=note)
        report.errors.append(f"submission {session.session_id} {note}")
    if decision is not None and unfinished_test(session):
        # Its reward pays the whole test: approving would pay items never done.  No code was given here.
        _reject(client, session, report, UNFINISHED_TEST_MESSAGE, "NO_CODE")
    elif decision == APPROVE and not reward_left(base_entries(session)):
        # Completed late (timed out first) after its HITs were paid as bonuses: approving would pay them again.
        note = (f"{PAID_ALREADY}: submission {session.session_id} completed on Prolific after its HITs were paid as "
                "bonuses (it had timed out): approving it would pay Prolific's reward on top. Not approved by the "
                "platform: ask the participant to return it on Prolific, or decide there.")
        if not session.last_error.startswith(PAID_ALREADY):
            ProlificSession.objects.filter(pk=session.pk).update(last_error=note)
            report.errors.append(note[:300])
    elif decision == APPROVE:
        approve[session.study].append(session)
    elif decision == REJECT:
        _reject(client, session, report)


def _approve_study(client: Prolific, study: ProlificStudy, sessions: list[ProlificSession], report) -> None:
    if len(sessions) > 1:
        try:
            client.request("POST", "/submissions/bulk-approve/", safe=True, json={
                "study_id": study.prolific_id, "submission_ids": [s.session_id for s in sessions],
            })
        except ProlificError as exc:
            if exc.transient:
                _failed(sessions, f"approving {len(sessions)} submissions of study {study.prolific_id}", exc, report)
                return
            # Refused (all or nothing): one submission may be the cause; each is approved on its own.
            log.warning("bulk approve of study %s refused, approving one by one: %s", study.prolific_id, exc)
        else:
            for session in sessions:
                _isolated(session, report, _decided, session, APPROVE, report)
            return
    for session in sessions:
        try:
            client.request("POST", f"/submissions/{session.session_id}/transition/", json={"action": APPROVE}, safe=True)
        except ProlificError as exc:
            _failed([session], f"approving submission {session.session_id}", exc, report)
            continue
        _isolated(session, report, _decided, session, APPROVE, report)


#: Why a screening submission whose test was not finished here is rejected (its items are paid as bonuses).
UNFINISHED_TEST_MESSAGE = (
    "You did not finish the qualification test of this study: an item was given back (or none was left), so the "
    "test could not be graded and our pages gave no completion code. The items you finished are paid as a bonus. "
    "Please return a submission you cannot complete instead of submitting it."
)


def _reject(client: Prolific, session: ProlificSession, report, message: str | None = None, category: str | None = None) -> None:
    message = rejection_message(session) if message is None else message
    category = category or session.rejection_category
    try:
        check_rejection(message, category)
    except ReviewRefused as exc:
        ProlificSession.objects.filter(pk=session.pk).update(last_error=f"not rejected on Prolific: {exc}"[:1000])
        report.errors.append(f"submission {session.session_id} not rejected: {exc}"[:300])
        return
    try:
        client.request("POST", f"/submissions/{session.session_id}/transition/", safe=True, json={
            "action": REJECT, "message": message, "rejection_category": category,
        })
    except ProlificError as exc:
        _failed([session], f"rejecting submission {session.session_id}", exc, report)
        return
    _decided(session, REJECT, report)


def mirror_market_approval(session: ProlificSession) -> None:
    """Prolific approved the submission on its own (21 days unreviewed): its unreviewed HITs are approved here
    and the base reward is booked as paid; with no reward pending here to pay, Prolific's reward is booked as
    paid by it on its own and flagged (``book_base``)."""
    from hits.payments import approve_assignment

    for assignment in session_assignments(session).filter(state=Assignment.State.SUBMITTED):
        approve_assignment(assignment, "Approved by Prolific (not reviewed in time).", settle=False, only_submitted=True)
    record_decision(session, APPROVE)
