"""Celery entry points of the annotation app (each calls a service)."""

from __future__ import annotations

from celery import shared_task

from annotation.models import Campaign
from annotation.services.predicates import redetect_predicates


@shared_task(name="annotation.redetect_predicates", acks_late=True)
def redetect_predicates_task(campaign_id: int) -> int:
    """Re-run automatic predicate detection on a draft campaign (idempotent)."""
    return redetect_predicates(Campaign.objects.get(pk=campaign_id))


@shared_task(name="annotation.update_worker_quality", acks_late=True)
def update_worker_quality_task(campaign_id: int, worker_ids: list[int]) -> dict[int, list[str]]:
    """Recompute workers' cross-check figures and revoke failing qualifications (idempotent)."""
    from annotation.services.quality import apply_cross_checks_many
    from hits.models import Worker

    campaign = Campaign.objects.get(pk=campaign_id)
    return apply_cross_checks_many(campaign, Worker.objects.filter(pk__in=worker_ids))


@shared_task(name="annotation.drain_followups", acks_late=True, reject_on_worker_lost=True)
def drain_followups_task(kind: str, owner_id: int) -> list[int]:
    """Run one coalesced follow-up (completed HITs, cross-checks or score update) for every id gathered (idempotent)."""
    from annotation.services.coalesce import drain

    return drain(kind, owner_id)


@shared_task(name="annotation.after_presence_hits", acks_late=True)
def after_presence_hits_task(batch_id: int, hit_ids: list[int]) -> int:
    """Gold labels, score update, cross-checks and the campaign's end after presence HITs completed (idempotent)."""
    from annotation.services.pipeline import after_presence_hits

    return after_presence_hits(batch_id, hit_ids)


@shared_task(name="annotation.recompute_scores", acks_late=True)
def recompute_scores_task(campaign_id: int, summary_ids: list[int] | None = None) -> int:
    """Recompute the scores of summaries whose gold labels changed, and the system scores (idempotent)."""
    from annotation.services.scores import recompute_summary_scores

    return recompute_summary_scores(Campaign.objects.get(pk=campaign_id), summary_ids)


@shared_task(name="annotation.after_presence_judgments", acks_late=True)
def after_presence_judgments_task(batch_id: int, hit_ids: list[int]) -> int:
    """After judgments of presence HITs not completed yet: the labels they already had, alpha (idempotent)."""
    from annotation.services.pipeline import after_presence_judgments

    return after_presence_judgments(batch_id, hit_ids)


@shared_task(name="annotation.autoscore_chunk", acks_late=True, reject_on_worker_lost=True)
def autoscore_chunk_task(chunk_id: int) -> dict:
    """Judge one chunk of an automatic-scoring run (idempotent: a redelivered chunk adds nothing)."""
    from annotation.automation.autoscore import run_chunk

    return run_chunk(chunk_id)


@shared_task(name="annotation.run_job", acks_late=True)
def run_job_task(job_id: int) -> str:
    """Run a researcher's long job (import, recomputation, export) and record its progress (idempotent)."""
    from annotation.services.jobs import run_job

    return run_job(job_id)


@shared_task(name="annotation.route_presence", acks_late=True, reject_on_worker_lost=True)
def route_presence_task(campaign_id: int) -> dict:
    """A budgeted campaign's routing pass: close a finished round, retrain, label, route the next (idempotent)."""
    from annotation.automation.hybrid import route_campaign

    return route_campaign(campaign_id)


@shared_task(name="annotation.clean_stored_files", acks_late=True)
def clean_stored_files_task() -> dict:
    """Remove staged uploads nobody came back to and export archives past ``EXPORT_KEEP_HOURS`` (beat, hourly;
    on the disk or in the bucket; idempotent)."""
    from annotation.services.jobs import remove_old_exports
    from annotation.services.uploads import clean_stale_uploads

    return {"uploads": clean_stale_uploads(), "exports": remove_old_exports()}
