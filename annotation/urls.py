from django.urls import path

from annotation import views

urlpatterns = [
    path("<slug:slug>/", views.campaign_detail, name="campaign-detail"),
    path("<slug:slug>/progress/", views.campaign_progress, name="campaign-progress"),
    path("<slug:slug>/control/", views.campaign_control, name="campaign-control"),
    path("<slug:slug>/workers/", views.campaign_workers_page, name="campaign-workers"),
    path("<slug:slug>/leaderboard/", views.campaign_leaderboard, name="campaign-leaderboard"),
    path("<slug:slug>/qualifications/", views.campaign_qualifications, name="campaign-qualifications"),
    path("<slug:slug>/workers/action/", views.campaign_worker_action, name="campaign-worker-action"),
]
