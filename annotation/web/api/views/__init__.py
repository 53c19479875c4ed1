"""API views: thin adapters that read through selectors and write through services.

Every view requires a researcher or admin (``IsResearcher``); campaign-scoped
views look the campaign up among ``campaigns_visible_to(user)``, so another
researcher's campaign is a 404.

Split by concern: ``common`` (error bodies, the 409 error, campaign scoping), ``tokens`` (API tokens
and background jobs), ``campaigns``, ``content`` (examples, systems, summaries, predicates, units),
``unit_inspector`` (the unit inspector and gold overrides), ``messages`` (messages to workers), ``work``
(verifications, judgments, gold, autoscore runs, assignments) and ``workers`` (the workers, one worker's view
and HITs, and the decisions about them).
"""

from annotation.web.api.views.campaigns import CampaignViewSet
from annotation.web.api.views.common import (
    CAMPAIGN_SLUG,
    DETAIL,
    IMPORT_ERROR,
    CampaignScoped,
    Conflict,
    int_param,
    problem_dict,
    redoc_csp,
    save_upload,
    scoped_schema,
)
from annotation.web.api.views.content import ExampleViewSet, PredicateViewSet, SummaryViewSet, SystemViewSet, UnitViewSet
from annotation.web.api.views.messages import MessageViewSet
from annotation.web.api.views.tokens import TOO_MANY_LOGINS, JobDownloadView, JobRetryView, JobView, TokenView
from annotation.web.api.views.unit_inspector import UnitInspectorViewSet
from annotation.web.api.views.work import (
    AssignmentViewSet,
    AutoscoreRunViewSet,
    GoldViewSet,
    JudgmentViewSet,
    VerificationViewSet,
)
from annotation.web.api.views.workers import WorkerViewSet

__all__ = [
    "CAMPAIGN_SLUG",
    "DETAIL",
    "IMPORT_ERROR",
    "TOO_MANY_LOGINS",
    "AssignmentViewSet",
    "AutoscoreRunViewSet",
    "CampaignScoped",
    "CampaignViewSet",
    "Conflict",
    "ExampleViewSet",
    "GoldViewSet",
    "JobDownloadView",
    "JobRetryView",
    "JobView",
    "JudgmentViewSet",
    "MessageViewSet",
    "PredicateViewSet",
    "SummaryViewSet",
    "SystemViewSet",
    "TokenView",
    "UnitInspectorViewSet",
    "UnitViewSet",
    "VerificationViewSet",
    "WorkerViewSet",
    "int_param",
    "problem_dict",
    "redoc_csp",
    "save_upload",
    "scoped_schema",
]
