from django.contrib import admin
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from . import qualifications
from .invitations import invitation_url, revoke_invitation
from .models import (
    HIT,
    Assignment,
    BatchBlock,
    Invitation,
    LedgerEntry,
    MessageRecipient,
    Qualification,
    QualificationEvent,
    TaskType,
    Worker,
    WorkerMessage,
)


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("external_id", "mturk_worker_id", "user", "blocked", "invitation", "created_at")
    list_filter = ("blocked", "invitation")
    search_fields = ("external_id", "mturk_worker_id", "user__username")
    fields = ("external_id", "mturk_worker_id", "user", "blocked", "blocked_reason", "auto_accept_next", "invitation",
              "created_at")
    readonly_fields = ("invitation", "created_at")

    def save_model(self, request, obj, form, change):
        # "Blocked" is a platform-wide block: it goes through the logged action (the worker sees the reason,
        # MTurk is told), never a bare column change.
        blocked, reason = obj.blocked, obj.blocked_reason
        if change and "blocked" in form.changed_data:
            obj.blocked = form.initial.get("blocked", False)
            obj.blocked_reason = form.initial.get("blocked_reason", "")
            super().save_model(request, obj, form, change)
            qualifications.set_blocked(obj, blocked, reason or ("blocked by an admin" if blocked else "unblocked by an admin"), by=request.user)
            obj.refresh_from_db()
            return
        super().save_model(request, obj, form, change)
        if not change and blocked:
            qualifications.set_blocked(obj, True, reason or "blocked by an admin", by=request.user)


# The ledger and the markets' records are read-only here: they change only through hits.payments and the markets
# (whose admin pages, e.g. ``hits.mturk.admin``, the seam loads).
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


@admin.register(TaskType)
class TaskTypeAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "position", "assignment_duration")
    # The slug names the handler, and whether a type is tested follows from the campaigns' tests.
    readonly_fields = ("slug", "requires_qualification")

    def has_add_permission(self, request):
        return False  # task types come from the apps' handlers

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(HIT)
class HITAdmin(ReadOnlyAdmin):
    """HITs change only through the hand-out, the pipeline and the campaign controls."""

    list_display = ("pk", "task_type", "kind", "batch", "state", "n_taken", "n_submitted", "max_assignments", "reward")
    list_filter = ("kind", "state", "task_type", "batch")
    exclude = ("answer_key",)


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ("pk", "hit", "worker", "attempt", "state", "accepted_at", "submitted_at")
    list_filter = ("state", "hit__task_type", "hit__batch")
    search_fields = ("worker__external_id",)
    raw_id_fields = ("hit", "worker")
    # The "hit" column shows the HIT's task type: one query per row without this.
    list_select_related = ("hit__task_type", "worker")


@admin.register(Qualification)
class QualificationAdmin(ReadOnlyAdmin):
    """Read-only: tests, revocations and reinstatements are decided on each campaign's workers page (logged)."""

    list_display = ("worker", "task_type", "batch", "state", "attempts", "score", "updated_at")
    list_filter = ("state", "task_type", "batch")
    search_fields = ("worker__external_id",)


@admin.register(QualificationEvent)
class QualificationEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "worker", "task_type", "batch", "action", "decided_by", "automatic", "reason")
    list_filter = ("action", "automatic", "task_type")
    search_fields = ("worker__external_id", "reason")


class MessageRecipientInline(admin.TabularInline):
    model = MessageRecipient
    fields = ("worker", "status", "code", "detail", "emailed", "read_at")
    readonly_fields = fields
    can_delete = False
    extra = 0

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WorkerMessage)
class WorkerMessageAdmin(ReadOnlyAdmin):
    """The log of messages to workers (sent from a campaign's workers page or the API; never from here)."""

    list_display = ("created_at", "batch", "sender_name", "market", "subject", "sent_at")
    list_filter = ("market",)
    search_fields = ("subject", "sender_name", "recipients__worker__external_id")
    inlines = [MessageRecipientInline]


@admin.register(BatchBlock)
class BatchBlockAdmin(ReadOnlyAdmin):
    list_display = ("worker", "batch", "decided_by", "created_at", "reason")


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("__str__", "batch", "uses", "max_uses", "expires_at", "revoked_at", "registered", "link")
    list_filter = ("batch",)
    fields = ("note", "batch", "max_uses", "expires_at", "uses", "revoked_at", "token", "created_by", "link",
              "registrations")
    readonly_fields = ("uses", "revoked_at", "token", "created_by", "link", "registrations")
    actions = ["revoke"]

    def get_queryset(self, request):
        # The page's own address for the links it shows (no PUBLIC_BASE_URL: the host and port it was asked on).
        self.request = request
        return super().get_queryset(request).annotate(n_registered=Count("registrations"))

    @admin.display(description="Registered", ordering="n_registered")
    def registered(self, obj):
        return obj.n_registered

    @admin.display(description="Registrations through this link")
    def registrations(self, obj):
        """Who signed up with the link, when (each opens its worker)."""
        workers = list(obj.registrations.select_related("user").order_by("created_at")) if obj.pk else []
        if not workers:
            return "Nobody yet."
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "", '<li><a href="{}">{}</a> ({}), {}</li>',
                ((reverse("admin:hits_worker_change", args=[w.pk]), w.external_id,
                  w.user.username if w.user else "no account", w.created_at.strftime("%Y-%m-%d %H:%M UTC")) for w in workers),
            ),
        )

    @admin.display(description="Link")
    def link(self, obj):
        return invitation_url(obj, getattr(self, "request", None)) if obj.pk else ""

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    @admin.action(description="Revoke the selected links")
    def revoke(self, request, queryset):
        for invitation in queryset:
            revoke_invitation(invitation)
