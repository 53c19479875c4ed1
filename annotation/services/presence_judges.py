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
from django.db.models import Q

from annotation.models import Campaign
from annotation.services.gold import is_decided, judgment_counts
from hits import budget
from hits.models import HIT
from hits.services import PlacesRefused, add_places

log = logging.getLogger(__name__)


def root_hit_id(hit: HIT) -> int:
    """The presence HIT whose places a HIT holds (itself, or the HIT its places were moved or added from)."""
    return hit.payload.get("replaces") or hit.payload.get("adds_to") or hit.pk


def undecided_units(campaign: Campaign, payload: dict) -> list[int]:
    """Units of a presence HIT (its payload) whose majority of ``assignments_presence`` is not decided yet."""
    units = list(payload.get("units") or [])
    summary, planned = payload["summary"], campaign.assignments_presence
    counts = judgment_counts({(unit_id, summary) for unit_id in units})
    return [u for u in units if not is_decided(*counts.get((u, summary), (0, 0)), planned)]


def has_open_places(hit: HIT) -> bool:
    """The HIT, or a HIT holding places moved or added from it, still waits for work."""
    if hit.state in HIT.UNFINISHED_STATES:
        return True
    return HIT.objects.filter(
        Q(payload__replaces=hit.pk) | Q(payload__adds_to=hit.pk), batch_id=hit.batch_id, state__in=HIT.UNFINISHED_STATES
    ).exists()


def _holding_open_places(batch_id: int, root_ids) -> set[int]:
    """Of these HITs, those whose places a still unfinished HIT of the batch holds (moved or added from them),
    in one query: the few unfinished HITs that name a HIT they hold places of."""
    root_ids = set(root_ids)
    holders = HIT.objects.filter(batch_id=batch_id, state__in=HIT.UNFINISHED_STATES).filter(
        Q(payload__has_key="replaces") | Q(payload__has_key="adds_to")
    )
    return {
        held
        for payload in holders.values_list("payload", flat=True)
        for held in (payload.get("replaces"), payload.get("adds_to"))
        if held in root_ids
    }


def _has_undecided(campaign: Campaign, payload: dict, counts: dict) -> bool:
    """Some unit of a presence HIT (its payload) has no decided majority in ``counts`` (``gold.judgment_counts``)."""
    summary, planned = payload["summary"], campaign.assignments_presence
    return any(not is_decided(*counts.get((unit_id, summary), (0, 0)), planned) for unit_id in payload.get("units") or [])


def _pairs(hits) -> set[tuple[int, int]]:
    return {(unit_id, hit.payload["summary"]) for hit in hits for unit_id in hit.payload.get("units") or []}


def add_judges_where_undecided(campaign: Campaign, hits, counts: dict | None = None) -> int:
    """Under the adaptive rule, one more place for each of these completed presence HITs (or the HIT they hold
    places of) whose units are not all decided; returns the places added.  ``counts``: ``gold.judgment_counts``
    of the HITs' units, when the caller has just read them.

    The work is in set queries, whatever the number of HITs (a coalesced drain hands over thousands at once):
    one aggregate for a first look without locks (most HITs are decided: their first two judges agree); then,
    for the undecided ones only, the batch's row lock (the order ``add_places`` takes them in), the HITs' row
    locks in one query, one look for HITs still holding their places, and the counts read again under the locks.
    Idempotent and safe against concurrent calls: nothing is added while a HIT or a HIT holding its places is
    still open.  A place the batch's budget cap refuses (MTurk) is not added: the unit keeps its tie-rule label.
    """
    if not campaign.adaptive_presence or campaign.state not in (Campaign.State.RUNNING, Campaign.State.PAUSED):
        return 0
    hits = list(hits)
    if counts is None:
        counts = judgment_counts(_pairs(hits))
    candidates = {root_hit_id(hit) for hit in hits if _has_undecided(campaign, hit.payload, counts)}
    if not candidates:
        return 0
    added = 0
    with transaction.atomic():
        budget.locked(campaign.batch_id)
        roots = list(
            HIT.objects.select_for_update(of=("self",), no_key=True)
            .filter(pk__in=candidates, batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR, state=HIT.State.COMPLETED)
            .order_by("pk")
        )
        held = _holding_open_places(campaign.batch_id, [root.pk for root in roots])
        roots = [root for root in roots if root.pk not in held]
        counts = judgment_counts(_pairs(roots))
        for root in roots:
            if not _has_undecided(campaign, root.payload, counts):
                continue
            try:
                add_places(root, 1, replacement=False)
            except PlacesRefused as exc:
                log.warning("no further judge for presence HIT %s of campaign %s: %s", root.pk, campaign.slug, exc)
                continue
            added += 1
    return added
