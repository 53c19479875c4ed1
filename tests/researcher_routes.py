"""Every researcher route of the URL conf, and a URL for each on a given campaign.

Shared by the query-count test (``tests/test_query_counts.py``) and the scale benchmark
(``bench/bench_scale.py``): the routes are read from the URL conf, so a route added later is measured
without touching either, unless it takes an object id, which it gets from ``RESOLVERS`` (an unknown one
raises ``MissingResolver`` naming the route to add).
"""

from __future__ import annotations

from django.db.models import Count
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import AutoscoreRun, Campaign, ContentUnit, Job, PresenceJudgment, System
from hits.models import Assignment, WorkerMessage

# URL prefixes of the researcher's pages and the API (worker pages, the admin and the login are other tests').
RESEARCHER_PREFIXES = ("campaigns/", "api/")
RESEARCHER_NAMES = {"home"}
SLUG_PARAMETERS = {"slug", "campaign_slug"}
ABSENT = 999_999_999  # the id a route is requested with when the world has no such object


class MissingResolver(LookupError):
    """A route takes a parameter that ``RESOLVERS`` does not give."""


def _first(queryset):
    return queryset.order_by("pk").values_list("pk", flat=True).first()


def _busiest_worker(campaign):
    """The worker with the most judgments in the campaign (the largest page of the worker views)."""
    judgments = PresenceJudgment.objects.filter(summary__system__campaign=campaign)
    return judgments.values("worker_id").annotate(n=Count("pk")).order_by("-n", "worker_id").values_list("worker_id", flat=True).first()


# Route name -> the value its ``pk`` takes in a world (see ``world``), or a dict of its parameters other than
# the campaign's slug; None: the world has no such object, the route is requested with an id that does not
# exist (its "not found" must be bounded too).
RESOLVERS = {
    "campaign-preview-as-worker": lambda w: {"task": "presence"},
    "campaign-message-resend": lambda w: _first(WorkerMessage.objects.filter(batch_id=w["campaign"].batch_id)),
    "job-detail": lambda w: w["job"].pk,
    "job-status": lambda w: w["job"].pk,
    "job-download": lambda w: w["job"].pk,
    "job-retry": lambda w: w["job"].pk,
    "api-job": lambda w: w["job"].pk,
    "api-job-download": lambda w: w["job"].pk,
    "api-job-retry": lambda w: w["job"].pk,
    # The worker with the most judgments in the campaign (the largest page of the worker view).
    "campaign-worker": lambda w: _busiest_worker(w["campaign"]),
    "api-worker-detail": lambda w: _busiest_worker(w["campaign"]),
    "api-worker-hits": lambda w: _busiest_worker(w["campaign"]),
    "api-worker-block": lambda w: _busiest_worker(w["campaign"]),
    "api-worker-unblock": lambda w: _busiest_worker(w["campaign"]),
    "campaign-review-example": lambda w: _first(w["campaign"].examples.all()),
    "campaign-review-assignment": lambda w: _first(Assignment.objects.filter(hit__batch_id=w["campaign"].batch_id)),
    "campaign-review-reinclude": lambda w: _first(Assignment.objects.filter(hit__batch_id=w["campaign"].batch_id)),
    "campaign-correct-pair": lambda w: _first(ContentUnit.objects.filter(example__campaign=w["campaign"])),
    "campaign-qualification-item-edit": lambda w: None,
    "api-example-detail": lambda w: _first(w["campaign"].examples.all()),
    "api-system-detail": lambda w: _first(System.objects.filter(campaign=w["campaign"])),
    "api-summary-detail": lambda w: _first(w["campaign"].examples.first().summaries.all()),
    "api-predicate-detail": lambda w: _first(w["campaign"].examples.first().predicates.all()),
    "api-unit-detail": lambda w: _first(ContentUnit.objects.filter(example__campaign=w["campaign"])),
    "api-unit-correct": lambda w: _first(ContentUnit.objects.filter(example__campaign=w["campaign"])),
    "api-verification-detail": lambda w: None,
    "api-judgment-detail": lambda w: _first(PresenceJudgment.objects.filter(summary__system__campaign=w["campaign"])),
    "api-gold-detail": lambda w: _first(w["campaign"].examples.first().summaries.first().gold.all()),
    "api-autoscore-detail": lambda w: w["autoscore"].pk,
    "api-autoscore-resume": lambda w: w["autoscore"].pk,
    "api-autoscore-scores": lambda w: w["autoscore"].pk,
    "api-assignment-detail": lambda w: _first(Assignment.objects.filter(hit__batch_id=w["campaign"].batch_id)),
    "api-assignment-approve": lambda w: _first(Assignment.objects.filter(hit__batch_id=w["campaign"].batch_id)),
    "api-assignment-bonus": lambda w: _first(Assignment.objects.filter(hit__batch_id=w["campaign"].batch_id)),
    "api-assignment-reject": lambda w: _first(Assignment.objects.filter(hit__batch_id=w["campaign"].batch_id)),
}


def researcher_routes() -> list[tuple[str, str, tuple[str, ...]]]:
    """(route, name, parameters) of every named researcher route of the URL conf."""

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern) and pattern.name:
                yield prefix + str(pattern.pattern), pattern.name, tuple(pattern.pattern.regex.groupindex)

    return [
        r for r in walk(get_resolver().url_patterns)
        if r[0].startswith(RESEARCHER_PREFIXES) or r[1] in RESEARCHER_NAMES
    ]


def world(campaign: Campaign, owner) -> dict:
    """The objects the resolvers read besides the campaign's own: an export job and an autoscore run."""
    job = Job.objects.create(kind=Job.Kind.EXPORT, campaign=campaign, created_by=owner, state=Job.State.DONE)
    autoscore = AutoscoreRun.objects.create(campaign=campaign, judge_name="lexical", created_by=owner)
    return {"campaign": campaign, "job": job, "autoscore": autoscore}


def url_for(route: str, name: str, parameters: tuple[str, ...], world: dict) -> str:
    kwargs = {}
    for parameter in parameters:
        if parameter in SLUG_PARAMETERS:
            kwargs[parameter] = world["campaign"].slug
        elif parameter == "format":
            continue
        elif name in RESOLVERS:
            found = RESOLVERS[name](world)
            if isinstance(found, dict):
                if parameter not in found:
                    raise MissingResolver(f"the resolver of {route} gives no {parameter!r} (RESOLVERS in {__name__})")
                found = found[parameter]
            kwargs[parameter] = found if found is not None else ABSENT
        else:
            raise MissingResolver(f"add a resolver for {route} (name {name!r}, parameter {parameter!r}) to RESOLVERS in {__name__}")
    return reverse(name, kwargs=kwargs)
