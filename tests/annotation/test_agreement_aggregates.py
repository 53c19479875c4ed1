"""The agreement dashboard's figures from grouped queries: the same values as reading every judgment in Python.

The reference computations below are the dashboard's former per-judgment loops, kept here as the oracle.
"""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest
from django.db.models import F
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import GoldPresence, PresenceJudgment
from annotation.selectors import agreement
from annotation.services.gold import refresh_gold
from annotation.services.raw_import import import_qapyramid_raw

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(tmp_path):
    """A raw-imported campaign: 3 systems x 8 examples x 4 QA pairs; 1 to 4 judgments per unit by 7 workers of
    different care (so some units are tied and have no majority); one worker's judgments excluded; judgment
    times shuffled against their ids, two workers' first judgments at the same instant."""
    rng = random.Random(7)
    care = {f"w{i}": 0.5 + 0.07 * i for i in range(7)}
    raw = {}
    for system in ("sa", "sb", "sc"):
        raw[system] = {}
        for e in range(8):
            example = f"ex{e}"
            raw[system][example] = {}
            for p in range(2):
                pairs = {}
                for q in range(2):
                    truth = rng.random() < 0.5
                    judges = rng.sample(sorted(care), rng.choice([1, 2, 3, 3, 3, 4]))
                    pairs[f"Who did thing {p}{q}? someone {q}"] = [
                        [w, int(truth if rng.random() < care[w] else not truth)] for w in judges
                    ]
                raw[system][example][f"{example}_{p}"] = pairs
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(raw))
    campaign = import_qapyramid_raw(path, name="Agreement").campaign
    now = timezone.now()
    rows = list(PresenceJudgment.objects.filter(summary__system__campaign=campaign).order_by("pk"))
    for judgment in rows:
        judgment.created_at = now - timedelta(seconds=rng.randrange(0, 500))
    by_worker = {}
    for judgment in rows:
        by_worker.setdefault(judgment.worker.external_id, []).append(judgment)
    first = min(by_worker["w1"], key=lambda j: j.created_at).created_at
    for judgment in by_worker["w2"]:
        judgment.created_at = max(judgment.created_at, first)
    min(by_worker["w2"], key=lambda j: j.created_at).created_at = first
    PresenceJudgment.objects.bulk_update(rows, ["created_at"])
    PresenceJudgment.objects.filter(worker__external_id="w0").update(excluded=True)
    refresh_gold(campaign, {(j.unit_id, j.summary_id) for j in rows})
    # Tied units left without a label (the tie rule "leave out"), as a cancelled adaptive campaign can have.
    tied = GoldPresence.objects.filter(summary__system__campaign=campaign, n_judgments=2 * F("n_present"))
    assert tied.update(present=None) > 0
    return campaign


def _old_worker_accuracy(campaign):
    """The former computation: every judgment that counts, in time order, compared in Python with the majority."""
    majority = {
        (u, s): p
        for u, s, p in GoldPresence.objects.filter(
            summary__system__campaign=campaign, origin="majority", present__isnull=False
        ).values_list("unit_id", "summary_id", "present")
    }
    agree = {}
    for unit, summary, present, name, worker_id in (
        PresenceJudgment.objects.filter(summary__system__campaign=campaign, excluded=False)
        .order_by("created_at", "pk")
        .values_list("unit_id", "summary_id", "present", "worker__external_id", "worker_id")
    ):
        label = majority.get((unit, summary))
        if label is not None:
            agree.setdefault((name, worker_id), []).append(int(present == label))
    return sorted(
        ({"worker": w, "worker_id": i, "accuracy": sum(v) / len(v), "n": len(v)} for (w, i), v in agree.items()),
        key=lambda r: r["accuracy"],
    )


def test_worker_accuracy_is_counted_by_the_database_with_the_same_values_and_order(judged):
    expected = _old_worker_accuracy(judged)
    assert len(expected) == 6 and "w0" not in {r["worker"] for r in expected}  # excluded judgments do not count
    with CaptureQueriesContext(connection) as queries:
        assert agreement.worker_accuracy(judged) == expected
    assert len(queries.captured_queries) == 1


def test_accuracy_ties_keep_the_order_of_the_judges_first_judgment(judged):
    # Two judges always agreeing with the majority: both at 1.0, their first judgments at the same instant.
    counted = PresenceJudgment.objects.filter(summary__system__campaign=judged, excluded=False)
    counted.filter(worker__external_id__in=["w1", "w2"]).update(present=True)
    GoldPresence.objects.filter(summary__system__campaign=judged).update(present=True)
    expected = _old_worker_accuracy(judged)
    assert [r["worker"] for r in expected if r["accuracy"] == 1.0] == ["w1", "w2"] or [
        r["worker"] for r in expected if r["accuracy"] == 1.0
    ] == ["w2", "w1"]
    assert agreement.worker_accuracy(judged) == expected
    # The other way round: the judge whose first judgment has the larger id comes second.
    w1_first, w2_first = (
        counted.filter(worker__external_id=w).order_by("created_at", "pk").values_list("pk", flat=True).first()
        for w in ("w1", "w2")
    )
    ids = sorted([w1_first, w2_first])
    assert [r["worker"] for r in agreement.worker_accuracy(judged) if r["accuracy"] == 1.0] == [
        "w1" if ids[0] == w1_first else "w2", "w2" if ids[0] == w1_first else "w1"
    ]


def test_the_dashboard_reads_each_batch_time_and_the_disputed_units_as_before(judged):
    board = agreement.agreement_dashboard(judged, n_boot=0)
    rows = list(
        PresenceJudgment.objects.filter(summary__system__campaign=judged, excluded=False)
        .order_by("created_at", "pk")
        .values_list("unit_id", "summary_id", "present", "created_at")
    )
    # Batches: pairs in the order of their last judgment, split as evenly as numpy splits them.
    last = {}
    for position, (unit, summary, _, _) in enumerate(rows):
        last[(unit, summary)] = position
    order = sorted(last, key=last.get)
    assert len(order) >= 2 * agreement.MIN_UNITS_PER_BATCH and len(board["batches"]) >= 2
    sizes = [b["n_units"] for b in board["batches"]]
    assert sum(sizes) == len(order)
    end = 0
    for batch, size in zip(board["batches"], sizes):
        end += size
        assert batch["until"] == rows[last[order[end - 1]]][3]
    # Disputed units: the most even splits first, among pairs with two judgments or more.
    counts = {}
    for unit, summary, present, _ in rows:
        n, k = counts.get((unit, summary), (0, 0))
        counts[(unit, summary)] = (n + 1, k + int(present))
    disputed = [(row["unit"].pk, row["summary"].pk, row["n"], row["n_present"]) for row in board["disagreement"]]
    assert disputed and all(counts[(u, s)] == (n, k) for u, s, n, k in disputed)
    shares = [min(k, n - k) / n for _, _, n, k in disputed]
    assert shares == sorted(shares, reverse=True)
    assert board["worker_accuracy"] == _old_worker_accuracy(judged)


def test_the_dashboard_is_read_from_its_stored_figures_until_its_data_change(judged, monkeypatch):
    """A second view reads the stored figures (no computation over the judgments) and gets the same board; a new
    exclusion, a verdict or a majority label replaced by a researcher's makes the next view recompute."""
    first = agreement.agreement_dashboard(judged, n_boot=20)
    computed = []
    real = agreement.compute_dashboard
    monkeypatch.setattr(agreement, "compute_dashboard", lambda *a, **k: computed.append(1) or real(*a, **k))
    again = agreement.agreement_dashboard(judged, n_boot=20)
    assert computed == [] and again == first
    assert all(isinstance(b["until"], type(timezone.now())) for b in again["batches"])
    assert again["disagreement"][0]["unit"].text and again["disagreement"][0]["summary"].system.name

    judgment = PresenceJudgment.objects.filter(summary__system__campaign=judged, excluded=False).order_by("pk").first()
    PresenceJudgment.objects.filter(pk=judgment.pk).update(excluded=True)
    assert agreement.agreement_dashboard(judged, n_boot=20)["presence"]["n_all_judgments"] == first["presence"]["n_all_judgments"] - 1
    assert computed == [1]

    gold = GoldPresence.objects.filter(summary__system__campaign=judged, origin="majority", present__isnull=False).first()
    GoldPresence.objects.filter(pk=gold.pk).update(origin=GoldPresence.Origin.IMPORTED)
    board = agreement.agreement_dashboard(judged, n_boot=20)
    assert computed == [1, 1]
    assert sum(r["n"] for r in board["worker_accuracy"]) < sum(r["n"] for r in first["worker_accuracy"])

    from annotation.models import ContentUnit, Verification
    from hits.models import Worker

    unit = ContentUnit.objects.filter(example__campaign=judged).first()
    for name, valid in (("v1", True), ("v2", False)):
        Verification.objects.create(unit=unit, worker=Worker.objects.create(external_id=name), valid=valid)
    assert agreement.agreement_dashboard(judged, n_boot=20)["verification"]["n_questions"] == 1
    assert agreement.stored_verification_agreement(judged)["percent"] == 0.0
    Verification.objects.filter(unit=unit, worker__external_id="v2").update(valid=True, excluded=True)
    assert agreement.stored_verification_agreement(judged)["n_questions"] == 1
    assert agreement.stored_verification_agreement(judged)["percent"] is None  # one verdict left: no pair to agree
