"""Score update per presence HIT, and the scores views, at two campaign sizes (issue 41).

For N references x 10 systems (``BENCH_SCORES_SIZES``, default 50 and 500; 8 units per reference, 3 judges per
unit, imported from a raw judgment file), one HIT's follow-up is timed as the pipeline runs it: the gold labels of
its pairs, then ``recompute_summary_scores`` of its summary (the system scores kept by differences).  For
comparison, the system-score rebuild the follow-up used to run after every HIT (``recompute_system_scores``
without intervals).  Then the agreement a scores view reads (stored, unchanged judgments) against computing it.
Prints per size

    score_update references=N hit_ms=A score_ms=S old_rebuild_ms=B agreement_view_ms=C agreement_compute_ms=D

(``hit_ms``: judgments, gold labels and scores; ``score_ms``: the score update alone; medians over
``BENCH_SCORES_HITS`` HITs, 30, each the median of 3 runs).  Needs PostgreSQL on
127.0.0.1:5432 (trust auth, user postgres); creates and drops the database "qapyr_bench_scores".
"""

from __future__ import annotations

import json
import os
import random
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DB = os.environ.get("BENCH_SCORES_DB", "qapyr_bench_scores")
SIZES = [int(n) for n in os.environ.get("BENCH_SCORES_SIZES", "50,500").split(",")]
N_HITS = int(os.environ.get("BENCH_SCORES_HITS", "30"))
UNITS, SYSTEMS, WORKERS = 8, 10, [f"w{i}" for i in range(12)]


def raw_file(folder: Path, n_examples: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    data = {
        f"sys{s}": {
            f"ex{e}": {
                f"ex{e}_{p}": {
                    f"Who did thing {k}? answer {k}": [[w, int(rng.random() < 0.5)] for w in rng.sample(WORKERS, 3)]
                    for k in range(UNITS) if k % 2 == p
                }
                for p in range(2)
            }
            for e in range(n_examples)
        }
        for s in range(SYSTEMS)
    }
    path = folder / f"raw-{n_examples}.json"
    path.write_text(json.dumps(data))
    return path


def median_ms(call, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def measure(n_examples: int, folder: Path) -> str:
    from django.db import transaction

    from annotation.models import ContentUnit, PresenceJudgment, SystemSummary
    from annotation.selectors.scores import agreement, compute_agreement
    from annotation.services.gold import refresh_gold
    from annotation.services.raw_import import import_qapyramid_raw
    from annotation.services.scores import recompute_summary_scores, recompute_system_scores
    from hits.models import Worker

    campaign = import_qapyramid_raw(raw_file(folder, n_examples), name=f"Bench {n_examples}").campaign
    rng = random.Random(n_examples)
    summaries = list(SystemSummary.objects.filter(system__campaign=campaign).values_list("pk", "example_id"))
    units = {}
    for pk, example in ContentUnit.objects.filter(example__campaign=campaign).values_list("pk", "example_id"):
        units.setdefault(example, []).append(pk)
    judge = Worker.objects.create(external_id=f"bench-judge-{n_examples}")

    def one_hit(summary, example, timed: list):
        # A new judge's HIT on one summary (all its units): as after_presence_hits and the score follow-up run it.
        with transaction.atomic():
            started = time.perf_counter()
            rows = [PresenceJudgment(unit_id=u, summary_id=summary, worker=judge, present=rng.random() < 0.5) for u in units[example]]
            PresenceJudgment.objects.bulk_create(rows)
            refresh_gold(campaign, {(u, summary) for u in units[example]})
            scoring = time.perf_counter()
            recompute_summary_scores(campaign, [summary])
            timed.append((time.perf_counter() - started, time.perf_counter() - scoring))
            transaction.set_rollback(True)  # every timing meets the same campaign

    hits, scores = [], []
    for _ in range(N_HITS):
        timed: list = []
        summary = rng.choice(summaries)
        for _ in range(3):
            one_hit(*summary, timed)
        hits.append(1000 * statistics.median(t for t, _ in timed))
        scores.append(1000 * statistics.median(s for _, s in timed))
    rebuild = [median_ms(lambda: recompute_system_scores(campaign, n_boot=0, with_alpha=False)) for _ in range(5)]
    agreement(campaign, n_boot=500)  # stored once, as the first view after a change does
    view = [median_ms(lambda: agreement(campaign, n_boot=500)) for _ in range(5)]
    compute = [median_ms(lambda: compute_agreement(campaign, n_boot=500), runs=1) for _ in range(3)]
    return (f"score_update references={n_examples} hit_ms={statistics.median(hits):.1f} score_ms={statistics.median(scores):.1f} "
            f"old_rebuild_ms={statistics.median(rebuild):.1f} agreement_view_ms={statistics.median(view):.1f} "
            f"agreement_compute_ms={statistics.median(compute):.1f}")


def main() -> int:
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
    except OSError:
        print("score_update skipped: needs PostgreSQL on 127.0.0.1:5432")
        return 0
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")
    os.environ.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{DB}", DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1", CELERY_TASK_ALWAYS_EAGER="1", DATA_DIR=tempfile.mkdtemp(prefix="qapyr-scores-"),
    )
    for key in ("CELERY_BROKER_URL", "REDIS_URL"):
        os.environ.pop(key, None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", verbosity=0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for n in SIZES:
                print(measure(n, Path(tmp)), flush=True)
    finally:
        connections.close_all()
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
