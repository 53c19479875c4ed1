"""MTurk's records in the admin, read-only: they change only through ``hits.mturk`` (loaded by the seam,
``MTurkMarket.ready``)."""

from django.contrib import admin

from hits.admin import ReadOnlyAdmin
from hits.mturk.models import MTurkAssignment, MTurkHIT, MTurkQualificationType, MTurkRequest


@admin.register(MTurkHIT)
class MTurkHITAdmin(ReadOnlyAdmin):
    list_display = ("mturk_hit_id", "hit", "sandbox", "max_assignments", "reward", "published_at", "expired_at", "deleted_at")
    list_filter = ("sandbox",)
    search_fields = ("mturk_hit_id",)


@admin.register(MTurkAssignment)
class MTurkAssignmentAdmin(ReadOnlyAdmin):
    list_display = ("mturk_assignment_id", "mturk_worker_id", "status", "assignment", "created_at")
    list_filter = ("status",)
    search_fields = ("mturk_assignment_id", "mturk_worker_id")


@admin.register(MTurkQualificationType)
class MTurkQualificationTypeAdmin(ReadOnlyAdmin):
    list_display = ("name", "task_type", "batch", "sandbox", "qualification_type_id")


@admin.register(MTurkRequest)
class MTurkRequestAdmin(ReadOnlyAdmin):
    """Calls with a UniqueRequestToken: when each token was first sent, and how the call was settled."""

    list_display = ("operation", "key", "token", "first_sent_at", "sends", "renewals", "outcome", "settled_at")
    list_filter = ("operation", "outcome")
    search_fields = ("key", "token")
