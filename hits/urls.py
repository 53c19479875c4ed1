from django.urls import path

from hits import views
from hits.markets.registry import all_markets

urlpatterns = [
    path("", views.worker_home, name="worker-home"),
    path("history/", views.history, name="worker-history"),
    path("settings/", views.worker_settings, name="worker-settings"),
    path("messages/<int:pk>/read/", views.message_read, name="worker-message-read"),
    path("assignments/<int:pk>/", views.assignment_page, name="assignment"),
    path("assignments/<int:pk>/status/", views.assignment_status, name="assignment-status"),
    path("<slug:slug>/start/", views.start_working, name="start-working"),
    path("<slug:slug>/preview/", views.preview, name="preview"),
    # The markets' own worker pages (e.g. the HIT page inside MTurk's frame, the ExternalQuestion URL).
    *(pattern for market in all_markets() for pattern in market.worker_urls()),
]
