"""One campaign under each presence rule, worked by the simulated crowd with the same seed and the same answers
(issue 29): the same gold labels, and fewer presence assignments under the adaptive rule."""

from __future__ import annotations

import pytest

from annotation.management.simulation import simulate_crowd
from annotation.models import Campaign, GoldPresence
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from hits.models import Assignment, HIT
from tests.judges.test_hybrid_campaign import write_folder

pytestmark = pytest.mark.django_db(transaction=True)


def _campaign(folder, name: str, rule: str) -> Campaign:
    campaign = import_campaign(name=name, folder=folder).campaign
    # No gold checks: which HITs become one is drawn per campaign, and their units would get no crowd label.
    Campaign.objects.filter(pk=campaign.pk).update(presence_judges=rule, gold_share=0.0)
    campaign.refresh_from_db()
    launch_campaign(campaign)
    campaign.refresh_from_db()
    return campaign


def _gold(campaign) -> dict:
    return {
        (g.unit.example.external_id, g.unit.index, g.summary.system.name): g.present
        for g in GoldPresence.objects.filter(summary__system__campaign=campaign, origin=GoldPresence.Origin.MAJORITY)
        .select_related("unit__example", "summary__system")
    }


def _presence_assignments(campaign) -> int:
    return Assignment.objects.filter(
        hit__batch_id=campaign.batch_id, hit__task_type__slug="presence", hit__kind=HIT.Kind.REGULAR,
        state__in=Assignment.DONE_STATES,
    ).count()


def test_the_adaptive_rule_gives_the_same_gold_labels_for_fewer_presence_assignments(tmp_path, eager_celery):
    folder = write_folder(tmp_path / "data", n_examples=3, n_units=8, systems=("alpha", "beta"))
    fixed = _campaign(folder, "Paper rule", Campaign.PresenceJudges.FIXED)
    adaptive = _campaign(folder, "Adaptive rule", Campaign.PresenceJudges.ADAPTIVE)
    n_hits = HIT.objects.filter(batch_id=fixed.batch_id, task_type__slug="presence").count()
    assert n_hits == 12 and HIT.objects.filter(batch_id=adaptive.batch_id, max_assignments=2).count() == n_hits
    for campaign in (fixed, adaptive):
        report = simulate_crowd(campaign, 5, seed=7, accuracy=0.9, same_answers=True, max_seconds=600)
        assert report.campaign_state == "finished", report.lines()

    fixed_gold, adaptive_gold = _gold(fixed), _gold(adaptive)
    assert len(fixed_gold) == 3 * 8 * 2
    assert adaptive_gold == fixed_gold
    # The judges were not perfect: some HITs needed the third judge, not all.
    grown = HIT.objects.filter(batch_id=adaptive.batch_id, max_assignments=3).count()
    assert 0 < grown < n_hits
    n_fixed, n_adaptive = _presence_assignments(fixed), _presence_assignments(adaptive)
    assert n_fixed == 3 * n_hits
    assert n_adaptive == 2 * n_hits + grown < n_fixed
    print(f"presence assignments: fixed {n_fixed}, adaptive {n_adaptive} ({1 - n_adaptive / n_fixed:.1%} fewer); "
          f"{grown} of {n_hits} HITs got a third judge")
