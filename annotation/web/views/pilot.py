"""Issue 40's researcher pages: a task type's HIT as a worker sees it (before and after launch), and the pilot.

Both services are ``annotation.services.pilot``; these views only read the request and show the outcome."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.services import pilot
from annotation.web.views.setup import managed_campaign
from hits.handlers import task_handler
from hits.wording import as_sentence


@login_required
def campaign_preview_as_worker(request, slug, task):
    """The HIT page a worker gets for this task type, with the campaign's data and instructions.  Nothing can be
    submitted: the button is disabled, and a POST (forced past it) is answered 405 with nothing recorded."""
    campaign = managed_campaign(request, slug)
    if task not in pilot.campaign_stages_of(campaign):
        raise Http404("No such task type in this campaign")
    hit = pilot.worker_view_hit(campaign, task)
    handler = task_handler(task)
    context = {
        "campaign": campaign, "hit": hit, "worker_view": True, "assignment": None, "errors": {},
        "instructions_collapsed": False, "task_template": handler.template_name,
        "refused_post": request.method == "POST",
    }
    if hit is not None:
        context["task"] = handler.page_context(hit, None, None)
    else:
        context["missing"] = _missing(campaign, task)
    status = 405 if request.method == "POST" else 200
    response = render(request, "hits/assignment.html" if hit is not None else "annotation/campaign_preview_as_worker_missing.html",
                      context, status=status)
    if status == 405:
        response["Allow"] = "GET"
    return response


def _missing(campaign, task) -> str:
    if task == "generation":
        return "The campaign has no predicates yet: add some, or re-run predicate detection."
    return ("The campaign has no QA pairs yet: its verification and presence HITs show the pairs its writers write. "
            "A pilot shows them: each pilot writer's pairs open a pilot verification and presence HIT.")


@login_required
def campaign_pilot(request, slug):
    """The pilot's figures per task type (median time per HIT, the reward meeting the hourly floor), and its
    actions: start with N HITs per task type, stop, accept the proposed rewards."""
    campaign = managed_campaign(request, slug)
    rows = pilot.pilot_report(campaign)
    return render(request, "annotation/campaign_pilot.html", {
        "campaign": campaign, "rows": rows, "max_size": pilot.MAX_PILOT_SIZE,
        "proposals": [r for r in rows if r.proposed is not None],
        "stages": pilot.campaign_stages_of(campaign),
    })


@login_required
@require_POST
def campaign_pilot_action(request, slug):
    campaign = managed_campaign(request, slug)
    action = request.POST.get("action", "")
    try:
        if action == "start":
            created = pilot.start_pilot(campaign, request.POST.get("size"))
            messages.success(request, "Pilot started: " + ", ".join(f"{n} {slug} HITs" for slug, n in created.items()) + ".")
        elif action == "stop":
            for problem in pilot.stop_pilot(campaign):
                messages.error(request, as_sentence(f"Prolific did not follow: {problem}"))
            messages.success(request, "Pilot stopped: HITs nobody had taken were withdrawn; work in progress may still be submitted.")
        elif action == "accept":
            shown = {slug: request.POST.get(f"reward_{slug}", "") for slug in pilot.campaign_stages_of(campaign)}
            accepted = pilot.accept_rewards(campaign, shown)
            messages.success(request, "Rewards set: " + ", ".join(f"{slug} ${amount}" for slug, amount in accepted.items()) + ".")
        else:
            messages.error(request, f"Unknown action '{action}'.")
    except pilot.PilotError as exc:
        messages.error(request, as_sentence(exc) + " Nothing was changed.")
    return redirect("campaign-pilot", slug=slug)
