"""A worker's own pages cannot tell a gold HIT from a regular one, over a sequence of HITs (issue 39)."""

from __future__ import annotations

import re

import pytest

from hits.models import HIT, Assignment, Batch
from hits.services import accept_next, submit_assignment
from tests.conftest import launched_scu_campaign, logged_in_worker

pytestmark = pytest.mark.django_db

ROWS = [(f"d{i}", f"Reference {i} says a thing .", f"System summary {i} .", [f"fact a of {i}", f"fact b of {i}"]) for i in range(12)]
EVERY = 4


def _page_state(client) -> dict[str, str]:
    """What the worker can read on their pages, less what changes with every HIT anyway (dates, the HIT list)."""
    pages = {}
    for url in ("/work/", "/work/quality/", "/work/history/"):
        html = client.get(url).content.decode()
        html = re.sub(r'<table class="grid" id="hits">.*?</table>', "", html, flags=re.S)  # one row per HIT, whatever its kind
        html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)
        html = re.sub(r"\d{4}-\d\d-\d\d[ T][\d:.+]*", "", html)
        html = re.sub(r'<span id="(n-done|time-spent)">\d+</span>', "", html)  # counts every HIT alike
        pages[url] = re.sub(r"\s+", " ", html)
    return pages


def _changes(client, worker, campaign, kinds) -> list[set[str]]:
    """The worker does one HIT of each kind in turn (each label answered "present"); after each, which pages
    changed."""
    presence = HIT.objects.get(pk=HIT.objects.filter(batch_id=campaign.batch_id).first().pk).task_type
    changed, before = [], _page_state(client)
    for kind in kinds:
        hit = (
            HIT.objects.filter(batch_id=campaign.batch_id, kind=kind).exclude(assignments__worker=worker).order_by("pk").first()
        )
        assignment = accept_next(worker, presence, hit_id=hit.pk)
        n = len(hit.payload["units"])
        submit_assignment(worker, assignment.pk, {f"p_{k}": "1" for k in range(1, n + 1)})
        after = _page_state(client)
        changed.append({url for url in after if after[url] != before[url]})
        before = after
    return changed


def test_what_a_worker_sees_changes_the_same_way_after_a_gold_hit_as_after_a_regular_one(
    tmp_path, django_user_model, settings, django_capture_on_commit_callbacks
):
    settings.GOLD_FEEDBACK_EVERY = EVERY
    campaign = launched_scu_campaign(tmp_path / "c", "Unseen", ROWS)
    Batch.objects.filter(pk=campaign.batch_id).update(gold_share=0.25)
    HIT.objects.filter(batch_id=campaign.batch_id).update(max_assignments=10)
    template = HIT.objects.filter(batch_id=campaign.batch_id).first()
    units = [str(u) for u in template.payload["units"]]
    HIT.objects.bulk_create(
        [HIT(batch_id=campaign.batch_id, task_type=template.task_type, payload=template.payload, reward=template.reward, kind=HIT.Kind.GOLD,
             answer_key={"labels": {u: True for u in units}}, max_assignments=10) for _ in range(4)]
    )
    # Two other judges answer every regular HIT first: the majority exists, and the agreement figure can move.
    others = [logged_in_worker(django_user_model, f"judge{i}")[1] for i in range(2)]
    with django_capture_on_commit_callbacks(execute=True):
        for other in others:
            for hit in HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR):
                assignment = accept_next(other, template.task_type, hit_id=hit.pk)
                submit_assignment(other, assignment.pk, {f"p_{k}": "1" for k in range(1, len(hit.payload["units"]) + 1)})
    R, G = HIT.Kind.REGULAR, HIT.Kind.GOLD
    one = [R, G, R, R, R, R, G, R, R, R, G, R]
    two = [G, R, R, R, G, R, R, R, R, G, R, R]
    with django_capture_on_commit_callbacks(execute=True):
        seen_one = _changes(*logged_in_worker(django_user_model, "one"), campaign, one)
        seen_two = _changes(*logged_in_worker(django_user_model, "two"), campaign, two)
    # The standing page moved (the figures were released), and only after every EVERY-th HIT, for both.
    assert any("/work/quality/" in c for c in seen_one)
    assert seen_one == seen_two, list(zip(one, seen_one, two, seen_two))
    for step, changed in enumerate(seen_one, start=1):
        if step > 1 and step % EVERY:  # (the first HIT puts the campaign on the standing page)
            assert "/work/quality/" not in changed, step
