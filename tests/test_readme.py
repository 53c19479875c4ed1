"""The README works as written: its manage.py commands start without DEBUG=1 on the embedded default, and it
lists every researcher page."""

from __future__ import annotations

import re
import subprocess
import sys

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
