"""Messages to a campaign's workers (issue 40): send to one worker, the ticked ones or all, and the log of what was
sent, by whom, when, and what became of every copy (``hits.messaging``).

The form is ``templates/annotation/_message_form.html`` (on the workers page, and wherever a page lists workers);
it posts here.  A refused message (empty, too long, an unknown worker) comes back on the log page with what was
written, so nothing is lost.
"""

from __future__ import annotations

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from annotation.web.views.setup import managed_campaign
from hits import messaging
from hits.models import WorkerMessage


def _page(request, campaign, form=None, status=200):
    return render(
        request, "annotation/campaign_messages.html",
        {"campaign": campaign, "log": messaging.message_log(campaign.batch) if campaign.batch_id else [],
         "form": form or {}}, status=status,
    )


def _back(request, campaign) -> str:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return target
    return reverse("campaign-messages", args=[campaign.slug])


@login_required
def campaign_messages(request, slug):
    """GET: the log of the campaign's messages; POST: send one (``to``: "ticked", the ``workers`` named, or "all")."""
    campaign = managed_campaign(request, slug)
    if request.method != "POST":
        return _page(request, campaign)
    to = request.POST.get("to", "ticked")
    names = request.POST.getlist("workers")
    form = {"subject": request.POST.get("subject", ""), "body": request.POST.get("body", ""), "workers": names,
            "to": to, "next": request.POST.get("next", "")}
    try:
        if not campaign.batch_id:
            raise messaging.MessageRefused("the campaign has no workers yet")
        workers = messaging.batch_workers(campaign.batch, None if to == "all" else names)
        message = messaging.send_message(campaign.batch, request.user, form["subject"], form["body"], workers,
                                         key=request.POST.get("key") or None)
    except messaging.MessageRefused as exc:
        form["error"] = f"Nothing was sent: {exc}."
        return _page(request, campaign, form, status=400)
    if messaging.in_background(message):
        flash.success(request, f"Message \u201c{message.subject}\u201d: {message.recipients.count()} copies are being sent in the "
                      "background (more than a request can wait for); the log below shows what became of each, "
                      "reload it to follow.")
        return redirect(reverse("campaign-messages", args=[campaign.slug]) + f"#message-{message.pk}")
    counts = {"sent": 0, "failed": 0, "unknown": 0}
    counts.update(message.recipients.values_list("status").annotate(n=Count("pk")).order_by())
    flash.success(request, f"Message \u201c{message.subject}\u201d: sent to {counts['sent']} worker(s)"
                  + (f", not delivered to {counts['failed']}" if counts["failed"] else "")
                  + (f", unknown for {counts['unknown']}" if counts["unknown"] else "") + ". See the log below.")
    return redirect(reverse("campaign-messages", args=[campaign.slug]) + f"#message-{message.pk}")


@login_required
@require_POST
def campaign_message_resend(request, slug, pk):
    """Send again the copies of a message not known to be sent (failed, unknown, never sent)."""
    campaign = managed_campaign(request, slug)
    message = get_object_or_404(WorkerMessage, pk=pk, batch_id=campaign.batch_id)
    messaging.resend(message)
    flash.success(request, f"Sent again the copies of \u201c{message.subject}\u201d not known to be sent.")
    return redirect(_back(request, campaign))
