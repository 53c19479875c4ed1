"""A batch's state, followed by its Prolific studies: pause, resume and cancel map to study transitions.

    batch paused     -> PAUSE the ACTIVE studies
    batch active     -> START the PAUSED studies
    batch cancelled  -> STOP the ACTIVE and PAUSED studies (or finished)   (Prolific: AWAITING REVIEW or COMPLETED)

Each transition is safe to repeat (``hits.prolific.publishing.transition``).  A failing call on one study never
stops the others: its error is kept on the study (``last_error``) and returned, one line per study, for the
researcher; calling ``follow_batch_state`` again (the sync may) retries what is still out of step.
"""

from __future__ import annotations

import logging

from hits.models import Batch
from hits.prolific.client import Prolific, ProlificError
from hits.prolific.models import ProlificStudy
from hits.prolific.publishing import transition

log = logging.getLogger(__name__)

#: Batch state -> (the transition, the study statuses it applies to; "" = never seen).
FOLLOW = {
    Batch.State.PAUSED: ("PAUSE", ("ACTIVE", "")),
    Batch.State.ACTIVE: ("START", ("PAUSED",)),
    Batch.State.CANCELLED: ("STOP", ("ACTIVE", "PAUSED", "")),
    Batch.State.FINISHED: ("STOP", ("ACTIVE", "PAUSED", "")),
}


def follow_batch_state(batch: Batch, prolific: Prolific | None = None) -> list[str]:
    """Bring the batch's published studies to its state; returns the errors, one line per study that failed."""
    if not batch.on_prolific or batch.state not in FOLLOW:
        return []
    action, applies_to = FOLLOW[batch.state]
    studies = list(
        ProlificStudy.objects.filter(batch=batch, published_at__isnull=False, status__in=applies_to)
        .exclude(prolific_id=None).order_by("pk")
    )
    if not studies:
        return []
    errors = []
    try:
        own = prolific is None
        prolific = prolific or Prolific()
    except ProlificError as exc:
        return [f"the studies could not be told ({action}): {exc}"]
    try:
        for study in studies:
            try:
                transition(prolific, study, action)
            except ProlificError as exc:
                ProlificStudy.objects.filter(pk=study.pk).update(last_error=f"{action}: {exc}"[:1000])
                errors.append(f"study {study.prolific_id} ({study.task_type.slug}, {study.kind}): {action} failed: {exc}")
                log.warning("Prolific %s of study %s failed: %s", action, study.prolific_id, exc)
            else:
                ProlificStudy.objects.filter(pk=study.pk).update(last_error="")
    finally:
        if own:
            prolific.close()
    return errors
