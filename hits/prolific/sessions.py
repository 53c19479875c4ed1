"""A Prolific participant's session: arrival from the study URL, the session's hand-out, and its end.

A participant arrives at ``STUDY_START_PATH`` with Prolific's ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``
(the id of their submission).  ``start_session`` checks them and binds the session id to the participant and the
study once and for all (``ProlificSession``); the participant is a platform ``Worker`` (``prolific_pid``) with a
Django user of their own that has no usable password (``participant_user``): the study link signs the browser in.

Inside the session the participant does HITs of the study's batch and task type only, on the platform's own HIT
pages: a main study hands out its regular and gold HITs, a screening study its qualification test items
(``study_kinds``).  A session reserves the HITs its reward pays for when it starts (``reserve``: the study's
``hits_per_submission``, or what is open when less is).  The hand-out (``advance``) gives the session's live HIT
back, or the next one, and ends the session (``COMPLETED``) after ``hits_per_submission`` HITs; a main session also
when no work is left for its participant after at least one (its reserved HITs done and no more open, or none to
be had: the platform cut it short, and its reward still pays the whole session); a screening session only with
every item of its test done.

A new SESSION_ID is checked with Prolific first (``check_submission``: ``GET /submissions/{id}/`` must show it
ACTIVE, for this participant and study; else a 403 refusal).  When Prolific cannot be reached the participant
works pending, and the completion code waits until Prolific confirms the submission (``code_may_be_shown``
asks again; a denial then discards the session).

Submissions are stored pending (``submit_assignment(confirm_later=True)``): anyone can open the study URL with
made-up ids, so nothing counts until the sync sees Prolific list this submission for this participant and
study.  The sync then calls ``confirm_session`` (the work counts), ``discard_session`` (a forged or mismatched
session: nothing counts, places freed) or ``end_session`` (returned or timed out on Prolific: unfinished HITs
freed, finished ones kept for the sync to decide).

Which assignments are a session's: the participant's of the study's batch, task type and kinds
(``session_assignments``); Prolific gives a participant one submission per study, and the database one session
per (study, participant).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from hits.models import HIT, Assignment, Batch, Worker
from hits.prolific.models import ProlificSession, ProlificStudy
from hits.services import NotEligible, accept_next, confirm_submission, discard_submission, market_worker, release_assignment

log = logging.getLogger(__name__)

#: Prolific's ids (participants, studies, submissions) are 24 hexadecimal characters.
PROLIFIC_ID = re.compile(r"^[0-9a-fA-F]{24}$")
#: The three parameters of the study URL, in the order they are checked and named in refusals.
PARAMETERS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
#: A session in one of these states is over: its browser can no longer work in it.
ENDED = (ProlificSession.State.RETURNED, ProlificSession.State.TIMED_OUT, ProlificSession.State.DISCARDED)
#: Work of a session that is done (waiting for confirmation, or counted).
DONE = (Assignment.State.PENDING, *Assignment.DONE_STATES)


class SessionRefused(Exception):
    """The study URL's parameters cannot open a session; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def check_parameters(params) -> tuple[dict[str, str], list[str]]:
    """The three parameters (lower-cased, as Prolific writes its ids) and, for each bad one, why."""
    values, problems = {}, []
    for name in PARAMETERS:
        value = params.get(name, "")
        if not value:
            problems.append(f"{name} is missing")
        elif not PROLIFIC_ID.match(value):
            shown = value[:40] + ("…" if len(value) > 40 else "")
            problems.append(f"{name} {shown!r} is not a Prolific id (24 hexadecimal characters)")
        else:
            values[name] = value.lower()
    return values, problems


def study_kinds(study: ProlificStudy) -> frozenset:
    """The kinds of HIT a study's sessions hand out: a screening study's are the qualification test items."""
    if study.kind == ProlificStudy.Kind.SCREENING:
        return frozenset({HIT.Kind.QUALIFICATION})
    return frozenset({HIT.Kind.REGULAR, HIT.Kind.GOLD})


def session_assignments(session: ProlificSession):
    """The assignments of a session: its participant's of the study's batch, task type and kinds."""
    study = session.study
    return Assignment.objects.filter(
        worker_id=session.worker_id, hit__batch_id=study.batch_id, hit__task_type_id=study.task_type_id,
        hit__kind__in=study_kinds(study),
    )


def completion_url(study: ProlificStudy) -> str:
    """Where a finished participant is sent: Prolific's completion page with the study's completion code."""
    base = settings.PROLIFIC_COMPLETION_URL
    return base + ("&" if "?" in base else "?") + urlencode({"cc": study.completion_code})


def start_session(participant_id: str, study_id: str, session_id: str) -> ProlificSession:
    """The session of these (checked) ids: the one bound to ``session_id`` when it is this participant's in this
    study (a return to the study URL resumes it), else a new one.  Raises ``SessionRefused`` (nothing created)
    for an unknown study (404), a session id bound to another participant or study (403), a participant who
    already has another session in this study (409) or a study whose campaign is not running (409)."""
    study = ProlificStudy.objects.select_related("batch", "task_type").filter(prolific_id=study_id).first()
    if study is None or not study.batch.on_prolific:
        raise SessionRefused(404, f"The study {study_id} is not one of this platform's Prolific studies. "
                                  "Please open the study from Prolific.")
    existing = _bound(session_id)
    if existing is not None:
        return _same_binding(existing, participant_id, study)
    other = ProlificSession.objects.filter(study=study, participant_id=participant_id).exclude(
        state=ProlificSession.State.DISCARDED).first()
    if other is not None:
        raise SessionRefused(409, "You already have another session in this study (Prolific gives one submission "
                                  "per participant and study). Please continue from that submission on Prolific.")
    if study.batch.state != Batch.State.ACTIVE:
        raise SessionRefused(409, f"This study's campaign is {study.batch.get_state_display().lower()}: it takes no "
                                  "new participants now. Please return the study on Prolific.")
    # Ids in a URL are no secret: Prolific must know this submission for this participant and study.
    verified = check_submission(session_id, participant_id, study.prolific_id, ("ACTIVE",))
    worker = market_worker("prolific_pid", participant_id, "prolific")
    try:
        with transaction.atomic():
            session = ProlificSession.objects.create(
                study=study, participant_id=participant_id, session_id=session_id, worker=worker,
                market_status=verified or "",
            )
    except IntegrityError:
        # Two arrivals at once: the same link loaded twice (the binding made by the other is this one), or
        # another session id of the same participant in this study.
        existing = _bound(session_id)
        if existing is None:
            raise SessionRefused(409, "You already have another session in this study. Please continue from that "
                                      "submission on Prolific.") from None
        return _same_binding(existing, participant_id, study)
    session.study = study
    reserve(session)
    log.info("Prolific session %s of %s in study %s started (%d HITs reserved)", session_id, participant_id,
             study_id, session.reserved_hits)
    return session


#: Assignments that hold one of a session's reserved HITs: live, or done.
TAKEN = (Assignment.State.ASSIGNED, *DONE)


def _outstanding_by_session(study: ProlificStudy) -> dict[int, int]:
    """The reserved HITs each working session of the study has not taken yet, in two queries (a session is one participant's:
    its assignments are that participant's of the study's batch, task type and kinds)."""
    from django.db.models import Count

    working = list(ProlificSession.objects.filter(study=study, state=ProlificSession.State.ACTIVE)
                   .values_list("pk", "worker_id", "reserved_hits"))
    taken = dict(
        Assignment.objects.filter(
            worker_id__in=[worker for _, worker, _ in working], hit__batch_id=study.batch_id,
            hit__task_type_id=study.task_type_id, hit__kind__in=study_kinds(study), state__in=TAKEN,
        ).values("worker_id").annotate(n=Count("pk")).values_list("worker_id", "n")
    )
    return {pk: max(0, reserved - taken.get(worker, 0)) for pk, worker, reserved in working}


def reserve(session: ProlificSession) -> int:
    """Reserve the session's HITs (its row, then its study's, locked: reservations of a study never interleave):
    a screening session reserves its whole test; a main session tops its reservation up to the study's
    ``hits_per_submission`` with the regular HITs open to its participant that no other working session of the
    study has reserved: the study's open places, less the HITs other working sessions reserved and have not
    taken yet, and at most the HITs this participant may still take.  Fewer are open: it reserves those (its
    reward still pays the whole session: the rest is booked as work the platform could not hand out); none: it
    reserves none, and takes some as work appears.  Returns the session's reserved HITs."""
    with transaction.atomic():
        locked = ProlificSession.objects.select_for_update(of=("self",)).select_related(
            "study__task_type", "worker").get(pk=session.pk)
        reserved = _top_up(locked)
    session.reserved_hits = reserved
    return reserved


def _top_up(session: ProlificSession) -> int:
    """``reserve`` with the session's row already locked (see there)."""
    study = session.study
    size = study.hits_per_submission
    if session.state != ProlificSession.State.ACTIVE or session.reserved_hits >= size:
        return session.reserved_hits
    if study.kind == ProlificStudy.Kind.SCREENING:
        wanted = size
    else:
        ProlificStudy.objects.select_for_update().filter(pk=study.pk).first()
        wanted = session.reserved_hits + max(0, min(size - session.reserved_hits, _unreserved_for(session)))
    if wanted != session.reserved_hits:
        ProlificSession.objects.filter(pk=session.pk).update(reserved_hits=wanted)
        session.reserved_hits = wanted
    return wanted


def _unreserved_for(session: ProlificSession) -> int:
    """Regular HITs of the session's study its participant could take now that no working session (this one
    included) has reserved."""
    from django.db.models import F, Sum

    from hits.handlers import eligibility
    from hits.services import available_hits

    study = session.study
    regular = HIT.objects.filter(batch_id=study.batch_id, task_type_id=study.task_type_id, kind=HIT.Kind.REGULAR,
                                 state=HIT.State.OPEN, batch__state=Batch.State.ACTIVE, n_taken__lt=F("max_assignments"))
    row = regular.aggregate(places=Sum("max_assignments"), taken=Sum("n_taken"))
    pool = (row["places"] or 0) - (row["taken"] or 0)
    claimed = _outstanding_by_session(study)
    allowed = eligibility(session.worker, study.task_type).within(study.batch_id, study_kinds(study))
    if not allowed:
        return 0
    mine = available_hits(session.worker, study.task_type, allowed, backend=Batch.Backend.PROLIFIC).filter(
        batch_id=study.batch_id, kind=HIT.Kind.REGULAR).count()
    return min(mine - claimed.get(session.pk, 0), pool - sum(claimed.values()))


def check_submission(session_id: str, participant_id: str, study_id: str, statuses, client=None) -> str | None:
    """Ask Prolific for the submission ``session_id`` (``GET /submissions/{id}/``): its status when it is
    ``participant_id``'s in ``study_id`` with a status in ``statuses``; None when Prolific cannot be reached
    now (the caller lets the participant go on pending and asks again later).  Raises ``SessionRefused(403)``
    when Prolific does not know the submission, or knows it for another participant, study or status."""
    from hits.prolific.client import Prolific, ProlificError

    try:
        if client is not None:
            item = client.get(f"/submissions/{session_id}/")
        else:
            with Prolific(timeout=10.0) as own:
                item = own.get(f"/submissions/{session_id}/")
    except ProlificError as exc:
        if exc.transient or exc.ambiguous:
            log.warning("Prolific submission %s could not be checked: %s", session_id, exc)
            return None
        if exc.status == 404:
            raise SessionRefused(403, f"Prolific has no submission {session_id}: these ids do not come from a "
                                      "Prolific study. Please open the study from Prolific.") from None
        log.warning("Prolific submission %s check refused: %s", session_id, exc)
        return None
    item = item or {}
    found = (item.get("participant_id") or item.get("participant"), item.get("study_id") or item.get("study"))
    if found != (participant_id, study_id):
        raise SessionRefused(403, f"Prolific's submission {session_id} is not this participant's in this study: "
                                  "the study URL's parameters do not match. Please open the study from Prolific.")
    status = item.get("status", "")
    if status not in statuses:
        raise SessionRefused(403, f"Prolific's submission {session_id} is {status or 'of no known status'}, not "
                                  f"{' or '.join(statuses)}: no work can be done in it. Please open the study from Prolific.")
    return status


def code_may_be_shown(session: ProlificSession) -> bool:
    """Whether the study's completion code may be shown to this session's browser: Prolific confirmed the
    submission (at arrival, by a sync, or now: ``check_submission`` again).  False when Prolific cannot be
    reached now (the code waits); raises ``SessionRefused(403)`` when Prolific denies the submission: the
    caller discards the session (nothing counts)."""
    if session.market_status or session.confirmed_at is not None:
        return True
    status = check_submission(session.session_id, session.participant_id, session.study.prolific_id,
                              ("ACTIVE", "AWAITING REVIEW"))
    if status is None:
        return False
    ProlificSession.objects.filter(pk=session.pk, market_status="").update(market_status=status)
    session.market_status = status
    return True


def _bound(session_id: str) -> ProlificSession | None:
    """The live binding of ``session_id`` (a discarded session binds nothing: its ids were not Prolific's)."""
    return ProlificSession.objects.select_related("study__batch", "study__task_type", "worker").filter(
        session_id=session_id).exclude(state=ProlificSession.State.DISCARDED).first()


def _same_binding(session: ProlificSession, participant_id: str, study: ProlificStudy) -> ProlificSession:
    if session.participant_id != participant_id or session.study_id != study.pk:
        raise SessionRefused(403, "This SESSION_ID belongs to another participant or study: the study URL's "
                                  "parameters do not match. Please open the study from Prolific.")
    return session


def participant_user(worker: Worker):
    """The Django user a participant's browser is signed in as (created on their first arrival, with no usable
    password: only the study URL signs them in)."""
    if worker.user_id is not None:
        return worker.user
    User = get_user_model()
    with transaction.atomic():
        locked = Worker.objects.select_for_update().get(pk=worker.pk)
        if locked.user_id is not None:
            return locked.user
        base = f"prolific-{worker.prolific_pid}"
        username, n = base, 1
        while User.objects.filter(username=username).exists():
            n += 1
            username = f"{base}-{n}"
        user = User(username=username)
        user.set_unusable_password()
        user.save()
        Worker.objects.filter(pk=worker.pk).update(user=user)
    worker.user = user
    return user


@dataclass
class Step:
    """What the session's browser does next: work on ``assignment``; or go back to Prolific (``completed``,
    with the completion code); or nothing (``ended``: the session's state; else no work: ``why``)."""

    session: ProlificSession
    assignment: Assignment | None = None
    completed: bool = False
    ended: str = ""
    why: str = ""
    # A screening session that cannot finish its test (an item given back, or no item left): no code; the
    # participant is asked to return the submission on Prolific.
    unfinished: bool = False


def advance(session: ProlificSession, *, unopened_hold: int | None = None, moving_on: bool = False) -> Step:
    """The session's next step: its live HIT, or a new one from the study's batch, task type and kinds; the
    session completes after ``hits_per_submission`` HITs.  A main session completes earlier only when no work is
    left for its participant after at least one HIT (a HIT given back is replaced by another while there is one);
    a screening session never: its reward pays the whole test, which is graded only whole, so an item given back
    (or none left) ends it without the code (``Step.unfinished``).
    ``moving_on``: a HIT was just given back; the next one is another (as a skip on the platform's pages).

    The session's row is locked: its hand-out, its end (``end_session``) and its completion never interleave."""
    now = timezone.now()
    with transaction.atomic():
        session = ProlificSession.objects.select_for_update(of=("self",)).select_related(
            "study__batch", "study__task_type", "worker"
        ).get(pk=session.pk)
        if session.state == ProlificSession.State.COMPLETED:
            return Step(session, completed=True)
        if session.state != ProlificSession.State.ACTIVE:
            return Step(session, ended=session.state)
        study = session.study
        mine = session_assignments(session)
        done = mine.filter(state__in=DONE).count()
        _count(session, done)
        live = mine.filter(state=Assignment.State.ASSIGNED, expires_at__gt=now).order_by("-accepted_at").first()
        if live is not None:
            return Step(session, assignment=live)
        if done >= study.hits_per_submission:
            return _complete(session, now)
        screening = study.kind == ProlificStudy.Kind.SCREENING
        if not screening and done >= _top_up(session):
            # Every reserved HIT done and no more open for it: others' reserved HITs are theirs.
            if done >= 1:  # the platform ran out of work for this participant: the reward still pays the session
                return _complete(session, now)
            return Step(session, why=f"no {study.task_type.name} HIT of this study is left for you")
        if screening and mine.filter(state=Assignment.State.RETURNED).exists():
            return Step(session, unfinished=True, why="you gave back an item of the qualification test")
        why, assignment = "", None
        # After a HIT given back: another one; failing that, any the participant may still be given (on the
        # platform's pages a skip stops there; here it would end the session short of its size).
        for skip in (True, False) if moving_on else (False,):
            try:
                assignment = accept_next(
                    session.worker, study.task_type, batch_id=study.batch_id, backend=Batch.Backend.PROLIFIC,
                    kinds=study_kinds(study), unopened_hold=unopened_hold, moving_on=skip,
                )
            except NotEligible as exc:
                why = str(exc)
                break
            if assignment is not None:
                return Step(session, assignment=assignment)
        if screening and done >= 1:
            return Step(session, unfinished=True, why="no other item of the qualification test is left for you")
        if done >= 1:  # the platform ran out of work for this participant
            return _complete(session, now)
        return Step(session, why=why or f"no {study.task_type.name} HIT of this study is left for you")


def unfinished_test(session: ProlificSession) -> bool:
    """A screening session with fewer items done than its test has (``hits_per_submission``): its submission's
    reward pays the whole test, so it is never approved (``hits.prolific.review``)."""
    return (session.study.kind == ProlificStudy.Kind.SCREENING
            and session_assignments(session).filter(state__in=DONE).count() < session.study.hits_per_submission)


def _count(session: ProlificSession, done: int) -> None:
    if session.hits_done != done:
        ProlificSession.objects.filter(pk=session.pk).update(hits_done=done)
        session.hits_done = done


def _complete(session: ProlificSession, now) -> Step:
    ProlificSession.objects.filter(pk=session.pk).update(state=ProlificSession.State.COMPLETED, finished_at=now)
    session.state, session.finished_at = ProlificSession.State.COMPLETED, now
    log.info("Prolific session %s completed after %d HITs", session.session_id, session.hits_done)
    return Step(session, completed=True)


def confirm_session(session: ProlificSession) -> int:
    """Prolific lists this submission for this participant and study: the session's pending work counts now
    (``confirm_submission``, one transaction per HIT).  Idempotent; work submitted after the call stays pending
    until the next call.  A discarded session confirms nothing.  Returns how many submissions it confirmed."""
    session = ProlificSession.objects.select_related("study").get(pk=session.pk)
    if session.state == ProlificSession.State.DISCARDED:
        return 0
    pending = list(session_assignments(session).filter(state=Assignment.State.PENDING).order_by("pk").values_list("pk", flat=True))
    confirmed = sum(1 for pk in pending if confirm_submission(pk))
    ProlificSession.objects.filter(pk=session.pk, confirmed_at__isnull=True).update(confirmed_at=timezone.now())
    return confirmed


def discard_session(session: ProlificSession, reason: str) -> int:
    """Not a real Prolific submission (forged or mismatched ids, or Prolific never lists it): the session ends
    (``DISCARDED``), its live HITs are freed and its pending work never counts (``discard_submission``, with
    ``reason``).  Work already confirmed is left as it is.  Returns how many submissions it discarded."""
    reason = reason or "not a submission Prolific lists for this participant and study"
    live = _end(session, ProlificSession.State.DISCARDED, Assignment.State.RETURNED)
    pending = list(session_assignments(session).filter(state=Assignment.State.PENDING).order_by("pk").values_list("pk", flat=True))
    discarded = sum(1 for pk in pending if discard_submission(pk, f"Prolific session {session.session_id}: {reason}"))
    log.warning("Prolific session %s discarded (%d submissions, %d live HITs freed): %s", session.session_id, discarded, live, reason)
    return discarded


def end_session(session: ProlificSession, state: str) -> int:
    """The participant returned the study on Prolific (``RETURNED``) or Prolific timed the submission out
    (``TIMED_OUT``): the session's unfinished HITs are freed for others (returned, or expired), its finished ones
    are kept (pending or counted; the sync decides what is paid) and its browser can no longer work in it.  A
    completed session may still end so (returned on Prolific after the code); a discarded one stays discarded.
    Returns how many unfinished HITs were freed."""
    released = {ProlificSession.State.RETURNED: Assignment.State.RETURNED, ProlificSession.State.TIMED_OUT: Assignment.State.EXPIRED}
    if state not in released:
        raise ValueError(f"end_session: the state must be {ProlificSession.State.RETURNED.value!r} or "
                         f"{ProlificSession.State.TIMED_OUT.value!r}, not {state!r}")
    return _end(session, state, released[state])


def _end(session: ProlificSession, state: str, assignment_state: str) -> int:
    """Set the session's final ``state`` (its row locked, so no hand-out runs meanwhile) and free its live HITs
    as ``assignment_state``; returns how many were freed."""
    with transaction.atomic():
        locked = ProlificSession.objects.select_for_update(of=("self",)).select_related("study").get(pk=session.pk)
        if locked.state == ProlificSession.State.DISCARDED:
            return 0
        now = timezone.now()
        ProlificSession.objects.filter(pk=locked.pk).update(state=state, finished_at=locked.finished_at or now)
        session.state, session.finished_at = state, locked.finished_at or now
        live = list(session_assignments(locked).filter(state=Assignment.State.ASSIGNED).values_list("pk", flat=True))
        return sum(1 for pk in live if release_assignment(pk, assignment_state))
