"""Storing a budgeted campaign's hybrid scores (``annotation.models.HybridScore``).

The scores read every candidate unit of the campaign (and under the active rule every pair of systems), too much
to compute on every page view.  They are recomputed here after each routing pass (new judge outputs, draws and
calibration) and whenever human labels change (a presence HIT's gold labels, an exclusion, a full recomputation),
and read as stored by the leaderboard, the API, ``campaign_scores`` and the export.  The active rule's intervals
are closed-form (no bootstrap), so they are recomputed with the scores every time; the uncertainty rule has none.
"""

from __future__ import annotations

from annotation.models import Campaign, HybridScore
from annotation.selectors.hybrid import compute_hybrid_scores


def refresh_hybrid_scores(campaign: Campaign) -> dict | None:
    """Recompute and store the campaign's hybrid scores (nothing for a campaign that is not budgeted)."""
    from django.utils import timezone

    data = compute_hybrid_scores(campaign)
    if data is None:
        return None
    data["intervals_at"] = timezone.now().isoformat()
    HybridScore.objects.update_or_create(campaign=campaign, defaults={"data": data})
    return data
