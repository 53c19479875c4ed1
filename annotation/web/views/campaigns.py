"""Researcher pages (thin: reads come from selectors, writes from services)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Prefetch
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from hits.wording import as_sentence
from annotation.models import Example, Predicate, ReferenceSentence
from annotation.selectors.campaigns import campaign_overview, campaign_progress as progress_of, campaign_worker, campaigns_visible_to
from annotation.services import pipeline


def home(request):
    if not request.user.is_authenticated:
        return render(request, "annotation/home.html", {"campaigns": None})
    campaigns = campaign_overview(campaigns_visible_to(request.user))
    if not request.user.is_staff and not campaigns.exists() and hasattr(request.user, "worker"):
        # Crowd workers land on their own page.
        return redirect("worker-home")
    from annotation.services.roles import is_researcher

    return render(request, "annotation/home.html", {"campaigns": campaigns, "can_create": is_researcher(request.user)})


def _visible_campaign(request, slug):
    return get_object_or_404(campaign_overview(campaigns_visible_to(request.user)), slug=slug)


@login_required
def campaign_progress(request, slug):
    from annotation.services.duplicates import held_examples

    from annotation.selectors.gold_pool import measured_gold_pool
    from annotation.selectors.spending import campaign_spending

    campaign = _visible_campaign(request, slug)
    progress = progress_of(campaign)
    return render(
        request, "annotation/campaign_progress.html",
        {"campaign": campaign, "progress": progress, "estimate": _estimate(campaign, progress),
         "n_held": len(held_examples(campaign)), "spending": campaign_spending(campaign),
         "gold_pool": measured_gold_pool(campaign)},
    )


#: The share of predicates the settings page's cost preview assumes go round again.
ASSUMED_REDO_SHARE = 0.10


def _estimate(campaign, progress) -> dict | None:
    """The cost estimate beside the cost so far: at the preview's assumed redo share, and again at the redo
    share observed so far (redo generation HITs per predicate that has finished its rounds)."""
    from annotation.services.costs import campaign_cost_preview

    if campaign.unit_type != "qa":
        # An "scu" campaign has presence only (no generation to redo): the estimate with its gold checks.
        preview = campaign_cost_preview(campaign, redo_share=0.0)
        gold = preview.gold
        return {"assumed": preview.total, "gold": gold, "redo": False, **_screening(preview)} if preview.total else None
    if not progress["n_predicates"]:
        return None
    generation = progress["stages"].get("generation") or {}
    redo, settled = generation.get("redo") or 0, progress["settled"]
    preview = campaign_cost_preview(campaign, redo_share=ASSUMED_REDO_SHARE)
    assumed = preview.total
    # Gold checks are in the estimate: the page says how many, and at how many judges each.
    gold = preview.gold
    if not settled and not redo:
        return {"assumed_share": ASSUMED_REDO_SHARE, "assumed": assumed, "observed_share": None, "updated": None,
                "gold": gold, "redo": True, **_screening(preview)}
    observed = min(float(campaign.max_redo_rounds), redo / max(settled, 1))
    return {
        "assumed_share": ASSUMED_REDO_SHARE, "assumed": assumed, "observed_share": observed,
        "updated": campaign_cost_preview(campaign, redo_share=observed).total, "gold": gold, "redo": True,
        **_screening(preview),
    }


def _screening(preview) -> dict:
    """On Prolific: the screening studies the estimate includes, and the test takers per main-study place it assumes."""
    if not preview.screening:
        return {}
    total = sum((s.total for s in preview.stages if s.task_type.startswith("screening")), 0)
    return {"screening": preview.screening, "screening_total": total,
            "test_takers_per_main_place": preview.test_takers_per_main_place}


CONTROLS = {
    "launch": (pipeline.launch_campaign, "Campaign launched: {n} HITs created."),
    "pause": (pipeline.pause_campaign, "Campaign paused: no new HITs are handed out."),
    "resume": (pipeline.resume_campaign, "Campaign resumed."),
    "cancel": (pipeline.cancel_campaign, "Campaign cancelled: open HITs were withdrawn; submitted work is kept."),
}


@login_required
@require_POST
def campaign_control(request, slug):
    campaign = _visible_campaign(request, slug)
    action = request.POST.get("action", "")
    if action not in CONTROLS:
        messages.error(request, f"Unknown action '{action}'.")
        return redirect("campaign-progress", slug=slug)
    service, message = CONTROLS[action]
    try:
        result = service(campaign)
    except pipeline.LaunchError as exc:
        messages.error(request, as_sentence(exc))
    else:
        messages.success(request, message.format(n=result))
        # Pause, resume and cancel return what the crowd market refused (Prolific's study transitions).
        for problem in result if isinstance(result, list) else []:
            messages.error(request, as_sentence(f"Prolific did not follow: {problem}"))
    return redirect("campaign-progress", slug=slug)


@login_required
def campaign_detail(request, slug):
    campaign = _visible_campaign(request, slug)
    examples = (
        Example.objects.filter(campaign=campaign)
        .annotate(n_summaries=Count("summaries"))
        .prefetch_related(
            Prefetch(
                "sentences",
                queryset=ReferenceSentence.objects.prefetch_related(
                    Prefetch("predicates", queryset=Predicate.objects.order_by("start"))
                ),
            )
        )
        .order_by("position")[:50]
    )
    n_predicates = Predicate.objects.filter(sentence__example__campaign=campaign).count()
    systems = campaign.systems.annotate(n_summaries=Count("summaries"))
    return render(
        request,
        "annotation/campaign_detail.html",
        {"campaign": campaign, "examples": examples, "n_predicates": n_predicates, "systems": systems},
    )


@login_required
def worker_quality(request):
    """A worker's own standing: status per task type, figures against thresholds, and reasons."""
    from django.db.models import Q

    from hits.models import Assignment, BatchBlock, Qualification, TaskType
    from hits.qualifications import can_attempt, status_label, tested_batches
    from hits.services import worker_for_user

    from annotation.models import Campaign
    from annotation.selectors.quality import worker_figures

    worker = worker_for_user(request.user)
    task_types = list(TaskType.objects.all())
    tested = {t.pk: tested_batches(t, active_only=False) for t in task_types}
    worked = set(Assignment.objects.filter(worker=worker).values_list("hit__batch_id", flat=True))
    open_tests = {b for batches in tested.values() for b in batches}
    quals = {(q.batch_id, q.task_type_id): q for q in Qualification.objects.filter(worker=worker)}
    blocks = {b.batch_id: b.reason for b in BatchBlock.objects.filter(worker=worker)}
    campaigns = []
    # Every campaign the worker worked on, and every running one whose tests they could take.
    shown = Campaign.objects.filter(batch_id__in=worked | open_tests).filter(
        Q(batch_id__in=worked) | Q(state=Campaign.State.RUNNING)
    ).select_related("batch").order_by("name")
    for campaign in shown:
        rows = []
        for task_type in task_types:
            qualification = quals.get((campaign.batch_id, task_type.pk))
            allowed, why_not = can_attempt(qualification, campaign.batch)
            status = status_label(
                worker, task_type, campaign.batch, qualification, tested=campaign.batch_id in tested[task_type.pk],
                blocked_here=campaign.batch_id in blocks, fetched=True,
            )
            rows.append(
                {
                    "task_type": task_type,
                    "status": status,
                    "qualification": qualification,
                    "retry": why_not if qualification and qualification.state == Qualification.State.FAILED else "",
                }
            )
        # Gold figures as released to the worker (in batches, never moved by one gold HIT).
        figures = worker_figures(campaign, worker, as_shown=True) if campaign.batch_id in worked else None
        campaigns.append(
            {"campaign": campaign, "rows": rows, "figures": figures, "blocked": campaign.batch_id in blocks, "block_reason": blocks.get(campaign.batch_id, "")}
        )
    from django.conf import settings

    return render(
        request, "annotation/worker_quality.html", {"worker": worker, "campaigns": campaigns, "release_every": settings.GOLD_FEEDBACK_EVERY}
    )


@login_required
def campaign_workers_page(request, slug):
    from annotation.selectors.campaigns import campaign_workers

    campaign = _visible_campaign(request, slug)
    rows = campaign_workers(campaign)
    status_filter = request.GET.get("status", "")
    if status_filter:
        rows = [r for r in rows if status_filter in r["status"].values()]
    sort = request.GET.get("sort", "worker")
    keys = {
        "worker": lambda r: r["worker"].external_id,
        "hits": lambda r: -r["hits_done"],
        "seconds": lambda r: r["seconds_per_hit"] or 0,
        "kept": lambda r: r["figures"]["generation"]["valid_share"]["value"] or 0,
        "agreement": lambda r: r["figures"]["verification"]["agreement"]["value"] or 0,
        "gold": lambda r: r["figures"]["presence"]["gold_accuracy"]["value"] or 0,
    }
    rows.sort(key=keys.get(sort, keys["worker"]))
    return render(
        request,
        "annotation/campaign_workers.html",
        {"campaign": campaign, "rows": rows, "sort": sort, "status_filter": status_filter},
    )


WORKER_ACTIONS = ("reinstate", "revoke", "block", "unblock", "exclude", "include", "accept_test", "reject_test")


@login_required
@require_POST
def campaign_worker_action(request, slug):
    """Researcher decisions about a worker; each is logged with who made it."""
    from hits import qualifications
    from hits.models import TaskType

    from annotation.services import quality
    from hits.services import PlacesRefused

    campaign = _visible_campaign(request, slug)
    # Only workers who worked on this campaign, and only within it: another campaign's workers and decisions
    # are not this researcher's to change (platform-wide blocks are an admin's, in the Django admin).
    worker = campaign_worker(campaign, request.POST.get("worker", ""))
    if worker is None:
        raise Http404("No such worker in this campaign")
    batch = campaign.batch
    action = request.POST.get("action", "")
    task_type = TaskType.objects.filter(slug=request.POST.get("task_type", "")).first()
    reason = (request.POST.get("reason") or "").strip()[:400]
    who = request.user.get_username()
    if action not in WORKER_ACTIONS:
        messages.error(request, f"Unknown action '{action}'.")
    elif action in ("reinstate", "revoke", "accept_test", "reject_test") and task_type is None:
        messages.error(request, "Choose the task type this decision is about.")
    elif action == "reinstate" or action == "accept_test":
        quality.reinstate_worker(campaign, worker, task_type, reason or f"reinstated by {who}", by=request.user)
        messages.success(request, f"{worker} is qualified for {task_type.name} in this campaign again.")
    elif action == "revoke":
        qualifications.revoke(worker, task_type, batch, reason or f"revoked by {who}", by=request.user)
        messages.success(request, f"{worker} may no longer do {task_type.name} HITs of this campaign.")
    elif action == "reject_test":
        qualifications.fail_review(worker, task_type, batch, reason or f"test not accepted by {who}", by=request.user)
        messages.success(request, f"{worker}'s test was not accepted.")
    elif action in ("block", "unblock"):
        qualifications.set_batch_blocked(worker, batch, action == "block", reason or f"{action}ed by {who}", by=request.user)
        messages.success(request, f"{worker} is {'blocked from' if action == 'block' else 'allowed back into'} this campaign.")
    elif action == "exclude":
        try:
            result = quality.exclude_worker(campaign, worker, by=request.user, replace=request.POST.get("replace", "1") == "1")
        except PlacesRefused as exc:
            messages.error(request, f"Nothing was excluded: {exc}. Raise the budget cap, or exclude without replacements.")
        else:
            messages.success(request, f"{result['judgments']} judgments of {worker} excluded; {result['hits_reopened']} HITs re-opened for replacements.")
    elif action == "include":
        result = quality.include_worker(campaign, worker, by=request.user)
        messages.success(request, f"{result['judgments']} judgments of {worker} count again.")
    from annotation.web.views.review import safe_back

    # From the worker view: back to it (only this campaign's review and worker pages are followed).
    back = request.POST.get("next") or ""
    return redirect(back) if safe_back(back, slug) else redirect("campaign-workers", slug=slug)


@login_required
def campaign_leaderboard(request, slug):
    from annotation.selectors.campaigns import leaderboard
    from annotation.services.scores import ensure_summary_scores

    campaign = _visible_campaign(request, slug)
    # Stored figures only (every change that moves them refreshes them); computed here only for a campaign
    # nothing scored yet.
    ensure_summary_scores(campaign)
    board = leaderboard(campaign)
    return render(request, "annotation/leaderboard.html", {"campaign": campaign, "board": board, "notes": _agreement_notes(campaign, board)})


def _agreement_notes(campaign, board) -> list[str]:
    """The agreement panel's explanation when alpha is low beside high raw agreement (skewed labels)."""
    from django.db.models import Count, Q

    from annotation.models import PresenceJudgment
    from annotation.web.views.agreement import skew_note

    counts = PresenceJudgment.objects.filter(summary__system__campaign=campaign, excluded=False).aggregate(
        n=Count("pk"), present=Count("pk", filter=Q(present=True))
    )
    presence = {
        "alpha": board["agreement"]["pooled"], "percent": board["agreement"]["percent_agreement"],
        "positive_share": counts["present"] / counts["n"] if counts["n"] else None,
    }
    return [line for line in (skew_note(presence, "Presence", "present"), skew_note(board["verification"], "Verification", "valid")) if line]


#: Rows of the scores-per-summary page (a campaign of 500 examples x 10 systems has 5,000 summaries).
SUMMARIES_PER_PAGE = 200


@login_required
def campaign_leaderboard_summaries(request, slug):
    """Every system summary's figures, as ``campaign_scores --per-summary`` prints them (optionally one system)."""
    from annotation.models import System
    from annotation.selectors.scores import summary_score_entry, summary_score_rows
    from annotation.services.scores import ensure_summary_scores
    from annotation.web.views.setup import paginate

    campaign = _visible_campaign(request, slug)
    ensure_summary_scores(campaign)
    systems = list(System.objects.filter(campaign=campaign).order_by("name").values_list("name", flat=True))
    chosen = request.GET.get("system") or None
    if chosen not in systems:
        chosen = None
    listing = paginate(request, summary_score_rows(campaign, system=chosen), SUMMARIES_PER_PAGE)
    rows = [summary_score_entry(row) for row in listing["items"]]
    hybrid = None
    if campaign.is_hybrid:
        from annotation.selectors.hybrid import hybrid_scores

        # Budgeted presence: each summary's stored hybrid score under the campaign's rule, beside the human-only one.
        hybrid = hybrid_scores(campaign, with_summaries=True)
        by_summary = {(r["example"], r["system"]): r for r in hybrid.get("summaries", [])}
        for row in rows:
            found = by_summary.get((row["example"], row["system"]))
            row["hybrid"] = found["score"] if found else None
            row["hybrid_human_units"] = found["human_units"] if found else None
    return render(
        request,
        "annotation/leaderboard_summaries.html",
        {
            "campaign": campaign, "rows": rows, "systems": systems, "chosen": chosen, "hybrid": hybrid,
            "page": listing["page"], "pages": listing["pages"], "count": listing["count"],
        },
    )


@login_required
def campaign_qualifications(request, slug):
    """Define the campaign's qualification tests and gold items: paste or upload the JSON definition."""
    from django.db.models import Count

    from hits.models import HIT

    from annotation.importing.safe_json import JSONProblem, load_json
    from annotation.services.qualification_tests import (
        QualificationDefinitionError,
        accept_sibling_qualifications,
        define_qualifications,
    )

    from annotation.web.qualification_forms import SECTION_TITLES
    from annotation.web.views.qualifications import test_items

    campaign = _visible_campaign(request, slug)
    text, error = "", ""
    if request.method == "POST" and request.POST.get("action") == "accept_siblings":
        accept = request.POST.get("accept_siblings") == "on"
        accept_sibling_qualifications(campaign, accept)
        messages.success(
            request,
            "Workers qualified in your other campaigns of this kind skip this campaign's tests."
            if accept
            else "Every worker takes this campaign's own tests.",
        )
        return redirect("campaign-qualifications", slug=slug)
    if request.method == "POST":
        upload = request.FILES.get("file")
        if upload is not None:
            raw = upload.read(2 * 1024 * 1024 + 1)
            text = raw.decode("utf-8", errors="replace")
            if len(raw) > 2 * 1024 * 1024:
                error = "The file is larger than 2 MB."
        else:
            text = request.POST.get("definition", "")
        if not error:
            try:
                counts = define_qualifications(campaign, load_json(text, storable=False))
            except JSONProblem as exc:
                error = f"Not valid JSON: {exc.describe().removeprefix('bad JSON: ')}."
            except QualificationDefinitionError as exc:
                error = f"{as_sentence(exc)} Nothing was changed."
            else:
                messages.success(request, "Qualification tests saved: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ".")
                return redirect("campaign-qualifications", slug=slug)
    current = (
        HIT.objects.filter(batch_id=campaign.batch_id, kind__in=[HIT.Kind.QUALIFICATION, HIT.Kind.GOLD])
        .exclude(state=HIT.State.CANCELLED)
        .values("task_type__slug", "kind")
        .annotate(n=Count("pk"))
        .order_by("task_type__slug", "kind")
        if campaign.batch_id
        else []
    )
    return render(
        request,
        "annotation/campaign_qualifications.html",
        {
            "campaign": campaign, "current": current, "text": text, "error": error,
            "accepts_siblings": bool(campaign.batch_id and campaign.batch.accepts_group_qualifications),
            "items": test_items(campaign), "section_titles": SECTION_TITLES,
        },
        status=400 if error else 200,
    )
