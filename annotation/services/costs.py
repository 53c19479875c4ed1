"""What a campaign will cost: HIT counts per stage, rewards and the crowd platform's commission.

The pipeline creates HITs stage by stage (verification after generation,
presence once an example's predicates are settled), so before launch the
preview *estimates* the later stages from what the protocol implies:

- generation: one HIT per predicate, ``assignments_generation`` each;
- verification: one HIT per predicate, ``assignments_verification`` each;
- presence: one HIT per (system summary, predicate of its example) for a
  "qa" campaign, or per (system summary, group of units) for an "scu"
  campaign, ``assignments_presence`` each; with a human presence share below
  100%, only that share of them (the judge labels the rest), and the preview
  says what that saves.
- gold checks: presence HITs with known answers, paid the presence reward
  to every judge who meets them (each judge meets each at most once, and a
  judge with no regular HIT left is handed the gold checks they have not
  done).  The estimate counts the campaign's imported gold items and, in an
  "scu" campaign with imported labels, the ``gold_share`` of its presence
  HITs that become gold checks, each judged by ``assignments_presence``
  judges (the fewest who can finish the presence HITs; every further judge
  adds ``gold_per_judge``).

Redo rounds cannot be known in advance: ``redo_share`` (the expected share of
predicates that go round again, default 10%) adds their generation and
verification HITs.  Amazon Mechanical Turk's commission is 20% of rewards and
bonuses, plus 20% more on HITs with 10 or more assignments; local campaigns
pay no commission.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal

from django.db.models import Count

from annotation.models import Campaign, ContentUnit, GoldPresence, Predicate, SystemSummary
from annotation.scoring.routing import hit_budget
# The commission lives with the MTurk backend (hits.mturk), which charges it to the ledger and the budget cap too.
from hits.models import HIT
from hits.mturk.fees import CENT, mturk_fee


@dataclass
class StageCost:
    task_type: str
    hits: int
    assignments_per_hit: int
    reward: Decimal
    rewards: Decimal
    fees: Decimal

    @property
    def total(self) -> Decimal:
        return self.rewards + self.fees


@dataclass
class CostPreview:
    backend: str
    stages: list[StageCost]
    #: Budgeted presence: the share of presence HITs people judge, and what the HITs left to the judge would cost.
    human_presence_share: float = 1.0
    presence_hits_full: int = 0
    saving: Decimal = Decimal("0.00")
    #: Presence HITs people judge (regular ones and those that became gold checks).
    presence_hits_human: int = 0
    #: What one more judge meeting every gold check adds (rewards and fees).
    gold_per_judge: Decimal = Decimal("0.00")

    @property
    def rewards(self) -> Decimal:
        return sum((s.rewards for s in self.stages), Decimal("0"))

    @property
    def fees(self) -> Decimal:
        return sum((s.fees for s in self.stages), Decimal("0"))

    @property
    def total(self) -> Decimal:
        return self.rewards + self.fees

    def as_dict(self) -> dict:
        """JSON-ready (amounts as strings, so no float rounding creeps into money)."""
        return {
            "backend": self.backend,
            "stages": [
                {**{k: (str(v) if isinstance(v, Decimal) else v) for k, v in asdict(s).items()}, "total": str(s.total)}
                for s in self.stages
            ],
            "rewards": str(self.rewards),
            "fees": str(self.fees),
            "total": str(self.total),
            "human_presence_share": self.human_presence_share,
            "presence_hits_full": self.presence_hits_full,
            "saving": str(self.saving),
            "gold_per_judge": str(self.gold_per_judge),
        }


def _stage(task_type: str, hits: int, assignments: int, reward: Decimal, with_fee: bool) -> StageCost:
    reward = Decimal(reward)
    paid = hits * assignments
    rewards = (reward * paid).quantize(CENT)
    fees = (mturk_fee(reward, assignments) * paid).quantize(CENT) if with_fee else Decimal("0.00")
    return StageCost(task_type, hits, assignments, reward, rewards, fees)


def campaign_cost_preview(campaign: Campaign, backend: str | None = None, redo_share: float = 0.10) -> CostPreview:
    """Estimated cost of running ``campaign`` from launch to its last presence judgment.

    ``backend`` defaults to the campaign's; the MTurk commission applies to
    both MTurk backends.
    """
    backend = backend or campaign.backend
    with_fee = backend.startswith("mturk")
    stages: list[StageCost] = []
    n_systems = campaign.systems.count()
    if campaign.unit_type == Campaign.UnitType.SCU:
        from annotation.models.stages import SCU_UNITS_PER_HIT

        units = dict(
            ContentUnit.objects.filter(example__campaign=campaign)
            .values("example_id")
            .annotate(n=Count("pk"))
            .values_list("example_id", "n")
        )
        summaries = SystemSummary.objects.filter(system__campaign=campaign).values_list("example_id", flat=True)
        presence_hits = sum(-(-units.get(e, 0) // SCU_UNITS_PER_HIT) for e in summaries)
    else:
        n_predicates = Predicate.objects.filter(example__campaign=campaign).count()
        rounds = n_predicates + round(n_predicates * redo_share)
        stages.append(
            _stage("generation", rounds, campaign.assignments_generation, campaign.reward_generation, with_fee)
        )
        stages.append(
            _stage("verification", rounds, campaign.assignments_verification, campaign.reward_verification, with_fee)
        )
        presence_hits = n_predicates * n_systems
    full = _stage("presence", presence_hits, campaign.assignments_presence, campaign.reward_presence, with_fee)
    share = campaign.human_presence_share
    # Budgeted presence: people judge at most the share of presence HITs (the judge labels the rest).
    human = presence_hits if share >= 1 else hit_budget(presence_hits, share)
    presence = _stage("presence", human, campaign.assignments_presence, campaign.reward_presence, with_fee)
    saving = full.total - presence.total
    # Gold checks: an "scu" campaign's share of its (human) presence HITs, keyed by imported labels, plus the
    # imported gold items of any campaign; each is paid to every judge who meets it.
    share_gold = 0
    if campaign.unit_type == Campaign.UnitType.SCU and campaign.gold_share > 0 and GoldPresence.objects.filter(
        summary__system__campaign=campaign, origin=GoldPresence.Origin.IMPORTED
    ).exists():
        share_gold = round(human * campaign.gold_share)
    gold_items = share_gold + _imported_gold_items(campaign)
    if share_gold:
        presence = _stage("presence", human - share_gold, campaign.assignments_presence, campaign.reward_presence,
                          with_fee)
    stages.append(presence)
    gold_per_judge = Decimal("0.00")
    if gold_items:
        stages.append(_stage("gold", gold_items, campaign.assignments_presence, campaign.reward_presence, with_fee))
        gold_per_judge = _stage("gold", gold_items, 1, campaign.reward_presence, with_fee).total
    return CostPreview(backend=backend, stages=stages, human_presence_share=share, presence_hits_full=presence_hits,
                       saving=saving, presence_hits_human=human, gold_per_judge=gold_per_judge)


def _imported_gold_items(campaign: Campaign) -> int:
    """The campaign's gold items defined with its qualification tests (not the presence HITs turned gold)."""
    if campaign.batch_id is None:
        return 0
    return (
        HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.GOLD, payload__has_key="inline")
        .exclude(state=HIT.State.CANCELLED)
        .count()
    )
