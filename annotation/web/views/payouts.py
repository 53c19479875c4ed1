"""The payout report of a campaign: per worker, what was approved, given as bonuses, paid and still owed
(page and CSV).  Its figures come from ``hits.payouts``, as the worker's own earnings page does."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.services.spreadsheets import csv_writer
from annotation.web.views.setup import managed_campaign, parse_id
from hits import payments, payouts
from hits.models import Batch, Worker
from hits.mturk.reconcile import DIFFERENCE_LABELS, last_reconciliation

COLUMNS = ["worker", "approved", "awaiting_review", "rejected", "rewards", "bonuses", "paid", "owed", "fees", "awaiting_amount"]


@login_required
def campaign_payouts(request, slug):
    campaign = managed_campaign(request, slug)
    batch = Batch.objects.filter(pk=campaign.batch_id).first()
    rows = payouts.payouts(batch=batch) if batch is not None else []
    total = payouts.totals(rows)
    if request.GET.get("format") == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-payouts.csv"'
        writer = csv_writer(response)
        writer.writerow(["campaign", *COLUMNS])
        for row in rows:
            writer.writerow([campaign.slug, row.worker.external_id, *(getattr(row, c) for c in COLUMNS[1:])])
        writer.writerow([campaign.slug, "TOTAL", *(getattr(total, c) for c in COLUMNS[1:])])
        return response
    return render(
        request,
        "annotation/campaign_payouts.html",
        {"campaign": campaign, "rows": rows, "total": total, "on_mturk": batch is not None and batch.on_mturk,
         "on_market": batch is not None and (batch.on_mturk or batch.on_prolific),
         **_marking(batch), **_reconciliation(batch), **_prolific(batch),
         "paid_by_mturk": payouts.paid_by_mturk(batch) if batch is not None and (batch.on_mturk or batch.on_prolific) else [],
         "refused_bonuses": payouts.refused_bonuses(batch) if batch is not None else []},
    )


def _prolific(batch) -> dict:
    """A Prolific campaign: the market's name, bulk bonuses whose pay reply was lost and that Prolific's
    records still do not show paid after long (``hits.prolific.bonuses.flagged``): for the researcher to check,
    and submissions Prolific lists with no session here (rejected by the sync after the grace)."""
    if batch is None or not batch.on_prolific:
        return {"on_prolific": False, "market_name": "MTurk"}
    from hits.prolific.bonuses import flagged
    from hits.prolific.models import ProlificStranger

    strangers = ProlificStranger.objects.filter(study__batch=batch).order_by("first_seen_at", "pk")
    return {"on_prolific": True, "market_name": "Prolific", "flagged_bonuses": list(flagged(batch)),
            "prolific_strangers": list(strangers)}


def _reconciliation(batch) -> dict:
    """The last ``manage.py mturk_reconcile`` of the campaign, its differences labelled for people."""
    last = last_reconciliation(batch)
    if last is None:
        return {"reconciliation": None, "reconciliation_rows": []}
    rows = [{**d, "label": DIFFERENCE_LABELS.get(d.get("kind"), d.get("kind"))} for d in last.differences]
    return {"reconciliation": last, "reconciliation_rows": rows}


def _marking(batch) -> dict:
    """What the page needs to mark payouts paid: the newest ledger entry shown, and the audit trail."""
    if batch is None:
        return {"upto": 0, "records": []}
    return {"upto": payouts.last_entry_id(batch), "records": payouts.payment_records(batch)}


@login_required
@require_POST
def campaign_payouts_mark_paid(request, slug):
    """Mark local workers' owed money paid: one worker (``only``), the workers ticked (``worker``), or all (``all``).
    Only the ledger entries the page showed (``upto``) are marked; MTurk campaigns are refused."""
    campaign = managed_campaign(request, slug)
    batch = Batch.objects.filter(pk=campaign.batch_id).first()
    if batch is None:
        messages.error(request, "Nothing is owed: the campaign has no work yet.")
        return redirect("campaign-payouts", slug=slug)
    if request.POST.get("only"):
        names = [request.POST["only"]]
    elif request.POST.get("all"):
        names = None
    else:
        names = request.POST.getlist("worker")
        if not names:
            messages.error(request, "Tick the workers you paid first (or use a row's own button).")
            return redirect("campaign-payouts", slug=slug)
    workers = None if names is None else list(Worker.objects.filter(external_id__in=names).values_list("pk", flat=True))
    upto = parse_id(request.POST.get("upto")) or None
    try:
        result = payments.mark_paid(batch, request.user, workers=workers, upto=upto, note=request.POST.get("note", ""))
    except payments.PaymentError as exc:
        messages.error(request, f"Nothing was marked paid: {exc}.")
    else:
        if result.entries:
            messages.success(
                request,
                f"Marked paid: ${result.amount} to {len(result.workers)} worker{'s' if len(result.workers) != 1 else ''} "
                f"({result.entries} ledger entr{'ies' if result.entries != 1 else 'y'}).",
            )
        else:
            messages.info(request, "Nothing to mark: what the page showed as owed is already marked paid.")
    return redirect("campaign-payouts", slug=slug)
