"""Worker quality control for the QAPyramid protocol: acting on the ongoing cross-checks, and excluding a
worker's judgments from gold.

Ongoing cross-checks (recomputed by a Celery task as data arrives; the figures are
``annotation.selectors.quality``, qualification tests ``annotation.services.qualification_tests``):

- writers: share of their resolved QA pairs kept by both verifiers, above
  ``writer_valid_threshold`` (0.85), and questions per predicate on
  average at least ``writer_min_questions_per_predicate`` (2);
- verifiers: agreement with the other verifier on the same questions, above
  ``verifier_agreement_threshold`` (0.85);
- presence judges: accuracy on gold HITs mixed into their stream, above
  ``presence_accuracy_threshold`` (0.90); agreement with the majority is
  reported beside it.

Thresholds are strict (exactly 85% fails).  A check acts only after
``grace_period_items`` judged items; before that the worker is "pending".
A researcher's reinstatement holds until the worker has done another grace
period's worth of items.
"""

from __future__ import annotations

import math
from datetime import datetime

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotation.models import Campaign, PresenceJudgment
from annotation.selectors.quality import gold_released_many, worker_figures, workers_figures
from annotation.services.followups import schedule_cross_checks, schedule_score_update
from annotation.services.gold import refresh_gold
from annotation.services.pipeline import ensure_batch, finish_campaign_if_done
from hits import qualifications
from hits.models import HIT, Assignment, Batch, QualificationEvent, TaskType, Worker
from hits.services import add_places

# --- ongoing cross-checks --------------------------------------------------------------------


FAILING_CHECKS = {
    "generation": ("valid_share", "questions_per_predicate"),
    "verification": ("agreement",),
    "presence": ("gold_accuracy",),
}
CHECK_NAMES = {
    "valid_share": "share of QA pairs kept by verifiers",
    "questions_per_predicate": "questions per predicate",
    "agreement": "agreement with the other verifier",
    "gold_accuracy": "accuracy on gold items",
}


def apply_cross_checks(campaign: Campaign, worker: Worker, figures: dict | None = None, task_types: dict | None = None) -> list[str]:
    """Revoke the qualifications whose checks fail after the grace period; returns the task types revoked.

    The gold check reads the gold figure as released to the worker (``gold_released``): it changes, and so
    can revoke, only with a release (a regular HIT, never a gold one's submission, which runs no check: the
    checks run when HITs the worker judged are completed), and the reason the worker sees gives no gold
    counts (one gold HIT is never pinned down); the event keeps the exact figures for researchers.

    ``figures`` (the worker's ``worker_figures`` as shown) and ``task_types`` (by slug) may be passed in
    when many workers are checked at once (``apply_cross_checks_many``)."""
    if figures is None:
        figures = worker_figures(campaign, worker, as_shown=True)
    if task_types is None:
        task_types = {t.slug: t for t in TaskType.objects.filter(slug__in=FAILING_CHECKS)}
    revoked = []
    for slug, names in FAILING_CHECKS.items():
        task_type = task_types.get(slug)
        if task_type is None:
            continue
        failing = [n for n in names if figures[slug][n]["status"] == "failing"]
        if not failing:
            continue
        qualification = qualifications.qualification_for(worker, task_type, campaign.batch)
        if qualification is not None and qualification.state == qualification.State.REVOKED:
            continue
        n_items = figures[slug][names[0]]["n"]
        last_manual = QualificationEvent.objects.filter(
            worker=worker, task_type=task_type, batch_id=campaign.batch_id, automatic=False, action=QualificationEvent.Action.REINSTATE
        ).first()
        if last_manual is not None and n_items < last_manual.figures.get("n_items", 0) + campaign.grace_period_items:
            continue  # a researcher's reinstatement holds for another grace period
        parts, shown = [], []
        for name in failing:
            f = figures[slug][name]
            comparison = "at least" if name == "questions_per_predicate" else "above"
            parts.append(f"{CHECK_NAMES[name]} is {f['value']:.2f} (needs to be {comparison} {f['threshold']:.2f}, over {f['n']} items)")
            shown.append(_worker_wording(name, f) if name == "gold_accuracy" else parts[-1])
        qualifications.revoke(
            worker, task_type, campaign.batch, f"{campaign.name}: " + "; ".join(shown), automatic=True, figures={"n_items": n_items, **figures[slug]},
            record_reason=f"{campaign.name}: " + "; ".join(parts),
        )
        revoked.append(slug)
    return revoked


def _worker_wording(name: str, figure: dict) -> str:
    """A failing gold check as the worker reads it: the threshold and the release the figures date from, no
    counts (a count or an exact share would say how one gold HIT was answered)."""
    as_of = figure.get("as_of")
    when = f" (figures as of {datetime.fromisoformat(as_of):%d %b %Y %H:%M} UTC)" if as_of else ""
    return f"accuracy on check items is not above {figure['threshold'] * 100:g}%{when}"


def reinstate_worker(campaign: Campaign, worker: Worker, task_type: TaskType, reason: str, *, by=None) -> None:
    """A researcher's reinstatement (or acceptance of a reviewed test): the worker is qualified again in this
    campaign, and the decision holds until the checks have seen another grace period's worth of items
    (``apply_cross_checks``)."""
    check = FAILING_CHECKS[task_type.slug][0]
    n_items = worker_figures(campaign, worker)[task_type.slug][check]["n"]
    qualifications.reinstate(worker, task_type, ensure_batch(campaign), reason, by=by, figures={"n_items": n_items})


def apply_cross_checks_many(campaign: Campaign, workers) -> dict[int, list[str]]:
    """``apply_cross_checks`` for many workers, their figures computed together (grouped queries)."""
    workers = list(workers)
    ids = [w.pk for w in workers]
    figures = workers_figures(campaign, ids, gold_until=gold_released_many(campaign, ids))
    task_types = {t.slug: t for t in TaskType.objects.filter(slug__in=FAILING_CHECKS)}
    return {w.pk: apply_cross_checks(campaign, w, figures[w.pk], task_types) for w in workers}


# --- exclusion and replacement ---------------------------------------------------------------


def reopen_places(campaign: Campaign, hit: HIT, extra: int, *, replacement: bool = True) -> HIT:
    """Open ``extra`` places of ``hit`` for work that no longer counts (``hits.services.add_places``: on MTurk
    within the budget cap, ``PlacesRefused`` beyond it); a finished campaign runs again until they are done."""
    target = add_places(hit, extra, replacement=replacement)
    if campaign.state == Campaign.State.FINISHED:
        Campaign.objects.filter(pk=campaign.pk).update(state=Campaign.State.RUNNING)
        Batch.objects.filter(pk=campaign.batch_id).update(state=Batch.State.ACTIVE)
        campaign.state = Campaign.State.RUNNING
    return target


@transaction.atomic
def exclude_worker(campaign: Campaign, worker: Worker, *, by=None, replace: bool = True) -> dict:
    """Leave a worker's presence judgments out of gold aggregation, optionally re-opening their places.

    Returns {"judgments": n excluded, "hits_reopened": n}.
    """
    judgments = PresenceJudgment.objects.filter(worker=worker, summary__system__campaign=campaign, excluded=False)
    pairs = set(judgments.values_list("unit_id", "summary_id"))
    per_hit = dict(
        judgments.exclude(assignment=None).values("assignment__hit_id").annotate(n=Count("assignment_id", distinct=True)).values_list("assignment__hit_id", "n")
    )
    n = judgments.update(excluded=True)
    reopened = 0
    if replace and per_hit:
        for hit in HIT.objects.filter(pk__in=per_hit).order_by("pk"):
            # On MTurk the places are published too (more assignments, or a new HIT), within the budget cap;
            # a refusal undoes the whole exclusion (this transaction).
            reopen_places(campaign, hit, per_hit[hit.pk])
            reopened += 1
    refresh_gold(campaign, pairs)
    schedule_score_update(campaign, [s for _, s in pairs])
    QualificationEvent.objects.create(
        worker=worker, action=QualificationEvent.Action.EXCLUDE, reason=f"{campaign.name}: {n} judgments excluded from gold; {reopened} HITs re-opened",
        decided_by=by, figures={"campaign": campaign.slug, "judgments": n, "hits_reopened": reopened},
    )
    return {"judgments": n, "hits_reopened": reopened}


@transaction.atomic
def include_worker(campaign: Campaign, worker: Worker, *, by=None) -> dict:
    """Undo an exclusion: the judgments count again; replacement places not yet taken are withdrawn."""
    # Work rejected with its data excluded stays excluded: the rejection, not the worker's exclusion, put it aside
    # (its reopened place stays open), and only ``reinclude_assignment`` undoes it.
    judgments = PresenceJudgment.objects.filter(worker=worker, summary__system__campaign=campaign, excluded=True).exclude(
        assignment__state=Assignment.State.REJECTED)
    pairs = set(judgments.values_list("unit_id", "summary_id"))
    hit_ids = set(judgments.exclude(assignment=None).values_list("assignment__hit_id", flat=True))
    n = judgments.update(excluded=False)
    withdraw_replacements(hit_ids)
    refresh_gold(campaign, pairs)
    schedule_score_update(campaign, [s for _, s in pairs])
    QualificationEvent.objects.create(
        worker=worker, action=QualificationEvent.Action.INCLUDE, reason=f"{campaign.name}: {n} judgments count again", decided_by=by,
        figures={"campaign": campaign.slug, "judgments": n},
    )
    finish_campaign_if_done(Campaign.objects.get(pk=campaign.pk))
    return {"judgments": n}


def withdraw_replacements(hit_ids, *, at_most: int | None = None) -> int:
    """Withdraw the replacement places of ``hit_ids`` that nobody has taken (``at_most`` per HIT; all by default):
    the places an exclusion reopened, once the judgments they replaced count again.  Inside the caller's
    transaction; returns the places withdrawn."""
    hit_ids = set(hit_ids)
    left = {pk: at_most if at_most is not None else math.inf for pk in hit_ids}
    withdrawn = 0
    for hit in HIT.objects.select_for_update().filter(pk__in=hit_ids, state__in=HIT.UNFINISHED_STATES).order_by("pk"):
        spare = min(hit.payload.get("replacements", 0), hit.max_assignments - hit.n_taken, left[hit.pk])
        if spare > 0:
            withdrawn += spare
            left[hit.pk] -= spare
            hit.max_assignments -= spare
            hit.payload = {**hit.payload, "replacements": hit.payload.get("replacements", 0) - spare}
            if hit.n_submitted >= hit.max_assignments:
                hit.state = HIT.State.COMPLETED
                hit.completed_at = timezone.now()
            hit.save(update_fields=["max_assignments", "payload", "state", "completed_at"])
    # Replacement places that went to a HIT of their own (on MTurk, when the first could not grow).
    for hit in HIT.objects.select_for_update().filter(payload__replaces__in=list(hit_ids), state__in=HIT.UNFINISHED_STATES).order_by("pk"):
        root = hit.payload["replaces"]
        spare = min(hit.max_assignments - hit.n_taken, left[root])
        if spare <= 0:
            continue
        withdrawn += spare
        left[root] -= spare
        if hit.n_taken == 0 and spare == hit.max_assignments:
            hit.state = HIT.State.CANCELLED
        else:
            hit.max_assignments -= spare
            if hit.n_submitted >= hit.max_assignments:
                hit.state, hit.completed_at = HIT.State.COMPLETED, timezone.now()
        hit.save(update_fields=["max_assignments", "state", "completed_at"])
    return int(withdrawn)
