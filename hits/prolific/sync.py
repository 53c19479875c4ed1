"""Keeping Prolific and the platform in step: studies, submissions, reviews, bonuses and groups.

The database is the source of truth for the work; Prolific for who really took part and what it paid.
``sync_batch``:

1. grows the studies' places when new HITs appeared, and publishes studies for task types whose work appeared
   since (``hits.prolific.publishing.ensure_places``);
2. lists each study's submissions (every page), mirrors the study's status and each submission's status:
   - a session whose SESSION_ID Prolific lists for the same participant: confirmed (its work counts:
     ``hits.prolific.sessions.confirm_session``), again on every sync while it has pending work (HITs done
     after the first confirmation, also once the session ended);
   - listed for another participant, or still unknown to Prolific ``PROLIFIC_CONFIRM_GRACE`` seconds after it
     started (made-up ids): discarded, nothing counts, nothing is paid (``discard_session``);
   - RETURNED or TIMED-OUT: ended (``end_session``): unfinished HITs freed, finished ones kept (paid as
     bonuses once reviewed); TIMED-OUT then completed all the same (AWAITING REVIEW or APPROVED): completed
     again, so it is decided here and paid once (its reward, then bonuses);
   - APPROVED by Prolific without a decision here (21 days unreviewed): mirrored (``review.mirror_market_approval``);
3. approves HITs left unreviewed ``PROLIFIC_APPROVE_AFTER_HOURS`` and sends the submissions' transitions whose
   review is complete (``hits.prolific.review``);
4. pays due bonuses per study (``hits.prolific.bonuses``), reading Prolific's records for lost pay replies;
5. sends group changes (``hits.prolific.groups``).

A failing call on one study, submission or bonus set never stops the others: it is recorded (on the study,
the session, the bonus, and in the report) and tried again by the next sync.  One run per batch at a time
(``settling_lock``, PostgreSQL's advisory lock): a second run finds it held and does nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from hits.models import Assignment, Batch
from hits.prolific import bonuses, groups, review
from hits.prolific.client import Prolific, ProlificError
from hits.prolific.models import ProlificSession, ProlificStranger, ProlificStudy
from hits.prolific.sessions import session_assignments
from hits.reports import SyncErrors

log = logging.getLogger(__name__)

ENDED_STATUS = {"RETURNED": ProlificSession.State.RETURNED, "TIMED-OUT": ProlificSession.State.TIMED_OUT}
#: Statuses of a submission whose participant came back with the completion code.
COMPLETED_LATE = ("AWAITING REVIEW", "APPROVED")


@dataclass
class SyncReport(SyncErrors):
    market = "Prolific"

    studies: int = 0
    listed: int = 0
    status_changes: int = 0
    confirmed: int = 0
    discarded: int = 0
    ended: int = 0
    approved: int = 0
    rejected: int = 0
    bonuses: int = 0
    group_changes: int = 0
    failed: int = 0
    errors: list = field(default_factory=list)


def session_actions():
    """The participant pages' session services (``hits.prolific.sessions``): confirm, discard, end."""
    from hits.prolific import sessions

    return sessions.confirm_session, sessions.discard_session, sessions.end_session


def sync_batch(batch: Batch, client: Prolific | None = None, now=None) -> SyncReport:
    """Bring a batch and its Prolific studies in step; safe to run any number of times."""
    batch.refresh_from_db()
    own = client is None
    client = client or Prolific()
    now = now or timezone.now()
    report = SyncReport()
    try:
        with settling_lock(batch) as acquired:
            if not acquired:
                report.errors.append(BUSY)
                return report
            _ensure_places(batch, client, report)
            for study in ProlificStudy.objects.filter(batch=batch, prolific_id__isnull=False).order_by("pk"):
                report.studies += 1
                sync_study(client, study, report, now)
            _step("following the campaign's state", report, follow_state, batch, client, report)
            settle_batch(batch, client, report, now)
            _step("sending group changes", report, groups.push, batch, client, report)
    finally:
        if own:
            client.close()
    return report


# First key of the advisory lock held by a sync or settle run of a batch (second key: the batch id).
SETTLE_LOCK = 7302
BUSY = "another sync of this batch is running: nothing done (it does the same)"


def settling_lock(batch: Batch):
    """One sync/settle run per batch at a time (two runs would both act on one recorded bulk bonus); a no-op on
    SQLite, re-entrant in one connection (``sync_batch`` calls ``settle_batch``)."""
    from hits.markets.publishing import publishing_lock

    return publishing_lock(batch, namespace=SETTLE_LOCK)


def _step(what: str, report: SyncReport, function, *args) -> None:
    """One step of a run; an unexpected error is recorded and the run goes on with the next step."""
    try:
        function(*args)
    except Exception as exc:  # noqa: BLE001 - one step's trouble must not stop the others
        log.exception("Prolific sync: %s", what)
        report.error(what, exc)


def settle_batch(batch: Batch, client: Prolific, report: SyncReport | None = None, now=None) -> SyncReport:
    """Reviews and bonuses: approve what waited too long, send complete reviews, pay due bonuses."""
    report = report or SyncReport()
    now = now or timezone.now()
    with settling_lock(batch) as acquired:
        if not acquired:
            report.errors.append(BUSY)
            return report
        _step("approving HITs left unreviewed", report, review.approve_due, batch, now)
        _step("sending review decisions", report, review.send_decisions, batch, client, report)
        _step("paying bonuses", report, bonuses.pay_bonuses, batch, client, report, now)
    return report


def _ensure_places(batch: Batch, client: Prolific, report: SyncReport) -> None:
    """New HITs: more places on the studies (``publishing.ensure_places``).  A refusal (budget cap, hourly
    minimum) is shown in the report, as MTurk's sync shows one; a failed call is counted; the sync goes on."""
    from hits.markets.publishing import PublishRefused
    from hits.prolific.pricing import HourlyRateTooLow
    from hits.prolific.publishing import ensure_places

    try:
        ensure_places(batch, client)
    except (PublishRefused, HourlyRateTooLow) as exc:
        report.errors.append(f"not publishing more places: {exc}"[:300])
    except Exception as exc:  # noqa: BLE001 - places grow next time; the rest of the sync goes on
        report.error("growing the studies' places", exc)


def sync_study(client: Prolific, study: ProlificStudy, report: SyncReport, now) -> None:
    try:
        details = client.get(f"/studies/{study.prolific_id}/")
        items = list(client.paginate(f"/studies/{study.prolific_id}/submissions/"))
    except ProlificError as exc:
        ProlificStudy.objects.filter(pk=study.pk).update(last_error=str(exc)[:1000])
        report.error(f"listing study {study.prolific_id}", exc)
        return
    note = underpaying(details)
    if note and not study.last_error.startswith(UNDERPAYING):  # reported once, kept on the study
        report.errors.append(note[:300])
    ProlificStudy.objects.filter(pk=study.pk).update(status=details.get("status", study.status), last_synced_at=now, last_error=note)
    listed = {}
    for item in items:
        report.listed += 1
        listed[item.get("id")] = item
    reject_strangers(client, study, listed, report, now)
    sessions = study.sessions.exclude(state=ProlificSession.State.DISCARDED).order_by("pk")
    for session in sessions:
        try:
            with transaction.atomic():
                take_session(session, listed.get(session.session_id), report, now)
        except Exception as exc:  # noqa: BLE001 - one submission's trouble must not stop the others
            ProlificSession.objects.filter(pk=session.pk).update(last_error=str(exc)[:1000])
            report.error(f"session {session.session_id}", exc)
            log.exception("Prolific sync: session %s", session.session_id)


#: Starts the note on a study Prolific shows paying under its minimum per hour (``underpaying``).
UNDERPAYING = "UNDERPAYING"


def underpaying(details: dict) -> str:
    """A note when Prolific's study shows an average reward per hour (its reward over the median completion time,
    in cents) under Prolific's minimum: Prolific then asks for adjustment payments to the approved participants.
    "" otherwise (or before any submission is completed)."""
    from decimal import Decimal

    from hits.prolific.pricing import minimum_hourly

    shown = details.get("average_reward_per_hour")
    if shown is None:
        return ""
    rate, minimum = Decimal(int(shown)) / 100, minimum_hourly()
    if rate >= minimum:
        return ""
    return (f"{UNDERPAYING}: Prolific shows study {details.get('id', '')} paying ${rate:.2f}/h over its median "
            f"completion time ({details.get('average_completion_time')} min), under its minimum of ${minimum}/h: "
            "participants take longer than the estimate. Prolific will ask for adjustment payments (pay them as "
            "bonuses); a new study of this work would be priced on the measured time.")


def take_session(session: ProlificSession, item: dict | None, report: SyncReport, now) -> None:
    """One session brought in step with what Prolific lists for its SESSION_ID (None: not listed)."""
    confirm, discard, end = session_actions()
    if item is None:
        if session.confirmed_at is None and session.started_at <= now - timedelta(seconds=settings.PROLIFIC_CONFIRM_GRACE):
            discard(session, "Prolific has no submission with this session id: nothing counts")
            report.discarded += 1
        return
    if item.get("participant_id") != session.participant_id:
        if session.confirmed_at is None:
            discard(session, f"Prolific lists this session for another participant ({item.get('participant_id')})")
            report.discarded += 1
        return
    status = item.get("status", "")
    if status != session.market_status:
        ProlificSession.objects.filter(pk=session.pk).update(market_status=status)
        session.market_status = status
        report.status_changes += 1
    # Every sync (not only the first that lists it): HITs submitted after an earlier confirmation are pending
    # until confirmed, also when the session has ended since (confirm_session is idempotent).
    first = session.confirmed_at is None
    if first or session_assignments(session).filter(state=Assignment.State.PENDING).exists():
        confirm(session)
    if first:
        ProlificSession.objects.filter(pk=session.pk, confirmed_at__isnull=True).update(confirmed_at=now)
        session.confirmed_at = now
        report.confirmed += 1
    if status in ENDED_STATUS and session.state not in (ENDED_STATUS[status], ProlificSession.State.DISCARDED):
        end(session, ENDED_STATUS[status])
        report.ended += 1
    elif status in COMPLETED_LATE and session.state == ProlificSession.State.TIMED_OUT:
        # Timed out, then completed all the same (Prolific lets a participant whose place nobody took finish):
        # a completed submission again, decided here (``review.send_decisions``) so Prolific never approves it on
        # its own, and its HITs paid by its reward and bonuses, not all as bonuses of a timed-out session.
        ProlificSession.objects.filter(pk=session.pk, state=ProlificSession.State.TIMED_OUT).update(
            state=ProlificSession.State.COMPLETED)
        session.state = ProlificSession.State.COMPLETED
        report.status_changes += 1
    if status == "APPROVED" and not session.decision:
        review.mirror_market_approval(session)
    elif status == "REJECTED" and not session.decision:
        # Rejected on Prolific's own site: no reward was paid; the HITs approved here are paid as bonuses.
        review.record_decision(session, review.REJECT)


#: Why a submission with no session here is rejected (Prolific wants a message of at least 100 characters).
STRANGER_MESSAGE = (
    "We have no record of any work from you in this study: the study's tasks are done on our annotation pages, "
    "opened from the study link, and the completion code is given there only after the tasks. Your submission "
    "came back with the code but without any task done, so there is no data to review or pay."
)
STRANGER_CATEGORY = "NO_DATA"


def reject_strangers(client: Prolific, study: ProlificStudy, listed: dict, report: SyncReport, now) -> None:
    """Submissions Prolific lists in ``study`` for which no session exists here (``ProlificStranger``): recorded;
    rejected (``NO_DATA``, ``STRANGER_MESSAGE``) once they have awaited review ``PROLIFIC_CONFIRM_GRACE``
    seconds since first listed so, since no work here stands for them.  The transition is sent only while
    Prolific lists the submission AWAITING REVIEW, so a lost reply is settled by the next listing."""
    known = set(ProlificSession.objects.filter(session_id__in=list(listed)).exclude(
        state=ProlificSession.State.DISCARDED).values_list("session_id", flat=True))
    # A participant who started on Prolific and arrived here since is no stranger (ACTIVE ones are not recorded:
    # they may be on their way to the study URL).
    ProlificStranger.objects.filter(study=study, submission_id__in=known).delete()
    grace = timedelta(seconds=settings.PROLIFIC_CONFIRM_GRACE)
    for submission_id, item in listed.items():
        status = item.get("status", "")
        if not submission_id or submission_id in known or status == "ACTIVE":
            continue
        stranger, _ = ProlificStranger.objects.get_or_create(
            submission_id=submission_id,
            defaults={"study": study, "participant_id": item.get("participant_id") or "", "first_seen_at": now},
        )
        changes = {"market_status": status}
        if status == "AWAITING REVIEW" and stranger.awaiting_since is None:
            changes["awaiting_since"] = stranger.awaiting_since = now
        if status == "REJECTED" and stranger.rejected_at is None:
            changes["rejected_at"] = now
        ProlificStranger.objects.filter(pk=stranger.pk).update(**changes)
        if status != "AWAITING REVIEW" or stranger.awaiting_since > now - grace:
            continue
        try:
            client.request("POST", f"/submissions/{submission_id}/transition/", safe=True, json={
                "action": "REJECT", "message": STRANGER_MESSAGE, "rejection_category": STRANGER_CATEGORY,
            })
        except ProlificError as exc:
            ProlificStranger.objects.filter(pk=stranger.pk).update(last_error=str(exc)[:1000])
            report.error(f"rejecting submission {submission_id} (no session here)", exc)
            continue
        ProlificStranger.objects.filter(pk=stranger.pk).update(market_status="REJECTED", rejected_at=now, last_error="")
        report.rejected += 1
        log.warning("Prolific submission %s of %s rejected: no session here", submission_id, item.get("participant_id"))


def follow_state(batch: Batch, client: Prolific, report: SyncReport) -> None:
    """The studies follow the batch's state (PAUSE / START / STOP, ``hits.prolific.studies``): a transition
    that failed when the researcher paused, resumed or cancelled, or when the campaign finished, is retried."""
    from hits.prolific.studies import follow_batch_state

    report.errors.extend(follow_batch_state(batch, client))
