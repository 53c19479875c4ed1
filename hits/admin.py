from django.contrib import admin

from .models import LedgerEntry, MTurkAssignment, MTurkHIT, MTurkQualificationType, Worker


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("external_id", "mturk_worker_id", "user", "created_at")
    search_fields = ("external_id", "mturk_worker_id", "user__username")


# The ledger and the MTurk records are read-only here: they change only through hits.payments and hits.mturk.
class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "kind", "amount", "state", "worker", "assignment", "batch")
    list_filter = ("kind", "state", "batch")
    search_fields = ("worker__external_id", "request_token")


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
    list_display = ("name", "task_type", "sandbox", "qualification_type_id")
