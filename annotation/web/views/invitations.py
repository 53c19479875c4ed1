"""The "Invite workers" page of a campaign: links with a use limit and an expiry, listed, copied, revoked."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from annotation.services.pipeline import ensure_batch
from annotation.web.views.setup import managed_campaign, parse_id
from hits.invitations import MAX_DAYS, MAX_USES, NOTE_CHARS, create_invitation, invitation_url, revoke_invitation
from hits.models import Invitation


class InvitationForm(forms.Form):
    max_uses = forms.IntegerField(min_value=1, max_value=MAX_USES, initial=20, label="Accounts it may create")
    expires_in_days = forms.FloatField(
        min_value=0, max_value=MAX_DAYS, initial=14, label="Expires after (days)", help_text="0: never."
    )
    note = forms.CharField(max_length=NOTE_CHARS, required=False, label="Note shown on the sign-up page")


@login_required
def campaign_invitations(request, slug):
    """List the campaign's invitation links; create one (POST) or revoke one (POST action=revoke)."""
    campaign = managed_campaign(request, slug)
    form = InvitationForm(request.POST if request.method == "POST" and request.POST.get("action") == "create" else None)
    status = 200
    if request.method == "POST":
        if request.POST.get("action") == "revoke":
            invitation = get_object_or_404(Invitation, pk=parse_id(request.POST.get("invitation")), batch_id=campaign.batch_id or -1)
            revoke_invitation(invitation)
            messages.success(request, "The link is revoked: nobody can sign up with it any more.")
            return redirect("campaign-invitations", slug=slug)
        if form.is_valid():
            days = form.cleaned_data["expires_in_days"]
            create_invitation(
                batch=ensure_batch(campaign), max_uses=form.cleaned_data["max_uses"], expires_in_days=days or None,
                note=form.cleaned_data["note"] or f"Invitation to {campaign.name}", by=request.user,
            )
            messages.success(request, "Invitation link created: copy it and send it to the workers you invite.")
            return redirect("campaign-invitations", slug=slug)
        status = 400
    now = timezone.now()
    invitations = [
        {"invitation": i, "url": invitation_url(i, request), "usable": i.usable(now)}
        for i in (Invitation.objects.filter(batch_id=campaign.batch_id).select_related("created_by") if campaign.batch_id else [])
    ]
    return render(
        request, "annotation/campaign_invitations.html", {"campaign": campaign, "form": form, "invitations": invitations}, status=status
    )
