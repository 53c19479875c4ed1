"""Issue 40: what a worker sees before launch (the worker view of a task type), and the pilot that measures how
long HITs really take before the rewards are fixed.

The worker view: an unsaved HIT rendered with the template and instructions a worker gets.  After launch it is a
real HIT of the campaign; before, a HIT built from the campaign's own data (``sample_payloads``): a predicate and
its sentence (generation), QA pairs of a predicate (verification), a system summary with its reference and pairs
(presence).  Nothing is saved: the page cannot submit, and a forced POST is refused.

The pilot: ``start_pilot`` offers ``n`` HITs of each task type (one worker each) on the campaign's market, through
the same path as the launch (``pipeline.open_batch``: the market's checks, its publishing, the budget cap).  Pilot
HITs are real HITs: paid at the campaign's rewards of the moment, recorded, and counted in the typical times every
worker page shows (``hits.worktime``).  They carry their item inline (``payload["inline"]``, as test items do) and
``payload["pilot"]``: their answers stay on the assignments and never enter the campaign's data (no QA pairs, no
verdicts, no judgments, no scores), because they were given under rewards and settings the launch may change.  A
QA campaign usually has no QA pairs before launch: each pilot generation HIT submitted then opens a pilot
verification HIT and a pilot presence HIT on the writer's pairs (``follow_generation``) until ``n`` of each exist.

``pilot_report`` gives each task type's median time per HIT in the pilot and the reward that pays the campaign's
hourly floor at that time: ceil(floor x median time) to the cent; ``accept_rewards`` sets them before launch.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotation.models import Campaign, ContentUnit, Predicate, SystemSummary
from annotation.models.campaign import REWARD_BOUNDS
from annotation.models.stages import GENERATION, PRESENCE, SCU_UNITS_PER_HIT, VERIFICATION
from annotation.services.pipeline import LaunchError, market_follows, open_batch
from annotation.services.task_types import task_type, task_type_as_is
from hits.models import HIT, Assignment, Batch, HITExclusion
from hits.services import set_batch_state

#: The most pilot HITs per task type a campaign may ask for.
MAX_PILOT_SIZE = 50
CENT = Decimal("0.01")


class PilotError(Exception):
    """The pilot cannot do what was asked (the message says why)."""


def campaign_stages_of(campaign: Campaign) -> tuple[str, ...]:
    """The task types of the campaign: presence only for an "scu" campaign (its units are given)."""
    return (PRESENCE,) if campaign.unit_type == Campaign.UnitType.SCU else (GENERATION, VERIFICATION, PRESENCE)


# --- items from the campaign's data -------------------------------------------------------------------------


def _sentence_part(predicate: Predicate, campaign: Campaign) -> dict:
    sentence = predicate.sentence
    return {
        "sentence": sentence.text, "start": predicate.start, "end": predicate.end, "lemma": predicate.lemma,
        "max_questions": campaign.max_questions_per_predicate, "max_answers": campaign.max_answers_per_question,
    }


def _presence_part(predicate: Predicate | None, summary: SystemSummary) -> dict:
    """A presence item's summary and reference, the predicate's span marked in the reference when there is one."""
    example = summary.example
    part = {"candidate": summary.text, "reference": example.reference, "predicate": None}
    if predicate is not None and predicate.sentence_id is not None:  # imported pairs may have no sentence
        offset = predicate.sentence.start
        if example.reference[offset + predicate.start : offset + predicate.end] == predicate.text:
            part["predicate"] = {"start": offset + predicate.start, "end": offset + predicate.end}
        else:  # a reference whose sentence offsets do not match its text: the sentence alone, marked
            part.update(reference=predicate.sentence.text, predicate={"start": predicate.start, "end": predicate.end})
    return part


def _pairs(units) -> list[dict]:
    return [{"id": f"u{u.pk}", "question": u.question, "answers": list(u.answers or []), "text": u.text} for u in units]


def sample_payloads(campaign: Campaign, slug: str, n: int) -> list[dict]:
    """Up to ``n`` inline items of task type ``slug`` made of the campaign's data (fewer, or none, when the data
    holds fewer: e.g. no QA pairs yet for verification).  A bounded number of queries whatever ``n``."""
    predicates = list(
        Predicate.objects.filter(example__campaign=campaign).select_related("sentence").order_by("settled", "example__position", "pk")[:n]
    ) if campaign.unit_type == Campaign.UnitType.QA else []
    if slug == GENERATION:
        summaries = _first_summaries(campaign, {p.example_id for p in predicates})
        return [
            {**_sentence_part(p, campaign), "presence": _presence_part(p, summaries[p.example_id]) if p.example_id in summaries else None}
            for p in predicates
        ]
    units = list(
        ContentUnit.objects.filter(example__campaign=campaign).exclude(state=ContentUnit.State.REJECTED)
        .select_related("predicate__sentence").order_by("example__position", "predicate_id", "index")[: n * 8]
    )
    groups: dict[tuple, list] = {}
    for unit in units:
        groups.setdefault((unit.example_id, unit.predicate_id), []).append(unit)
    if slug == VERIFICATION:
        return [
            {**_sentence_part(group[0].predicate, campaign), "questions": _pairs(group)}
            for group in groups.values() if group[0].predicate is not None
        ][:n]
    summaries = _first_summaries(campaign, {example_id for example_id, _ in groups})
    return [
        {**_presence_part(group[0].predicate, summaries[example_id]), "pairs": _pairs(group[:SCU_UNITS_PER_HIT])}
        for (example_id, _), group in groups.items() if example_id in summaries
    ][:n]


def _first_summaries(campaign: Campaign, example_ids) -> dict:
    """Each example's first system summary (one query)."""
    found = {}
    for summary in SystemSummary.objects.filter(example_id__in=example_ids, system__campaign=campaign).select_related("example").order_by("pk"):
        found.setdefault(summary.example_id, summary)
    return found


def _reward(campaign: Campaign, slug: str) -> Decimal:
    return getattr(campaign, f"reward_{slug}")


def worker_view_hit(campaign: Campaign, slug: str) -> HIT | None:
    """The HIT a worker would see for this task type, unsaved: a real one of the campaign once it has some (not a
    pilot's), else one made of the campaign's data; None when the data has nothing to show yet."""
    if slug not in campaign_stages_of(campaign):
        return None
    if campaign.batch_id:
        real = (
            HIT.objects.filter(batch_id=campaign.batch_id, task_type__slug=slug, kind=HIT.Kind.REGULAR)
            .exclude(payload__has_key="pilot").select_related("task_type", "batch").order_by("state", "pk").first()
        )
        if real is not None:
            return real
    items = sample_payloads(campaign, slug, 1)
    if not items:
        return None
    # The campaign's id: the page's instructions carry its numbers (``hit_pages.task_rules``) before it has a batch.
    return HIT(batch=campaign.batch, task_type=task_type_as_is(slug), payload={"inline": items[0], "campaign": campaign.pk},
               reward=_reward(campaign, slug))


# --- the pilot ----------------------------------------------------------------------------------------------


def _pilot_hit(campaign: Campaign, slug: str, item: dict) -> HIT:
    return HIT(batch=campaign.batch, task_type=task_type(slug), payload={"pilot": True, "inline": item},
               max_assignments=1, reward=_reward(campaign, slug))


def start_pilot(campaign: Campaign, n) -> dict[str, int]:
    """Offer ``n`` pilot HITs of each task type (fewer where the data has fewer items; verification and presence
    follow the pilot's own writers in a QA campaign without pairs).  Returns the HITs created per task type."""
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise PilotError("the number of pilot HITs per task type must be a whole number") from None
    if not 1 <= n <= MAX_PILOT_SIZE:
        raise PilotError(f"the number of pilot HITs per task type must be between 1 and {MAX_PILOT_SIZE}")
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if campaign.state != Campaign.State.DRAFT:
            raise PilotError(f"a pilot runs before launch; this campaign is {campaign.get_state_display().lower()}")
        if campaign.pilot_running:
            raise PilotError("a pilot is already running: stop it before starting another")
        items = {slug: sample_payloads(campaign, slug, n) for slug in campaign_stages_of(campaign)}
        if not any(items.values()):
            raise PilotError("the campaign has no predicates nor units to build pilot HITs from")
        try:
            open_batch(campaign)
        except LaunchError as exc:
            raise PilotError(str(exc)) from None
        HIT.objects.bulk_create([_pilot_hit(campaign, slug, item) for slug, rows in items.items() for item in rows])
        campaign.pilot_size, campaign.pilot_started_at, campaign.pilot_ended_at = n, timezone.now(), None
        campaign.save(update_fields=["pilot_size", "pilot_started_at", "pilot_ended_at"])
    return {slug: len(rows) for slug, rows in items.items()}


def stop_pilot(campaign: Campaign) -> list[str]:
    """End the pilot: its HITs nobody has taken are withdrawn, work in progress may still be submitted, and the
    campaign's batch waits for the launch again.  Returns what a market refused (``pipeline.market_follows``)."""
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if not campaign.pilot_running:
            raise PilotError("no pilot is running")
        HIT.objects.filter(batch_id=campaign.batch_id, payload__has_key="pilot", state__in=HIT.UNFINISHED_STATES, n_taken=0).update(
            state=HIT.State.CANCELLED
        )
        set_batch_state(Batch.objects.get(pk=campaign.batch_id), Batch.State.PAUSED)
        campaign.pilot_ended_at = timezone.now()
        campaign.save(update_fields=["pilot_ended_at"])
    return market_follows(campaign)


def follow_generation(assignment: Assignment) -> None:
    """A pilot writer's pairs become a pilot verification HIT and a pilot presence HIT (the writer excluded from
    verifying them), while the pilot has fewer than its size of each; inside the submission's transaction.  The
    count takes no lock (a lock here, taken while the submission holds its HIT, could deadlock with the launch):
    writers submitting at the same moment may open one HIT more each, a few cents more, never fewer."""
    hit = assignment.hit
    campaign = Campaign.objects.filter(batch_id=hit.batch_id).first()
    questions = (assignment.answers or {}).get("questions") or []
    if campaign is None or not campaign.pilot_running or not questions:
        return
    pairs = [
        {"id": f"a{assignment.pk}-{i}", "question": q["question"], "answers": q["answers"],
         "text": f"{q['question']} {' / '.join(q['answers'])}"}
        for i, q in enumerate(questions, start=1)
    ]
    inline = hit.payload["inline"]
    counts = dict(
        HIT.objects.filter(batch_id=campaign.batch_id, payload__has_key="pilot").values_list("task_type__slug")
        .annotate(n=Count("pk")).values_list("task_type__slug", "n")
    )
    if counts.get(VERIFICATION, 0) < campaign.pilot_size:
        sentence = {k: inline[k] for k in ("sentence", "start", "end", "lemma", "max_questions", "max_answers") if k in inline}
        verification = _pilot_hit(campaign, VERIFICATION, {**sentence, "questions": pairs})
        verification.save()
        HITExclusion.objects.create(hit=verification, worker=assignment.worker)
    if counts.get(PRESENCE, 0) < campaign.pilot_size and inline.get("presence"):
        presence_pairs = [{"id": p["id"], "question": p["question"], "answer": (p["answers"] or [""])[0]} for p in pairs]
        _pilot_hit(campaign, PRESENCE, {**inline["presence"], "pairs": presence_pairs}).save()


@dataclass
class PilotRow:
    slug: str
    name: str
    hits: int
    open: int
    submitted: int
    median_seconds: float | None
    reward: Decimal
    proposed: Decimal | None

    @property
    def hourly(self) -> Decimal | None:
        """What the current reward pays an hour at the pilot's median time."""
        if not self.median_seconds:
            return None
        return (self.reward * Decimal(3600) / Decimal(str(self.median_seconds))).quantize(CENT)


def proposed_reward(floor: Decimal, median_seconds: float | None) -> Decimal | None:
    """The least reward, to the cent, that pays ``floor`` an hour at ``median_seconds`` per HIT (rounded up, at
    least one cent); None without a time or a floor."""
    if not median_seconds or not floor or floor <= 0:
        return None
    cents = math.ceil(Decimal(floor) * Decimal(str(median_seconds)) * 100 / Decimal(3600))
    return max(CENT, Decimal(cents) * CENT)


def pilot_report(campaign: Campaign) -> list[PilotRow]:
    """Per task type: the pilot's HITs, its submissions, their median time and the reward it proposes (3 queries)."""
    if campaign.pilot_started_at is None or not campaign.batch_id:
        return []
    pilot = Q(batch_id=campaign.batch_id, payload__has_key="pilot")
    counts = {
        row["task_type__slug"]: row
        for row in HIT.objects.filter(pilot).values("task_type__slug").annotate(
            n=Count("pk"), open=Count("pk", filter=Q(state__in=HIT.UNFINISHED_STATES))
        )
    }
    seconds: dict[str, list[int]] = {}
    for slug, value in Assignment.objects.filter(
        hit__batch_id=campaign.batch_id, hit__payload__has_key="pilot", state__in=Assignment.DONE_STATES, work_seconds__isnull=False
    ).values_list("hit__task_type__slug", "work_seconds"):
        seconds.setdefault(slug, []).append(value)
    rows = []
    for slug in campaign_stages_of(campaign):
        times = seconds.get(slug, [])
        median = float(statistics.median(times)) if times else None
        row = counts.get(slug, {})
        rows.append(PilotRow(
            slug, task_type_as_is(slug).name, row.get("n", 0), row.get("open", 0), len(times), median, _reward(campaign, slug),
            proposed_reward(campaign.hourly_pay_floor, median),
        ))
    return rows


def accept_rewards(campaign: Campaign, shown: dict[str, str]) -> dict[str, Decimal]:
    """Set the rewards the pilot proposes, those the page showed (``shown``: slug -> amount): refused when the
    figures moved since (more pilot work came in), so what is set is what the researcher saw."""
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if campaign.state != Campaign.State.DRAFT:
            raise PilotError(f"rewards are accepted before launch; this campaign is {campaign.get_state_display().lower()}")
        proposals = {row.slug: row.proposed for row in pilot_report(campaign) if row.proposed is not None}
        if not proposals:
            raise PilotError("the pilot has no submitted HIT yet: nothing to propose")
        if {slug: str(amount) for slug, amount in proposals.items()} != {k: v for k, v in shown.items() if v}:
            raise PilotError("the pilot's figures changed since the page was shown: look at the new proposal and accept again")
        for slug, amount in proposals.items():
            for validator in REWARD_BOUNDS:
                try:
                    validator(amount)
                except Exception:  # noqa: BLE001 - Django's ValidationError, said in the researcher's words
                    raise PilotError(f"the proposed {slug} reward ${amount} is outside $0.01-$100.00: check the pilot's times") from None
            setattr(campaign, f"reward_{slug}", amount)
        campaign.save(update_fields=[f"reward_{slug}" for slug in proposals])
    return proposals
