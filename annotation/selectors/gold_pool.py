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
from fractions import Fraction

from django.db import connection
from django.db.models import Count

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
        share = Fraction(self.share).limit_denominator(10**6)  # exact: 108 HITs at 10% need 144 items, not 145
        return math.ceil((load * share / (1 - share)) ** 2)

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
                f"{min(EXPECTED_WORKLOAD, self.regular_hits)} HITs apart (a lower gold share has each worker meet fewer of them; more imported gold labels make more of them)."
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
    """Once HITs exist: the campaign's gold HITs and what its workers met of them, in one aggregate query."""
    share = float(campaign.gold_share)
    if campaign.batch_id is None or not 0 < share < 1:
        return None
    gold, regular, pairs, workers, heaviest = _measure(campaign.batch_id)
    if not gold:
        return None
    mean_shared = pairs / (workers * (workers - 1) / 2) if workers >= 2 else 0.0
    return GoldPool(
        gold, share, _limit(gold, share), regular,
        workers=workers, mean_shared=mean_shared, heaviest=heaviest, measured=True,
    )


def _measure(batch_id: int) -> tuple[int, int, int, int, int]:
    """(gold HITs, regular HITs, pairs of workers who met the same gold item summed over the items, workers who
    did regular HITs, the most regular HITs one worker did) for a batch's presence HITs, in one statement.

    The ORM builds the three grouped row sets (the HITs; per gold item, the number m of distinct workers who met
    it; per worker, the regular HITs met); the statement around them reduces each to one row, sum of
    m (m - 1) / 2 included, and joins the three rows.
    """
    hits = (HIT.objects.filter(batch_id=batch_id, task_type__slug="presence").exclude(state=HIT.State.CANCELLED)
            .order_by())
    met = Assignment.objects.filter(hit__in=hits, state__in=_MET).order_by()
    per_item = met.filter(hit__kind=HIT.Kind.GOLD).values("hit_id").annotate(m=Count("worker_id", distinct=True))
    per_worker = met.filter(hit__kind=HIT.Kind.REGULAR).values("worker_id").annotate(n=Count("pk"))
    kinds_sql, kinds_params = hits.values("kind").query.sql_with_params()
    item_sql, item_params = per_item.query.sql_with_params()
    worker_sql, worker_params = per_worker.query.sql_with_params()
    sql = (
        "SELECT h.gold, h.regular, p.pairs, w.workers, w.heaviest FROM"
        " (SELECT COUNT(CASE WHEN k.kind = %s THEN 1 END) AS gold,"
        "         COUNT(CASE WHEN k.kind = %s THEN 1 END) AS regular"
        f"  FROM ({kinds_sql}) k) h,"
        # m (m - 1) is even: the halving is exact in integer arithmetic.
        f" (SELECT COALESCE(SUM(i.m * (i.m - 1) / 2), 0) AS pairs FROM ({item_sql}) i) p,"
        f" (SELECT COUNT(*) AS workers, COALESCE(MAX(l.n), 0) AS heaviest FROM ({worker_sql}) l) w"
    )
    params = (HIT.Kind.GOLD.value, HIT.Kind.REGULAR.value, *kinds_params, *item_params, *worker_params)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return tuple(int(v) for v in cursor.fetchone())
