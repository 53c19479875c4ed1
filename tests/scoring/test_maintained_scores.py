"""Issue 41: system scores kept by differences after each presence HIT equal the full rebuild (``recompute_gold``).

A campaign is replayed HIT by HIT (one summary's units, one judge) the way the pipeline does it (gold labels of
the HIT's pairs, then ``recompute_summary_scores`` of its summary), with imported gold labels that the crowd's
majority overrides, a worker excluded (through the exclusion service and its score follow-up) and re-included.
No HIT may rebuild the system scores from the whole campaign; at the end, what was kept equals the rebuild."""

from __future__ import annotations

import json
import random

import pytest

from annotation.models import Campaign, Example, GoldPresence, PresenceJudgment, SummaryScore, SystemScore, SystemSummary
from annotation.services import scores as score_service
from annotation.services.gold import refresh_gold
from annotation.services.quality import exclude_worker, include_worker
from annotation.services.raw_import import import_qapyramid_raw
from annotation.services.scores import recompute_gold, recompute_summary_scores
from hits.models import Worker

pytestmark = pytest.mark.django_db

KEPT = ["n_summaries", "qapyramid", "nqapyramid", "predicate_level", "qapyramid_sum", "nqapyramid_sum", "n_nqapyramid",
        "predicate_level_sum", "n_predicate_level", "n_units"]


def raw_campaign(tmp_path, n_examples: int, n_systems: int, n_units: int, seed: int = 0, name: str = "Replay") -> Campaign:
    """A raw-imported campaign (every unit judged by three of five workers), with summary and reference texts."""
    rng = random.Random(seed)
    data = {
        f"sys{s}": {
            f"ex{e}": {
                f"ex{e}_{p}": {
                    f"Who did thing {k}? answer {k}": [[w, int(rng.random() < 0.55)] for w in rng.sample(["w1", "w2", "w3", "w4", "w5"], 3)]
                    for k in range(n_units) if k % 2 == p
                }
                for p in range(2)
            }
            for e in range(n_examples)
        }
        for s in range(n_systems)
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    campaign = import_qapyramid_raw(path, name=name).campaign
    for example in Example.objects.filter(campaign=campaign):
        Example.objects.filter(pk=example.pk).update(reference=" ".join(["the park opened in spring"] * rng.randint(2, 6)))
    for summary in SystemSummary.objects.filter(system__campaign=campaign):
        words = ["park", "the", "opened", "city", "spring", "mayor"]
        SystemSummary.objects.filter(pk=summary.pk).update(text=" ".join(rng.choice(words) for _ in range(rng.randint(0, 20))))
    recompute_summary_scores(campaign)  # the texts' penalties
    return campaign


def _kept(campaign):
    return {row["system__name"]: row for row in SystemScore.objects.filter(system__campaign=campaign).values("system__name", *KEPT)}


def test_scores_kept_per_hit_equal_the_full_rebuild(tmp_path, monkeypatch, django_capture_on_commit_callbacks, eager_celery):
    # The follow-up of an exclusion is a Celery task: in-process here, as the embedded default runs it.
    campaign = raw_campaign(tmp_path, n_examples=6, n_systems=3, n_units=5)
    judgments = list(PresenceJudgment.objects.filter(summary__system__campaign=campaign).values(
        "unit_id", "summary_id", "worker_id", "present"))
    # Start over: no crowd judgment; imported labels for some pairs (the crowd will override most of them).
    PresenceJudgment.objects.filter(summary__system__campaign=campaign).delete()
    GoldPresence.objects.filter(summary__system__campaign=campaign).delete()
    rng = random.Random(7)
    pairs = sorted({(j["unit_id"], j["summary_id"]) for j in judgments})
    GoldPresence.objects.bulk_create([
        GoldPresence(unit_id=u, summary_id=s, present=rng.random() < 0.5, origin=GoldPresence.Origin.IMPORTED)
        for u, s in rng.sample(pairs, len(pairs) // 3)
    ])
    recompute_summary_scores(campaign)
    hits: dict[tuple, list] = {}
    for j in judgments:
        hits.setdefault((j["summary_id"], j["worker_id"]), []).append(j)
    order = list(hits)
    rng.shuffle(order)
    rebuilds = []
    monkeypatch.setattr(score_service, "recompute_system_scores", lambda *a, **k: rebuilds.append(a))
    for i, key in enumerate(order):
        rows = hits[key]
        PresenceJudgment.objects.bulk_create([PresenceJudgment(**row) for row in rows])
        refresh_gold(campaign, {(row["unit_id"], row["summary_id"]) for row in rows})
        recompute_summary_scores(campaign, [key[0]])
        if i == len(order) // 2:
            # Halfway, a worker is excluded, then (later) another: their judgments stop counting, with the score follow-up.
            with django_capture_on_commit_callbacks(execute=True):
                exclude_worker(campaign, Worker.objects.get(external_id="w2"), replace=False)
    with django_capture_on_commit_callbacks(execute=True):
        exclude_worker(campaign, Worker.objects.get(external_id="w4"), replace=False)
    with django_capture_on_commit_callbacks(execute=True):
        include_worker(campaign, Worker.objects.get(external_id="w2"))
    assert rebuilds == []  # no HIT nor exclusion re-read the campaign's summary scores
    monkeypatch.undo()
    kept = _kept(campaign)
    summaries = {row["summary_id"]: row for row in SummaryScore.objects.filter(summary__system__campaign=campaign).values()}
    assert PresenceJudgment.objects.filter(excluded=True).exists() and GoldPresence.objects.filter(origin="imported").exists()
    recompute_gold(campaign)
    rebuilt = _kept(campaign)
    assert set(kept) == {"sys0", "sys1", "sys2"}
    for name, row in rebuilt.items():
        for field in KEPT:
            assert kept[name][field] == pytest.approx(row[field], rel=1e-12, abs=1e-12), (name, field)
    assert kept["sys0"]["n_nqapyramid"] < kept["sys0"]["n_summaries"] or any(
        r["n_nqapyramid"] for r in kept.values())  # empty summaries have no nQAPyramid: both counts are exercised
    again = {row["summary_id"]: row for row in SummaryScore.objects.filter(summary__system__campaign=campaign).values()}
    for pk, row in again.items():
        for field in ("n_units", "n_present", "qapyramid", "predicate_level", "nqapyramid", "length_penalty"):
            assert summaries[pk][field] == row[field], (pk, field)


def test_a_system_without_kept_sums_is_rebuilt_once(tmp_path):
    """Rows stored before the sums were kept (empty sums) are rebuilt by the next update, then kept by differences."""
    campaign = raw_campaign(tmp_path, n_examples=3, n_systems=2, n_units=4, name="Old rows")
    expected = _kept(campaign)
    SystemScore.objects.filter(system__campaign=campaign).update(qapyramid_sum=None, n_units=0)
    summary = SystemSummary.objects.filter(system__campaign=campaign).first()
    recompute_summary_scores(campaign, [summary.pk])
    assert _kept(campaign) == expected
