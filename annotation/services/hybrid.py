"""Budgeted presence (human presence share below 100%): the core's side.

Below 100% the pipeline does not post presence HITs at once.  It stores every HIT it would have
posted as a ``PresenceCandidate`` and asks the automated-scoring worker (Celery task
``ROUTE_TASK``, by name: the core never imports ``annotation.automation``) to judge the candidates'
units and route the least-sure ones to people, round by round.  This module creates the
candidates, posts the routed ones as HITs, and says when a round is over and when the routing is
finished (the campaign cannot end before).  Everything is queued through the outbox, so a broker
outage delays a round and loses nothing.

Under the active rule (``Campaign.routing_rule``, issue 37) every candidate is decided once, in one random draw
with known inclusion probabilities (``annotation.scoring.active``): ``draw_examples`` says which candidates a
round's draw decides, ``draw_budget`` how many HITs it may send to people, ``active_round_due`` when a round opens.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import Campaign, Example, PresenceCandidate, PresenceRound
from annotation.scoring.routing import hit_budget
from annotation.services.gold import turn_share_into_gold
from annotation.models.stages import PRESENCE, TASK_TYPES
from hits.models import HIT, TaskType
from hits.mturk.publishing import publish_soon
from hits.outbox import send_after_commit

ROUTE_TASK = "annotation.route_presence"


def store_candidates(campaign: Campaign, rows: list[HIT], *, route: bool = True) -> int:
    """Keep unsaved presence HITs as candidates instead of posting them, then ask for a routing pass (unless
    ``route`` is False: the caller asks once for many)."""
    if not rows:
        if route:
            # An example with nothing to judge still counts towards the rounds (the last closes on the last example).
            request_routing(campaign)
        return 0
    PresenceCandidate.objects.bulk_create(
        [
            PresenceCandidate(
                campaign=campaign, summary_id=h.payload["summary"], predicate_id=h.payload.get("predicate"),
                units=list(h.payload["units"]),
            )
            for h in rows
        ],
        batch_size=2000,
    )
    if route:
        request_routing(campaign)
    return len(rows)


def request_routing(campaign: Campaign) -> None:
    """Queue a routing pass after the commit (idempotent: a pass does only what is due)."""
    send_after_commit(ROUTE_TASK, campaign.pk)


class RoutingRetryError(ValueError):
    """A routing retry that cannot be asked for (the message says why)."""


def retry_routing(campaign: Campaign, judge: str | None = None) -> None:
    """The researcher's retry of a budgeted campaign's routing (after a failed pass), optionally with another
    judge (a registry name the caller has checked).  The pass runs after the commit, like every other."""
    if not campaign.is_hybrid:
        raise RoutingRetryError("this campaign does not route presence judgments (its human presence share is 100%)")
    if campaign.state not in (Campaign.State.RUNNING, Campaign.State.PAUSED):
        raise RoutingRetryError(f"a {campaign.get_state_display().lower()} campaign has no routing to retry")
    if judge and judge != campaign.presence_judge:
        # Labels and rounds carry the judge version, so a judge changed between rounds stays traceable.
        Campaign.objects.filter(pk=campaign.pk).update(presence_judge=judge)
        campaign.presence_judge = judge
    request_routing(campaign)


def total_budget(campaign: Campaign, n_candidates: int | None = None) -> int:
    """How many presence HITs people may judge, over all rounds (never more than the share)."""
    if n_candidates is None:
        n_candidates = PresenceCandidate.objects.filter(campaign=campaign).count()
    return hit_budget(n_candidates, campaign.human_presence_share)


def example_progress(campaign: Campaign) -> tuple[int, int]:
    """(examples whose presence HITs exist, all the campaign's examples)."""
    counts = Example.objects.filter(campaign=campaign).aggregate(
        total=Count("pk"), started=Count("pk", filter=Q(presence_started=True))
    )
    return counts["started"], counts["total"]


def examples_needed(campaign: Campaign, number: int, total: int) -> int:
    """Examples whose presence HITs must exist before round ``number`` (not the last) opens: ``number / rounds`` of
    them, rounded up; for the last round (and an extra one), every example before it may close.  In an "scu"
    campaign all exist at launch; in a QA campaign they arrive example by example as QA pairs settle, so the
    rounds follow the campaign's progress."""
    rounds = campaign.n_presence_rounds
    if number >= rounds:
        return total
    return -(-number * total // rounds)


def round_due(campaign: Campaign, number: int, progress: tuple[int, int], n_candidates: int, routed: int) -> bool:
    """True when round ``number`` may open (its predecessor done).  A round before the last: once enough examples
    have their presence HITs and it has something to route (examples without any predicate have none).  The
    last: once there is something to route (it then takes the candidates still to come, up to the share).  Once
    every example has its HITs a planned round opens even with nothing to route (a budget of nothing still ends).
    An extra round (new HITs after the last, e.g. a system added): once there is something to route."""
    started, total = progress
    rounds = campaign.n_presence_rounds
    if number < rounds and started < examples_needed(campaign, number, total):
        return False
    due = round_cap(campaign, number, n_candidates, progress) > routed
    return due or (number <= rounds and started >= total)


def is_active(campaign: Campaign) -> bool:
    """True when the campaign routes by random draws with known probabilities (the active rule)."""
    return campaign.routing_rule == Campaign.RoutingRule.ACTIVE


def draw_examples(campaign: Campaign, number: int, progress: tuple[int, int]) -> set[int] | None:
    """The examples whose undecided candidates a draw of round ``number`` decides (active rule): before the last
    round, the first ``examples_needed(campaign, number, total)`` examples whose presence HITs exist, in example
    position order (whole examples; those decided by earlier rounds among them); the last round and any later
    draw: every example (None).  In an "scu" campaign round 1 of 3 decides the first third of the examples."""
    started, total = progress
    if number >= campaign.n_presence_rounds:
        return None
    needed = examples_needed(campaign, number, total)
    return set(
        Example.objects.filter(campaign=campaign, presence_started=True).order_by("position").values_list("pk", flat=True)[:needed]
    )


#: The fewest HITs a draw sends to people.  A draw of 0 would leave its HITs with pi = 0 (their units could never
#: correct the judge: a bias), and a draw of 1 has no variance estimate (Deville's needs two).
MIN_DRAW = 2


def draw_budget(campaign: Campaign, decided_after: int, routed: int, drawable: int, last: bool = False) -> int:
    """HITs a draw sends to people: ``hit_budget(decided_after, share) - routed``, clamped to [0, drawable], where
    ``decided_after`` counts the candidates decided once this draw is done and ``routed`` those sent to people by
    the draws before.  Over its draws a campaign so spends ``hit_budget(all candidates, share)``.  A draw that would
    buy fewer than ``MIN_DRAW`` HITs waits for more candidates (``draw_may_wait``), except the ``last`` one (every
    example has its HITs): it buys ``MIN_DRAW`` (or every drawable HIT), so a QA campaign whose examples settle one
    by one may spend up to ``MIN_DRAW`` HITs more than its share, and no HIT is left with pi = 0."""
    budget = max(0, min(hit_budget(decided_after, campaign.human_presence_share) - int(routed), int(drawable)))
    if last and drawable and campaign.human_presence_share > 0:
        budget = max(budget, min(MIN_DRAW, int(drawable)))
    return budget


def draw_may_wait(campaign: Campaign, decided_after: int, routed: int, drawable: int, progress: tuple[int, int]) -> bool:
    """True when a top-up draw (new candidates while a round is open) should wait: it would buy fewer than
    ``MIN_DRAW`` HITs and examples are still to come (their candidates will join it).  Its candidates stay
    undecided (they count as the judge's probability, and the scores say provisional) until then."""
    started, total = progress
    return started < total and draw_budget(campaign, decided_after, routed, drawable) < MIN_DRAW


def active_round_due(campaign: Campaign, number: int, progress: tuple[int, int], to_decide: int) -> bool:
    """True when round ``number`` may open under the active rule (its predecessor done): a round before the last
    once its examples have their presence HITs and ``to_decide`` (its draw's undecided candidates) is not 0, or
    once every example has its HITs (a planned round then opens even with nothing to decide); a later round (new
    HITs after the last, e.g. a system added) once there is something to decide."""
    started, total = progress
    rounds = campaign.n_presence_rounds
    if number < rounds and started < examples_needed(campaign, number, total):
        return False
    return to_decide > 0 or (number <= rounds and started >= total)


def round_may_close(campaign: Campaign, number: int, progress: tuple[int, int]) -> bool:
    """A round whose HITs are done closes, except the last while examples still lack their presence HITs (it
    takes their share as they come: a QA campaign's last round stays open until its last example settles)."""
    started, total = progress
    return number < campaign.n_presence_rounds or started >= total


def round_cap(campaign: Campaign, number: int, n_candidates: int, progress: tuple[int, int] | None = None) -> int:
    """HITs people may have judged by the end of round ``number`` (cumulative): ``number / rounds`` of the budget
    the campaign will have once every example has its presence HITs (the candidates so far scaled up by the
    examples still to come; exact once all have them), never more than the share of the candidates so far; the
    last round (and an extra one): all the budget."""
    rounds = campaign.n_presence_rounds
    budget = total_budget(campaign, n_candidates)
    if number >= rounds:
        return budget
    started, total = progress if progress is not None else example_progress(campaign)
    if not started:
        return 0
    expected = hit_budget(round(n_candidates * max(total, started) / started), campaign.human_presence_share)
    return min(budget, (expected * number) // rounds)


@transaction.atomic
def post_routed(campaign: Campaign, round_number: int, candidate_ids, uncertainty: dict | None = None) -> int:
    """Post the routed candidates as presence HITs of ``round_number`` (candidates already posted are skipped)."""
    candidates = list(
        PresenceCandidate.objects.select_for_update().filter(campaign=campaign, pk__in=list(candidate_ids), hit__isnull=True)
    )
    presence, _ = TaskType.objects.get_or_create(slug=PRESENCE, defaults=TASK_TYPES[PRESENCE])
    rows = [
        HIT(
            batch_id=campaign.batch_id, task_type=presence,
            payload={"summary": c.summary_id, "predicate": c.predicate_id, "units": c.units},
            max_assignments=campaign.initial_presence_assignments, reward=campaign.reward_presence,
            state=HIT.State.PAUSED if campaign.state == Campaign.State.PAUSED else HIT.State.OPEN,
        )
        for c in candidates
    ]
    if campaign.unit_type == Campaign.UnitType.SCU:
        # As in the paper's protocol, gold checks hide among the HITs people are asked for: the campaign's
        # gold share of each round's routed HITs whose units all have imported labels.  Their units count
        # as judged by people, with the known labels.
        turn_share_into_gold(campaign, rows, seed=campaign.pk * 1000 + round_number)
    hits = HIT.objects.bulk_create(rows, batch_size=2000)
    for candidate, hit in zip(candidates, hits):
        candidate.hit = hit
        candidate.round = round_number
    PresenceCandidate.objects.bulk_update(candidates, ["hit", "round"], batch_size=2000)
    if candidates:
        publish_soon(campaign.batch)
    return len(hits)


def open_routed_hits(campaign: Campaign) -> int:
    """Routed presence HITs still waiting for people (gold checks stay open for every worker: never waited for)."""
    return PresenceCandidate.objects.filter(
        campaign=campaign, hit__isnull=False, hit__state__in=HIT.UNFINISHED_STATES, hit__kind=HIT.Kind.REGULAR
    ).count()


def after_routed_hits_completed(campaign: Campaign) -> None:
    """Called by the pipeline when presence HITs complete: the round's end asks for the next pass."""
    if not campaign.is_hybrid:
        return
    current = PresenceRound.objects.filter(campaign=campaign, state=PresenceRound.State.OPEN).order_by("-number").first()
    if current is not None and open_routed_hits(campaign) == 0:
        request_routing(campaign)


def routing_finished(campaign: Campaign) -> bool:
    """True when a budgeted campaign has spent its budget and its judge has labelled the rest (or it is not budgeted)."""
    if not campaign.is_hybrid:
        return True
    last = PresenceRound.objects.filter(campaign=campaign).order_by("-number").first()
    if not (last and last.state == PresenceRound.State.DONE and last.number >= campaign.n_presence_rounds):
        return False
    if Example.objects.filter(campaign=campaign, presence_started=False).exists():
        return False
    if is_active(campaign):
        # Every candidate is decided by a draw (its budget is the share of the candidates it decides).
        return not PresenceCandidate.objects.filter(campaign=campaign, stratum__isnull=True).exists()
    # Candidates that arrived after the last round (a QA example settling late) still owe their share.
    routed = PresenceCandidate.objects.filter(campaign=campaign, hit__isnull=False).count()
    return routed >= total_budget(campaign)


def close_round(campaign: Campaign, number: int) -> None:
    PresenceRound.objects.filter(campaign=campaign, number=number, state=PresenceRound.State.OPEN).update(
        state=PresenceRound.State.DONE, done_at=timezone.now()
    )
