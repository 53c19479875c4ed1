"""A researcher's gold override (the unit inspector, issue 40): the label of one unit in one system summary set by
hand, with a required note.

The label is a ``GoldPresence`` of origin "override", which wins over the crowd's majority and an imported label
wherever gold labels are read (scores, hybrid scores, export, review).  Every change, and every withdrawal, is
logged in ``GoldOverride`` (who, when, the label that counted before, the new one, the note); the summary's
scores, its system's scores and a budgeted campaign's hybrid scores are recomputed in the same transaction.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import Campaign, ContentUnit, GoldOverride, GoldPresence, SystemSummary
from annotation.services.scores import recompute_summary_scores

NOTE_MAX = 2000
ORDER = (GoldPresence.Origin.OVERRIDE, GoldPresence.Origin.MAJORITY, GoldPresence.Origin.IMPORTED)


def counting_label(unit_id: int, summary_id: int) -> tuple[bool | None, str]:
    """(the gold label that counts, its origin): an override, else the crowd's majority, else an imported label;
    (None, "") when there is none."""
    labels = dict(GoldPresence.objects.filter(unit_id=unit_id, summary_id=summary_id).values_list("origin", "present"))
    for origin in ORDER:
        if origin in labels:
            return labels[origin], origin
    return None, ""


def unit_in_summary(campaign: Campaign, unit_id: int, summary_id: int) -> tuple[ContentUnit, SystemSummary]:
    """The campaign's unit and summary, which must belong to the same example; ``ValidationError`` otherwise."""
    unit = ContentUnit.objects.filter(pk=unit_id, example__campaign=campaign).first()
    summary = SystemSummary.objects.filter(pk=summary_id, system__campaign=campaign).first()
    if unit is None or summary is None:
        raise ValidationError("No such unit or summary in this campaign.")
    if unit.example_id != summary.example_id:
        raise ValidationError("The unit and the summary belong to different examples: the unit is never judged there.")
    return unit, summary


@transaction.atomic
def override_gold(campaign: Campaign, unit_id: int, summary_id: int, present: bool | None, note: str, by) -> GoldOverride:
    """Set the gold label of a unit in a summary (``present`` True or False), or withdraw the override (None) so
    the crowd's majority (or the imported label) counts again.  ``note`` is required.  Logged, and the scores
    are recomputed; ``ValidationError`` (nothing changed) for a missing note, a foreign unit or summary, a label
    that is already the override, or a withdrawal where there is no override."""
    note = (note or "").strip()
    if not note:
        raise ValidationError("Say why in the note: every override is logged with its note.")
    if len(note) > NOTE_MAX:
        raise ValidationError(f"The note is too long ({len(note)} characters; at most {NOTE_MAX}).")
    unit, summary = unit_in_summary(campaign, unit_id, summary_id)
    # One override of a pair at a time: the rows of the pair are locked while the old label is read and replaced.
    list(GoldPresence.objects.select_for_update().filter(unit=unit, summary=summary))
    old_present, old_origin = counting_label(unit.pk, summary.pk)
    current = GoldPresence.objects.filter(unit=unit, summary=summary, origin=GoldPresence.Origin.OVERRIDE).first()
    if present is None:
        if current is None:
            raise ValidationError("This unit has no override to withdraw.")
        current.delete()
    else:
        if current is not None and current.present == present:
            raise ValidationError(f"The override already says {'present' if present else 'not present'}.")
        GoldPresence.objects.update_or_create(
            unit=unit, summary=summary, origin=GoldPresence.Origin.OVERRIDE,
            defaults={"present": present, "n_judgments": 0, "n_present": 0, "decided_by": ""},
        )
    entry = GoldOverride.objects.create(
        unit=unit, summary=summary, old_present=old_present, old_origin=old_origin, new_present=present, note=note,
        by=by if getattr(by, "is_authenticated", False) else None,
    )
    recompute_summary_scores(campaign, [summary.pk])
    return entry
