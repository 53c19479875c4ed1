"""The three-stage QAPyramid pipeline, driven by submitted assignments.

1. Launch: one generation HIT per predicate (one writer).  An "scu"
   campaign has its units already and goes straight to presence.
2. A generation submission creates the writer's QA pairs and one
   verification HIT for them (two verifiers; never the writer).
3. When both verifiers have answered, a QA pair is kept if both marked it
   valid.  A predicate with fewer kept pairs than the campaign's minimum (2)
   goes back to generation for another writer, who sees the pairs already
   kept and adds new ones; after ``max_redo_rounds`` extra rounds it is
   flagged for the researcher instead.  Kept pairs of earlier rounds stay
   kept.
4. Once every predicate of an example is settled (enough kept pairs, or
   flagged), the example gets one presence HIT per (system summary,
   predicate with kept pairs), each for three judges (under the adaptive
   rule, two, and a third where they disagree: ``presence_judges``).
5. Presence answers become per-worker ``PresenceJudgment`` rows; when a
   presence HIT is complete, the gold labels of its units are refreshed.

Every step runs inside the transaction of the submission that caused it.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from annotation.models import (
    Campaign,
    ContentUnit,
    Example,
    GoldPresence,
    Predicate,
    PresenceJudgment,
    SystemSummary,
    Verification,
)
from annotation.models.stages import GENERATION, PRESENCE, SCU_UNITS_PER_HIT, TASK_TYPES, VERIFICATION
from annotation.services import coalesce, hybrid, presence_judges
from annotation.services.followups import (
    schedule_judged_presence, schedule_completed_presence, schedule_cross_checks, schedule_score_update,
)
from annotation.services.gold import judgment_counts, refresh_gold, turn_share_into_gold
from annotation.text.duplicates import PairText, near_duplicates
from hits import sql
from hits.models import HIT, Assignment, Batch
from hits.mturk.publishing import publish_soon
from hits.services import set_batch_state
from annotation.services.task_types import task_type  # noqa: F401 - the pipeline's callers import it from here

log = logging.getLogger(__name__)

def campaign_batch_reference(campaign: Campaign) -> str:
    return f"campaign:{campaign.pk}"


class LaunchError(Exception):
    """The campaign cannot be launched as it is."""


def check_mturk_times(campaign: Campaign) -> None:
    """An MTurk campaign launches only with times MTurk accepts, and an automatic approval the sync can beat."""
    from django.conf import settings

    from hits.mturk import limits
    from hits.mturk.publishing import auto_approval_too_soon

    if campaign.backend in (Campaign.Backend.LOCAL, Campaign.Backend.PROLIFIC):
        return
    for bound, value in (
        (limits.ASSIGNMENT_DURATION, campaign.mturk_assignment_duration),
        (limits.LIFETIME, campaign.mturk_hit_lifetime if campaign.mturk_hit_lifetime is not None else settings.MTURK_HIT_LIFETIME),
        (limits.AUTO_APPROVAL_DELAY, campaign.mturk_auto_approval_delay),
    ):
        if limits.out_of_bounds(bound, value):
            raise LaunchError(limits.out_of_bounds(bound, value))
    delay = campaign.mturk_auto_approval_delay
    reason = auto_approval_too_soon(settings.MTURK_AUTO_APPROVAL_DELAY if delay is None else delay)
    if reason:
        raise LaunchError(reason)


def copy_mturk_times(campaign: Campaign, batch: Batch) -> None:
    """The campaign's MTurk times, as its HITs will be created with them (``hits.mturk.publishing``)."""
    batch.mturk_assignment_duration = campaign.mturk_assignment_duration
    batch.mturk_hit_lifetime = campaign.mturk_hit_lifetime
    batch.mturk_auto_approval_delay = campaign.mturk_auto_approval_delay
    # Prolific's session length and fee (``hits.prolific``, which never reads the campaign).
    batch.prolific_hits_per_submission = campaign.prolific_hits_per_submission
    batch.prolific_fee_rate = campaign.prolific_fee_rate
    batch.save(update_fields=["mturk_assignment_duration", "mturk_hit_lifetime", "mturk_auto_approval_delay",
                              "prolific_hits_per_submission", "prolific_fee_rate"])


@transaction.atomic
def launch_campaign(campaign: Campaign) -> int:
    """Create the first HITs of a draft campaign and start it; returns the number of HITs created."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.state != Campaign.State.DRAFT:
        raise LaunchError(f"campaign '{campaign.slug}' is {campaign.get_state_display().lower()}, not a draft")
    if not campaign.systems.exists():
        raise LaunchError("the campaign has no system summaries to judge")
    open_batch(campaign)
    # The launch ends a pilot: its HITs still unfinished are withdrawn (``annotation.services.pilot``).
    if campaign.pilot_started_at is not None:
        HIT.objects.filter(batch_id=campaign.batch_id, payload__has_key="pilot", state__in=HIT.UNFINISHED_STATES).update(
            state=HIT.State.CANCELLED
        )
        campaign.pilot_ended_at = campaign.pilot_ended_at or timezone.now()
    campaign.state = Campaign.State.RUNNING
    campaign.launched_at = timezone.now()
    campaign.save(update_fields=["state", "launched_at", "pilot_ended_at"])
    if campaign.unit_type == Campaign.UnitType.SCU:
        created = _create_scu_presence_hits(campaign)
    else:
        all_predicates = Predicate.objects.filter(sentence__example__campaign=campaign)
        if not all_predicates.exists():
            raise LaunchError("the campaign has no predicates: add some or re-run predicate detection")
        # A predicate settled before launch carries the researcher's hand-written pairs: no writer for it.
        predicates = list(all_predicates.filter(settled=False).order_by("pk"))
        created = len(_create_generation_hits(campaign, predicates, round_number=1))
        # Examples without any predicate have nothing to write about.
        Example.objects.filter(campaign=campaign).exclude(sentences__predicates__isnull=False).update(
            presence_started=True
        )
        for example_id in (
            Example.objects.filter(campaign=campaign, presence_started=False)
            .exclude(sentences__predicates__settled=False)
            .values_list("pk", flat=True)
        ):
            created += start_presence_if_settled(campaign, example_id, route=False)
        if campaign.is_hybrid:
            hybrid.request_routing(campaign)  # one pass for every example settled at launch, not one each
    return created


def open_batch(campaign: Campaign) -> Batch:
    """Check that the campaign may be offered on its market as it is, and open its batch there: the launch, and
    a pilot before it (``annotation.services.pilot``).  Raises ``LaunchError``."""
    check_mturk_times(campaign)
    if campaign.backend == Campaign.Backend.PROLIFIC:
        from annotation.services.prolific import check_campaign_hourly
        from hits.prolific.pricing import HourlyRateTooLow

        try:
            check_campaign_hourly(campaign)
        except HourlyRateTooLow as exc:
            raise LaunchError(f"Prolific refuses pay under its minimum: {exc}") from None
    batch = ensure_batch(campaign)
    Batch.objects.filter(pk=batch.pk).update(gold_share=campaign.gold_share, backend=campaign.backend)
    batch.backend = campaign.backend
    # Active, and the HITs set aside when a pilot ended open again.
    set_batch_state(batch, Batch.State.ACTIVE)
    copy_mturk_times(campaign, batch)
    # On MTurk, the HITs are published after the commit (later ones after each submission: hits.services).
    publish_soon(batch)
    return batch


def qualification_group(campaign: Campaign) -> str:
    """The family of campaigns whose qualifications a campaign may accept: one owner's campaigns of one unit type."""
    return f"owner-{campaign.owner_id}/{campaign.unit_type}" if campaign.owner_id else ""


def ensure_batch(campaign: Campaign) -> Batch:
    """The campaign's batch of HITs (created before launch when qualification tests are defined)."""
    for slug in TASK_TYPES:
        task_type(slug)
    if campaign.batch_id is None:
        # Before launch nothing of the campaign is handed out (its test items and gold items wait too).
        state = Batch.State.PAUSED if campaign.state == Campaign.State.DRAFT else Batch.State.ACTIVE
        batch = Batch.objects.create(
            name=campaign.name[:200], reference=campaign_batch_reference(campaign), state=state,
            qualification_group=qualification_group(campaign),
        )
        Campaign.objects.filter(pk=campaign.pk).update(batch=batch)
        campaign.batch = batch
    return campaign.batch


def _create_generation_hits(campaign: Campaign, predicates: list[Predicate], round_number: int) -> list[HIT]:
    gen = task_type(GENERATION)
    hits = HIT.objects.bulk_create(
        [
            HIT(
                batch=campaign.batch,
                task_type=gen,
                payload={"predicate": p.pk, "round": round_number},
                max_assignments=campaign.assignments_generation,
                reward=campaign.reward_generation,
                # Redo rounds go first so that examples reach presence sooner.
                priority=-round_number,
            )
            for p in predicates
        ]
    )
    Predicate.objects.filter(pk__in=[p.pk for p in predicates]).update(rounds=round_number)
    return hits


def post_presence_rows(campaign: Campaign, rows: list[HIT], *, route: bool = True) -> int:
    """Post presence HITs; in a budgeted campaign keep them as candidates for the judge's routing instead
    (``annotation.services.hybrid``; ``route=False``: the caller asks for the routing pass once, later).
    Returns the HITs posted."""
    if campaign.is_hybrid:
        hybrid.store_candidates(campaign, rows, route=route)
        return 0
    HIT.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


def _create_scu_presence_hits(campaign: Campaign) -> int:
    rows = scu_presence_hit_rows(campaign, SystemSummary.objects.filter(system__campaign=campaign))
    if not campaign.is_hybrid:
        turn_share_into_gold(campaign, rows)  # a budgeted campaign draws them from each round's routed HITs
    Example.objects.filter(campaign=campaign).update(presence_started=True)
    return post_presence_rows(campaign, rows)


def scu_presence_hit_rows(campaign: Campaign, summaries) -> list[HIT]:
    """Unsaved presence HITs of an "scu" campaign: each summary's units in groups of ``SCU_UNITS_PER_HIT``."""
    units_by_example: dict[int, list[int]] = {}
    for unit_id, example_id in (
        ContentUnit.objects.filter(example__campaign=campaign).order_by("example_id", "index").values_list("pk", "example_id")
    ):
        units_by_example.setdefault(example_id, []).append(unit_id)
    presence = task_type(PRESENCE)
    rows = []
    for summary_id, example_id in summaries.values_list("pk", "example_id"):
        units = units_by_example.get(example_id, [])
        for start in range(0, len(units), SCU_UNITS_PER_HIT):
            rows.append(
                HIT(
                    batch=campaign.batch,
                    task_type=presence,
                    payload={"summary": summary_id, "predicate": None, "units": units[start : start + SCU_UNITS_PER_HIT]},
                    max_assignments=campaign.initial_presence_assignments,
                    reward=campaign.reward_presence,
                )
            )
    return rows


def campaign_of_hit(hit: HIT) -> Campaign:
    return Campaign.objects.get(batch_id=hit.batch_id)


# --- generation -------------------------------------------------------------------------------


def record_generation(assignment) -> list[ContentUnit]:
    """Store a writer's QA pairs and open their verification HIT."""
    hit = assignment.hit
    campaign = campaign_of_hit(hit)
    predicate = Predicate.objects.select_related("sentence").get(pk=hit.payload["predicate"])
    # Indexes are numbered per example: serialise writers of the same example.
    example = Example.objects.select_for_update().get(pk=predicate.sentence.example_id)
    highest = ContentUnit.objects.filter(example=example).aggregate(m=Max("index"))["m"]
    next_index = 0 if highest is None else highest + 1
    units = []
    for offset, item in enumerate(assignment.answers["questions"]):
        answers = item["answers"]
        units.append(
            ContentUnit(
                example=example,
                predicate=predicate,
                kind=ContentUnit.Kind.QA,
                index=next_index + offset,
                question=item["question"],
                answers=answers,
                text=f"{item['question']} {' / '.join(answers)}",
                author=assignment.worker,
                round=hit.payload.get("round", 1),
            )
        )
    units = ContentUnit.objects.bulk_create(units)
    verification = HIT.objects.create(
        batch=hit.batch,
        task_type=task_type(VERIFICATION),
        payload={"predicate": predicate.pk, "units": [u.pk for u in units], "round": hit.payload.get("round", 1)},
        max_assignments=campaign.assignments_verification,
        reward=campaign.reward_verification,
        priority=hit.priority,
    )
    verification.exclusions.create(worker=assignment.worker)
    return units


# --- verification -----------------------------------------------------------------------------


def record_verification(assignment) -> None:
    """Store a verifier's verdicts; when the HIT is complete, decide which pairs are kept."""
    hit = assignment.hit
    Verification.objects.bulk_create(
        [
            Verification(
                unit_id=item["unit"],
                worker=assignment.worker,
                assignment=assignment,
                valid=item["valid"],
                answers=item.get("answers", []),
            )
            for item in assignment.answers["verdicts"]
        ]
    )
    if hit.state == HIT.State.COMPLETED:
        resolve_verification(hit)


def resolve_verification(hit: HIT) -> None:
    """Keep the pairs every verifier marked valid (verdicts that count: excluded ones do not); redo or settle the
    predicate."""
    campaign = campaign_of_hit(hit)
    unit_ids = hit.payload["units"]
    counting = Q(verifications__excluded=False)
    counts = (
        ContentUnit.objects.filter(pk__in=unit_ids)
        .annotate(n=Count("verifications", filter=counting),
                  n_valid=Count("verifications", filter=counting & Q(verifications__valid=True)))
        .values_list("pk", "n", "n_valid")
    )
    kept = [pk for pk, n, n_valid in counts if n > 0 and n_valid == n]
    ContentUnit.objects.filter(pk__in=kept).update(state=ContentUnit.State.KEPT)
    ContentUnit.objects.filter(pk__in=unit_ids).exclude(pk__in=kept).update(state=ContentUnit.State.REJECTED)
    schedule_cross_checks(
        campaign,
        set(ContentUnit.objects.filter(pk__in=unit_ids).exclude(author=None).values_list("author_id", flat=True))
        | set(hit.assignments.filter(state__in=Assignment.DONE_STATES).values_list("worker_id", flat=True)),
    )
    predicate = Predicate.objects.select_for_update().get(pk=hit.payload["predicate"])
    n_kept = ContentUnit.objects.filter(predicate=predicate, state=ContentUnit.State.KEPT).count()
    if n_kept >= campaign.min_kept_qas_per_predicate:
        predicate.settled = True
        predicate.save(update_fields=["settled"])
    elif predicate.rounds <= campaign.max_redo_rounds:
        _create_generation_hits(campaign, [predicate], round_number=predicate.rounds + 1)
        return
    else:
        predicate.settled = True
        predicate.flagged = True
        predicate.flag_reason = (
            f"only {n_kept} QA pair{'s' if n_kept != 1 else ''} kept after {predicate.rounds} rounds "
            f"(at least {campaign.min_kept_qas_per_predicate} wanted)"
        )
        predicate.save(update_fields=["settled", "flagged", "flag_reason"])
    start_presence_if_settled(campaign, predicate.sentence.example_id)


def start_presence_if_settled(campaign: Campaign, example_id: int, *, route: bool = True) -> int:
    """Create the example's presence HITs once all its predicates are settled (exactly once); ``route`` as for
    ``post_presence_rows``."""
    example = Example.objects.select_for_update().get(pk=example_id)
    if example.presence_started:
        return 0
    if Predicate.objects.filter(sentence__example=example, settled=False).exists():
        return 0
    if campaign.review_duplicates and not example.duplicates_reviewed and example_near_duplicates(example):
        return 0  # held for the researcher's duplicate review (annotation.services.duplicates releases it)
    example.presence_started = True
    example.save(update_fields=["presence_started"])
    summary_ids = SystemSummary.objects.filter(example=example).order_by("pk").values_list("pk", flat=True)
    return post_presence_rows(campaign, presence_hit_rows(campaign, example, summary_ids), route=route)


def example_near_duplicates(example: Example) -> list:
    """Near-duplicate kept QA pairs of the example (``annotation.text.duplicates``)."""
    rows = ContentUnit.objects.filter(example=example, state=ContentUnit.State.KEPT, kind=ContentUnit.Kind.QA).order_by("index")
    return near_duplicates(
        PairText(pk, predicate_id, question, tuple(answers or ())) for pk, predicate_id, question, answers in rows.values_list(
            "pk", "predicate_id", "question", "answers"
        )
    )


def presence_hit_rows(campaign: Campaign, example: Example, summary_ids) -> list[HIT]:
    """Unsaved presence HITs of an example's kept QA pairs, one per (summary, predicate), for these summaries.

    Also used to judge a system added after its examples' presence HITs exist.
    """
    units_by_predicate: dict[int, list[int]] = {}
    for unit_id, predicate_id in (
        ContentUnit.objects.filter(example=example, state=ContentUnit.State.KEPT)
        .order_by("predicate_id", "index")
        .values_list("pk", "predicate_id")
    ):
        units_by_predicate.setdefault(predicate_id, []).append(unit_id)
    presence = task_type(PRESENCE)
    return [
        HIT(
            batch=campaign.batch,
            task_type=presence,
            payload={"summary": summary_id, "predicate": predicate_id, "units": units},
            max_assignments=campaign.initial_presence_assignments,
            reward=campaign.reward_presence,
        )
        for summary_id in summary_ids
        for predicate_id, units in units_by_predicate.items()
    ]


# --- presence ---------------------------------------------------------------------------------


def record_presence(assignment) -> None:
    """Store a judge's labels; a completed HIT's follow-ups run after the commit (``after_presence_hits``)."""
    hit = assignment.hit
    summary_id = hit.payload["summary"]
    # Every presence submission runs this: one hand-written INSERT (hits.sql) for the judge's labels.
    sql.insert_many(
        [
            PresenceJudgment(
                unit_id=item["unit"],
                summary_id=summary_id,
                worker_id=assignment.worker_id,
                assignment=assignment,
                present=item["present"],
            )
            for item in assignment.answers["labels"]
        ]
    )
    if hit.state != HIT.State.COMPLETED:
        # The judgments move alpha, and the labels of a HIT reopened after its completion: they follow after the commit.
        schedule_judged_presence(hit.batch_id, [hit.pk])
        return
    if coalesce.enabled():
        # With a Redis broker, gold labels, scores, cross-checks and the campaign's end are the
        # follow-ups of the HIT, not of the worker's request: they run after the commit, gathered per
        # batch for a short window, so a submission costs the same whether or not it is a HIT's last
        # (the batch id is on the HIT: no campaign lookup in the request).
        schedule_completed_presence(hit.batch_id, [hit.pk])
    else:
        # Embedded default (eager Celery) or no coalescing: in the submission's own transaction,
        # with the HIT already loaded.
        _follow_up_completed(campaign_of_hit(hit), [hit])


def after_presence_hits(batch_id: int, hit_ids) -> int:
    """The follow-ups of completed presence HITs of one batch (idempotent): their units' gold labels,
    then the score update and cross-checks they call for, and the campaign's end when nothing is left.

    Returns the number of gold labels written.
    """
    campaign = Campaign.objects.filter(batch_id=batch_id).first()
    if campaign is None:  # the campaign was deleted meanwhile
        return 0
    hits = list(HIT.objects.filter(pk__in=list(hit_ids), batch_id=batch_id).only("pk", "payload"))
    return _follow_up_completed(campaign, hits) if hits else 0


def after_presence_judgments(batch_id: int, hit_ids) -> int:
    """The follow-up of judgments of presence HITs not completed yet (idempotent): a pair that already has the
    crowd's label (its HIT was completed, then reopened) takes the new judgments into it at once, with the scores;
    otherwise only the figures that read every judgment move (alpha, ``refresh_campaign_figures``).  Returns the
    number of gold labels written."""
    from annotation.services.scores import refresh_campaign_figures

    campaign = Campaign.objects.filter(batch_id=batch_id).first()
    if campaign is None:  # the campaign was deleted meanwhile
        return 0
    pairs = {(unit, h.payload["summary"]) for h in HIT.objects.filter(pk__in=list(hit_ids), batch_id=batch_id).only("payload")
             for unit in h.payload["units"]}
    labelled = set(GoldPresence.objects.filter(
        summary_id__in={s for _, s in pairs}, origin=GoldPresence.Origin.MAJORITY).values_list("unit_id", "summary_id")) & pairs
    with transaction.atomic():
        written = refresh_gold(campaign, labelled) if labelled else 0
        if labelled:
            schedule_score_update(campaign, {s for _, s in labelled})
        else:
            refresh_campaign_figures(campaign)
    return written


#: How many completed presence HITs one transaction of ``_follow_up_completed`` takes: a drain gathered over a
#: busy window commits in steps, so no lock it takes (gold labels, the batch's row for a third judge) is held
#: for the whole drain, and a redelivered drain redoes only what did not commit (every step is idempotent).
FOLLOW_UP_STEP = 500


def _follow_up_completed(campaign: Campaign, hits) -> int:
    """``after_presence_hits`` for HITs already loaded (their payloads name the units and the summary)."""
    hits = list(hits)
    written = 0
    for start in range(0, len(hits), FOLLOW_UP_STEP):
        step = hits[start : start + FOLLOW_UP_STEP]
        pairs = {(unit_id, h.payload["summary"]) for h in step for unit_id in h.payload["units"]}
        with transaction.atomic():
            counts = judgment_counts(pairs)
            written += refresh_gold(campaign, pairs, counts)
            # The adaptive rule: one more judge where the HIT's majority is not decided yet (before the round's
            # end and the campaign's end are looked for: the HIT is open again).
            presence_judges.add_judges_where_undecided(campaign, step, counts)
    with transaction.atomic():
        schedule_score_update(campaign, {h.payload["summary"] for h in hits})
        schedule_cross_checks(
            campaign,
            Assignment.objects.filter(hit_id__in=[h.pk for h in hits], state__in=Assignment.DONE_STATES)
            .values_list("worker_id", flat=True)
            .distinct(),
        )
        hybrid.after_routed_hits_completed(campaign)
        finish_campaign_if_done(campaign)
    return written


def finish_campaign_if_done(campaign: Campaign) -> bool:
    """Mark a running campaign finished when no HIT of it is open any more."""
    if campaign.state != Campaign.State.RUNNING:
        return False
    if HIT.objects.filter(batch_id=campaign.batch_id, state__in=HIT.UNFINISHED_STATES, kind=HIT.Kind.REGULAR).exists():
        return False
    if Example.objects.filter(campaign=campaign, presence_started=False).exists():
        return False
    if not hybrid.routing_finished(campaign):
        return False
    Campaign.objects.filter(pk=campaign.pk).update(state=Campaign.State.FINISHED)
    Batch.objects.filter(pk=campaign.batch_id).update(state=Batch.State.FINISHED)
    campaign.state = Campaign.State.FINISHED
    # On Prolific its studies stop, as for a cancel (after the commit: the market never holds the transaction).
    transaction.on_commit(lambda: _market_follows_finish(campaign))
    return True


def _market_follows_finish(campaign: Campaign) -> None:
    """``market_follows`` for a campaign that finished on its own: what the market refused is logged (nobody
    waits on a page for it) and the sync tries again."""
    try:
        errors = market_follows(campaign)
    except Exception:  # noqa: BLE001 - the campaign is finished here whatever the market says
        log.exception("Campaign %s finished: its market studies could not be stopped (the sync tries again)", campaign.slug)
        return
    for error in errors:
        log.warning("Campaign %s finished: %s (the sync tries again)", campaign.slug, error)


# --- campaign controls ------------------------------------------------------------------------


def pause_campaign(campaign: Campaign) -> list[str]:
    """Stop handing out HITs of the campaign; work in progress can still be submitted.  On Prolific its studies
    are paused too: returns what the market refused, one line per study (``market_follows``)."""
    with transaction.atomic():
        _switch(campaign, Campaign.State.RUNNING, Campaign.State.PAUSED, Batch.State.PAUSED)
    return market_follows(campaign)


def resume_campaign(campaign: Campaign) -> list[str]:
    """Hand out the campaign's HITs again (on Prolific, its paused studies start again)."""
    with transaction.atomic():
        _switch(campaign, Campaign.State.PAUSED, Campaign.State.RUNNING, Batch.State.ACTIVE)
    return market_follows(campaign)


def cancel_campaign(campaign: Campaign) -> list[str]:
    """Cancel for good: open HITs are cancelled; submitted work is kept (on Prolific, its studies are stopped)."""
    with transaction.atomic():
        _cancel(campaign)
    return market_follows(campaign)


def market_follows(campaign: Campaign) -> list[str]:
    """After the campaign's state changed (committed first, so the local pages never wait on the market): its
    Prolific studies follow (PAUSE / START / STOP).  A failure on one study never stops the others; the errors
    are returned for the researcher, and the sync tries again.  MTurk follows through its sync."""
    if not campaign.batch_id:
        return []
    batch = Batch.objects.get(pk=campaign.batch_id)
    if not batch.on_prolific:
        return []
    from hits.prolific.studies import follow_batch_state

    return follow_batch_state(batch)


def _cancel(campaign: Campaign) -> None:
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.state in (Campaign.State.CANCELLED, Campaign.State.FINISHED):
        raise LaunchError(f"campaign '{campaign.slug}' is already {campaign.get_state_display().lower()}")
    campaign.state = Campaign.State.CANCELLED
    campaign.save(update_fields=["state"])
    if campaign.batch_id:
        Batch.objects.filter(pk=campaign.batch_id).update(state=Batch.State.CANCELLED)
        HIT.objects.filter(batch_id=campaign.batch_id, state__in=HIT.UNFINISHED_STATES).update(state=HIT.State.CANCELLED)


def _switch(campaign: Campaign, expected: str, new: str, batch_state: str) -> None:
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if campaign.state != expected:
        raise LaunchError(
            f"campaign '{campaign.slug}' is {campaign.get_state_display().lower()}, not {Campaign.State(expected).label.lower()}"
        )
    campaign.state = new
    campaign.save(update_fields=["state"])
    if campaign.batch_id:
        set_batch_state(campaign.batch, batch_state)
