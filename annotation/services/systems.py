"""Adding a system to a campaign that already runs or has finished.

A new system's summaries are read with the import's own reader and checked
like an import (every problem with file, line and field; nothing written
while any remains).  Systems are compared on the same examples, so a new
system must summarise exactly the examples the campaign's systems cover.

Then, in one transaction, only the presence HITs the new summaries need are
created (the pipeline's own ``presence_hit_rows`` / ``scu_presence_hit_rows``):
for every example whose presence stage has started, one HIT per (new
summary, predicate with kept QA pairs).  Examples still in QA generation
pick the new summaries up when their presence stage starts.  A finished
campaign with new HITs runs again until they are judged.  In a budgeted campaign
(human presence share below 100%) the new HITs join the routing's candidates
instead: the next routing pass judges them and posts, from all the HITs not
yet routed (mostly the new ones), the least-sure until people have the share
of all the campaign's presence HITs again.  Instead of crowd
judges, the new system can be scored automatically (the automation layer's
``start_autoscore_run``, offered beside this on the add-system page).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from annotation.importing.readers import ProblemList, read_summaries
from annotation.models import Campaign, Example, System, SystemSummary
from annotation.services.followups import schedule_score_update
from hits.models import Batch
from hits.mturk.publishing import publish_soon
from hits.services import set_batch_state


@dataclass
class AddedSystems:
    systems: list[str] = field(default_factory=list)
    n_summaries: int = 0
    n_hits: int = 0
    #: Budgeted presence (share below 100%): HITs kept for the judge's routing instead of posted at once.
    n_routed_candidates: int = 0


def add_systems(campaign: Campaign, summaries: Path | str, by=None) -> AddedSystems:
    """Add the systems of a summaries JSONL file and create only their presence HITs.

    Raises ``CampaignImportError`` (nothing written) when a line is bad, a
    system already exists, an example is unknown, or a new system does not
    cover exactly the campaign's judged examples.
    """
    problems = ProblemList()
    path = Path(summaries)
    records = read_summaries(path, problems)
    name = path.name
    if campaign.state == Campaign.State.CANCELLED:
        problems.add(name, None, None, "the campaign is cancelled: no system can be added")
    examples = dict(Example.objects.filter(campaign=campaign).values_list("external_id", "pk"))
    existing = set(campaign.systems.values_list("name", flat=True))
    judged = set(
        SystemSummary.objects.filter(system__campaign=campaign).values_list("example__external_id", flat=True).distinct()
    )
    by_system: dict[str, set[str]] = {}
    for record in records:
        if record.system in existing:
            problems.add(name, record.line, "system", f"system '{record.system}' is already in the campaign")
            continue
        if record.id not in examples:
            problems.add(name, record.line, "id", f"summary for unknown example '{record.id}'")
            continue
        by_system.setdefault(record.system, set()).add(record.id)
    for system, ids in sorted(by_system.items()):
        if not judged:
            continue
        missing, extra = sorted(judged - ids), sorted(ids - judged)
        if missing:
            shown = ", ".join(f"'{m}'" for m in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            problems.add(name, None, "system", f"system '{system}' has no summary for {shown}")
        if extra:
            shown = ", ".join(f"'{m}'" for m in extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
            problems.add(
                name, None, "id", f"system '{system}' summarises {shown}, which no other system does: systems are compared on the same examples"
            )
    problems.raise_if_any()
    return _write_systems(campaign, [r for r in records if r.system in by_system])


@transaction.atomic
def _write_systems(campaign: Campaign, records) -> AddedSystems:
    from annotation.services.pipeline import post_presence_rows, presence_hit_rows, scu_presence_hit_rows

    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    names = sorted({r.system for r in records})
    systems = {s.name: s for s in System.objects.bulk_create([System(campaign=campaign, name=n) for n in names])}
    examples = {e.external_id: e for e in Example.objects.filter(campaign=campaign)}
    summaries = SystemSummary.objects.bulk_create(
        [SystemSummary(system=systems[r.system], example=examples[r.id], text=r.summary) for r in records], batch_size=2000
    )
    result = AddedSystems(systems=names, n_summaries=len(summaries))
    # The new summaries' penalties, the new systems' rows and the campaign's figures (the intervals resample
    # examples over every system) follow, with the score update, after the commit.
    schedule_score_update(campaign, [s.pk for s in summaries])
    if campaign.state == Campaign.State.DRAFT or campaign.batch_id is None:
        return result  # launching creates every HIT, the new system's included
    if campaign.unit_type == Campaign.UnitType.SCU:
        rows = scu_presence_hit_rows(campaign, SystemSummary.objects.filter(pk__in=[s.pk for s in summaries]))
    else:
        rows = []
        by_example: dict[int, list[int]] = {}
        for summary in summaries:
            by_example.setdefault(summary.example_id, []).append(summary.pk)
        started = {e.pk: e for e in examples.values() if e.presence_started}
        for example_id, summary_ids in by_example.items():
            if example_id in started:
                rows.extend(presence_hit_rows(campaign, started[example_id], summary_ids))
    # Posted, or in a budgeted campaign kept for the routing (which posts the least-sure of all not yet routed).
    result.n_hits = post_presence_rows(campaign, rows)
    result.n_routed_candidates = len(rows) - result.n_hits
    if result.n_hits and campaign.state == Campaign.State.PAUSED:
        # Set aside like the rest of the paused campaign's HITs, by the pause's own step (the
        # campaign row is locked, so no resume can come in between); the resume opens them.
        set_batch_state(campaign.batch, Batch.State.PAUSED)
    if rows and campaign.state == Campaign.State.FINISHED:
        # New work to do: the campaign runs again until the new system is judged.
        Campaign.objects.filter(pk=campaign.pk).update(state=Campaign.State.RUNNING)
        Batch.objects.filter(pk=campaign.batch_id).update(state=Batch.State.ACTIVE)
    if result.n_hits:
        # The MTurk backend's hook: on an MTurk batch, the new HITs are published after the commit.
        publish_soon(Batch.objects.get(pk=campaign.batch_id))
    return result
