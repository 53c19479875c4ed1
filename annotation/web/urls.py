from django.urls import path

from annotation.web.views import agreement as agreement_views
from annotation.web.views import campaigns as views
from annotation.web.views import duplicates as duplicate_views
from annotation.web.views import jobs as job_views
from annotation.web.views import invitations as invitation_views
from annotation.web.views import judges as judge_views
from annotation.web.views import messages as message_views
from annotation.web.views import payouts as payout_views
from annotation.web.views import pilot as pilot_views
from annotation.web.views import qualifications as qualification_views
from annotation.web.views import review as review_views
from annotation.web.views import setup as campaign_views
from annotation.web.views import units as unit_views
from annotation.web.views import worker_status as worker_status_views
from annotation.web.views import workers as worker_views

urlpatterns = [
    # Researcher pages of issue 8 (creating, setting up and growing campaigns; long jobs). Fixed paths
    # come before "<slug:slug>/": the slugs "new" and "jobs" are refused when a campaign is created.
    path("new/", campaign_views.campaign_new, name="campaign-new"),
    path("new/confirm/", campaign_views.campaign_new_confirm, name="campaign-new-confirm"),
    path("jobs/<int:pk>/", job_views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/status/", job_views.job_status_view, name="job-status"),
    path("jobs/<int:pk>/download/", job_views.job_download, name="job-download"),
    path("jobs/<int:pk>/retry/", job_views.job_retry, name="job-retry"),
    path("<slug:slug>/settings/", campaign_views.campaign_settings, name="campaign-settings"),
    path("<slug:slug>/predicates/", campaign_views.campaign_predicates, name="campaign-predicates"),
    path("<slug:slug>/predicates/add/", campaign_views.campaign_predicate_add, name="campaign-predicate-add"),
    path("<slug:slug>/predicates/remove/", campaign_views.campaign_predicate_remove, name="campaign-predicate-remove"),
    path(
        "<slug:slug>/predicates/redetect/", campaign_views.campaign_predicates_redetect, name="campaign-predicates-redetect"
    ),
    path("<slug:slug>/duplicates/", duplicate_views.campaign_duplicates, name="campaign-duplicates"),
    path("<slug:slug>/handwritten/", duplicate_views.campaign_handwritten, name="campaign-handwritten"),
    path("<slug:slug>/handwritten/add/", duplicate_views.campaign_handwritten_pair, name="campaign-handwritten-add"),
    path("<slug:slug>/systems/add/", campaign_views.campaign_add_system, name="campaign-add-system"),
    path("<slug:slug>/routing/retry/", campaign_views.campaign_routing_retry, name="campaign-routing-retry"),
    path("<slug:slug>/mturk/retry/", campaign_views.campaign_mturk_retry, name="campaign-mturk-retry"),
    path("<slug:slug>/progress/status/", campaign_views.campaign_progress_status, name="campaign-progress-status"),
    path("<slug:slug>/recompute/", job_views.campaign_recompute, name="campaign-recompute"),
    path("<slug:slug>/export/", job_views.campaign_export, name="campaign-export"),
    path("<slug:slug>/agreement/", agreement_views.campaign_agreement, name="campaign-agreement"),
    path("<slug:slug>/review/", review_views.campaign_review, name="campaign-review"),
    path("<slug:slug>/payouts/", payout_views.campaign_payouts, name="campaign-payouts"),
    path("<slug:slug>/payouts/mark-paid/", payout_views.campaign_payouts_mark_paid, name="campaign-payouts-mark-paid"),
    path("<slug:slug>/review/<int:pk>/", review_views.campaign_review_example, name="campaign-review-example"),
    path("<slug:slug>/review/bulk/", review_views.review_bulk, name="campaign-review-bulk"),
    path(
        "<slug:slug>/review/assignments/<int:pk>/", review_views.review_assignment, name="campaign-review-assignment"
    ),
    path(
        "<slug:slug>/review/assignments/<int:pk>/reinclude/", review_views.reinclude_assignment,
        name="campaign-review-reinclude",
    ),
    path("<slug:slug>/review/gold/", unit_views.campaign_gold_override, name="campaign-gold-override"),
    path("<slug:slug>/units/", unit_views.campaign_units, name="campaign-units"),
    path("<slug:slug>/review/pairs/<int:pk>/correct/", review_views.correct_pair, name="campaign-correct-pair"),
    path("<slug:slug>/pilot/", pilot_views.campaign_pilot, name="campaign-pilot"),
    path("<slug:slug>/pilot/action/", pilot_views.campaign_pilot_action, name="campaign-pilot-action"),
    path("<slug:slug>/preview-as-worker/<slug:task>/", pilot_views.campaign_preview_as_worker, name="campaign-preview-as-worker"),
    path("<slug:slug>/", views.campaign_detail, name="campaign-detail"),
    path("<slug:slug>/progress/", views.campaign_progress, name="campaign-progress"),
    path("<slug:slug>/control/", views.campaign_control, name="campaign-control"),
    path("<slug:slug>/workers/", views.campaign_workers_page, name="campaign-workers"),
    path("<slug:slug>/leaderboard/", views.campaign_leaderboard, name="campaign-leaderboard"),
    path("<slug:slug>/leaderboard/summaries/", views.campaign_leaderboard_summaries, name="campaign-leaderboard-summaries"),
    path("<slug:slug>/judges/", judge_views.campaign_judges, name="campaign-judges"),
    path("<slug:slug>/qualifications/", views.campaign_qualifications, name="campaign-qualifications"),
    path(
        "<slug:slug>/qualifications/items/new/",
        qualification_views.qualification_item_new,
        name="campaign-qualification-item-new",
    ),
    path(
        "<slug:slug>/qualifications/items/<int:pk>/",
        qualification_views.qualification_item_edit,
        name="campaign-qualification-item-edit",
    ),
    path("<slug:slug>/workers/action/", views.campaign_worker_action, name="campaign-worker-action"),
    path("<slug:slug>/workers/<int:pk>/", worker_views.campaign_worker, name="campaign-worker"),
    path("<slug:slug>/workers/status/", worker_status_views.campaign_worker_status, name="campaign-worker-status"),
    path(
        "<slug:slug>/workers/status/data/", worker_status_views.campaign_worker_status_data, name="campaign-worker-status-data"
    ),
    path("<slug:slug>/messages/", message_views.campaign_messages, name="campaign-messages"),
    path("<slug:slug>/messages/<int:pk>/resend/", message_views.campaign_message_resend, name="campaign-message-resend"),
    path("<slug:slug>/invitations/", invitation_views.campaign_invitations, name="campaign-invitations"),
]
