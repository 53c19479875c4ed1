"""The worker view (issue 40): one worker of one campaign on one page, with the actions the other pages offer.

The decisions go to the views that already make them, which come back here: approve, reject and bonus to
``review.review_assignment``, block, revoke, exclude and the rest to ``campaigns.campaign_worker_action``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from annotation.services import rejection
from annotation.selectors.worker_view import campaign_member, hit_rows, worker_assignments, worker_summary
from annotation.web.forms import AssignmentReviewForm
from annotation.web.views.review import prolific_review_context
from annotation.web.views.setup import managed_campaign, paginate

#: HITs per page of the worker's list.
HITS_PER_PAGE = 50


@login_required
def campaign_worker(request, slug, pk):
    campaign = managed_campaign(request, slug)
    worker = campaign_member(campaign, pk)
    if worker is None:
        raise Http404("No such worker in this campaign")
    listing = paginate(request, worker_assignments(campaign, worker), HITS_PER_PAGE)
    summary = worker_summary(campaign, worker)
    return render(
        request,
        "annotation/campaign_worker.html",
        {
            "campaign": campaign, **summary, "hits": hit_rows(campaign, listing["items"]), "page": listing["page"],
            "pages": listing["pages"], "n_hits": listing["count"], "review_form": AssignmentReviewForm(),
            "task_slugs": (GENERATION, VERIFICATION, PRESENCE), "excludable": rejection.EXCLUDABLE,
            "message_workers": [worker.external_id],
            **prolific_review_context(campaign),
        },
    )
