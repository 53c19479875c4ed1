"""A Prolific participant's pages (included under ``/prolific/``: the study URL is ``STUDY_START_PATH``)."""

from django.urls import path

from hits.prolific import views

app_name = "prolific"

urlpatterns = [
    path("start/", views.start, name="start"),
    path("session/", views.session, name="session"),
]
