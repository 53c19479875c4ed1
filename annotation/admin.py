from django.contrib import admin

from .models import Campaign, ContentUnit, Example, GoldPresence, Predicate, ReferenceSentence, System, SystemSummary


def researcher_users():
    """Users who may own or share a campaign: admins and researchers, never a crowd worker's account."""
    from annotation.services.roles import researchers

    return researchers()


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "unit_type", "state", "backend", "owner", "created_at")
    list_filter = ("unit_type", "state", "backend")
    search_fields = ("name", "slug", "description")
    prepopulated_fields = {"slug": ("name",)}
    filter_horizontal = ("shared_with",)
    # The state changes through launch, pause, resume and cancel (progress page), which move the HITs with it.
    readonly_fields = ("state", "batch", "launched_at")

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "owner":
            kwargs["queryset"] = researcher_users()
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "shared_with":
            kwargs["queryset"] = researcher_users()
        return super().formfield_for_manytomany(db_field, request, **kwargs)


@admin.register(Example)
class ExampleAdmin(admin.ModelAdmin):
    list_display = ("external_id", "campaign", "position")
    list_filter = ("campaign",)
    search_fields = ("external_id", "reference")


class PredicateInline(admin.TabularInline):
    model = Predicate
    extra = 1
    fields = ("start", "end", "text", "lemma", "origin", "edited_by_researcher", "flagged")


@admin.register(ReferenceSentence)
class ReferenceSentenceAdmin(admin.ModelAdmin):
    list_display = ("example", "index", "text")
    list_filter = ("example__campaign",)
    search_fields = ("text", "example__external_id")
    inlines = [PredicateInline]

    def save_formset(self, request, form, formset, change):
        # A predicate added or changed here is a researcher edit; the sentence text names the span.
        instances = formset.save(commit=False)
        for obj in formset.deleted_objects:
            obj.delete()
        for predicate in instances:
            sentence = form.instance
            predicate.text = sentence.text[predicate.start : predicate.end][:200]
            predicate.lemma = predicate.lemma or predicate.text.lower()
            predicate.edited_by_researcher = True
            predicate.example_id = sentence.example_id
            if predicate._state.adding:
                predicate.origin = Predicate.Origin.RESEARCHER
            predicate.save()


@admin.register(Predicate)
class PredicateAdmin(admin.ModelAdmin):
    list_display = ("text", "lemma", "sentence", "origin", "edited_by_researcher", "flagged")
    list_filter = ("origin", "flagged", "sentence__example__campaign")
    search_fields = ("text", "lemma")


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ("name", "campaign")
    list_filter = ("campaign",)


@admin.register(SystemSummary)
class SystemSummaryAdmin(admin.ModelAdmin):
    list_display = ("system", "example")
    list_filter = ("system__campaign",)
    search_fields = ("text", "example__external_id")


@admin.register(ContentUnit)
class ContentUnitAdmin(admin.ModelAdmin):
    list_display = ("text", "kind", "state", "example", "predicate", "author", "round")
    list_filter = ("kind", "state", "example__campaign")
    search_fields = ("text", "question")


@admin.register(GoldPresence)
class GoldPresenceAdmin(admin.ModelAdmin):
    list_display = ("unit", "summary", "present", "n_present", "n_judgments", "origin")
    list_filter = ("origin", "present")


from annotation.models import Job, QAPairCorrection  # noqa: E402  (researcher pages, issue 8)


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("pk", "kind", "campaign", "state", "done", "total", "created_by", "created_at", "finished_at")
    list_filter = ("kind", "state")
    readonly_fields = ("created_at", "started_at", "finished_at")


@admin.register(QAPairCorrection)
class QAPairCorrectionAdmin(admin.ModelAdmin):
    """The log of corrections: read-only, so that no one rewrites who changed what."""

    list_display = ("unit", "changed_by", "old_question", "new_question", "created_at")
    search_fields = ("old_question", "new_question", "reason")

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False
