"""Qualifications and blocks on Prolific: participant groups used as study filters, per campaign (batch).

The platform stays the judge, as on MTurk (``hits.mturk.qualifications``): when ``hits.qualifications``
qualifies a Prolific participant for a task type in a batch (they passed the campaign's screening test), they
are wanted in the batch's QUALIFIED group of that task type (the allowlist of its main study); when a researcher
blocks a worker in the batch (``BatchBlock``), they are wanted in the batch's BLOCKED group (the blocklist of
every study of the batch).  A revocation or an unblock takes them out again.  Groups belong to one batch, so one
campaign never changes who may work in another.

The wish is recorded first (``ProlificGroupMember``; ``added_at`` once Prolific confirmed), then sent after the
commit (task ``hits.prolific.push_groups``) and by every sync: ``POST participant-groups/{id}/participants/``
adds (repeat-safe), ``DELETE`` with the same body removes.  A member to remove is kept, marked ``REMOVE``, until
Prolific confirmed the removal.  A group Prolific does not have yet (publishing creates it,
``hits.prolific.publishing``) keeps its members waiting.
"""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from hits.models import Batch, Qualification
from hits.outbox import send_after_commit
from hits.prolific.client import Prolific, ProlificError
from hits.prolific.models import ProlificGroupMember, ProlificParticipantGroup

log = logging.getLogger(__name__)

PUSH_TASK = "hits.prolific.push_groups"
REMOVE = "REMOVE"
Kind = ProlificParticipantGroup.Kind


def group_for(batch: Batch, kind: str, task_type=None) -> ProlificParticipantGroup:
    """The batch's group (the row, named as publishing names it; Prolific's id once publishing created it there)."""
    found = ProlificParticipantGroup.objects.filter(batch=batch, kind=kind, task_type=task_type).first()
    if found is not None:
        return found
    from hits.prolific.publishing import group_name

    try:
        with transaction.atomic():
            group, _ = ProlificParticipantGroup.objects.get_or_create(
                batch=batch, kind=kind, task_type=task_type, defaults={"name": group_name(batch, kind, task_type)},
            )
    except IntegrityError:  # made by publishing at the same moment
        group = ProlificParticipantGroup.objects.get(batch=batch, kind=kind, task_type=task_type)
    return group


def want(batch: Batch, kind: str, participant_id: str, present: bool, task_type=None) -> bool:
    """Record that the participant should (``present``) or should not be in the group; returns whether
    anything is to send."""
    group = group_for(batch, kind, task_type)
    with transaction.atomic():
        member = ProlificGroupMember.objects.select_for_update().filter(group=group, participant_id=participant_id).first()
        if present:
            if member is None:
                ProlificGroupMember.objects.create(group=group, participant_id=participant_id)
            elif member.last_error.startswith(REMOVE) or member.added_at is None:
                ProlificGroupMember.objects.filter(pk=member.pk).update(last_error="")
            else:
                return False
        else:
            if member is None:
                return False
            if member.added_at is None and not member.last_error.startswith(REMOVE):
                member.delete()  # never reached Prolific
                return False
            ProlificGroupMember.objects.filter(pk=member.pk).update(last_error=REMOVE)
    send_after_commit(PUSH_TASK, batch.pk)
    return True


def push(batch: Batch, client: Prolific, report=None) -> int:
    """Send the batch's group changes still to make; returns how many calls succeeded."""
    done = 0
    for group in ProlificParticipantGroup.objects.filter(batch=batch, prolific_id__isnull=False).order_by("pk"):
        path = f"/participant-groups/{group.prolific_id}/participants/"
        adds = list(group.members.filter(added_at__isnull=True).exclude(last_error__startswith=REMOVE).order_by("pk"))
        removes = list(group.members.filter(last_error__startswith=REMOVE).order_by("pk"))
        for members, method in ((adds, "POST"), (removes, "DELETE")):
            if not members:
                continue
            ids = [m.participant_id for m in members]
            try:
                client.request(method, path, json={"participant_ids": ids}, safe=True)
            except ProlificError as exc:
                keep = REMOVE + ": " if method == "DELETE" else ""
                ProlificGroupMember.objects.filter(pk__in=[m.pk for m in members]).update(last_error=f"{keep}{exc}"[:1000])
                if report is not None:
                    report.error(f"{method} participants of group {group.prolific_id}", exc)
                continue
            if method == "POST":
                ProlificGroupMember.objects.filter(pk__in=[m.pk for m in members]).update(added_at=timezone.now(), last_error="")
            else:
                ProlificGroupMember.objects.filter(pk__in=[m.pk for m in members]).delete()
            done += 1
            if report is not None:
                report.group_changes += len(members)
    return done


# What the core's signals ask of Prolific (``hits.markets.registry`` routes them here through
# ``market.ProlificMarket``).


def on_qualification_changed(worker, task_type, state, reason, batch=None) -> None:
    """A qualification decided or revoked in a Prolific batch: the participant joins or leaves its group."""
    if batch is None or not batch.on_prolific or not worker.prolific_pid:
        return
    if state == Qualification.State.QUALIFIED:
        want(batch, Kind.QUALIFIED, worker.prolific_pid, True, task_type)
    elif state == Qualification.State.REVOKED:
        want(batch, Kind.QUALIFIED, worker.prolific_pid, False, task_type)


def on_batch_block_changed(worker, batch, blocked, reason) -> None:
    """A block in a Prolific batch: the participant joins or leaves its blocked group."""
    if batch.on_prolific and worker.prolific_pid:
        want(batch, Kind.BLOCKED, worker.prolific_pid, blocked)
