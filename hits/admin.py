from django.contrib import admin

from .models import Worker


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("external_id", "mturk_worker_id", "user", "created_at")
    search_fields = ("external_id", "mturk_worker_id", "user__username")
