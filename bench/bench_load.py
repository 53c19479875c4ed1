"""Load benchmark: gunicorn on PostgreSQL with a Celery worker on Redis, N simulated workers over HTTP.

Each simulated worker accepts a presence HIT, then repeats open the HIT page ->
submit for a bounded time.  Workers keep the platform's default auto-accept
setting, so each submission also accepts the worker's next HIT and redirects
to it (the flow of a worker on the HIT pages): a cycle is one accept and one
submission, done in two requests.  For each level the script prints

    load workers=N cycles_per_s=X p50_ms=A p95_ms=B p99_ms=C queries_per_request=Q cpu_ms_per_cycle=M overfilled=0 duplicate_assignments=0 lost_submissions=0

(latencies are per HTTP request; M is the machine's busy CPU time, all processes, per completed
cycle; the three counts are measured in the database after the runs).  Each level runs ``BENCH_LOAD_RUNS`` times (3) for
``BENCH_LOAD_SECONDS`` (20) on the same server; the line gives the medians and
each run's throughput.  A warm-up of ``BENCH_LOAD_WARMUP`` seconds (5) comes first and is
not measured (its submissions are checked too).  Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres)
and Redis on 127.0.0.1:6379; it creates and drops its own database
"qapyr_bench" and uses Redis database 5.  Everything runs on loopback.

Before the levels, the same server setup answers an authenticated no-op page (session,
user and worker loaded through the whole middleware stack, nothing else) under the first
level's number of clients, and the script prints

    load ceiling workers=N noop_requests_per_s=R cycles_per_s_ceiling=R/2 p95_ms=B

A cycle is two requests that each also do real work, so R/2 bounds what any cycle can
reach on this machine with this stack and this client.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
LEVELS = [int(x) for x in os.environ.get("BENCH_LOAD_LEVELS", "50,100,200").split(",")]
SECONDS = float(os.environ.get("BENCH_LOAD_SECONDS", "20"))
RUNS = max(1, int(os.environ.get("BENCH_LOAD_RUNS", "3")))
WARMUP = float(os.environ.get("BENCH_LOAD_WARMUP", "5"))
DB = "qapyr_bench"
N_EXAMPLES = int(os.environ.get("BENCH_LOAD_EXAMPLES", "800"))
N_SYSTEMS = 10
# Sync workers, 2 x cores + 1 (gunicorn's own rule of thumb): measured best here. With threads, the
# processes' threads contend for the GIL: 3 gthread x 8 gave 46 cycles/s and p95 1.2 s where 5 sync
# workers gave 59 cycles/s and p95 0.56 s (50 workers, same machine, back to back).
GUNICORN_CLASS = os.environ.get("BENCH_GUNICORN_CLASS", "sync")
GUNICORN_WORKERS = os.environ.get("BENCH_GUNICORN_WORKERS", str(2 * (os.cpu_count() or 1) + 1))
GUNICORN_THREADS = os.environ.get("BENCH_GUNICORN_THREADS", "1")
CEILING = os.environ.get("BENCH_LOAD_CEILING", "1") != "0"


def reachable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(port: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "REDIS_URL"))}
    env.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{DB}",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/5",
        REDIS_URL="redis://127.0.0.1:6379/5",
        SECRET_KEY="bench-" + secrets.token_hex(24),
        DEBUG="0",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        LOGIN_RATE_LIMIT="100000/60",
        SUBMIT_RATE_LIMIT="100000/60",
        COUNT_QUERIES="1",
        DB_CONN_MAX_AGE="600",
        DATA_DIR=tempfile.mkdtemp(prefix="qapyr-bench-"),
        PYTHONUNBUFFERED="1",
    )
    return env


def recreate_database() -> None:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")


SETUP = r'''
import json, secrets, sys
from pathlib import Path
import django
django.setup()
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from hits.models import Worker

folder, n_workers = Path(sys.argv[1]), int(sys.argv[2])
campaign = import_campaign(name=f"Load {n_workers}", folder=folder, predicates="none").campaign
launch_campaign(campaign)
User = get_user_model()
sessions = []
for i in range(n_workers):
    user = User.objects.create_user(f"load{n_workers}-{i}", password=None)
    Worker.objects.create(user=user, external_id=f"load{n_workers}-{i}", auto_accept_next=True)
    store = SessionStore()
    store["_auth_user_id"] = str(user.pk)
    store["_auth_user_backend"] = "config.auth.WorkerModelBackend"
    store["_auth_user_hash"] = user.get_session_auth_hash()
    store.create()
    sessions.append(store.session_key)
print(json.dumps(sessions))
'''

CHECKS = r'''
import json, sys
import django
django.setup()
from django.db import connection
acknowledged = json.loads(sys.stdin.read())
with connection.cursor() as c:
    c.execute("""SELECT count(*) FROM hits_hit h WHERE (SELECT count(*) FROM hits_assignment a WHERE a.hit_id = h.id
                 AND a.state IN ('assigned','submitted','approved','rejected')) > h.max_assignments""")
    overfilled = c.fetchone()[0]
    c.execute("SELECT count(*) FROM (SELECT hit_id, worker_id FROM hits_assignment GROUP BY hit_id, worker_id HAVING count(*) > 1) d")
    duplicates = c.fetchone()[0]
    c.execute("""SELECT a.id, a.state, (SELECT count(*) FROM annotation_presencejudgment j WHERE j.assignment_id = a.id),
                 jsonb_array_length(a.answers->'labels') FROM hits_assignment a WHERE a.id = ANY(%s)""", [acknowledged])
    rows = c.fetchall()
found = {r[0]: r for r in rows}
lost = sum(1 for a in acknowledged if a not in found or found[a][1] != "submitted" or found[a][2] != found[a][3])
print(json.dumps({"overfilled": overfilled, "duplicates": duplicates, "lost": lost}))
'''


def write_dataset(root: Path, n_examples: int = N_EXAMPLES) -> None:
    """A Pyramid-style folder: ``n_examples`` references of four units, each summarised by 10 systems."""
    (root / "summaries").mkdir(parents=True)
    ids = [f"doc{i}" for i in range(n_examples)]
    (root / "ids.txt").write_text("\n".join(ids) + "\n")
    (root / "references.txt").write_text("\n".join(f"<t> Reference {i} about a topic . </t>" for i in ids) + "\n")
    (root / "SCUs.txt").write_text("\n".join("\t".join(f"fact {u} of {i}" for u in range(4)) for i in ids) + "\n")
    for s in range(N_SYSTEMS):
        (root / "summaries" / f"sys{s}.summary").write_text("\n".join(f"System {s} says {i} ." for i in ids) + "\n")


class Client:
    """One simulated worker: its session and CSRF cookies, one short HTTP connection per request.

    In production a reverse proxy stands between browsers and gunicorn and opens a short
    connection per request; a client holding a keep-alive connection straight to gunicorn would
    pin itself to one gunicorn process (gthread workers accept greedily) and leave the others idle.

    The requests are written and the answers read on a plain socket (HTTP/1.1, ``Connection: close``,
    the answer read to its end): the load generator shares the machine's two cores with the server: with
    ``http.client`` (which parses headers with the email package) the client took about 1.4 ms of CPU
    per cycle on the slower 2-core machine of the README's figures, on the plain socket 0.7 ms.
    """

    def __init__(self, port: int, session: str):
        self.port = port
        self.csrf = secrets.token_hex(16)
        self.head = (
            f"Host: 127.0.0.1:{port}\r\nCookie: sessionid={session}; csrftoken={self.csrf}\r\n"
            f"X-CSRFToken: {self.csrf}\r\nConnection: close\r\n"
        )

    def request(self, method: str, path: str, body: dict | None = None):
        data = urlencode(body or {}).encode() if method == "POST" else b""
        head = f"{method} {path} HTTP/1.1\r\n{self.head}"
        if method == "POST":
            head += f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(data)}\r\n"
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as conn:
            conn.sendall(head.encode() + b"\r\n" + data)
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        elapsed = time.perf_counter() - started
        raw = b"".join(chunks)
        header_block, _, content = raw.partition(b"\r\n\r\n")
        lines = header_block.decode("latin-1").split("\r\n")
        if not lines[0].startswith("HTTP/"):
            raise RuntimeError(f"not an HTTP answer: {lines[0][:80]!r}")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers.get("location", ""), content, elapsed, int(headers.get("x-db-queries", "0"))


NOOP_URLS = r'''
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import include, path


@login_required
def noop(request):
    return HttpResponse(request.user.worker.external_id)


urlpatterns = [path("bench/noop/", noop), path("", include("config.urls"))]
'''


def run_threads(work, sessions: list[str]) -> float:
    """Run ``work(session)`` in one thread per session; the wall time until all are done."""
    started = time.perf_counter()
    threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def run_noop(port: int, sessions: list[str], seconds: float) -> dict:
    """Authenticated GETs of the no-op page by one thread per session, for ``seconds``."""
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def work(session: str):
        client = Client(port, session)
        local = []
        while time.perf_counter() < stop_at:
            status, _, _, elapsed, _ = client.request("GET", "/bench/noop/")
            if status != 200:
                raise RuntimeError(f"no-op page answered {status}")
            local.append(elapsed)
        with lock:
            latencies.extend(local)

    elapsed = run_threads(work, sessions)
    latencies.sort()
    return {"rps": len(latencies) / elapsed, "p95": 1000 * latencies[int(0.95 * (len(latencies) - 1))]}


def start_server(port: int, env: dict) -> list[subprocess.Popen]:
    """Gunicorn (``GUNICORN_*`` settings) and one Celery worker; returns once the port answers."""
    gunicorn = subprocess.Popen(
        [shutil.which("gunicorn", path=str(Path(PY).parent)) or "gunicorn", "config.wsgi:application", "-b", f"127.0.0.1:{port}",
         "-k", GUNICORN_CLASS, "-w", GUNICORN_WORKERS, "--threads", GUNICORN_THREADS,
         "--backlog", "2048", "--log-level", "warning"],
        cwd=REPO, env=env,
    )
    celery = subprocess.Popen(
        [PY, "-m", "celery", "-A", "config", "worker", "-c", "1", "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        if reachable(port):
            break
        time.sleep(0.1)
    return [gunicorn, celery]


def stop_server(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            # A worker still busy with queued follow-ups: its work is not what is measured.
            p.kill()
            p.wait()


def measure_ceiling(port: int, env: dict, sessions: list[str]) -> None:
    """The no-op page's throughput on the same server setup: what a cycle of two requests cannot exceed."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bench_noop_urls.py").write_text(NOOP_URLS)
        (Path(tmp) / "bench_noop_settings.py").write_text('from config.settings import *  # noqa\nROOT_URLCONF = "bench_noop_urls"\n')
        procs = start_server(port, env | {"DJANGO_SETTINGS_MODULE": "bench_noop_settings", "PYTHONPATH": f"{tmp}{os.pathsep}{REPO}"})
        try:
            if WARMUP > 0:
                run_noop(port, sessions, WARMUP)
            runs = [run_noop(port, sessions, SECONDS) for _ in range(RUNS)]
        finally:
            stop_server(procs)
    rps = statistics.median(r["rps"] for r in runs)
    print(
        f"load ceiling workers={len(sessions)} noop_requests_per_s={rps:.0f} cycles_per_s_ceiling={rps / 2:.0f} "
        f"p95_ms={statistics.median(r['p95'] for r in runs):.0f} runs={len(runs)}",
        flush=True,
    )


def cpu_seconds() -> float:
    """CPU time the whole machine has spent busy (user, system, interrupts) since boot, from /proc/stat;
    NaN where there is no /proc."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def run_level(port: int, sessions: list[str], seconds: float) -> dict:
    latencies: list[float] = []
    queries: list[int] = []
    acknowledged: list[int] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds
    unit_field = re.compile(rb'name="(p_\d+)"')

    def work(session: str):
        client = Client(port, session)
        local_lat, local_q, local_ack = [], [], []
        page_path = None
        while time.perf_counter() < stop_at:
            try:
                if page_path is None:
                    status, location, _, t0, q0 = client.request("POST", "/work/presence/start/")
                    local_lat.append(t0)
                    local_q.append(q0)
                    match = re.search(r"/work/assignments/(\d+)/", location)
                    if status != 302 or not match:
                        break  # nothing left for this worker
                    page_path = match.group(0)
                status, _, body, t1, q1 = client.request("GET", page_path)
                fields = {name.decode(): "1" for name in unit_field.findall(body)}
                status, location, _, t2, q2 = client.request("POST", page_path, {"action": "submit", **fields})
                local_lat += [t1, t2]
                local_q += [q1, q2]
                if status == 302:
                    local_ack.append(int(page_path.rstrip("/").rsplit("/", 1)[1]))
                    # Auto-accept: the answer to a submission is the worker's next HIT (or the home page when none is left).
                    match = re.search(r"/work/assignments/(\d+)/", location)
                    if not match:
                        break
                    page_path = match.group(0)
                else:
                    page_path = None
                    with lock:
                        errors[0] += 1
            except Exception:  # noqa: BLE001 - counted, the run goes on
                page_path = None
                with lock:
                    errors[0] += 1
        with lock:
            latencies.extend(local_lat)
            queries.extend(local_q)
            acknowledged.extend(local_ack)

    cpu_before = cpu_seconds()
    elapsed = run_threads(work, sessions)
    cpu = cpu_seconds() - cpu_before
    latencies.sort()

    def pct(p):
        return 1000 * latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else float("nan")

    return {
        "cycles_per_s": len(acknowledged) / elapsed,
        # Every process's CPU (server, database, Redis, Celery and this client) per completed cycle: on a
        # shared, noisy machine a steadier figure than the throughput; 250 cycles/s on 2 cores leave 8 ms.
        "cpu_ms": 1000 * cpu / len(acknowledged) if acknowledged else float("nan"),
        "p50": pct(0.50),
        "p95": pct(0.95),
        "p99": pct(0.99),
        "queries": statistics.mean(queries) if queries else float("nan"),
        "acknowledged": acknowledged,
        "errors": errors[0],
    }


def main() -> int:
    if not (reachable(5432) and reachable(6379)):
        print("load skipped: needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379")
        return 0
    port = free_port()
    env = environment(port)
    recreate_database()
    # The database starts empty, so must its Redis: coalesced follow-ups of an earlier run's campaign
    # (same ids in a new database) would otherwise be drained, and their measured cost reused, here.
    import redis

    redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushdb()
    subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True)
    procs = []
    try:
        for workers in LEVELS:
            with tempfile.TemporaryDirectory() as tmp:
                write_dataset(Path(tmp) / "ds")
                out = subprocess.run(
                    [PY, "-c", SETUP, str(Path(tmp) / "ds"), str(workers)], cwd=REPO, env=env | {"DJANGO_SETTINGS_MODULE": "config.settings"},
                    check=True, capture_output=True, text=True,
                ).stdout
            import json

            sessions = json.loads(out.strip().splitlines()[-1])
            if workers == LEVELS[0] and CEILING:
                measure_ceiling(port, env, sessions)
            procs = start_server(port, env)
            # A warm-up (gunicorn's processes import views, compile templates and open their database
            # connections on first use) is not measured; its submissions are checked like the others.
            warmup = run_level(port, sessions, WARMUP) if WARMUP > 0 else {"acknowledged": [], "errors": 0}
            # Several runs per level on the same server; the line reports their medians.
            runs = [run_level(port, sessions, SECONDS) for _ in range(RUNS)]
            stop_server(procs)
            procs = []
            acknowledged = [a for r in [warmup, *runs] for a in r["acknowledged"]]
            checks = json.loads(
                subprocess.run([PY, "-c", CHECKS], cwd=REPO, env=env | {"DJANGO_SETTINGS_MODULE": "config.settings"}, input=json.dumps(acknowledged),
                               check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
            )
            # The level's campaign is cancelled as a researcher would (its open HITs are closed), so the
            # next level starts on a fresh campaign and a clean queue.
            subprocess.run([PY, "-c", "import django; django.setup(); from annotation.models import Campaign; "
                            "from annotation.services.pipeline import cancel_campaign; "
                            "[cancel_campaign(c) for c in Campaign.objects.filter(state__in=['running', 'paused'])]"],
                           cwd=REPO, env=env | {"DJANGO_SETTINGS_MODULE": "config.settings"}, check=True)

            def median(key):
                return statistics.median(r[key] for r in runs)

            each = "/".join(f"{r['cycles_per_s']:.1f}" for r in runs)

            print(
                f"load workers={workers} cycles_per_s={median('cycles_per_s'):.1f} p50_ms={median('p50'):.0f} "
                f"p95_ms={median('p95'):.0f} p99_ms={median('p99'):.0f} queries_per_request={median('queries'):.1f} "
                f"cpu_ms_per_cycle={median('cpu_ms'):.1f} "
                f"overfilled={checks['overfilled']} duplicate_assignments={checks['duplicates']} lost_submissions={checks['lost']}"
                f" errors={sum(r['errors'] for r in [warmup, *runs])} runs={len(runs)}"
                f" cycles_per_s_each={each}",
                flush=True,
            )
    finally:
        for p in procs:
            p.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
