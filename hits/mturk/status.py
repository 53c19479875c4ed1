"""What a researcher needs to see of a batch on MTurk: what is published, what the sync could not do, and the
submissions MTurk has that the HIT page never stored (JSON-friendly, for the progress page and the API)."""

from __future__ import annotations

from decimal import Decimal

from hits.models import Batch, LedgerEntry
from hits.mturk.models import MTurkHIT, MTurkUnknownSubmission

SHOWN = 50


def batch_status(batch: Batch) -> dict:
    hits = MTurkHIT.objects.filter(hit__batch=batch)
    live = hits.filter(deleted_at__isnull=True, gone_at__isnull=True)
    failing = live.exclude(last_error="").order_by("-failures", "pk")
    unknown = MTurkUnknownSubmission.objects.filter(mturk_hit__hit__batch=batch).select_related("mturk_hit").order_by("-pk")
    unpaid = LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PENDING).exclude(error="")
    from hits.mturk.publishing import refused_hits

    from hits.mturk.publishing import made_hits

    refused = refused_hits(batch)
    made = made_hits(batch)
    return {
        "published": hits.count(),
        # HITs MTurk said it created (HitAlreadyExists) whose HITId the sync has not read yet: live, money on hold.
        "made_hits": list(made.values_list("pk", flat=True)[:SHOWN]),
        "made_total": made.count(),
        # HITs MTurk refused to create for a lasting reason: they wait for the researcher's retry.
        "refused_hits": [
            {"hit": h.pk, "error": h.publish_error, "at": h.publish_error_at.isoformat() if h.publish_error_at else None}
            for h in refused[:SHOWN]
        ],
        "refused_total": refused.count(),
        "expired": live.filter(expired_at__isnull=False).count(),
        "deleted": hits.filter(deleted_at__isnull=False).count(),
        "gone": hits.filter(gone_at__isnull=False).count(),
        "failing_hits": [
            {"hit": h.mturk_hit_id, "failures": h.failures, "error": h.last_error} for h in failing[:SHOWN]
        ],
        "money_calls_failing": [
            {"kind": e.kind, "amount": str(e.amount), "worker": e.worker.external_id, "worker_id": e.worker_id, "error": e.error}
            for e in unpaid.select_related("worker").order_by("pk")[:SHOWN]
        ],
        "unknown_submissions": [
            {
                "assignment": u.mturk_assignment_id, "hit": u.mturk_hit.mturk_hit_id, "worker": u.mturk_worker_id,
                "status": u.status, "seen_at": u.seen_at.isoformat(), "rejected": u.rejected_at is not None, "error": u.error,
            }
            for u in unknown[:SHOWN]
        ],
        "unknown_total": unknown.count(),
        # What MTurk charged for submissions that never reached the page, approved before a rejection did.
        "unknown_paid": str(sum((u.paid for u in unknown.exclude(paid=None)), Decimal("0.00"))),
    }
