"""Storing a budgeted campaign's hybrid scores (``annotation.models.HybridScore``).

The scores mix human labels and the judge's outputs, with a bootstrap interval (``N_BOOT`` draws) that
under the probability rule also draws the judge's part: too slow to compute on every page view.  They are
recomputed here after each routing pass (new judge outputs and calibration) and whenever human labels
change (a presence HIT's gold labels, an exclusion, a full recomputation), and read as stored by the
leaderboard, the API, ``campaign_scores`` and the export.  As with the gold scores, the score update after
a few presence HITs moves the scores but keeps the last intervals; a routing pass (each round's end) and a
full recomputation redraw them.
"""

from __future__ import annotations

from annotation.models import Campaign, HybridScore
from annotation.selectors.hybrid import N_BOOT, compute_hybrid_scores


def refresh_hybrid_scores(campaign: Campaign, n_boot: int = N_BOOT, intervals: bool = True) -> dict | None:
    """Recompute and store the campaign's hybrid scores (nothing for a campaign that is not budgeted).

    ``intervals`` False (the score update after a few HITs, as the gold scores' own): the scores move, the
    bootstrap intervals stay those of the last full computation (``intervals_at`` says when; a routing pass, or a
    full recomputation, redraws them)."""
    from django.utils import timezone

    previous = None
    if not intervals:
        previous = HybridScore.objects.filter(campaign=campaign).values_list("data", flat=True).first()
    data = compute_hybrid_scores(campaign, n_boot=n_boot if intervals or previous is None else 0)
    if data is None:
        return None
    if intervals or previous is None:
        data["intervals_at"] = timezone.now().isoformat()
    else:
        data["n_boot"] = previous.get("n_boot", 0)
        data["intervals_at"] = previous.get("intervals_at")
        for name, figures in data["systems"].items():
            figures["ci95"] = ((previous.get("systems") or {}).get(name) or {}).get("ci95", [None, None])
    HybridScore.objects.update_or_create(campaign=campaign, defaults={"data": data})
    return data
