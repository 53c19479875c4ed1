"""Reads about campaigns: which a user may see, their progress, their workers, their leaderboard."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.db.models import Avg, Count, F, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Round
from django.utils import timezone

from annotation.models import Campaign, ContentUnit, Example, Predicate, PresenceJudgment, SummaryScore, System
from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from annotation.selectors.agreement import stored_verification_agreement
from annotation.selectors.hybrid import hybrid_scores, routing_progress
from annotation.selectors.pairs import pair_comparisons, pair_matrix
from annotation.selectors.quality import workers_figures
from annotation.selectors.scores import INTERVALS, NO_INTERVAL_YET, agreement, gold_figure, rank_systems
from hits.models import HIT, Assignment, BatchBlock, Qualification, TaskType, Worker
from hits.mturk.status import batch_status
from hits.qualifications import status_label


def campaigns_visible_to(user) -> QuerySet[Campaign]:
    """Campaigns a user may see: staff see all; researchers see those they own or that are shared with them."""
    if not user.is_authenticated:
        return Campaign.objects.none()
    queryset = Campaign.objects.all()
    if not user.is_staff:
        queryset = queryset.filter(Q(owner=user) | Q(shared_with=user)).distinct()
    return queryset


def campaign_overview(queryset: QuerySet[Campaign]) -> QuerySet[Campaign]:
    """Campaigns with their counts of examples and systems, in one query.

    Each count is its own subquery: joining both tables and counting distinct rows grouped by every campaign
    column took a quarter of a second on a campaign of 1,000 examples and 10 systems (every campaign page)."""
    def count(model):
        rows = model.objects.filter(campaign=OuterRef("pk")).order_by().values("campaign").annotate(c=Count("pk")).values("c")
        return Coalesce(Subquery(rows), Value(0))

    return queryset.annotate(n_examples=count(Example), n_systems=count(System)).select_related("owner")


def campaign_stages(campaign: Campaign) -> tuple[str, ...]:
    """The stages a campaign goes through: an "scu" campaign has its units already, so presence only."""
    return (PRESENCE,) if campaign.unit_type == Campaign.UnitType.SCU else (GENERATION, VERIFICATION, PRESENCE)


def campaign_progress(campaign: Campaign) -> dict:
    """Per-stage HIT and assignment counts, redo rounds, flagged predicates, workers and cost (a few queries)."""
    stages = {slug: None for slug in campaign_stages(campaign)}
    if campaign.batch_id:
        open_ = Q(state__in=HIT.UNFINISHED_STATES)  # a paused campaign's HITs still wait for work
        rows = (
            # A pilot's HITs are not the campaign's work (``annotation.services.pilot``: its page counts them).
            HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR).exclude(payload__has_key="pilot")
            .values("task_type__slug", "task_type__name")
            .annotate(
                total=Count("pk"),
                waiting=Count("pk", filter=open_ & Q(n_taken=0)),
                in_progress=Count("pk", filter=open_ & Q(n_taken__gt=0)),
                done=Count("pk", filter=Q(state=HIT.State.COMPLETED)),
                cancelled=Count("pk", filter=Q(state=HIT.State.CANCELLED)),
                slots=Sum("max_assignments"),
                submitted=Sum("n_submitted"),
                redo=Count("pk", filter=Q(payload__round__gt=1)),
            )
        )
        for row in rows:
            row["percent"] = round(100 * (row["submitted"] or 0) / row["slots"]) if row["slots"] else 0
            if row["task_type__slug"] in stages:
                stages[row["task_type__slug"]] = row
    assignments = Assignment.objects.filter(hit__batch_id=campaign.batch_id) if campaign.batch_id else Assignment.objects.none()
    cost = assignments.filter(state__in=Assignment.DONE_STATES).exclude(state=Assignment.State.REJECTED).aggregate(
        reward=Sum("hit__reward"), bonus=Sum("bonus")
    )
    recent = timezone.now() - timedelta(hours=1)
    predicates = Predicate.objects.filter(sentence__example__campaign=campaign)
    examples = Example.objects.filter(campaign=campaign)
    # Examples without a unit drop out of every system's mean: the page says how many.
    unit_states = [ContentUnit.State.KEPT] if campaign.unit_type == Campaign.UnitType.QA else list(ContentUnit.State.values)
    return {
        "n_examples": examples.count(),
        "examples_without_unit": examples.exclude(units__state__in=unit_states).count(),
        "examples_without_predicate": examples.exclude(predicates__isnull=False).exclude(units__isnull=False).count()
        if campaign.unit_type == Campaign.UnitType.QA else 0,
        "stages": stages,
        "n_predicates": predicates.count(),
        "settled": predicates.filter(settled=True).count(),
        "flagged": list(predicates.filter(flagged=True).select_related("sentence__example")[:200]),
        "workers_total": assignments.values("worker").distinct().count(),
        "workers_active": assignments.filter(accepted_at__gte=recent).values("worker").distinct().count(),
        "cost_so_far": (Decimal(cost["reward"] or 0) + Decimal(cost["bonus"] or 0)).quantize(Decimal("0.01")),
        "mturk": batch_status(campaign.batch) if campaign.batch_id and campaign.batch.on_mturk else None,
        "routing": routing_progress(campaign) if campaign.is_hybrid else None,
    }


TASK_SLUGS = (GENERATION, VERIFICATION, PRESENCE)


def campaign_worker(campaign: Campaign, external_id) -> Worker | None:
    """The worker called ``external_id`` if they took a HIT of the campaign, else None.

    A researcher's decisions about workers (exclude, include, block, revoke) are
    about this campaign's workers only; a name that exists elsewhere on the
    platform and one that does not exist at all get the same None, so these
    pages and endpoints do not tell who else is registered.
    """
    if not campaign.batch_id or not isinstance(external_id, str) or not external_id:
        return None
    return (
        Worker.objects.filter(external_id=external_id, assignments__hit__batch_id=campaign.batch_id).distinct().first()
    )


def campaign_workers(campaign: Campaign, worker_ids=None) -> list[dict]:
    """One row per worker who did HITs of the campaign: status per task type, HITs, time and figures.

    ``worker_ids``: only these workers, each with a row even before any work is done (the worker view)."""
    if not campaign.batch_id:
        return []
    done = Assignment.objects.filter(hit__batch_id=campaign.batch_id, state__in=Assignment.DONE_STATES)
    if worker_ids is not None:
        done = done.filter(worker_id__in=worker_ids)
    stats = {
        row["worker"]: row
        for row in done.values("worker").annotate(n=Count("pk"), seconds=Avg("work_seconds"))
    }
    if worker_ids is not None:
        stats = {w: stats.get(w, {"n": 0, "seconds": None}) for w in worker_ids}
    workers = Worker.objects.filter(pk__in=stats).order_by("external_id")
    task_types = {t.slug: t for t in TaskType.objects.filter(slug__in=TASK_SLUGS)}
    # This campaign's decisions only: another campaign's test, revocation or block is not shown (nor counted) here.
    quals = {
        (q.worker_id, q.task_type.slug): q
        for q in Qualification.objects.filter(worker__in=workers, batch_id=campaign.batch_id).select_related("task_type")
    }
    tested_slugs = set(
        HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.QUALIFICATION, state__in=HIT.UNFINISHED_STATES)
        .values_list("task_type__slug", flat=True)
        .distinct()
    )
    tested = {slug: slug in tested_slugs for slug in task_types}
    blocked_here = set(BatchBlock.objects.filter(batch_id=campaign.batch_id).values_list("worker_id", flat=True))
    excluded = set(
        PresenceJudgment.objects.filter(summary__system__campaign=campaign, excluded=True, worker_id__in=stats)
        .values_list("worker_id", flat=True)
        .distinct()
    )
    figures = workers_figures(campaign, [w.pk for w in workers])
    rows = []
    for worker in workers:
        status = {
            slug: status_label(
                worker, task_types[slug], campaign.batch, quals.get((worker.pk, slug)), tested=tested[slug],
                blocked_here=worker.pk in blocked_here, fetched=True,
            )
            for slug in TASK_SLUGS
            if slug in task_types
        }
        reasons = {slug: quals[(worker.pk, slug)].reason for slug in TASK_SLUGS if (worker.pk, slug) in quals}
        rows.append(
            {
                "worker": worker,
                "status": status,
                "reasons": reasons,
                "hits_done": stats[worker.pk]["n"],
                "seconds_per_hit": stats[worker.pk]["seconds"],
                "figures": figures[worker.pk],
                "excluded": worker.pk in excluded,
            }
        )
    return rows


CHART_WIDTH = 640  # pixels of the leaderboard's score axis, 0 to 1
DOTS_PER_PIXEL = 3  # summaries of one system drawn at one pixel (more are drawn as three)


def leaderboard(campaign: Campaign) -> dict:
    """Systems ranked with intervals, chart geometry, score distributions and agreement.

    The ranking (``ranked_by``) is by gold QAPyramid, or under budgeted presence by the hybrid scores (human
    labels where people judged, the judge's elsewhere): one figure per system over the same units.  A budgeted
    campaign's gold figures rest on human labels only, over different summaries per system; they come as
    ``human_only`` (by name, with the summaries and units each rests on), never as the ranking.
    """
    systems = list(System.objects.filter(campaign=campaign).select_related("score"))
    # Budgeted presence: the stored scores (recomputed after each routing pass and label change, not here).
    hybrid = hybrid_scores(campaign, with_summaries=True) if campaign.is_hybrid else None
    if hybrid is not None:
        dots = hybrid.pop("summary_scores", {})
        hybrid.pop("summaries", None)
        figures = {s.name: hybrid["systems"].get(s.name) or {"qapyramid": None, "ci95": [None, None]} for s in systems}
    else:
        # One value per chart pixel, with how many summaries score it (the database counts them: a campaign of
        # thousands of summaries gives at most a pixel row's worth of dots per system).
        distributions: dict[int, list[float]] = {}
        pixels = (
            SummaryScore.objects.filter(summary__system__campaign=campaign, qapyramid__isnull=False)
            .annotate(pixel=Round(F("qapyramid") * CHART_WIDTH)).values("summary__system_id", "pixel").annotate(n=Count("pk"))
            .order_by("summary__system_id", "pixel").values_list("summary__system_id", "pixel", "n")
        )
        for system_id, pixel, n in pixels:
            distributions.setdefault(system_id, []).extend([pixel / CHART_WIDTH] * min(n, DOTS_PER_PIXEL))
        dots = {s.name: distributions.get(s.pk, []) for s in systems}
        figures = {s.name: gold_figure(getattr(s, "score", None)) for s in systems}
    by_name = {s.name: s for s in systems}
    ranked = [by_name[name] for name in rank_systems(figures)]
    # Each row: the bar with its whiskers, and below it a lane of single summaries' dots (drawn under the
    # whiskers they could not be seen).
    width, row_height, left = CHART_WIDTH, 44, 220
    chart_rows = []
    for i, system in enumerate(ranked):
        figure = figures[system.name]
        q = figure["qapyramid"] if figure["qapyramid"] is not None else 0.0
        lo = figure["ci95"][0] if figure["ci95"][0] is not None else q
        hi = figure["ci95"][1] if figure["ci95"][1] is not None else q
        values = sorted(dots.get(system.name, []))
        chart_rows.append(
            {
                "system": system,
                "score": getattr(system, "score", None),
                "figure": figure,
                "y": i * row_height,
                "bar": q * width,
                "lo": left + lo * width,
                "hi": left + hi * width,
                # Equal scores stack a little (three levels, ``DOTS_PER_PIXEL``) rather than hide one another.
                "dots": [{"x": left + v * width, "y": 30 + 3 * (k % 3 - 1)} for k, v in enumerate(values)],
            }
        )
    human_only = None
    if hybrid is not None:
        human_only = [
            # The labelled pairs each system's human-only scores rest on, kept with its sums.
            {"system": s, "score": getattr(s, "score", None), "n_units": s.score.n_units if hasattr(s, "score") else 0}
            for s in sorted(systems, key=lambda s: s.name)
        ]
    ranking = [system.name for system in ranked]
    # Every pair of systems (Holm-adjusted verdicts), and the same as a compact matrix for the page.
    comparisons = pair_comparisons(campaign, ranking=ranking, hybrid=hybrid)
    return {
        "ranked_by": "hybrid" if hybrid is not None else "gold",
        "rows": chart_rows,
        "comparisons": comparisons,
        "pair_matrix": pair_matrix(comparisons, ranking),
        "chart": {"width": left + width + 24, "height": len(ranked) * row_height + 34, "left": left, "plot": width, "axis_y": len(ranked) * row_height + 4,
                  "ticks": [{"x": left + t / 10 * width, "label": f"{t / 10:.1f}"} for t in range(0, 11, 2)]},
        # The one stored figure (``N_BOOT`` draws, seeded from the judgments), as the API, the command and the export.
        "agreement": agreement(campaign),
        "intervals": INTERVALS,
        "no_interval_yet": NO_INTERVAL_YET,
        "verification": stored_verification_agreement(campaign),
        "hybrid": hybrid,
        "human_only": human_only,
    }
