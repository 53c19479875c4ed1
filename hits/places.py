"""Moving a HIT's places to a HIT of their own, for when its MTurk HIT cannot take them (see ``add_places``)."""

from __future__ import annotations

from hits.models import HIT, HITExclusion


def new_hit_for_places(hit: HIT, places: int, link: str = "replaces") -> HIT:
    """A new HIT with the same task, payload and reward as ``hit`` and ``places`` places, which the workers of
    ``hit`` (and those it excludes) may not take: the same item is never judged twice by one worker.  Its payload
    names ``hit`` under ``link`` ("adds_to" for places that are more work wanted, not replacements; "gold_copy_of" for a gold HIT's copy on MTurk, see ``hits.mturk.publishing``)."""
    payload = {key: value for key, value in hit.payload.items() if key not in ("replaces", "adds_to", "gold_copy_of")}
    twin = HIT.objects.create(
        batch_id=hit.batch_id, task_type_id=hit.task_type_id, kind=hit.kind, payload={**payload, link: hit.pk},
        answer_key=hit.answer_key, max_assignments=places, reward=hit.reward, priority=hit.priority,
    )
    workers = set(hit.assignments.values_list("worker_id", flat=True)) | set(hit.exclusions.values_list("worker_id", flat=True))
    HITExclusion.objects.bulk_create([HITExclusion(hit=twin, worker_id=w) for w in workers], ignore_conflicts=True)
    return twin
