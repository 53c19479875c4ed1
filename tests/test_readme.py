"""The README works as written: its manage.py commands start without DEBUG=1 on the embedded default, and it
lists every researcher page."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time

from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def test_every_manage_py_command_of_the_readme_starts_on_the_embedded_default(tmp_path):
    commands = sorted(set(re.findall(r"manage\.py ([a-z_]+)", README)))
    assert len(commands) >= 15
    # A fresh clone: no SECRET_KEY, no DEBUG, no DATABASE_URL; an empty data folder.
    env = {"PATH": "/usr/bin:/bin", "DATA_DIR": str(tmp_path / "var")}
    migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=600)
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    for command in commands:
        result = subprocess.run([sys.executable, "manage.py", command, "--help"], cwd=REPO, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"manage.py {command}: {result.stderr[-1500:]}"
    assert "SECRET_KEY is not set" not in migrate.stderr


def test_the_readme_names_every_researcher_page():
    from annotation.web import urls

    pages = [p.pattern._route for p in urls.urlpatterns if p.pattern._route.startswith("<slug:slug>/")]
    # Pages a researcher opens (actions posted from them are not pages of their own).
    actions = ("control/", "action/", "add/", "remove/", "redetect/", "status/", "recompute/", "export/", "correct/", "assignments/<int:pk>/", "bulk/", "retry/")
    listed = [p for p in pages if not p.endswith(actions) or p == "<slug:slug>/systems/add/"]
    missing = [p for p in listed if "/campaigns/" + p.replace("<slug:slug>", "SLUG").replace("<int:pk>", "ID").replace("<slug:task>", "TASK") not in README]
    assert not missing, missing


def test_the_getting_started_heading_counts_right_and_port_is_documented():
    assert "## The two commands" not in README
    assert "PORT=" in README and "make judges" in README


def test_simulate_crowd_runs_as_the_readme_writes_it_without_debug(tmp_path):
    """Issue 40: with DEBUG off (the README's own way), the in-process server refused its own loopback address
    (DisallowedHost) after the campaign was launched, leaving it Running with nobody working."""
    env = {"PATH": "/usr/bin:/bin", "DATA_DIR": str(tmp_path / "var")}

    def run(*args, timeout=600):
        return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=timeout)

    assert run("migrate", "--noinput").returncode == 0
    loaded = run("load_demo")
    assert loaded.returncode == 0, loaded.stderr[-1500:]
    result = run("simulate_crowd", "--campaign", "demo-news", "--workers", "4", "--max-seconds", "15")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "DisallowedHost" not in result.stderr
    submitted = re.search(r"generation: (\d+) assignments submitted", result.stdout)
    assert submitted and int(submitted.group(1)) > 0, result.stdout


# Every manage.py command the README names, run for real in the order a researcher would, on one scratch SQLite
# database with DEBUG, SECRET_KEY and DATABASE_URL unset.  One Python process runs them one after another through
# manage.py's own entry point (a process per command would start Django thirty times); the stand-ins are the
# second terminal's processes.  "ok": exits 0; "refused": exits 1 with a one-line error (its data or model is
# absent here), never a traceback.
DRIVER = """
import io, json, sys, traceback, contextlib
import manage
results = []
for argv in json.loads(sys.argv[1]):
    sys.argv = ["manage.py", *argv]
    out, err = io.StringIO(), io.StringIO()
    code, trace = 0, ""
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            manage.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            code, trace = -1, traceback.format_exc()
    results.append({"argv": argv, "code": code, "out": out.getvalue()[-1500:], "err": err.getvalue()[-1500:], "trace": trace[-3000:]})
print(json.dumps(results))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, process) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise AssertionError(f"stand-in exited: {process.stderr.read()[-1500:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"stand-in on port {port} never answered")


def test_every_manage_py_command_of_the_readme_runs_on_the_embedded_default(tmp_path):
    demo = REPO / "annotation/demo"
    mturk_port, prolific_port = _free_port(), _free_port()
    env = {
        "PATH": "/usr/bin:/bin", "DATA_DIR": str(tmp_path / "var"), "RITA_PASSWORD": "a-long-password-for-rita",
        # As the README's stand-in recipes export them.
        "MTURK_ENDPOINT_URL": f"http://127.0.0.1:{mturk_port}", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
        "PROLIFIC_API_URL": f"http://127.0.0.1:{prolific_port}", "PROLIFIC_API_TOKEN": "test-token",
        "PROLIFIC_COMPLETION_URL": f"http://127.0.0.1:{prolific_port}/submissions/complete",
    }
    files = ["--references", str(demo / "references.jsonl"), "--summaries", str(demo / "summaries.jsonl")]
    missing = str(tmp_path / "absent")
    steps = [
        (["migrate", "--noinput"], "ok"),
        (["load_demo"], "ok"),
        (["create_researcher", "rita", "--password-from-env", "RITA_PASSWORD"], "ok"),
        (["api_token", "rita"], "ok"),
        (["import_campaign", "--name", "My study", "--owner", "rita", *files, "--predicates", "none", "--slug", "my-study"], "ok"),
        (["import_qualifications", str(demo / "qualifications.json"), "--campaign", "my-study"], "ok"),
        (["invite", "--campaign", "my-study", "--uses", "2", "--expires", "3"], "ok"),
        (["expire_assignments"], "ok"),
        (["worker_report", "--campaign", "demo-news", "--format", "json"], "ok"),
        (["campaign_scores", "--campaign", "demo-news", "--format", "json"], "ok"),
        (["recompute_gold", "--campaign", "demo-news"], "ok"),
        (["calibrate_length_alpha", "--campaign", "demo-news"], "any"),
        (["export_campaign", "--campaign", "demo-news", "--out", str(tmp_path / "export")], "ok"),
        (["compare_judges", "--campaign", "demo-news", "--format", "json"], "any"),
        (["autoscore", "--campaign", "demo-news", "--judge", "trained"], "any"),
        (["train_presence_judge", "--folder", missing, "--out", "mine"], "refused"),
        (["evaluate_presence_judge", "--folder", missing, "--folds", "5", "--format", "json"], "refused"),
        (["evaluate_hybrid", "--folder", missing, "--folds", "5", "--human-share", "0.25"], "refused"),
        (["import_qapyramid_raw", missing, "--campaign", "QAPyramid raw"], "refused"),
        (["replay_presence", "--raw", missing, "--rule", "adaptive", "--format", "json"], "refused"),
        # MTurk, on the stand-in.
        (["import_campaign", "--name", "On MTurk", "--owner", "rita", *files, "--slug", "on-mturk", "--market", "mturk"], "ok"),
        (["mturk_balance", "--campaign", "on-mturk", "--sandbox"], "ok"),
        (["mturk_publish", "--campaign", "on-mturk", "--sandbox", "--dry-run"], "ok"),
        (["mturk_publish", "--campaign", "on-mturk", "--sandbox", "--budget-cap", "50"], "ok"),
        (["mturk_sync", "--campaign", "on-mturk"], "ok"),
        (["mturk_reconcile", "--campaign", "on-mturk"], "any"),
        (["mturk_expire", "--campaign", "on-mturk", "--keep"], "ok"),
        # Prolific, on the stand-in (the README's recipe).
        # The recipe starts on a fresh clone, without researchers; here there are some, so --owner is required.
        (["import_campaign", "--name", "Demo on Prolific", "--slug", "demo-prolific", *files, "--market", "prolific", "--owner", "rita"], "ok"),
        (["import_qualifications", "--campaign", "demo-prolific", str(demo / "qualifications.json")], "ok"),
        (["prolific_publish", "--campaign", "demo-prolific", "--dry-run"], "ok"),
        (["prolific_sync", "--campaign", "demo-prolific"], "any"),
        (["prolific_reconcile", "--campaign", "demo-prolific"], "any"),
        (["prolific_release_browser", "no-such-session"], "refused"),
    ]
    named = set(re.findall(r"manage\.py ([a-z_]+)", README))
    run = {argv[0] for argv, _ in steps} | {"mturk_standin", "prolific_standin", "simulate_crowd"}  # simulate_crowd: below
    assert named <= run, sorted(named - run)
    standins = [
        subprocess.Popen([sys.executable, "manage.py", "mturk_standin", "--port", str(mturk_port), "--time-scale", "3600", "--quiet"],
                         cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True),
        subprocess.Popen([sys.executable, "manage.py", "prolific_standin", "--port", str(prolific_port), "--quiet"],
                         cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True),
    ]
    try:
        _wait_for(mturk_port, standins[0])
        _wait_for(prolific_port, standins[1])
        done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps([argv for argv, _ in steps])], cwd=REPO,
                              env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=900)
    finally:
        for process in standins:
            process.terminate()
            process.wait(timeout=30)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for (argv, expected), result in zip(steps, results):
        what = f"manage.py {' '.join(argv)}: exit {result['code']}\n{result['trace'] or result['err']}\n{result['out'][-500:]}"
        assert not result["trace"] and "Traceback" not in result["err"], what
        if expected == "ok":
            assert result["code"] == 0, what
        elif expected == "refused":
            assert result["code"] == 1 and result["err"].strip(), what
        else:
            assert result["code"] in (0, 1), what
