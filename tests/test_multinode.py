"""Several nodes, tested as several nodes (issue 50): two gunicorn web nodes and a Celery worker, each with its own
``DATA_DIR``, one PostgreSQL database, Redis, and moto's S3 server as the object store (``STORAGE_BUCKET``,
``AWS_ENDPOINT_URL_S3``), DEBUG off.  Through the API: an import posted to node A is polled to "done" on node B;
an export started on node B is downloaded through node A; a HIT taken on one node is submitted on the other; the
bucket holds the files and no node's disk does.

Needs PostgreSQL (``DATABASE_URL``; the test creates and drops a database of its own) and a Redis broker
(``CELERY_BROKER_URL``): skipped without them.  The start-up check of a missing bucket needs neither.
"""

from __future__ import annotations

import io
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.conftest import REPO
from tests.web.conftest import REFERENCES, SUMMARIES

BUCKET = "qapyr-multinode"
AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}

SETUP = r'''
import json, sys
from pathlib import Path
import django
django.setup()
from importlib import import_module
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from hits.models import Worker

User = get_user_model()
rita = User.objects.create_user("rita", password=None)
make_researcher(rita)
campaign = import_campaign(name="Presence on two nodes", folder=Path(sys.argv[1]), predicates="none", owner=rita).campaign
launch_campaign(campaign)
user = User.objects.create_user("wanda", password=None)
Worker.objects.create(user=user, external_id="wanda", auto_accept_next=False)
store = import_module(settings.SESSION_ENGINE).SessionStore()
store["_auth_user_id"] = str(user.pk)
store["_auth_user_backend"] = "config.auth.WorkerModelBackend"
store["_auth_user_hash"] = user.get_session_auth_hash()
store.create()
print(json.dumps({"token": Token.objects.create(user=rita).key, "session": store.session_key}))
'''


def _free_port() -> int:
    from bench.bench_load import free_port

    return free_port()


def _wait_until(check, what: str, seconds: float = 120.0, procs=()):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"{what}: a process ended early:\n{_output(proc)}")
        try:
            result = check()
        except Exception:  # noqa: BLE001 - not up yet
            result = None
        if result:
            return result
        time.sleep(0.3)
    raise AssertionError(f"{what}: not within {seconds:.0f} s")


def _output(proc) -> str:
    log = getattr(proc, "log_path", None)
    return log.read_text(errors="replace")[-4000:] if log and log.exists() else ""


def _start(command: list[str], env: dict, log: Path) -> subprocess.Popen:
    """A node's process, its output in ``log`` (a pipe nobody reads could fill and stop it)."""
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    proc.log_path = log
    return proc


def _stop(procs) -> None:
    from bench.bench_load import stop_server

    stop_server([p for p in procs if p.poll() is None])


@pytest.fixture(scope="module")
def s3_server():
    """moto's S3 server on a free port of loopback, with the bucket created; yields its address."""
    pytest.importorskip("moto.server")
    import boto3

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                          region_name="us-east-1")
    try:
        _wait_until(lambda: client.create_bucket(Bucket=BUCKET), "moto's S3 server", procs=[server])
        yield endpoint, client
    finally:
        _stop([server])


def _base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DATABASE_URL", "CELERY_", "REDIS_URL", "CACHE_URL", "AWS_", "STORAGE_", "DJANGO_"))}
    return env | AWS | {"PYTHONUNBUFFERED": "1", "DJANGO_SETTINGS_MODULE": "config.settings"} | extra


def test_a_missing_bucket_stops_the_start_with_improperly_configured_naming_it(s3_server, tmp_path):
    endpoint, _ = s3_server
    env = _base_env(DEBUG="1", DATA_DIR=str(tmp_path), STORAGE_BUCKET="qapyr-not-there", AWS_ENDPOINT_URL_S3=endpoint)
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode != 0
    assert "ImproperlyConfigured: STORAGE_BUCKET 'qapyr-not-there' does not exist" in result.stderr
    env["STORAGE_BUCKET"] = BUCKET
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def cluster(s3_server):
    """A database of its own, then two web nodes and a worker (each its own DATA_DIR) on it, Redis and the bucket."""
    database_url = os.environ.get("DATABASE_URL", "")
    broker = os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL") or ""
    if not database_url.startswith(("postgres://", "postgresql://")):
        pytest.skip("several nodes need a shared PostgreSQL server (DATABASE_URL)")
    if not broker.startswith(("redis://", "rediss://")):
        pytest.skip("several nodes need a shared Redis (CELERY_BROKER_URL)")
    import psycopg

    from bench.bench_load import write_dataset

    server = urlparse(database_url)
    name = f"qapyr_multinode_{secrets.token_hex(4)}"
    admin = server._replace(path="/postgres").geturl().replace("postgres://", "postgresql://", 1)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    endpoint, client = s3_server
    root = Path(tempfile.mkdtemp(prefix="qapyr-multinode-"))
    env = _base_env(
        DATABASE_URL=server._replace(path=f"/{name}").geturl(), CELERY_BROKER_URL=broker, REDIS_URL=broker,
        CACHE_URL=broker, DEBUG="0", SECRET_KEY="multinode-" + secrets.token_hex(30), ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0", SESSION_COOKIE_SECURE="0", CSRF_COOKIE_SECURE="0", SECURE_HSTS_SECONDS="0",
        STORAGE_BUCKET=BUCKET, AWS_ENDPOINT_URL_S3=endpoint, API_IMPORT_INLINE_MAX_BYTES="10",
        LOGIN_RATE_LIMIT="100000/60", SUBMIT_RATE_LIMIT="100000/60",
    )
    procs: list[subprocess.Popen] = []
    try:
        migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, timeout=600,
                                 env=env | {"DATA_DIR": str(root / "setup")}, capture_output=True, text=True)
        assert migrate.returncode == 0, migrate.stderr[-3000:]
        write_dataset(root / "pyramid", n_examples=3)
        setup = subprocess.run([sys.executable, "-c", SETUP, str(root / "pyramid")], cwd=REPO, timeout=600,
                               env=env | {"DATA_DIR": str(root / "setup")}, capture_output=True, text=True)
        assert setup.returncode == 0, setup.stderr[-3000:]
        import json

        ids = json.loads(setup.stdout.strip().splitlines()[-1])
        nodes = {}
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        for node in ("a", "b", "worker"):
            (root / node).mkdir()
        for node in ("a", "b"):
            port = _free_port()
            # Node A answers a download with a link signed by the store, node B streams it.
            extra = {"STORAGE_SIGNED_URL_SECONDS": "60"} if node == "a" else {}
            procs.append(_start(
                [gunicorn, "config.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", "2", "--timeout", "120",
                 "--log-level", "warning"], env | extra | {"DATA_DIR": str(root / node)}, root / f"{node}.log"))
            nodes[node] = f"http://127.0.0.1:{port}"
        procs.append(_start(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--without-gossip",
             "--without-mingle", "--without-heartbeat", "--loglevel=WARNING", "-n", f"{name}@localhost"],
            env | {"DATA_DIR": str(root / "worker")}, root / "worker.log"))
        import httpx

        for address in nodes.values():
            _wait_until(lambda: httpx.get(f"{address}/readyz").status_code == 200, f"web node {address}", procs=procs)
        yield {"nodes": nodes, "root": root, "token": ids["token"], "session": ids["session"], "s3": client,
               "database": env["DATABASE_URL"], "procs": procs,
               "endpoint": endpoint}
    finally:
        _stop(procs)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        import shutil

        shutil.rmtree(root, ignore_errors=True)


def _poll_job(api, url: str, procs) -> dict:
    return _wait_until(lambda: (job := api.get(url).json())["finished"] and job, f"job {url}", seconds=300, procs=procs)


def test_two_web_nodes_and_a_worker_share_only_the_database_redis_and_the_bucket(cluster):
    import httpx

    a, b = cluster["nodes"]["a"], cluster["nodes"]["b"]
    headers = {"Authorization": f"Token {cluster['token']}"}
    with httpx.Client(base_url=a, headers=headers, timeout=60) as api_a, \
            httpx.Client(base_url=b, headers=headers, timeout=60) as api_b:
        # An import posted to node A is a background job (files larger than API_IMPORT_INLINE_MAX_BYTES), staged in
        # the bucket, imported by the worker (its own DATA_DIR), and polled to "done" on node B.
        posted = api_a.post("/api/campaigns/", data={"name": "Imported on A"},
                            files={"references": ("refs.jsonl", REFERENCES), "summaries": ("sums.jsonl", SUMMARIES)})
        assert posted.status_code == 202, posted.text
        job = _poll_job(api_b, posted.headers["Location"], cluster["procs"])
        assert job["state"] == "done", job
        slug = job["campaign"]
        assert api_b.get(f"/api/campaigns/{slug}/").json()["name"] == "Imported on A"

        # An export started on node B, polled on B, downloaded through node A (a redirect to a link the store
        # signed) and through node B (streamed from the bucket): both a zip with campaign.json.
        started = api_b.post(f"/api/campaigns/{slug}/export/")
        assert started.status_code == 202, started.text
        job = _poll_job(api_b, started.headers["Location"], cluster["procs"])
        assert job["state"] == "done", job
        redirected = api_a.get(job["download_url"])
        assert redirected.status_code == 302
        assert redirected.headers["Location"].startswith(f"{cluster['endpoint']}/{BUCKET}/exports/")
        for download in (api_a.get(job["download_url"], follow_redirects=True), api_b.get(job["download_url"])):
            assert download.status_code == 200, download.text[:300]
            names = zipfile.ZipFile(io.BytesIO(download.content)).namelist()
            assert any(n.endswith("/campaign.json") for n in names), names

    # A HIT taken on node A is submitted on node B (sessions in Redis, the assignment in PostgreSQL).
    from bench.bench_load import Client

    port_a, port_b = (int(urlparse(n).port) for n in (a, b))
    on_a, on_b = Client(port_a, cluster["session"]), Client(port_b, cluster["session"])
    on_b.csrf, on_b.head = on_a.csrf, on_a.head.replace(f"127.0.0.1:{port_a}", f"127.0.0.1:{port_b}")
    status, location, _, _, _ = on_a.request("POST", "/work/presence/start/")
    match = re.search(r"/work/assignments/(\d+)/", location)
    assert status == 302 and match, (status, location)
    status, _, page, _, _ = on_b.request("GET", match.group(0))
    assert status == 200
    fields = {name.decode(): "1" for name in re.findall(rb'name="(p_\d+)"', page)}
    assert fields
    status, _, _, _, _ = on_b.request("POST", match.group(0), {"action": "submit", **fields})
    assert status == 302
    import psycopg

    with psycopg.connect(cluster["database"].replace("postgres://", "postgresql://", 1)) as conn:
        state = conn.execute("SELECT state FROM hits_assignment WHERE id = %s", [int(match.group(1))]).fetchone()[0]
    assert state == "submitted"

    # The bucket holds the export (and held the staged upload, removed after the import); no node's disk does.
    stored = sorted(o["Key"] for o in cluster["s3"].list_objects_v2(Bucket=BUCKET).get("Contents", []))
    assert stored == [f"exports/{slug}-export-{job['id']}.zip"], stored
    for node in ("a", "b", "worker"):
        files = [p for p in (cluster["root"] / node).rglob("*") if p.is_file()]
        assert not [p for p in files if p.suffix in (".zip", ".jsonl") or "uploads" in p.parts], (node, files)
