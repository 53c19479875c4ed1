"""Researcher pages to create a campaign from files, set it up and grow it (thin: services do the work)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from hits.wording import as_sentence
from annotation.services import roles
from annotation.web.forms import AddSystemForm, CampaignSettingsForm, CampaignUploadForm
from annotation.models import Job
from annotation.models import Campaign, Predicate, ReferenceSentence
from annotation.models.stages import SCU_UNITS_PER_HIT
from annotation.selectors.campaigns import campaign_overview, campaigns_visible_to
from annotation.services import uploads
from annotation.services.costs import campaign_cost_preview
from annotation.services.jobs import start_job

SESSION_UPLOADS = "campaign_uploads"


def managed_campaign(request, slug: str) -> Campaign:
    """The campaign, if the user may manage it; 404 otherwise (as every campaign page: no existence leak)."""
    campaign = get_object_or_404(campaign_overview(campaigns_visible_to(request.user)), slug=slug)
    if not roles.can_manage_campaign(request.user, campaign):
        raise PermissionDenied
    return campaign


@login_required
@require_POST
def campaign_routing_retry(request, slug):
    """Ask for a routing pass again after one failed, optionally with another judge (progress page)."""
    from annotation.automation.autoscore import check_judge_name
    from annotation.automation.judges.base import JudgeError
    from annotation.services.hybrid import RoutingRetryError, retry_routing

    campaign = managed_campaign(request, slug)
    judge = (request.POST.get("presence_judge") or "").strip()[:100] or None
    try:
        if judge:
            check_judge_name(judge)
        retry_routing(campaign, judge)
    except (JudgeError, RoutingRetryError) as exc:
        messages.error(request, f"Routing not retried: {exc}.")
    else:
        messages.success(request, f"Routing pass asked for with the judge {judge or campaign.presence_judge}.")
    return redirect("campaign-progress", slug=slug)


@login_required
@require_POST
def campaign_mturk_retry(request, slug):
    """Try again to publish the HITs MTurk refused (progress page): one HIT (``hit``) or all of them."""
    from hits.mturk.publishing import retry_publish

    campaign = managed_campaign(request, slug)
    hit = (request.POST.get("hit") or "").strip()
    if campaign.batch is None or not campaign.batch.on_mturk:
        messages.error(request, "This campaign has no HITs on MTurk: nothing to publish again.")
    elif hit and not hit.isdigit():
        messages.error(request, f"'{hit[:20]}' is not a HIT number.")
    else:
        count = retry_publish(campaign.batch, [int(hit)] if hit else None)
        if count:
            messages.success(request, f"{count} HIT{'s' if count != 1 else ''} will be sent to MTurk again by the next publish.")
        else:
            messages.error(request, "No HIT refused by MTurk to publish again.")
    return redirect("campaign-progress", slug=slug)


def _require_researcher(request) -> None:
    if not roles.is_researcher(request.user):
        raise PermissionDenied("Only researchers may create campaigns.")


def _session_uploads(request) -> dict:
    return request.session.get(SESSION_UPLOADS, {})


def _remember_upload(request, token: str, fields: dict) -> None:
    stored = dict(_session_uploads(request))
    stored[token] = fields
    request.session[SESSION_UPLOADS] = stored


def _own_upload(request, token: str | None) -> str | None:
    """The token if this session staged it (a token from elsewhere is never trusted)."""
    return token if token and token in _session_uploads(request) else None


@login_required
def campaign_new(request):
    """Upload files, see a preview (or every problem), then confirm the import.

    The staged files survive a failed preview: the researcher re-uploads only
    the file that was wrong, and keeps the name and description typed.
    """
    _require_researcher(request)
    token = _own_upload(request, request.POST.get("upload") or request.GET.get("upload"))
    if request.method != "POST":
        initial = _session_uploads(request).get(token, {}) if token else {}
        form = CampaignUploadForm(initial=initial)
        staged = uploads.staged_files(token) if token else {}
        return render(request, "annotation/campaign_new.html", {"form": form, "upload": token, "staged": staged})

    uploads.clean_stale_uploads_here()
    token = token or uploads.new_upload()
    form = CampaignUploadForm(request.POST, request.FILES)
    for role, field_name in (("references", "references"), ("summaries", "summaries"), ("predicates", "predicates_file")):
        if request.FILES.get(field_name):
            uploads.stage_file(token, role, request.FILES[field_name])
    fields = {k: request.POST.get(k, "") for k in ("name", "slug", "description", "predicates")}
    _remember_upload(request, token, fields)
    staged = uploads.staged_files(token)
    context = {"form": form, "upload": token, "staged": staged, "problems": []}
    if not form.is_valid():
        return render(request, "annotation/campaign_new.html", context, status=400)
    missing = [label for role, label in (("references", "references"), ("summaries", "summaries")) if role not in staged]
    predicates = form.cleaned_data["predicates"]
    if predicates == "file" and "predicates" not in staged:
        missing.append("predicates")
    if missing:
        context["problems"] = [f"Upload a {label} file." for label in missing]
        return render(request, "annotation/campaign_new.html", context, status=400)
    with uploads.local_files(staged) as files:
        preview = uploads.preview_import(
            files["references"], files["summaries"], files["predicates"] if predicates == "file" else predicates
        )
    context["preview"] = preview
    if not preview.ok:
        context["problems"] = [str(p) for p in preview.problems]
        return render(request, "annotation/campaign_new.html", context, status=400)
    context["final_slug"] = form.cleaned_data["final_slug"]
    return render(request, "annotation/campaign_preview.html", context)


@login_required
@require_POST
def campaign_new_confirm(request):
    """Import the previewed upload as a job; the job page shows its progress."""
    _require_researcher(request)
    token = _own_upload(request, request.POST.get("upload"))
    pending = Job.objects.filter(kind=Job.Kind.IMPORT, params__upload=token).exclude(state=Job.State.FAILED).first()
    if token and pending is not None:
        # A second click on "Import": show the import already under way (or done) rather than start another.
        return redirect("job-detail", pk=pending.pk)
    if token is None or not uploads.staged_files(token):
        messages.error(request, "That upload is gone (it may have been imported already): upload the files again.")
        return redirect("campaign-new")
    fields = _session_uploads(request)[token]
    job = start_job(
        Job.Kind.IMPORT,
        params={
            "upload": token,
            "name": fields.get("name", ""),
            "slug": fields.get("slug", ""),
            "description": fields.get("description", ""),
            "predicates": fields.get("predicates") or "auto",
            "owner": request.user.pk,
        },
        user=request.user,
    )
    # The session keeps the token: if the import fails, the job page leads back to the same files.
    return redirect("job-detail", pk=job.pk)


@login_required
def campaign_settings(request, slug):
    """Settings with the paper's values, and the cost preview for them (before launch)."""
    campaign = managed_campaign(request, slug)
    editable = campaign.state == Campaign.State.DRAFT
    status = 200
    if request.method == "POST":
        if not editable:
            messages.error(request, "Settings can only change before launch.")
            return redirect("campaign-settings", slug=slug)
        # A copy: the form writes the typed values into its instance, the page header keeps the saved ones.
        form = CampaignSettingsForm(request.POST, instance=Campaign.objects.get(pk=campaign.pk))
        if form.is_valid():
            if request.POST.get("action") == "preview":
                # The cost of the values typed, without saving them.
                messages.info(request, "Cost preview for the values below (not saved yet).")
            else:
                form.save()
                messages.success(request, "Settings saved.")
                return redirect("campaign-settings", slug=slug)
        else:
            status = 400
    else:
        form = CampaignSettingsForm(instance=campaign)
    if not editable:
        for field in form.fields.values():
            field.disabled = True
    # The cost of the values typed when they are valid, else of the saved ones.
    costed = form.instance if form.is_bound and form.is_valid() else campaign
    cost = campaign_cost_preview(costed)
    return render(
        request,
        "annotation/campaign_settings.html",
        {"campaign": campaign, "form": form, "editable": editable, "cost": cost, "scu_units_per_hit": SCU_UNITS_PER_HIT,
         "gold_pool": _gold_pool(costed, cost)},
        status=status,
    )


@login_required
def campaign_predicates(request, slug):
    """Every reference sentence with its predicates: remove one, or add one by selecting a span."""
    campaign = managed_campaign(request, slug)
    sentences = (
        ReferenceSentence.objects.filter(example__campaign=campaign)
        .select_related("example")
        .prefetch_related(Prefetch("predicates", queryset=Predicate.objects.order_by("start")))
        .order_by("example__position", "index")
    )
    listing = paginate(request, sentences, 60)
    return render(
        request,
        "annotation/campaign_predicates.html",
        {
            "campaign": campaign,
            "sentences": listing["items"],
            "editable": campaign.state == Campaign.State.DRAFT,
            "page": listing["page"],
            "pages": listing["pages"],
            "n_predicates": Predicate.objects.filter(example__campaign=campaign).count(),
            # The predicate just removed, offered back once (a chip is removed with one click).
            "undo": request.session.pop(UNDO_KEY, None) if request.session.get(UNDO_KEY, {}).get("campaign") == campaign.pk else None,
        },
    )


UNDO_KEY = "predicate_undo"


def paginate(request, queryset, per_page: int) -> dict:
    """``items``, ``page``, ``pages`` and ``count`` (of items in all) for a list page (Django's Paginator: bad or too-high page numbers clamp)."""
    page = Paginator(queryset, per_page).get_page(request.GET.get("page"))
    return {"items": page.object_list, "page": page.number, "pages": page.paginator.num_pages, "count": page.paginator.count}


def parse_id(raw) -> int:
    """A row id typed or posted; anything else (``abc``, ``1e5``, ``²``, 30 digits) is 0, which no row has (a 404)."""
    raw = (raw or "").strip()
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else 0


def _posted_id(request, name: str) -> int:
    """A row id from the form (``parse_id``)."""
    return parse_id(request.POST.get(name))


def _back_to_predicates(slug, request):
    response = redirect("campaign-predicates", slug=slug)
    page = request.POST.get("page")
    if page and page.isascii() and page.isdigit():
        response["Location"] += f"?page={page}"
    return response


@login_required
@require_POST
def campaign_predicate_add(request, slug):
    """Add a predicate: the span selected in the sentence (start offset + text), or the first match of the text."""
    from annotation.services.predicates import add_predicate

    campaign = managed_campaign(request, slug)
    sentence = get_object_or_404(ReferenceSentence, pk=_posted_id(request, "sentence"), example__campaign=campaign)
    span = (request.POST.get("span") or "").strip()
    start = request.POST.get("start", "")
    if not span:
        messages.error(request, "Select the predicate's words in the sentence (or type them) first.")
        return _back_to_predicates(slug, request)
    if start.isascii() and start.isdigit() and sentence.text[int(start) : int(start) + len(span)] == span:
        begin = int(start)
    else:
        begin = sentence.text.find(span)
    if begin < 0:
        messages.error(request, f"'{span}' is not in the sentence “{sentence.text}”.")
        return _back_to_predicates(slug, request)
    try:
        predicate = add_predicate(sentence, begin, begin + len(span), lemma=(request.POST.get("lemma") or "").strip())
    except ValidationError as exc:
        messages.error(request, as_sentence(" ".join(exc.messages)))
    else:
        messages.success(request, f"Predicate '{predicate.text}' added to {sentence.example.external_id}.")
    return _back_to_predicates(slug, request)


@login_required
@require_POST
def campaign_predicate_remove(request, slug):
    from annotation.services.predicates import remove_predicate

    campaign = managed_campaign(request, slug)
    predicate = get_object_or_404(Predicate, pk=_posted_id(request, "predicate"), example__campaign=campaign)
    removed = {"campaign": campaign.pk, "sentence": predicate.sentence_id, "start": predicate.start, "text": predicate.text,
               "lemma": predicate.lemma, "example": predicate.sentence.example.external_id}
    try:
        remove_predicate(predicate)
    except ValidationError as exc:
        messages.error(request, as_sentence(" ".join(exc.messages)))
    else:
        request.session[UNDO_KEY] = removed
        messages.success(request, f"Predicate '{predicate.text}' removed.")
    return _back_to_predicates(slug, request)


@login_required
def campaign_add_system(request, slug):
    """Add new systems' summaries to a running or finished campaign: presence HITs for them only, or autoscore."""
    from annotation.importing.readers import CampaignImportError
    from annotation.automation.judges.registry import backends
    from annotation.services.systems import add_systems

    campaign = managed_campaign(request, slug)
    problems: list[str] = []
    status = 200
    if request.method == "POST" and request.POST.get("action") == "autoscore":
        return _start_autoscore(request, campaign)
    if request.method == "POST":
        form = AddSystemForm(request.POST, request.FILES)
        if form.is_valid():
            token = uploads.new_upload()
            staged = uploads.stage_file(token, "summaries", form.cleaned_data["summaries"])
            try:
                with uploads.local_files({"summaries": staged}) as files:
                    result = add_systems(campaign, files["summaries"], by=request.user)
            except CampaignImportError as exc:
                problems = [str(p) for p in exc.problems]
                status = 400
            else:
                created = f"{result.n_hits} presence HITs created"
                if result.n_routed_candidates:
                    created = (
                        f"{result.n_routed_candidates} presence HITs handed to the judge, which routes the "
                        f"campaign's human share of them to people"
                    )
                messages.success(request, f"Added {', '.join(result.systems)}: {result.n_summaries} summaries, {created}.")
                return redirect("campaign-progress", slug=slug)
            finally:
                uploads.discard_upload(token)
        else:
            status = 400
    else:
        form = AddSystemForm()
    systems = campaign.systems.annotate(n_summaries=Count("summaries"))
    judges = backends()
    return render(
        request,
        "annotation/campaign_add_system.html",
        {
            "campaign": campaign,
            "form": form,
            "problems": problems,
            "systems": systems,
            "judges": judges,
        },
        status=status,
    )


def _start_autoscore(request, campaign):
    """Score chosen systems with an automatic presence judge instead of crowd judges."""
    from annotation.automation.autoscore import start_autoscore_run

    judge = (request.POST.get("judge") or "").strip()
    systems = [name for name in request.POST.getlist("systems") if name] or None
    try:
        run = start_autoscore_run(campaign, judge, systems=systems, user=request.user)
    except Exception as exc:  # noqa: BLE001 - JudgeError/ValueError: the message says what is wrong, nothing was created
        messages.error(request, f"Automatic scoring not started: {exc}")
    else:
        messages.success(request, f"Automatic scoring run #{run.pk} started with the judge '{judge}'.")
    return redirect("campaign-add-system", slug=campaign.slug)


@login_required
def campaign_progress_status(request, slug):
    """The progress page's figures as JSON, polled by static/js/jobs.js while the crowd works."""
    from django.http import JsonResponse

    from annotation.selectors.campaigns import campaign_progress

    campaign = managed_campaign(request, slug)
    progress = campaign_progress(campaign)
    stages = {
        slug: None
        if row is None
        else {k: row[k] for k in ("total", "waiting", "in_progress", "done", "redo", "submitted", "slots", "percent")}
        for slug, row in progress["stages"].items()
    }
    response = JsonResponse(
        {
            "state": campaign.state,
            "state_label": campaign.get_state_display(),
            "stages": stages,
            "n_predicates": progress["n_predicates"],
            "settled": progress["settled"],
            "n_flagged": len(progress["flagged"]),
            "workers_total": progress["workers_total"],
            "cost_so_far": str(progress["cost_so_far"]),
        }
    )
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def campaign_predicates_redetect(request, slug):
    """Find predicates again with spaCy; the researcher's own additions and imported ones are kept."""
    from annotation.services.predicates import redetect_predicates

    campaign = managed_campaign(request, slug)
    try:
        n = redetect_predicates(campaign)
    except ValidationError as exc:
        messages.error(request, as_sentence(" ".join(exc.messages)))
    else:
        messages.success(request, f"Predicates found again: the campaign has {n} predicates (your own edits were kept).")
    return redirect("campaign-predicates", slug=slug)


def _gold_pool(campaign, cost):
    """The gold pool the settings plan (before launch) or the one the campaign has (after)."""
    from annotation.selectors.gold_pool import measured_gold_pool, planned_gold_pool

    if campaign.batch_id is not None:
        measured = measured_gold_pool(campaign)
        if measured is not None:
            return measured
    stages = {s.task_type: s.hits for s in cost.stages}
    return planned_gold_pool(campaign, cost.gold.hits if cost.gold else 0, stages.get("presence", 0))
