"""Researcher pages (thin: reads come from selectors, writes from services)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.models import Example, Predicate, ReferenceSentence
from annotation.selectors.campaigns import campaign_overview, campaign_progress as progress_of, campaigns_visible_to
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

    campaign = _visible_campaign(request, slug)
    return render(
        request,
        "annotation/campaign_progress.html",
        {"campaign": campaign, "progress": progress_of(campaign), "n_held": len(held_examples(campaign))},
    )


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
        messages.error(request, str(exc).capitalize() + ".")
    else:
        messages.success(request, message.format(n=result))
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
    from hits.models import HIT, Assignment, Qualification, TaskType
    from hits.qualifications import can_attempt, status_label
    from hits.services import worker_for_user

    from annotation.models import Campaign
    from annotation.selectors.quality import worker_figures

    worker = worker_for_user(request.user)
    rows = []
    for task_type in TaskType.objects.all():
        qualification = Qualification.objects.filter(worker=worker, task_type=task_type).first()
        allowed, why_not = can_attempt(qualification, task_type)
        rows.append(
            {
                "task_type": task_type,
                "status": status_label(worker, task_type, qualification),
                "qualification": qualification,
                "retry": why_not if qualification and qualification.state == Qualification.State.FAILED else "",
            }
        )
    batch_ids = Assignment.objects.filter(worker=worker, hit__kind=HIT.Kind.REGULAR).values("hit__batch_id")
    campaigns = [
        {"campaign": c, "figures": worker_figures(c, worker)} for c in Campaign.objects.filter(batch_id__in=batch_ids)
    ]
    return render(request, "annotation/worker_quality.html", {"worker": worker, "rows": rows, "campaigns": campaigns})


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
    from hits.models import TaskType, Worker

    from annotation.services import quality
    from hits.services import PlacesRefused

    campaign = _visible_campaign(request, slug)
    worker = get_object_or_404(Worker, external_id=request.POST.get("worker", ""))
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
        messages.success(request, f"{worker} is qualified for {task_type.name} again.")
    elif action == "revoke":
        qualifications.revoke(worker, task_type, reason or f"revoked by {who}", by=request.user)
        messages.success(request, f"{worker} may no longer do {task_type.name} HITs.")
    elif action == "reject_test":
        qualifications.fail_review(worker, task_type, reason or f"test not accepted by {who}", by=request.user)
        messages.success(request, f"{worker}'s test was not accepted.")
    elif action in ("block", "unblock"):
        qualifications.set_blocked(worker, action == "block", reason or f"{action}ed by {who}", by=request.user)
        messages.success(request, f"{worker} is {'blocked' if action == 'block' else 'unblocked'}.")
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
    return redirect("campaign-workers", slug=slug)


@login_required
def campaign_leaderboard(request, slug):
    from annotation.selectors.campaigns import leaderboard
    from annotation.services.scores import ensure_summary_scores, refresh_stale_intervals

    campaign = _visible_campaign(request, slug)
    if not ensure_summary_scores(campaign):
        refresh_stale_intervals(campaign)
    return render(request, "annotation/leaderboard.html", {"campaign": campaign, "board": leaderboard(campaign)})


@login_required
def campaign_leaderboard_summaries(request, slug):
    """Every system summary's figures, as ``campaign_scores --per-summary`` prints them (optionally one system)."""
    from annotation.models import System
    from annotation.selectors.scores import summary_scores
    from annotation.services.scores import ensure_summary_scores

    campaign = _visible_campaign(request, slug)
    ensure_summary_scores(campaign)
    systems = list(System.objects.filter(campaign=campaign).order_by("name").values_list("name", flat=True))
    chosen = request.GET.get("system") or None
    if chosen not in systems:
        chosen = None
    return render(
        request,
        "annotation/leaderboard_summaries.html",
        {"campaign": campaign, "rows": summary_scores(campaign, system=chosen), "systems": systems, "chosen": chosen},
    )


@login_required
def campaign_qualifications(request, slug):
    """Define the campaign's qualification tests and gold items: paste or upload the JSON definition."""
    import json

    from django.db.models import Count

    from hits.models import HIT

    from annotation.services.qualification_tests import QualificationDefinitionError, define_qualifications

    campaign = _visible_campaign(request, slug)
    text, error = "", ""
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
                counts = define_qualifications(campaign, json.loads(text))
            except json.JSONDecodeError as exc:
                error = f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
            except QualificationDefinitionError as exc:
                error = f"{str(exc)[:1].upper()}{str(exc)[1:]}. Nothing was changed."
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
        {"campaign": campaign, "current": current, "text": text, "error": error},
        status=400 if error else 200,
    )
