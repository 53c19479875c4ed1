"""What a campaign has spent and committed, per stage and per system, and what the paper's protocol would cost.

The cost *preview* before launch is ``annotation.services.costs``; this is the
running account of a launched campaign (issue 29), read from the HITs and the
ledger:

- **spent**: the ledger's entries for the campaign's batch (rewards of approved
  work, bonuses, and MTurk's commission on both when on MTurk), whether still
  owed to a local worker or already paid;
- **committed**: what the campaign will pay if the work still to come is done
  and approved: every open place of an unfinished HIT (max_assignments -
  submitted) and every submitted assignment not yet reviewed, each at the HIT's
  reward plus the market's fee: MTurk's commission (``hits.mturk.fees.mturk_fee``) or Prolific's service
  fee (the batch's ``prolific_fee_rate``).  Gold
  checks and qualification tests are open to every judge (no fixed number of
  places): only their submitted work awaiting review is committed;
- stages: generation, verification and presence (regular HITs of that task
  type), qualification (qualification tests) and gold checks (HITs with known
  answers), whatever their task type.

Presence cost per system: the spent and committed money of the regular
presence HITs of that system's summaries.  Under the paper's protocol every
presence HIT the campaign has so far, posted or not (a budgeted campaign's
candidates the judge kept count as if posted), gets 3 judges at the presence
reward (plus the commission for 3 assignments on MTurk), whatever its state:

    paper presence = Σ over presence HITs of 3 x (reward + fee(reward, 3))
    saving         = paper presence - (spent + committed on presence)
    saving share   = saving / paper presence

Rejected work is neither spent nor committed.  Examples whose predicates are
not settled yet have no presence HITs: they add to both sides as they come.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from django.db.models import Count, Sum

from annotation.models import Campaign, PresenceCandidate, SystemSummary
from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from annotation.scoring.replay import PAPER_JUDGES
from hits.models import HIT, Assignment, LedgerEntry
from hits.mturk.fees import CENT, mturk_fee

QUALIFICATION = "qualification"
GOLD = "gold"
#: The stages money is counted in, in the order shown.
SPENDING_STAGES = (GENERATION, VERIFICATION, PRESENCE, QUALIFICATION, GOLD)
ZERO = Decimal("0.00")


def stage_of(task_type_slug: str, kind: str) -> str:
    """The stage a HIT's money counts in: its kind for tests and gold checks, else its task type."""
    if kind == HIT.Kind.QUALIFICATION:
        return QUALIFICATION
    if kind == HIT.Kind.GOLD:
        return GOLD
    return task_type_slug


def fee_of_market(batch):
    """The market's fee on one reward, ``fee(reward, places)``: MTurk's commission (which depends on the HIT's
    places), Prolific's service fee (the batch's ``prolific_fee_rate``), nothing for local workers."""
    if batch is not None and batch.on_mturk:
        return mturk_fee
    if batch is not None and batch.on_prolific:
        from hits.prolific.pricing import fee

        rate = batch.prolific_fee_rate
        return lambda reward, places: fee(reward, rate)
    return lambda reward, places: ZERO


def _share(part: Decimal, whole: Decimal) -> float | None:
    return round(float(part / whole), 4) if whole else None


def campaign_spending(campaign: Campaign) -> dict:
    """Spent, committed and total per stage; presence per system against the paper's protocol (see module doc).

    Amounts are ``Decimal`` (``spending_as_json`` turns them into strings); a few queries however large the campaign.
    """
    batch = campaign.batch if campaign.batch_id else None
    on_mturk = bool(batch and batch.on_mturk)
    market_fee = fee_of_market(batch)
    # An "scu" campaign has its units already: no generation or verification to count.
    shown = [s for s in SPENDING_STAGES if campaign.unit_type != Campaign.UnitType.SCU or s not in (GENERATION, VERIFICATION)]
    stages = {s: {"stage": s, "spent": ZERO, "committed": ZERO, "paid_assignments": 0, "open_places": 0, "awaiting_review": 0}
              for s in shown}
    summary_system = dict(
        SystemSummary.objects.filter(system__campaign=campaign).values_list("pk", "system__name")
    )
    systems = {
        name: {"system": name, "hits": 0, "assignments": 0, "spent": ZERO, "committed": ZERO, "paper_hits": 0, "paper_cost": ZERO}
        for name in sorted(set(summary_system.values()))
    }

    def paper_cost(reward) -> Decimal:
        reward = Decimal(reward)
        return (reward + market_fee(reward, PAPER_JUDGES)) * PAPER_JUDGES

    if campaign.batch_id:
        spent_by_hit: dict[int, Decimal] = defaultdict(lambda: ZERO)
        paid_by_hit: dict[int, int] = defaultdict(int)
        for hit_id, kind, amount, n in (
            LedgerEntry.objects.filter(batch_id=campaign.batch_id)
            .exclude(state=LedgerEntry.State.REFUSED)  # refused for good: no money moved
            .values_list("assignment__hit_id", "kind")
            .annotate(amount=Sum("amount"), n=Count("pk"))
            .order_by()
        ):
            spent_by_hit[hit_id] += amount
            if kind == LedgerEntry.Kind.REWARD:
                paid_by_hit[hit_id] += n
        awaiting = dict(
            Assignment.objects.filter(hit__batch_id=campaign.batch_id, state=Assignment.State.SUBMITTED)
            .values_list("hit_id")
            .annotate(n=Count("pk"))
            .order_by()
        )
        rows = HIT.objects.filter(batch_id=campaign.batch_id).values_list(
            "pk", "kind", "task_type__slug", "state", "reward", "max_assignments", "n_submitted",
            "payload__summary", "mturk__reward", "mturk__max_assignments", "payload__replaces", "payload__adds_to",
        )
        for pk, kind, slug, state, reward, places, submitted, summary, mt_reward, mt_places, replaces, adds_to in rows:
            stage = stages.setdefault(stage_of(slug, kind), {"stage": stage_of(slug, kind), "spent": ZERO, "committed": ZERO,
                                                             "paid_assignments": 0, "open_places": 0, "awaiting_review": 0})
            # What one more approved assignment costs: MTurk's published terms where the HIT is published.
            reward_now = Decimal(mt_reward if mt_reward is not None else reward)
            each = reward_now + market_fee(reward_now, mt_places or places)
            # Gold checks and qualification tests are open to every judge (32,767 places): no number of places
            # is committed, only their submitted work awaiting review.
            open_ended = kind != HIT.Kind.REGULAR
            open_places = max(0, places - submitted) if state in HIT.UNFINISHED_STATES and not open_ended else 0
            waiting = awaiting.get(pk, 0)
            committed = each * (open_places + waiting)
            spent = spent_by_hit.get(pk, ZERO)
            stage["spent"] += spent
            stage["committed"] += committed
            stage["paid_assignments"] += paid_by_hit.get(pk, 0)
            stage["open_places"] += open_places
            stage["awaiting_review"] += waiting
            if slug == PRESENCE and kind == HIT.Kind.REGULAR:
                system = systems.get(summary_system.get(summary))
                if system is None:
                    continue
                # A copy holding places of another HIT (replacements of excluded work, or places MTurk could not
                # add to the first) is the same presence HIT: its money counts, not as a HIT of its own.
                copy = replaces is not None or adds_to is not None
                system["hits"] += 0 if copy else 1
                # The places the campaign asked for: all of an open or done HIT's, what a cancelled one used.
                system["assignments"] += submitted if state == HIT.State.CANCELLED else places
                system["spent"] += spent
                system["committed"] += committed
                if not campaign.is_hybrid and not copy:
                    system["paper_hits"] += 1
                    system["paper_cost"] += paper_cost(reward)
    if campaign.is_hybrid:
        # Every candidate the paper would have posted; those that became gold checks are gold checks there too.
        candidates = (
            PresenceCandidate.objects.filter(campaign=campaign)
            .exclude(hit__kind=HIT.Kind.GOLD)
            .values_list("summary__system__name")
            .annotate(n=Count("pk"))
            .order_by()
        )
        for name, n in candidates:
            if name in systems:
                systems[name]["paper_hits"] += n
                systems[name]["paper_cost"] += paper_cost(campaign.reward_presence) * n
    for stage in stages.values():
        stage["spent"] = stage["spent"].quantize(CENT)
        stage["committed"] = stage["committed"].quantize(CENT)
        stage["total"] = stage["spent"] + stage["committed"]
    for system in systems.values():
        system["spent"] = system["spent"].quantize(CENT)
        system["committed"] = system["committed"].quantize(CENT)
        system["cost"] = system["spent"] + system["committed"]
        system["paper_cost"] = system["paper_cost"].quantize(CENT)
        system["paper_assignments"] = system["paper_hits"] * PAPER_JUDGES
        system["saving"] = system["paper_cost"] - system["cost"]
        system["saving_share"] = _share(system["saving"], system["paper_cost"])
    spent = sum((s["spent"] for s in stages.values()), ZERO)
    committed = sum((s["committed"] for s in stages.values()), ZERO)
    presence_cost = sum((s["cost"] for s in systems.values()), ZERO)
    paper_presence = sum((s["paper_cost"] for s in systems.values()), ZERO)
    saving = paper_presence - presence_cost
    paper_total = spent + committed - presence_cost + paper_presence
    return {
        "on_mturk": on_mturk,
        "rule": campaign.presence_judges,
        "human_presence_share": campaign.human_presence_share,
        "stages": list(stages.values()),
        "spent": spent,
        "committed": committed,
        "total": spent + committed,
        "systems": list(systems.values()),
        "presence": {
            "hits": sum(s["hits"] for s in systems.values()),
            "assignments": sum(s["assignments"] for s in systems.values()),
            "cost": presence_cost,
            "paper_hits": sum(s["paper_hits"] for s in systems.values()),
            "paper_assignments": sum(s["paper_assignments"] for s in systems.values()),
            "paper_cost": paper_presence,
            "saving": saving,
            "saving_share": _share(saving, paper_presence),
        },
        "paper_total": paper_total,
        "saving_share_of_campaign": _share(saving, paper_total),
    }


def spending_as_json(spending: dict) -> dict:
    """The same with every amount as a decimal string (no float rounding in money)."""

    def convert(value):
        if isinstance(value, Decimal):
            return str(value)
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value

    return convert(spending)
