"""The gold pool check (issue 39): the settings and progress pages say when a campaign's gold items are too few
for workers not to share them, by the README's rule, before launch and from what workers actually met."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Campaign
from annotation.selectors.gold_pool import measured_gold_pool, planned_gold_pool
from hits.models import HIT, Assignment, Batch
from hits.services import accept_next, submit_assignment
from tests.conftest import launched_scu_campaign, logged_in_worker

pytestmark = pytest.mark.django_db

ROWS = [(f"d{i}", f"Reference {i} says a thing .", f"System summary {i} .", [f"fact a of {i}"]) for i in range(8)]


def test_the_readme_rule_in_numbers():
    campaign = Campaign(gold_share=0.1)
    # g = R s / (1 - s): with 121 items a worker can do 99 regular HITs (g = 11) before sharing one item.
    assert planned_gold_pool(campaign, 121, 5000).per_worker_limit == 99
    few = planned_gold_pool(campaign, 4, 5000)
    assert few.per_worker_limit == 18 and "4 gold items are few" in few.warning and "About 124 " in few.warning
    assert planned_gold_pool(campaign, 1500, 5000).warning == ""
    # A campaign with 10 regular HITs in all: 4 items let every worker do all of them unshared.
    assert planned_gold_pool(campaign, 4, 10).warning == ""
    assert planned_gold_pool(Campaign(gold_share=0), 4, 10) is None


def _gold_campaign(tmp_path, n_gold, name="Pool"):
    """A launched SCU campaign of eight presence HITs at a gold share of 20%, and ``n_gold`` gold HITs."""
    campaign = launched_scu_campaign(tmp_path / name, name, ROWS, gold_share=0.2)
    Batch.objects.filter(pk=campaign.batch_id).update(gold_share=0.2)
    HIT.objects.filter(batch_id=campaign.batch_id).update(max_assignments=10)
    template = HIT.objects.filter(batch_id=campaign.batch_id).first()
    units = [str(u) for u in template.payload["units"]]
    HIT.objects.bulk_create(
        [HIT(batch_id=campaign.batch_id, task_type=template.task_type, payload=template.payload, reward=template.reward,
             kind=HIT.Kind.GOLD, answer_key={"labels": {u: True for u in units}}, max_assignments=10) for _ in range(n_gold)]
    )
    campaign.refresh_from_db()
    return campaign, template.task_type


def _do(worker, task_type, hit):
    assignment = accept_next(worker, task_type, hit_id=hit.pk)
    submit_assignment(worker, assignment.pk, {f"p_{k}": "1" for k in range(1, len(hit.payload["units"]) + 1)})


def test_workers_who_meet_the_same_gold_items_are_measured_and_flagged(tmp_path, django_user_model):
    campaign, task_type = _gold_campaign(tmp_path, 2)
    gold = list(HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.GOLD))
    regular = list(HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR))
    workers = [logged_in_worker(django_user_model, f"w{i}")[1] for i in range(3)]
    for worker in workers:  # every worker meets both gold items and all eight regular HITs
        for hit in gold + regular:
            _do(worker, task_type, hit)
    pool = measured_gold_pool(campaign)
    assert (pool.gold_items, pool.workers, pool.heaviest) == (2, 3, 8)
    assert pool.mean_shared == pytest.approx(2.0)  # each pair of workers has both items in common
    assert pool.per_worker_limit == 5  # sqrt(2) x 0.8 / 0.2
    assert "2.0 of the 2 gold items in common" in pool.warning

    researcher_client = Client()
    researcher_client.force_login(django_user_model.objects.create_superuser("admin", password="pw-for-tests-123"))
    html = researcher_client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert 'id="gold-pool-warning"' in html and "in common on average" in html
    settings_page = researcher_client.get(f"/campaigns/{campaign.slug}/settings/").content.decode()
    assert 'id="gold-pool-warning"' in settings_page


def test_workers_with_their_own_gold_items_raise_no_flag(tmp_path, django_user_model):
    campaign, task_type = _gold_campaign(tmp_path, 40)
    gold = list(HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.GOLD))
    regular = list(HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR))
    for i in range(3):  # each worker meets two gold items of their own beside eight regular HITs
        worker = logged_in_worker(django_user_model, f"w{i}")[1]
        for hit in gold[2 * i:2 * i + 2] + regular:
            _do(worker, task_type, hit)
    pool = measured_gold_pool(campaign)
    assert pool.workers == 3 and pool.mean_shared == 0 and pool.warning == ""


def test_overlapping_gold_items_against_a_hand_count(tmp_path, django_user_model, django_assert_num_queries):
    """Uneven overlaps, counted by hand: gold items A, B, C, D; w0 meets A and B, w1 meets A, w2 meets A and C
    (and returns D unanswered); w3 meets only regular HITs; D is met by w4, who then has it cancelled.

    Per item, the distinct workers who met it: A 3, B 1, C 1, D 0 (a returned assignment is no meeting, and a
    cancelled HIT is out of the pool). Pairs sharing an item: 3 x 2 / 2 = 3. Workers with regular HITs: w0 (3),
    w1 (2), w2 (1), w3 (4), so four workers, six pairs of them, 3 / 6 = 0.5 items in common on average, and
    the heaviest did 4."""
    from hits.services import return_assignment

    campaign, task_type = _gold_campaign(tmp_path, 5)
    a, b, c, d, e = HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.GOLD).order_by("pk")
    regular = list(HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR).order_by("pk"))
    w = [logged_in_worker(django_user_model, f"w{i}")[1] for i in range(5)]
    for worker, hits in [(w[0], [a, b] + regular[:3]), (w[1], [a] + regular[:2]), (w[2], [a, c] + regular[:1]),
                         (w[3], regular[:4]), (w[4], [e])]:
        for hit in hits:
            _do(worker, task_type, hit)
    return_assignment(w[2], accept_next(w[2], task_type, hit_id=d.pk).pk)
    HIT.objects.filter(pk=e.pk).update(state=HIT.State.CANCELLED)

    with django_assert_num_queries(1):  # one aggregate statement, however many items and workers
        pool = measured_gold_pool(campaign)
    assert (pool.gold_items, pool.regular_hits, pool.workers, pool.heaviest) == (4, 8, 4, 4)
    assert pool.mean_shared == pytest.approx(0.5)
    assert pool.per_worker_limit == 8  # floor(sqrt(4) x 0.8 / 0.2)
    assert pool.warning == ""  # under one item in common, and nobody past 8 regular HITs


def test_items_needed_is_exact_and_the_advice_points_the_right_way():
    """108 regular HITs at a 10% share meet 12 gold items: 144 items keep two such workers apart (not 145 from a
    rounding error), and the advice is a lower share (fewer items met per worker) or more gold labels."""
    from annotation.selectors.gold_pool import GoldPool

    pool = GoldPool(gold_items=16, share=0.1, per_worker_limit=36, regular_hits=500, heaviest=108)
    assert pool.items_needed == 144
    planned = GoldPool(gold_items=16, share=0.1, per_worker_limit=36, regular_hits=500)
    assert planned.items_needed == 124 and "a lower gold share" in planned.warning  # (100 x 1/9)^2 = 123.5
