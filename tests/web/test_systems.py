"""Adding a system to a running or finished campaign: only its presence HITs are created."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Campaign, System, SystemSummary
from annotation.services.systems import add_systems
from hits.models import HIT
from tests.conftest import launched_scu_campaign
from tests.web.conftest import settle_with_kept_pairs, upload

pytestmark = pytest.mark.django_db
NEW_SYSTEM = b'{"id": "a", "system": "s3", "summary": "Kids played in a park."}\n{"id": "b", "system": "s3", "summary": "The airport shut."}\n'


def _finish(campaign):
    HIT.objects.filter(batch_id=campaign.batch_id).update(state=HIT.State.COMPLETED)
    Campaign.objects.filter(pk=campaign.pk).update(state=Campaign.State.FINISHED)
    campaign.refresh_from_db()


def test_new_system_gets_only_its_presence_hits_and_reopens_a_finished_campaign(client_rita, draft):
    n_predicates = settle_with_kept_pairs(draft)
    draft.refresh_from_db()
    presence = HIT.objects.filter(batch_id=draft.batch_id, task_type__slug="presence")
    assert presence.count() == 2 * n_predicates  # two systems
    _finish(draft)
    response = client_rita.post(reverse("campaign-add-system", args=[draft.slug]), {"summaries": upload("s3.jsonl", NEW_SYSTEM)})
    assert response.status_code == 302
    s3 = System.objects.get(campaign=draft, name="s3")
    new_hits = presence.filter(state=HIT.State.OPEN)
    assert new_hits.count() == n_predicates
    new_summaries = set(SystemSummary.objects.filter(system=s3).values_list("pk", flat=True))
    assert {h.payload["summary"] for h in new_hits} == new_summaries
    assert all(len(h.payload["units"]) == 2 for h in new_hits)
    draft.refresh_from_db()
    assert draft.state == "running"
    assert HIT.objects.filter(batch_id=draft.batch_id, task_type__slug__in=["generation", "verification"], state="open").count() == 0


def test_examples_still_in_generation_pick_the_new_system_up_later(draft):
    from annotation.services.pipeline import launch_campaign

    launch_campaign(draft)
    draft.refresh_from_db()
    result = add_systems(draft, _file(NEW_SYSTEM))
    assert result.n_summaries == 2 and result.n_hits == 0  # no example has reached presence yet
    assert SystemSummary.objects.filter(system__campaign=draft).count() == 6


def _file(content: bytes, name="new.jsonl"):
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / name
    path.write_bytes(content)
    return path


def test_bad_new_system_files_write_nothing(client_rita, draft):
    settle_with_kept_pairs(draft)
    url = reverse("campaign-add-system", args=[draft.slug])
    n_hits = HIT.objects.count()
    cases = {
        b'{"id": "a", "system": "s1", "summary": "again"}\n{"id": "b", "system": "s1", "summary": "again"}\n': "system &#x27;s1&#x27; is already in the campaign",
        b'{"id": "a", "system": "s3", "summary": "only one"}\n': "system &#x27;s3&#x27; has no summary for &#x27;b&#x27;",
        NEW_SYSTEM + b'{"id": "zz", "system": "s3", "summary": "?"}\n': "line 3, field &#x27;id&#x27;: summary for unknown example &#x27;zz&#x27;",
        b'{"id": "a", "system": "s3"\n': "line 1: bad JSON",
    }
    for content, expected in cases.items():
        response = client_rita.post(url, {"summaries": upload("bad.jsonl", content)})
        assert response.status_code == 400
        html = response.content.decode()
        assert "Nothing was added" in html and expected in html, expected
    assert not System.objects.filter(name="s3").exists() and HIT.objects.count() == n_hits
    assert client_rita.post(url, {}).status_code == 400  # no file at all


def test_cancelled_campaign_takes_no_new_system(draft):
    from annotation.importing.readers import CampaignImportError
    from annotation.services.pipeline import cancel_campaign, launch_campaign

    launch_campaign(draft)
    cancel_campaign(draft)
    draft.refresh_from_db()
    with pytest.raises(CampaignImportError, match="cancelled"):
        add_systems(draft, _file(NEW_SYSTEM))


def test_score_a_new_system_automatically_instead(client_rita, draft):
    from annotation.models import AutoscoreRun

    settle_with_kept_pairs(draft)
    url = reverse("campaign-add-system", args=[draft.slug])
    page = client_rita.get(url).content.decode()
    assert 'id="autoscore-form"' in page and '<option value="lexical">' in page
    s2 = System.objects.get(campaign=draft, name="s2")
    response = client_rita.post(url, {"action": "autoscore", "judge": "lexical", "systems": ["s2"]}, follow=True)
    run = AutoscoreRun.objects.get()
    assert f"Automatic scoring run #{run.pk} started" in response.content.decode()
    assert run.judge_name == "lexical" and run.systems == [s2.pk]
    response = client_rita.post(url, {"action": "autoscore", "judge": "no-such-judge"}, follow=True)
    assert "Automatic scoring not started" in response.content.decode() and AutoscoreRun.objects.count() == 1


def test_new_hits_of_an_mturk_campaign_go_to_the_mturk_publisher(draft, monkeypatch, django_capture_on_commit_callbacks):
    from hits import outbox

    Campaign.objects.filter(pk=draft.pk).update(backend="mturk-sandbox")
    draft.refresh_from_db()
    n_predicates = settle_with_kept_pairs(draft)
    draft.refresh_from_db()
    sent = []
    monkeypatch.setattr(outbox, "send_now", lambda name, args: sent.append((name, args)))
    with django_capture_on_commit_callbacks(execute=True):
        result = add_systems(draft, _file(NEW_SYSTEM))
    assert result.n_hits == n_predicates
    # The new HITs are published; the new summaries' scores (and the campaign's figures) follow as a score update.
    assert sent == [("annotation.recompute_scores", [draft.pk, sorted(s.pk for s in SystemSummary.objects.filter(
        system__campaign=draft, system__name="s3"))]), ("hits.mturk.publish_batch", [draft.batch_id])]


def _launched_scu_campaign(tmp_path, name, rows):
    return launched_scu_campaign(tmp_path / "ds", name, rows, system="sysA", gold_share=0)


def test_new_system_of_an_scu_campaign_gets_presence_hits_for_every_unit(tmp_path):
    campaign = _launched_scu_campaign(tmp_path, "Units", [
        ("e1", "The dog barked. A cat ran away.", "The dog barked.", ["The dog barked.", "A cat ran away.", "It was loud.", "It was late.", "They left."]),
        ("e2", "Prices rose.", "Prices went up.", ["Prices rose."]),
    ])
    before = HIT.objects.filter(batch_id=campaign.batch_id).count()
    assert before == 2 + 1  # e1: 5 units in HITs of 4 → 2; e2: 1
    result = add_systems(campaign, _file(b'{"id": "e1", "system": "sysB", "summary": "A dog."}\n{"id": "e2", "system": "sysB", "summary": "Up."}\n'))
    assert result.n_hits == 3
    sysb = set(SystemSummary.objects.filter(system__name="sysB").values_list("pk", flat=True))
    new = HIT.objects.filter(batch_id=campaign.batch_id, payload__summary__in=list(sysb))
    assert sorted(len(h.payload["units"]) for h in new) == [1, 1, 4]


def test_a_system_added_to_a_paused_campaign_waits_set_aside_until_the_resume(tmp_path):
    from annotation.services.pipeline import pause_campaign, resume_campaign

    campaign = _launched_scu_campaign(tmp_path, "Paused units", [("e1", "The dog barked.", "The dog barked.", ["The dog barked.", "It was loud."])])
    pause_campaign(campaign)
    campaign.refresh_from_db()
    result = add_systems(campaign, _file(b'{"id": "e1", "system": "sysB", "summary": "A dog."}\n'))
    assert result.n_hits == 1
    assert set(HIT.objects.filter(batch_id=campaign.batch_id).values_list("state", flat=True)) == {"paused"}
    resume_campaign(campaign)
    assert set(HIT.objects.filter(batch_id=campaign.batch_id).values_list("state", flat=True)) == {"open"}
