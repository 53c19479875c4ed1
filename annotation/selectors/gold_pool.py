"""Is a campaign's gold pool large enough that workers rarely share gold items (README, "How large the gold
pool must be")?

A worker doing R regular HITs at gold share s meets about g = R x s / (1 - s) gold HITs, drawn at random from
the G gold HITs; two such workers share about g^2 / G items.  They share less than one on average while
g <= sqrt(G), i.e. while each does at most R1 = floor(sqrt(G) x (1 - s) / s) regular HITs.  (The README's second
rule, no item met by more than about three workers, holds by construction when gold checks are a share of the
campaign's own presence HITs: each is met on average by as many workers as judge a HIT.)

Before launch the pool is the cost preview's count of gold checks; once HITs exist, the campaign's gold HITs,
and what workers actually met is measured: the mean number of gold items two workers share and the most
regular HITs one worker did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.db.models import Count, Q

from hits.models import HIT, Assignment

#: Before launch, a pool is flagged when workers could not each do this many regular HITs (or every regular HIT
#: of a smaller campaign) before sharing gold items: crowd workers commonly do dozens of presence HITs.
EXPECTED_WORKLOAD = 100

#: Assignments that show a worker met a HIT.
_MET = (Assignment.State.SUBMITTED, Assignment.State.APPROVED, Assignment.State.REJECTED, Assignment.State.ASSIGNED)


@dataclass(frozen=True)
class GoldPool:
    gold_items: int
    share: float
    per_worker_limit: int  # R1: regular HITs a worker can do before two workers share one gold item on average
    regular_hits: int
    workers: int = 0  # measured once HITs exist
    mean_shared: float = 0.0  # gold items two workers have in common, on average
    heaviest: int = 0  # the most regular HITs one worker did
    measured: bool = False

    @property
    def items_needed(self) -> int:
        """Gold items for workers doing ``EXPECTED_WORKLOAD`` regular HITs each (or the heaviest worker's load)."""
        load = max(self.heaviest, min(EXPECTED_WORKLOAD, self.regular_hits))
        return math.ceil((load * self.share / (1 - self.share)) ** 2)

    @property
    def warning(self) -> str:
        if self.measured and self.workers >= 2 and (self.mean_shared >= 1 or self.heaviest > self.per_worker_limit):
            return (
                f"Workers can tell gold checks apart by sharing them: two workers have {self.mean_shared:.1f} of the "
                f"{self.gold_items} gold items in common on average, and one worker did {self.heaviest} regular HITs "
                f"(the pool covers {self.per_worker_limit} per worker). About {self.items_needed} gold items would keep "
                "them apart."
            )
        if not self.measured and self.per_worker_limit < min(EXPECTED_WORKLOAD, self.regular_hits):
            return (
                f"{self.gold_items} gold items are few: a worker doing more than {self.per_worker_limit} regular HITs "
                f"shares gold items with the next such worker. About {self.items_needed} would keep workers doing "
                f"{min(EXPECTED_WORKLOAD, self.regular_hits)} HITs apart (raise the gold share or import more labels)."
            )
        return ""


def _limit(gold_items: int, share: float) -> int:
    return math.floor(math.sqrt(gold_items) * (1 - share) / share)


def planned_gold_pool(campaign, gold_items: int, regular_hits: int) -> GoldPool | None:
    """Before launch: the pool the cost preview plans (``gold_items`` gold checks beside ``regular_hits``)."""
    share = float(campaign.gold_share)
    if gold_items <= 0 or not 0 < share < 1:
        return None
    return GoldPool(gold_items, share, _limit(gold_items, share), regular_hits)


def measured_gold_pool(campaign) -> GoldPool | None:
    """Once HITs exist: the campaign's gold HITs and what its workers met of them (two aggregate queries)."""
    share = float(campaign.gold_share)
    if campaign.batch_id is None or not 0 < share < 1:
        return None
    hits = HIT.objects.filter(batch_id=campaign.batch_id, task_type__slug="presence").exclude(state=HIT.State.CANCELLED)
    counts = hits.aggregate(gold=Count("pk", filter=Q(kind=HIT.Kind.GOLD)), regular=Count("pk", filter=Q(kind=HIT.Kind.REGULAR)))
    if not counts["gold"]:
        return None
    met = Assignment.objects.filter(hit__in=hits, state__in=_MET)
    # Pairs of workers who met the same gold item, summed over items: sum of m (m - 1) / 2.
    per_item = met.filter(hit__kind=HIT.Kind.GOLD).values("hit_id").annotate(m=Count("worker_id", distinct=True)).values_list("m", flat=True)
    pairs = sum(m * (m - 1) // 2 for m in per_item)
    per_worker = met.filter(hit__kind=HIT.Kind.REGULAR).values("worker_id").annotate(n=Count("pk"))
    loads = list(per_worker.values_list("n", flat=True))
    workers = len(loads)
    mean_shared = pairs / (workers * (workers - 1) / 2) if workers >= 2 else 0.0
    return GoldPool(
        counts["gold"], share, _limit(counts["gold"], share), counts["regular"],
        workers=workers, mean_shared=mean_shared, heaviest=max(loads, default=0), measured=True,
    )
