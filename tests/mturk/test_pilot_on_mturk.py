"""Issue 40 on (stubbed) MTurk: a pilot's HITs go through the launch's publishing path (one CreateHIT each, with
its request token, so a retried call never creates a HIT twice), MTurk workers do them on the framed page, and
the pilot page's median times come from their confirmed work; the launch withdraws what is left of the pilot."""

from __future__ import annotations

import pytest

from annotation.models import Campaign, ContentUnit, PresenceJudgment, Verification
from annotation.services import pilot
from annotation.services.pipeline import launch_campaign
from hits.models import Assignment, HIT
from hits.mturk.models import MTurkHIT
from hits.mturk.publishing import publish_batch
from tests.mturk.test_end_to_end import confirm_by_sync, expect_publish, mturk_settings, work_on  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


class PilotAnswers:
    """Answers a careful worker gives on the pilot's inline items."""

    def generation(self, hit, worker, careless):
        inline = hit.payload["inline"]
        verb = inline["sentence"][inline["start"] : inline["end"]]
        subject = inline["sentence"][: inline["start"]].strip()
        return {"q1": f"Who {verb} something?", "q1_a1": subject}

    def verification(self, hit, worker, careless):
        data = {}
        for q in hit.payload["inline"]["questions"]:
            data[f"v_{q['id']}"] = "valid"
            data[f"v_{q['id']}_a1"] = q["answers"][0]
        return data

    def presence(self, hit, worker, careless):
        return {f"p_{k}": "1" for k in range(1, len(hit.payload["inline"]["pairs"]) + 1)}


def test_a_pilot_on_mturk_is_published_worked_measured_and_ended_by_the_launch(
    stubbed, tmp_path, client, django_capture_on_commit_callbacks, settings
):
    from annotation.services.campaign_import import import_campaign
    from tests.conftest import write_jsonl

    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    campaign = import_campaign(name="Pilot on MTurk", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(backend="mturk-sandbox")
    campaign.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        pilot.start_pilot(campaign, 1)
    campaign.refresh_from_db()
    batch = campaign.batch
    assert batch.backend == "mturk-sandbox" and batch.state == "active"
    published = expect_publish(stubbed, batch)
    assert [h.task_type.slug for h in published] == ["generation"] and published[0].payload["pilot"]
    for callback in callbacks:
        callback()
    assert MTurkHIT.objects.count() == 1

    settings.MTURK_APPROVE_AFTER_HOURS = 1000  # reviews are not this test's
    counter = [1]
    for _ in range(3):  # generation, then the verification and presence HITs its pairs open
        for hit in HIT.objects.filter(batch=batch, state="open", mturk__isnull=False).order_by("pk"):
            work_on(client, hit, PilotAnswers(), counter)
        confirm_by_sync(stubbed, batch)
        expect_publish(stubbed, batch)
        publish_batch(batch)
    assert set(HIT.objects.filter(batch=batch).values_list("task_type__slug", "state")) == {
        ("generation", "completed"), ("verification", "completed"), ("presence", "completed")}
    assert not (ContentUnit.objects.exists() or Verification.objects.exists() or PresenceJudgment.objects.exists())
    Assignment.objects.filter(hit__batch=batch).update(work_seconds=72)
    rows = {row.slug: row for row in pilot.pilot_report(campaign)}
    assert {slug: (row.submitted, row.median_seconds) for slug, row in rows.items()} == {
        "generation": (1, 72.0), "verification": (1, 72.0), "presence": (1, 72.0)}

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        launch_campaign(campaign)
    campaign.refresh_from_db()
    assert campaign.state == "running" and not campaign.pilot_running
    # The launch publishes its own generation HIT, never a pilot's again.
    launched = expect_publish(stubbed, batch)
    assert [h.payload.get("pilot") for h in launched] == [None]
    for callback in callbacks:
        callback()
