"""Routes of the REST API, mounted at ``/api/``."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from annotation.web.api import views

router = SimpleRouter()
router.register("campaigns", views.CampaignViewSet, basename="api-campaign")
SCOPED = "campaigns/(?P<campaign_slug>[-a-zA-Z0-9_]+)"
router.register(f"{SCOPED}/examples", views.ExampleViewSet, basename="api-example")
router.register(f"{SCOPED}/systems", views.SystemViewSet, basename="api-system")
router.register(f"{SCOPED}/summaries", views.SummaryViewSet, basename="api-summary")
router.register(f"{SCOPED}/predicates", views.PredicateViewSet, basename="api-predicate")
router.register(f"{SCOPED}/units", views.UnitViewSet, basename="api-unit")
router.register(f"{SCOPED}/unit-inspector", views.UnitInspectorViewSet, basename="api-unit-inspector")
router.register(f"{SCOPED}/verifications", views.VerificationViewSet, basename="api-verification")
router.register(f"{SCOPED}/judgments", views.JudgmentViewSet, basename="api-judgment")
router.register(f"{SCOPED}/gold", views.GoldViewSet, basename="api-gold")
router.register(f"{SCOPED}/workers", views.WorkerViewSet, basename="api-worker")
router.register(f"{SCOPED}/autoscore", views.AutoscoreRunViewSet, basename="api-autoscore")
router.register(f"{SCOPED}/assignments", views.AssignmentViewSet, basename="api-assignment")
router.register(f"{SCOPED}/messages", views.MessageViewSet, basename="api-message")

urlpatterns = [
    path("token/", views.TokenView.as_view(), name="api-token"),
    path("jobs/<int:pk>/", views.JobView.as_view(), name="api-job"),
    path("jobs/<int:pk>/download/", views.JobDownloadView.as_view(), name="api-job-download"),
    path("jobs/<int:pk>/retry/", views.JobRetryView.as_view(), name="api-job-retry"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's setup as a script file: no inline script for the CSP to refuse.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    # Redoc starts from an inline script and renders in a blob worker: its page alone allows them.
    path("redoc/", views.redoc_csp(SpectacularRedocView.as_view(url_name="api-schema")), name="api-redoc"),
    path("", include(router.urls)),
]
