"""Unit inspector benchmark (issue 40): the page ``/campaigns/SLUG/units/`` on a budgeted campaign with 100,000
units (``BENCH_UNITS_EXAMPLES`` examples x 10 content units x 10 systems), on the embedded default (SQLite in a
fresh ``DATA_DIR``; ``BENCH_UNITS_DIR`` keeps it, and a later run there reuses the campaign).  A quarter of the units have two or three crowd votes and their majority, a tenth an imported
label, every unit the judge's label and probability, a few a researcher's override.

Prints, per filter, the median of ``BENCH_UNITS_RUNS`` (7) requests of the whole page (view, queries, template):

    units rows=100000 filter=NAME matches=N median_ms=M runs=R queries=Q target_ms<=300 met=yes|no
"""

from __future__ import annotations

import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
N_EXAMPLES = int(os.environ.get("BENCH_UNITS_EXAMPLES", "1000"))
N_UNITS, N_SYSTEMS = 10, 10
RUNS = int(os.environ.get("BENCH_UNITS_RUNS", "7"))
TARGET_MS = 300
FILTERS = {
    "none": {},
    "system": {"system": "system-3"},
    "example": {"example": "ex-00500"},
    "search": {"q": "harbour"},
    "agreement_split": {"agreement": "split"},
    "judge_disagrees": {"disagreement": "1"},
    "decided_by_people": {"decided": "people"},
    "gold_known": {"gold": "yes"},
    "sort_probability": {"sort": "probability"},
    "sort_agreement": {"sort": "agreement"},
    "last_page": {"page": str(N_EXAMPLES * N_UNITS * N_SYSTEMS // 50)},
}
WORDS = "the council approved a plan to rebuild the harbour after storms damaged boats and roads last winter".split()


def build(owner):
    """The campaign, written with bulk inserts (the import pipeline would take minutes at this size)."""
    from annotation.models import (
        AutoPresence, AutoscoreRun, Campaign, ContentUnit, Example, GoldPresence, PresenceJudgment, PresenceRound,
        System, SystemSummary,
    )
    from hits.models import Worker

    rng = random.Random(0)
    campaign = Campaign.objects.create(name="Bench units", slug="bench-units", owner=owner, unit_type="scu",
                                       human_presence_share=0.25, state="running")
    examples = Example.objects.bulk_create(
        [Example(campaign=campaign, external_id=f"ex-{i:05d}", position=i, reference="A reference.") for i in range(N_EXAMPLES)],
        batch_size=2000)
    systems = System.objects.bulk_create([System(campaign=campaign, name=f"system-{k}") for k in range(N_SYSTEMS)])
    summaries = SystemSummary.objects.bulk_create(
        [SystemSummary(system=s, example=e, text="A summary.") for e in examples for s in systems], batch_size=5000)
    units = ContentUnit.objects.bulk_create(
        [ContentUnit(example=e, kind="scu", index=j, state="kept", text=" ".join(rng.sample(WORDS, 6)))
         for e in examples for j in range(N_UNITS)], batch_size=5000)
    workers = Worker.objects.bulk_create([Worker(external_id=f"w{i}") for i in range(20)])
    run = AutoscoreRun.objects.create(campaign=campaign, judge_name="features", judge_version="features-bench", state="finished")
    PresenceRound.objects.create(campaign=campaign, number=1, state="done", labelling_run=run)
    units_of: dict[int, list] = {}
    for u in units:
        units_of.setdefault(u.example_id, []).append(u)
    judgments, gold, auto = [], [], []
    for summary in summaries:
        for unit in units_of[summary.example_id]:
            p = rng.random()
            auto.append(AutoPresence(run=run, summary=summary, unit=unit, probability=p, present=p >= 0.5, calibrated=p))
            if rng.random() < 0.25:
                votes = [rng.random() < p for _ in range(rng.choice((2, 3)))]
                for w, vote in zip(rng.sample(workers, len(votes)), votes):
                    judgments.append(PresenceJudgment(unit=unit, summary=summary, worker=w, present=vote))
                yes = sum(votes)
                gold.append(GoldPresence(unit=unit, summary=summary, origin="majority", n_judgments=len(votes),
                                         n_present=yes, present=None if 2 * yes == len(votes) else 2 * yes > len(votes)))
            if rng.random() < 0.1:
                gold.append(GoldPresence(unit=unit, summary=summary, origin="imported", present=rng.random() < 0.5))
            if rng.random() < 0.001:
                gold.append(GoldPresence(unit=unit, summary=summary, origin="override", present=True))
    AutoPresence.objects.bulk_create(auto, batch_size=5000)
    PresenceJudgment.objects.bulk_create(judgments, batch_size=5000)
    GoldPresence.objects.bulk_create(gold, batch_size=5000)
    return campaign, len(auto)


def main() -> int:
    os.environ.update(DJANGO_SETTINGS_MODULE="config.settings", DEBUG="1", CELERY_TASK_ALWAYS_EAGER="1",
                      DATA_DIR=os.environ.get("BENCH_UNITS_DIR") or tempfile.mkdtemp(prefix="qapyr-bench-units-"))
    for key in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL"):
        os.environ.pop(key, None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    call_command("migrate", verbosity=0)
    from annotation.models import AutoPresence, Campaign

    owner, _ = get_user_model().objects.get_or_create(username="bench-researcher", defaults={"is_staff": True})
    campaign = Campaign.objects.filter(slug="bench-units").first()  # kept from a run with BENCH_UNITS_DIR
    if campaign is None:
        started = time.perf_counter()
        campaign, n_rows = build(owner)
        print(f"units built rows={n_rows} seconds={time.perf_counter() - started:.1f}", flush=True)
    n_rows = AutoPresence.objects.filter(run__campaign=campaign).count()
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(owner)
    url = f"/campaigns/{campaign.slug}/units/"
    for name, params in FILTERS.items():
        times = []
        for _ in range(RUNS):
            with CaptureQueriesContext(connection) as queries:
                t = time.perf_counter()
                response = client.get(url, params)
                times.append((time.perf_counter() - t) * 1000)
            assert response.status_code == 200, (name, response.status_code)
        median = statistics.median(times)
        matches = re.search(r'id="unit-count"><strong>(\d+)</strong>', response.content.decode()).group(1)
        print(f"units rows={n_rows} filter={name} matches={matches} median_ms={median:.1f} runs={RUNS} "
              f"queries={len(queries)} target_ms<={TARGET_MS} met={'yes' if median <= TARGET_MS else 'no'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
