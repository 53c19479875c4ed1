"""The adaptive presence rule (issue 29): a third judge only where the first two disagree.

With ``N = campaign.assignments_presence`` judges planned per presence HIT, a campaign under the adaptive
rule posts each presence HIT for the fewest judges that can decide a majority of N
(``Campaign.initial_presence_assignments``: N // 2 + 1, so 2 of 3), and adds one place at a time, while
some unit of the HIT has no decided majority of N yet (``annotation.services.gold.is_decided``: one label
holds more than N / 2 of the judgments that count, or all N are in).  For N = 3: two judges; a third where
they gave some pair two different labels.  The gold labels are those of N fixed judges by construction.

Only judgments that count are counted (excluded ones are not; their replacements are).  The place is added
with ``hits.services.add_places`` (locally the HIT grows; on MTurk ``CreateAdditionalAssignmentsForHIT`` at
the next publish, or a copy of the HIT where MTurk's 10-assignment rule forbids growing).  A place that
never comes (the campaign cancelled or closed) leaves the unit to the tie rule, marked so on its label.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Count, Q

from annotation.models import Campaign, PresenceJudgment
from annotation.services.gold import is_decided
from hits.models import HIT, Batch
from hits.services import PlacesRefused, add_places

log = logging.getLogger(__name__)


def root_hit_id(hit: HIT) -> int:
    """The presence HIT whose places a HIT holds (itself, or the HIT its places were moved or added from)."""
    return hit.payload.get("replaces") or hit.payload.get("adds_to") or hit.pk


def undecided_units(campaign: Campaign, payload: dict) -> list[int]:
    """Units of a presence HIT (its payload) whose majority of ``assignments_presence`` is not decided yet."""
    units = list(payload.get("units") or [])
    counts = {
        unit_id: (n, n_present)
        for unit_id, n, n_present in PresenceJudgment.objects.filter(
            unit_id__in=units, summary_id=payload["summary"], excluded=False
        )
        .values("unit_id")
        .annotate(n=Count("pk"), n_present=Count("pk", filter=Q(present=True)))
        .values_list("unit_id", "n", "n_present")
    }
    planned = campaign.assignments_presence
    return [u for u in units if not is_decided(*counts.get(u, (0, 0)), planned)]


def has_open_places(hit: HIT) -> bool:
    """The HIT, or a HIT holding places moved or added from it, still waits for work."""
    if hit.state in HIT.UNFINISHED_STATES:
        return True
    return HIT.objects.filter(
        Q(payload__replaces=hit.pk) | Q(payload__adds_to=hit.pk), batch_id=hit.batch_id, state__in=HIT.UNFINISHED_STATES
    ).exists()


def add_judges_where_undecided(campaign: Campaign, hits) -> int:
    """Under the adaptive rule, one more place for each of these completed presence HITs (or the HIT they hold
    places of) whose units are not all decided; returns the places added.

    Idempotent and safe against concurrent calls: the HIT is re-read under its row lock (after the batch's,
    the order ``add_places`` takes them in), and nothing is added while it or a HIT holding its places is
    still open.  A place the batch's budget cap refuses (MTurk) is not added: the unit keeps its tie-rule label.
    """
    if not campaign.adaptive_presence or campaign.state not in (Campaign.State.RUNNING, Campaign.State.PAUSED):
        return 0
    added = 0
    seen: set[int] = set()
    for hit in hits:
        root_id = root_hit_id(hit)
        if root_id in seen:
            continue
        seen.add(root_id)
        payload = hit.payload
        # A first look without locks: most HITs are decided (their first two judges agree).
        if not undecided_units(campaign, payload):
            continue
        with transaction.atomic():
            Batch.objects.select_for_update().get(pk=campaign.batch_id)
            root = HIT.objects.select_for_update(of=("self",)).filter(pk=root_id, kind=HIT.Kind.REGULAR).first()
            if root is None or root.state != HIT.State.COMPLETED or has_open_places(root):
                continue
            if not undecided_units(campaign, root.payload):
                continue
            try:
                add_places(root, 1, replacement=False)
            except PlacesRefused as exc:
                log.warning("no further judge for presence HIT %s of campaign %s: %s", root.pk, campaign.slug, exc)
                continue
            added += 1
    return added
