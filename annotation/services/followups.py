"""The follow-up work a submission or a researcher's decision calls for, run after the commit.

Four kinds, each a Celery task named in ``annotation.services.coalesce.TASKS``: the workers'
cross-checks, the score update of summaries whose gold labels changed, the follow-ups of
completed presence HITs, and the agreement figures after judgments of HITs not completed yet.  With a Redis broker the calls of a short window are gathered into one task
per campaign (or batch); eager Celery, the embedded default, runs them at once, in-process.  The
core asks for them here and never imports the tasks themselves.
"""

from __future__ import annotations

from annotation.services import coalesce


def schedule_cross_checks(campaign, workers) -> None:
    """Recompute these workers' figures and revoke failing qualifications, after the current transaction commits."""
    coalesce.schedule("cross_checks", campaign.pk, {w.pk if hasattr(w, "pk") else int(w) for w in workers})


def schedule_score_update(campaign, summary_ids) -> None:
    """Recompute these summaries' scores (and the system scores), after the current transaction commits."""
    coalesce.schedule("scores", campaign.pk, summary_ids)


def schedule_judged_presence(batch_id: int, hit_ids) -> None:
    """The follow-up of judgments of presence HITs not completed yet (``after_presence_judgments``: alpha and the
    labels a reopened HIT already had), after the current transaction commits."""
    coalesce.schedule("judged", batch_id, hit_ids)


def schedule_completed_presence(batch_id: int, hit_ids) -> None:
    """Run the follow-ups of completed presence HITs of a batch (gold labels, scores, cross-checks, the
    campaign's end), after the current transaction commits."""
    coalesce.schedule("completed", batch_id, hit_ids)
