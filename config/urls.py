"""URL routes of the platform."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.templatetags.static import static
from django.urls import include, path

from annotation.web.views import campaigns as annotation_views
from config.middleware import readiness
from config.ratelimit import login_limited
from hits import views as hits_views


def healthz(request):
    """Liveness probe for load balancers and docker-compose (answered first by ``config.middleware.ProbeMiddleware``)."""
    return JsonResponse({"status": "ok"})


def readyz(request):
    """Readiness probe: the database answers (answered first by ``config.middleware.ProbeMiddleware``)."""
    return readiness()


def favicon(request):
    """Browsers and tools that ask for /favicon.ico without reading the pages' <link rel="icon">."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


urlpatterns = [
    path("", annotation_views.home, name="home"),
    path("campaigns/", include("annotation.web.urls")),
    path("work/quality/", annotation_views.worker_quality, name="worker-quality"),
    path("work/", include("hits.urls")),
    # A Prolific study's participants arrive here (hits.prolific.STUDY_START_PATH) and work on the pages above.
    path("prolific/", include("hits.prolific.urls")),
    path("join/<str:token>/", hits_views.join, name="join"),
    path(
        "accounts/login/",
        login_limited(auth_views.LoginView.as_view()),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("annotation.web.api.urls")),
    # The admin's login under the same limits as the login page (listed first, so it takes the path).
    path("admin/login/", login_limited(admin.site.login), name="admin-login"),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("favicon.ico", favicon),
]
