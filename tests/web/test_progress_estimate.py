"""The progress page shows the cost estimate beside the cost so far, its redo assumption, and the estimate
updated from the redo rate observed."""

from __future__ import annotations

import re

import pytest

from annotation.models import Predicate
from annotation.services.costs import campaign_cost_preview
from annotation.services.pipeline import launch_campaign
from hits.models import HIT

pytestmark = pytest.mark.django_db


def test_estimate_its_assumption_and_the_observed_redo_rate(client_rita, draft):
    launch_campaign(draft)
    draft.refresh_from_db()
    url = f"/campaigns/{draft.slug}/progress/"
    html = client_rita.get(url).content.decode()
    assumed = campaign_cost_preview(draft, redo_share=0.10).total
    assert f'of an estimated <strong id="estimate">${assumed:.2f}</strong>' in html
    assert "assumes 10% of predicates go round again" in html and "No predicate has finished yet" in html
    # Two predicates settled, one of which needed a second generation round: 50% observed.
    predicates = list(Predicate.objects.filter(example__campaign=draft)[:2])
    Predicate.objects.filter(pk__in=[p.pk for p in predicates]).update(settled=True)
    first = HIT.objects.filter(batch_id=draft.batch_id, task_type__slug="generation").first()
    HIT.objects.create(batch_id=draft.batch_id, task_type=first.task_type, reward=first.reward, max_assignments=1,
                       payload={**first.payload, "round": 2})
    html = client_rita.get(url).content.decode()
    assert re.search(r'id="observed-redo">50%<', html)
    updated = campaign_cost_preview(draft, redo_share=0.5).total
    assert f'id="estimate-updated">${updated:.2f}<' in html and updated > assumed


def test_the_estimate_counts_the_gold_checks_and_says_so(client_rita, draft):
    """Issue 28: $6.24 spent against an estimate of $5.04 (the gold checks' pay was left out)."""
    import json

    from annotation.services.qualification_tests import define_qualifications
    from tests.conftest import DEMO_DIR

    without = campaign_cost_preview(draft, redo_share=0.10).total
    define_qualifications(draft, json.loads((DEMO_DIR / "qualifications.json").read_text()))
    launch_campaign(draft)
    draft.refresh_from_db()
    html = client_rita.get(f"/campaigns/{draft.slug}/progress/").content.decode()
    assumed = campaign_cost_preview(draft, redo_share=0.10).total
    assert assumed == without + 4 * 3 * draft.reward_presence
    assert f'id="estimate">${assumed:.2f}</strong>' in html
    assert "It includes 4 gold checks, each paid to 3 judges ($2.40)" in html
