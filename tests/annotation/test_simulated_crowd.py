"""A whole campaign from import to presence judgments, done by the simulated crowd over HTTP."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db.models import Count

from annotation.models import Campaign, ContentUnit, GoldPresence, PresenceJudgment, SystemSummary

pytestmark = pytest.mark.django_db(transaction=True)


def test_simulated_crowd_completes_the_demo_campaign(capsys, eager_celery):
    # The platform is served in-process with its follow-ups run in-process (no Celery worker here).
    call_command("load_demo", password="demo-pass-123")
    call_command("simulate_crowd", campaign="demo-news", workers=8, seed=3)
    out = capsys.readouterr().out
    assert "campaign finished" in out
    for stage in ("generation", "verification", "presence"):
        assert f"{stage}: " in out
    campaign = Campaign.objects.get(slug="demo-news")
    assert campaign.state == "finished"
    kept = ContentUnit.objects.filter(example__campaign=campaign, state="kept")
    assert kept.count() >= 20
    # Every system summary has presence judgments: the demo uses the adaptive rule, so two per kept unit, and
    # three on the units of HITs whose first two judges disagreed somewhere; every label is a decided majority.
    assert campaign.presence_judges == "adaptive"
    counts = []
    for summary in SystemSummary.objects.filter(system__campaign=campaign):
        n_units = kept.filter(example=summary.example_id).count()
        per_unit = PresenceJudgment.objects.filter(summary=summary).values("unit_id").annotate(n=Count("pk"))
        counts += [row["n"] for row in per_unit]
        assert len(per_unit) == n_units and {row["n"] for row in per_unit} <= {2, 3}
        assert GoldPresence.objects.filter(summary=summary, decided_by="majority").count() == n_units
    print(f"presence judgments per unit: {counts.count(2)} units with 2, {counts.count(3)} with 3")


def test_worker_table_figures_match_the_judgments_in_a_fixed_number_of_queries():
    """The researchers' worker table: every worker's figures, from grouped queries (not a few per worker)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Verification
    from annotation.selectors.campaigns import campaign_workers
    from annotation.services.quality import worker_figures

    call_command("load_demo", password="demo-pass-123")
    call_command("simulate_crowd", campaign="demo-news", workers=8, seed=5)
    campaign = Campaign.objects.get(slug="demo-news")
    with CaptureQueriesContext(connection) as queries:
        rows = campaign_workers(campaign)
    assert len(rows) >= 8
    assert len(queries.captured_queries) <= 15
    by_worker = {row["worker"].pk: row["figures"] for row in rows}
    # Totals add up to what is stored.
    assert sum(f["presence"]["judgments"] for f in by_worker.values()) == PresenceJudgment.objects.filter(
        summary__system__campaign=campaign
    ).count()
    assert sum(f["verification"]["questions_judged"] for f in by_worker.values()) == Verification.objects.filter(
        unit__example__campaign=campaign
    ).count()
    for row in rows:
        worker = row["worker"]
        # The table and the single-worker figures (the worker's own page, the cross-checks) agree.
        assert row["figures"] == worker_figures(campaign, worker)
        # Verifier agreement, counted here pair by pair.
        compared = agreed = 0
        for verification in Verification.objects.filter(worker=worker, unit__example__campaign=campaign):
            other = Verification.objects.filter(unit_id=verification.unit_id).exclude(worker=worker).order_by("pk").first()
            if other is not None:
                compared += 1
                agreed += int(other.valid == verification.valid)
        agreement = row["figures"]["verification"]["agreement"]
        assert agreement["n"] == compared
        assert agreement["value"] == (agreed / compared if compared else None)
        # Agreement with the majority, counted unit by unit.
        n = agree = 0
        for judgment in PresenceJudgment.objects.filter(worker=worker, summary__system__campaign=campaign):
            gold = GoldPresence.objects.filter(unit_id=judgment.unit_id, summary_id=judgment.summary_id, origin="majority").first()
            if gold is not None and gold.present is not None:
                n += 1
                agree += int(gold.present == judgment.present)
        assert row["figures"]["presence"]["majority_agreement"] == {"value": agree / n if n else None, "n": n}


def test_cross_checks_of_many_workers_share_their_queries():
    """The coalesced cross-check task computes every worker's figures together, not worker by worker."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.services.quality import FAILING_CHECKS, worker_figures
    from annotation.tasks import update_worker_quality_task
    from hits.models import QualificationEvent, Worker

    call_command("load_demo", password="demo-pass-123")
    call_command("simulate_crowd", campaign="demo-news", workers=8, seed=5)
    campaign = Campaign.objects.get(slug="demo-news")
    workers = list(Worker.objects.filter(external_id__startswith="sim-"))
    assert len(workers) >= 8
    failing = {
        w.pk: sum(1 for slug, names in FAILING_CHECKS.items() if any(worker_figures(campaign, w)[slug][n]["status"] == "failing" for n in names))
        for w in workers
    }
    events_before = QualificationEvent.objects.count()
    with CaptureQueriesContext(connection) as queries:
        result = update_worker_quality_task(campaign.pk, [w.pk for w in workers])
    assert set(result) == {w.pk for w in workers}
    # Figures and task types once for all; a failing check costs a few more queries (qualification, revocation).
    assert len(queries.captured_queries) <= 12 + 8 * sum(failing.values())
    # A second run revokes nothing new (idempotent).
    update_worker_quality_task(campaign.pk, [w.pk for w in workers])
    assert QualificationEvent.objects.count() == events_before + sum(len(v) for v in result.values())


def test_a_rehearsal_that_fails_after_the_launch_says_the_campaign_runs_and_how_to_go_on(monkeypatch, tmp_path):
    """Issue 40: a command that fails after changing state says so and names the command that finishes the job."""
    from django.core.management import CommandError

    from annotation.management.commands import simulate_crowd as command
    from annotation.services.campaign_import import import_campaign
    from tests.conftest import write_jsonl

    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    campaign = import_campaign(name="Fails", references=refs, summaries=sums).campaign

    def broken(*args, **kwargs):
        raise ConnectionResetError("the in-process server went away")

    monkeypatch.setattr(command, "simulate_crowd", broken)
    with pytest.raises(CommandError) as failed:
        call_command("simulate_crowd", campaign=campaign.slug, workers=2)
    message = str(failed.value)
    assert "the in-process server went away" in message
    assert f"'{campaign.slug}' was launched before this failed and is running now" in message
    assert f"`manage.py simulate_crowd --campaign {campaign.slug} --backend local --workers 2` finishes the job" in message
    assert Campaign.objects.get(pk=campaign.pk).state == Campaign.State.RUNNING
