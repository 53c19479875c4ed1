"""Every researcher page, and the score update per HIT, at N = 50 and N = 500 examples (issue 41).

Two finished campaigns are built from the released raw QA-presence judgments
(``../shared/data/qapyramid/QA_presence.json``: 50 examples x 10 systems, 26,278 judgments by 16 workers) with
``import_qapyramid_raw``: N = 50 is the file itself; N = 500 repeats every example ten times, the copies under new
ids (``<id>-1`` ... ``<id>-9``, positions 50 to 499).  The file has no texts, so each example gets a reference made
of its QA pairs' answers and each summary a text made of the answers its judges found present: the pages that show
texts (review, unit inspector, worker view) show realistic ones.

Every researcher route of the URL conf (``tests/researcher_routes.py``, as the query-count test reads them) is
requested as the campaign's owner, once to warm up, then ``BENCH_SCALE_RUNS`` times (default 3); reported are
the query count and the medians of the wall time and of this process's CPU time (the Django side: views,
templates, numpy; PostgreSQL's own CPU is not in it).  Then the score update of one presence HIT, as the
pipeline's follow-up runs it (a new judge's judgments of one summary, their gold labels, then
``recompute_summary_scores``): the median CPU milliseconds of the score update over ``BENCH_SCALE_HITS``
HITs (default 30), each the median of 3 runs rolled back, without the figures it ends with (intervals and alpha,
which read the whole campaign once per coalesced drain: their wall milliseconds are reported apart, ``figures_ms``).

    python bench/bench_scale.py                  # a table, then the check
    python bench/bench_scale.py --format json    # {"sizes": [50, 500], "pages": {route: {"queries": [q50, q500],
                                                 #   "cpu_s": [c50, c500], "wall_s": [...], "status": [...]}},
                                                 #   "score_update_ms": [m50, m500], "figures_ms": [f50, f500],
                                                 #   "failures": [...]}

The check (exit status 1 when it fails): no page takes more queries at N = 500 than at N = 50; no page's CPU
grows more than 3x (pages under ``FLOOR_S`` CPU at N = 500 pass: timer noise on a loaded machine); the score
update's CPU per HIT grows less than 2x.  ``BENCH_SCALE_ONLY=text`` measures only the routes containing
``text``.  Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres); creates and drops the database
``BENCH_SCALE_DB`` (default "qapyr_bench_scale"), its statistics refreshed after the imports as autovacuum would.
Skips when the data is absent.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RAW = REPO.parent / "shared" / "data" / "qapyramid" / "QA_presence.json"
DB = os.environ.get("BENCH_SCALE_DB", "qapyr_bench_scale")
RUNS = int(os.environ.get("BENCH_SCALE_RUNS", "3"))
N_HITS = int(os.environ.get("BENCH_SCALE_HITS", "30"))
ONLY = os.environ.get("BENCH_SCALE_ONLY", "")
SIZES = (50, 500)
MAX_CPU_GROWTH, MAX_SCORE_GROWTH = 3.0, 2.0
FLOOR_S = 0.010  # a page under 10 ms of CPU at N = 500 is not judged on its growth


def replicated(raw: dict, copies: int) -> dict:
    """The released file with every example repeated ``copies`` times, copy c > 0 under the id ``<id>-c``."""
    out: dict = {}
    for system, examples in raw.items():
        out[system] = {}
        for copy in range(copies):
            for example, predicates in examples.items():
                new = f"{example}-{copy}" if copy else example
                out[system][new] = {p.replace(example, new, 1): pairs for p, pairs in predicates.items()}
    return out


def _sentence(answer: str) -> str:
    answer = answer.strip()
    return (answer[:1].upper() + answer[1:]).rstrip(" .") + "."


def add_texts(campaign) -> None:
    """A reference per example (its QA pairs' answers) and a text per summary (the answers judged present)."""
    from django.db.models import Count, Q

    from annotation.models import ContentUnit, Example, PresenceJudgment, SystemSummary

    answers: dict[int, dict[int, str]] = {}
    for pk, example, answer in ContentUnit.objects.filter(example__campaign=campaign).values_list("pk", "example_id", "answers").order_by("example_id", "index"):
        answers.setdefault(example, {})[pk] = _sentence(answer[0] if answer else "")
    examples = list(Example.objects.filter(campaign=campaign))
    for example in examples:
        example.reference = " ".join(dict.fromkeys(answers.get(example.pk, {}).values()))
    Example.objects.bulk_update(examples, ["reference"], batch_size=2000)
    present: dict[int, list[int]] = {}
    votes = (
        PresenceJudgment.objects.filter(summary__system__campaign=campaign).values("summary_id", "unit_id")
        .annotate(yes=Count("pk", filter=Q(present=True)), n=Count("pk")).order_by("summary_id", "unit_id")
    )
    for row in votes:
        if 2 * row["yes"] > row["n"]:
            present.setdefault(row["summary_id"], []).append(row["unit_id"])
    summaries = list(SystemSummary.objects.filter(system__campaign=campaign))
    for summary in summaries:
        said = answers.get(summary.example_id, {})
        summary.text = " ".join(dict.fromkeys(said[u] for u in present.get(summary.pk, []))) or "Nothing in it."
    SystemSummary.objects.bulk_update(summaries, ["text"], batch_size=2000)


def route_key(route: str) -> str:
    """The URL conf's pattern, regex spelling removed: ``api/campaigns/<campaign_slug>/workers/<pk>/``."""
    key = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", route)
    key = re.sub(r"<\w+:(\w+)>", r"<\1>", key)
    return key.replace("^", "").replace("$", "").replace("\\", "")


def measure_page(client, url: str) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm-up: templates compiled, caches filled as by a first visit
    walls, cpus, queries, status = [], [], 0, 0
    for _ in range(RUNS):
        with CaptureQueriesContext(connection) as captured:
            wall, cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            cpus.append(time.process_time() - cpu)
            walls.append(time.perf_counter() - wall)
        queries, status = len(captured.captured_queries), response.status_code
    return {"queries": queries, "cpu_s": statistics.median(cpus), "wall_s": statistics.median(walls), "status": status}


def figures_ms(campaign) -> float:
    """Median wall ms of ``refresh_campaign_figures`` (the intervals and alpha every score update ends with: they
    read the whole campaign, once per coalesced drain), over 3 runs rolled back."""
    from django.db import transaction

    from annotation.services.scores import refresh_campaign_figures

    runs = []
    for _ in range(3):
        with transaction.atomic():
            wall = time.perf_counter()
            refresh_campaign_figures(campaign)
            runs.append(time.perf_counter() - wall)
            transaction.set_rollback(True)
    return 1000 * statistics.median(runs)


def score_update_ms(campaign) -> float:
    """Median CPU ms of ``recompute_summary_scores`` after one new presence HIT (its judgments and gold labels),
    without the figures it ends with (``figures_ms``: the part that reads the whole campaign, once per drain)."""
    from unittest import mock

    from django.db import transaction

    from annotation.models import ContentUnit, PresenceJudgment, SystemSummary
    from annotation.services import scores as score_service
    from annotation.services.gold import refresh_gold
    from annotation.services.scores import recompute_summary_scores
    from hits.models import Worker

    rng = random.Random(7)
    summaries = list(SystemSummary.objects.filter(system__campaign=campaign).order_by("pk").values_list("pk", "example_id"))
    units: dict[int, list[int]] = {}
    for pk, example in ContentUnit.objects.filter(example__campaign=campaign).values_list("pk", "example_id"):
        units.setdefault(example, []).append(pk)
    judge = Worker.objects.create(external_id=f"bench-scale-judge-{campaign.pk}")
    per_hit = []
    for _ in range(N_HITS):
        summary, example = rng.choice(summaries)
        runs = []
        for _ in range(3):
            with transaction.atomic():
                PresenceJudgment.objects.bulk_create(
                    [PresenceJudgment(unit_id=u, summary_id=summary, worker=judge, present=rng.random() < 0.5) for u in units[example]]
                )
                refresh_gold(campaign, {(u, summary) for u in units[example]})
                cpu = time.process_time()
                with mock.patch.object(score_service, "refresh_figures"):
                    recompute_summary_scores(campaign, [summary])
                runs.append(time.process_time() - cpu)
                transaction.set_rollback(True)  # every HIT meets the same campaign
        per_hit.append(1000 * statistics.median(runs))
    return statistics.median(per_hit)


def build(raw: dict, n: int, owner, folder: Path):
    from annotation.services.raw_import import import_qapyramid_raw

    copies = n // len(next(iter(raw.values())))
    path = folder / f"raw-{n}.json"
    path.write_text(json.dumps(replicated(raw, copies)))
    campaign = import_qapyramid_raw(path, name=f"Bench scale {n}", owner=owner).campaign
    add_texts(campaign)
    return campaign


def run(raw: dict) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from annotation.services.roles import make_researcher
    from tests import researcher_routes

    owner = get_user_model().objects.create_user("bench-owner")
    make_researcher(owner)
    with tempfile.TemporaryDirectory() as tmp:
        campaigns = [build(raw, n, owner, Path(tmp)) for n in SIZES]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    worlds = [researcher_routes.world(c, owner) for c in campaigns]
    client = Client()
    client.force_login(owner)
    pages: dict[str, dict] = {}
    seen: set[str] = set()
    for route, name, parameters in researcher_routes.researcher_routes():
        key = route_key(route)
        if ONLY not in key:
            continue
        urls = [researcher_routes.url_for(route, name, parameters, w) for w in worlds]
        if urls[0] in seen:  # a format-suffix twin of a route already measured
            continue
        seen.add(urls[0])
        figures = [measure_page(client, url) for url in urls]
        pages[key] = {field: [f[field] for f in figures] for field in ("queries", "cpu_s", "wall_s", "status")}
        print(f"  {key}: {pages[key]}", file=sys.stderr, flush=True)
    scores = [score_update_ms(c) for c in campaigns]
    return {"sizes": list(SIZES), "pages": pages, "score_update_ms": scores, "figures_ms": [figures_ms(c) for c in campaigns],
            "failures": failures(pages, scores)}


def failures(pages: dict, scores: list[float]) -> list[str]:
    out = []
    for key, page in pages.items():
        (q_small, q_large), (c_small, c_large) = page["queries"], page["cpu_s"]
        if q_large > q_small:
            out.append(f"{key}: {q_small} -> {q_large} queries")
        if c_large >= FLOOR_S and c_large > MAX_CPU_GROWTH * c_small:
            out.append(f"{key}: CPU {c_small:.3f} -> {c_large:.3f} s ({c_large / max(c_small, 1e-9):.1f}x)")
    if scores[1] >= MAX_SCORE_GROWTH * scores[0]:
        out.append(f"score update per HIT: {scores[0]:.1f} -> {scores[1]:.1f} ms")
    return out


def table(result: dict) -> str:
    small, large = result["sizes"]
    lines = [f"{'page':<72} {'queries':>9} {'CPU s ' + str(small):>10} {'CPU s ' + str(large):>11} {'x':>5} {'wall s':>13} status"]
    for key, page in sorted(result["pages"].items(), key=lambda kv: -kv[1]["cpu_s"][1]):
        (qs, ql), (cs, cl), (ws, wl) = page["queries"], page["cpu_s"], page["wall_s"]
        lines.append(f"{key:<72} {qs:>4}/{ql:<4} {cs:>10.3f} {cl:>11.3f} {cl / max(cs, 1e-9):>5.1f} {ws:>6.2f}/{wl:<6.2f} {page['status'][1]}")
    lines.append(f"score update per HIT (CPU ms): {result['score_update_ms'][0]:.1f} / {result['score_update_ms'][1]:.1f}")
    lines.append(f"figures per drain (wall ms): {result['figures_ms'][0]:.0f} / {result['figures_ms'][1]:.0f}")
    lines.append("check: " + ("ok" if not result["failures"] else "FAILED\n  " + "\n  ".join(result["failures"])))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    as_json = argv[:2] == ["--format", "json"] or "--format=json" in argv
    skipped = None
    if not RAW.exists():
        skipped = f"{RAW} is absent"
    else:
        try:
            socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
        except OSError:
            skipped = "needs PostgreSQL on 127.0.0.1:5432"
    if skipped:
        print(json.dumps({"skipped": skipped}) if as_json else f"scale skipped: {skipped}")
        return 0
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")
    os.environ.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{DB}", DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1", CELERY_TASK_ALWAYS_EAGER="1", DATA_DIR=tempfile.mkdtemp(prefix="qapyr-scale-"), ALLOWED_HOSTS="testserver",
    )
    for key in ("CELERY_BROKER_URL", "REDIS_URL"):
        os.environ.pop(key, None)
    sys.path.insert(0, str(REPO))
    try:
        import django

        django.setup()
        logging.getLogger("django.request").setLevel(logging.ERROR)  # the 404s and 405s measured are expected
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        result = run(json.loads(RAW.read_text()))
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    print(json.dumps(result, indent=1) if as_json else table(result))
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
