"""Gold presence labels from the judgments that count.

Gold presence of a unit in a summary is the majority of its judges' labels,
leaving out excluded judgments.  A tie (possible with an even number of
judges) is decided by the campaign's tie rule: "absent" (the default, as in
PyrXSum), "present", or "exclude" (no gold label; the unit does not count).
Each label records how it was reached (``decided_by``): a decided majority,
the tie rule, or the majority of fewer judges than planned.
"""

from __future__ import annotations

from typing import Iterable

from django.db.models import Count, Q

from annotation.models import Campaign, GoldPresence, PresenceJudgment
from hits.models import HIT


def majority_label(n_judgments: int, n_present: int, tie_rule: str) -> bool | None:
    """The majority label of one unit; ``None`` when there is no label to give."""
    if n_judgments == 0:
        return None
    twice = 2 * n_present
    if twice > n_judgments:
        return True
    if twice < n_judgments:
        return False
    return {Campaign.TieRule.ABSENT: False, Campaign.TieRule.PRESENT: True}.get(tie_rule)


def is_decided(n_judgments: int, n_present: int, planned: int) -> bool:
    """Whether a unit's majority of ``planned`` judges is known from the judgments in: one label already has
    more than half of the planned judges (no further judge could change it), or every planned judge is in."""
    return 2 * n_present > planned or 2 * (n_judgments - n_present) > planned or n_judgments >= planned


def decided_by(n_judgments: int, n_present: int, planned: int) -> str:
    """How a unit's crowd label is reached (``GoldPresence.DecidedBy``): its decided majority; the tie rule
    (tied judgments, e.g. 1-1 while the adaptive rule's third judge is awaited or never came); or, before
    enough judges are in to decide, the majority of those in ("partial")."""
    if n_judgments == 0:
        return ""
    if 2 * n_present == n_judgments:
        return GoldPresence.DecidedBy.TIE_RULE
    if is_decided(n_judgments, n_present, planned):
        return GoldPresence.DecidedBy.MAJORITY
    return GoldPresence.DecidedBy.PARTIAL


def rule_of_label(campaign: Campaign, n_judgments: int, n_present: int, how: str) -> str:
    """Which rule produced a crowd label, in words (the export): "fixed 3: majority of 3", "adaptive: first 2
    agree", "adaptive: majority of 3", "tie rule (absent): 1-1", "partial: majority of 1 of 3 planned"."""
    planned = campaign.assignments_presence
    adaptive = campaign.presence_judges == Campaign.PresenceJudges.ADAPTIVE
    if not how or n_judgments == 0:
        return ""
    if how == GoldPresence.DecidedBy.TIE_RULE:
        return f"tie rule ({campaign.tie_rule}): {n_present}-{n_judgments - n_present}"
    if how == GoldPresence.DecidedBy.PARTIAL:
        return f"partial: majority of {n_judgments} of {planned} planned"
    if not adaptive:
        return f"fixed {planned}: majority of {n_judgments}"
    if n_judgments < planned:
        unanimous = n_present in (0, n_judgments)
        return f"adaptive: first {n_judgments} agree" if unanimous else f"adaptive: majority decided by the first {n_judgments}"
    return f"adaptive: majority of {n_judgments}"


def judgment_counts(pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], tuple[int, int]]:
    """For each (unit id, summary id) pair with judgments that count: (judgments, of them "present"), in one
    aggregate query.  A unit is judged only against its own example's summaries, so filtering on the units
    and on the summaries reads no pair beyond the examples asked about."""
    pairs = set(pairs)
    if not pairs:
        return {}
    counts = (
        PresenceJudgment.objects.filter(
            unit_id__in={u for u, _ in pairs}, summary_id__in={s for _, s in pairs}, excluded=False
        )
        .values("unit_id", "summary_id")
        .annotate(n=Count("pk"), n_present=Count("pk", filter=Q(present=True)))
        .values_list("unit_id", "summary_id", "n", "n_present")
    )
    return {(u, s): (n, n_present) for u, s, n, n_present in counts if (u, s) in pairs}


def refresh_gold(
    campaign: Campaign, pairs: Iterable[tuple[int, int]], counts: dict[tuple[int, int], tuple[int, int]] | None = None
) -> int:
    """Recompute the gold labels of the given (unit id, summary id) pairs in one aggregate query (or from
    ``counts``, ``judgment_counts`` of those pairs read in the caller's transaction).

    Pairs whose judgments all got excluded lose their gold label.  Returns
    the number of labels written.
    """
    pairs = set(pairs)
    if not pairs:
        return 0
    if counts is None:
        counts = judgment_counts(pairs)
    rows = [
        GoldPresence(
            unit_id=unit_id,
            summary_id=summary_id,
            present=majority_label(n, n_present, campaign.tie_rule),
            n_judgments=n,
            n_present=n_present,
            origin=GoldPresence.Origin.MAJORITY,
            decided_by=decided_by(n, n_present, campaign.assignments_presence),
        )
        # In one order (unit, summary): two writers of overlapping pairs (a recomputation and a HIT's follow-up)
        # lock them in the same order, never each waiting for the other.
        for (unit_id, summary_id), (n, n_present) in sorted(counts.items())
        if (unit_id, summary_id) in pairs
    ]
    covered = {(r.unit_id, r.summary_id) for r in rows}
    stale = pairs - covered
    if stale:
        condition = Q()
        for unit_id, summary_id in stale:
            condition |= Q(unit_id=unit_id, summary_id=summary_id)
        GoldPresence.objects.filter(condition, origin=GoldPresence.Origin.MAJORITY).delete()
    GoldPresence.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["unit", "summary", "origin"],
        update_fields=["present", "n_judgments", "n_present", "origin", "decided_by"],
        batch_size=2000,
    )
    return len(rows)


def share_gold_checks(campaign: Campaign, human_hits: int) -> int:
    """How many of an "scu" campaign's presence HITs are gold checks (``turn_share_into_gold``), the one figure
    every page states: those already drawn, plus the ``gold_share`` of the ``human_hits`` presence HITs people
    are expected to judge that are not posted yet.  0 without imported labels to key them (or a share of 0).
    Once every presence HIT is posted this is exactly the gold checks there are, whatever the estimate was."""
    if campaign.unit_type != Campaign.UnitType.SCU or campaign.gold_share <= 0 or not GoldPresence.objects.filter(
        summary__system__campaign=campaign, origin=GoldPresence.Origin.IMPORTED
    ).exists():
        return 0
    posted = {HIT.Kind.REGULAR: 0, HIT.Kind.GOLD: 0}
    if campaign.batch_id is not None:
        # Presence HITs as drawn: not the qualification tests' gold items ("inline"), nor HITs holding places
        # moved or added from another ("replaces", "adds_to").
        rows = (
            HIT.objects.filter(batch_id=campaign.batch_id, task_type__slug="presence", kind__in=list(posted))
            .exclude(payload__has_key="inline").exclude(payload__has_key="replaces").exclude(payload__has_key="adds_to")
            .exclude(kind=HIT.Kind.GOLD, state=HIT.State.CANCELLED)
            .values("kind").annotate(n=Count("pk")).values_list("kind", "n")
        )
        posted.update(dict(rows))
    waiting = max(human_hits - posted[HIT.Kind.REGULAR] - posted[HIT.Kind.GOLD], 0)
    return posted[HIT.Kind.GOLD] + round(waiting * campaign.gold_share)


def turn_share_into_gold(campaign: Campaign, rows: list[HIT], seed: int | None = None) -> int:
    """Make ``gold_share`` of an "scu" campaign's presence HITs gold checks, keyed by imported labels.

    Gold HITs look like any other; every judge may meet each once, and their
    answers measure the judge instead of feeding the crowd's gold labels.  A
    budgeted campaign draws them from each round's routed HITs (``seed``: the round's).
    Returns how many of ``rows`` became gold checks.
    """
    import random

    if campaign.gold_share <= 0 or not rows:
        return 0
    labels = {
        (unit_id, summary_id): present
        for unit_id, summary_id, present in GoldPresence.objects.filter(
            summary__system__campaign=campaign, origin=GoldPresence.Origin.IMPORTED
        ).values_list("unit_id", "summary_id", "present")
    }
    if not labels:
        return 0
    rng = random.Random(campaign.pk if seed is None else seed)
    eligible = [h for h in rows if all((u, h.payload["summary"]) in labels for u in h.payload["units"])]
    chosen = rng.sample(eligible, round(len(eligible) * campaign.gold_share))
    for hit in chosen:
        hit.kind = HIT.Kind.GOLD
        hit.max_assignments = 32767
        hit.answer_key = {"labels": {str(u): labels[(u, hit.payload["summary"])] for u in hit.payload["units"]}}
    return len(chosen)
