"""The demo install (`make demo`: requirements.txt alone, no torch) runs a budgeted campaign to its end.

A fresh virtual environment is built from requirements.txt by the Makefile's own target (``make core``: uv, or
pip where uv cannot install; either may use the machine's cache), and a budgeted-presence campaign with the lexical
judge is imported, worked through by ``simulate_crowd`` and scored there, on the embedded SQLite database with
in-process tasks, as on the demo.  184 s on a 2-core machine under a load average of 5-9 (92 s of it uv), up to
7 minutes when it is busier; `-m "not install"` leaves it out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.conftest import REPO
from tests.judges.test_hybrid_campaign import write_folder

pytestmark = pytest.mark.install

SHARE = """
from annotation.models import Campaign
Campaign.objects.filter(slug="budgeted").update(
    human_presence_share=0.5, presence_rounds=2, active_rounds=True, gold_share=0.0, assignments_presence=2,
    presence_judge="lexical")
"""


def run(python, *args, env, timeout=600):
    result = subprocess.run([str(python), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(map(str, args))} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


def test_a_budgeted_campaign_runs_to_its_end_on_the_demo_install(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv = tmp_path / "venv"
    started = time.perf_counter()
    # The Makefile's own core target (uv, or pip where uv cannot install) in a new environment of the same Python.
    make = subprocess.run(["make", "core", f"VENV={venv}", f"PYTHON={sys.executable}"], cwd=REPO, capture_output=True,
                          text=True, timeout=1200)
    assert make.returncode == 0, make.stdout[-4000:] + make.stderr[-4000:]
    installer = "pip" if "\nuv could not install" in f"\n{make.stdout}" else "uv"  # the fallback's own line
    installed = time.perf_counter() - started
    run_budgeted_campaign(venv, tmp_path)
    print(f"demo install: {installer} {installed:.0f} s, whole test {time.perf_counter() - started:.0f} s")


def run_budgeted_campaign(venv, tmp_path):
    """Import, run and score a budgeted campaign with the lexical judge using ``venv``'s Python."""
    python = venv / "bin" / "python"
    env = {
        key: value for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "VIRTUAL_ENV", "PYTHONPATH", "DJANGO_SETTINGS_MODULE")
    }
    env.update(DEBUG="1", DATA_DIR=str(tmp_path / "var"), PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    # What the demo install does not have.
    probe = subprocess.run([str(python), "-c", "import torch"], capture_output=True, text=True)
    assert "No module named 'torch'" in probe.stderr

    folder = write_folder(tmp_path / "data")
    run(python, "manage.py", "migrate", "--noinput", env=env)
    run(python, "manage.py", "import_campaign", "--name", "Budgeted", "--folder", str(folder), env=env)
    run(python, "manage.py", "shell", "-c", SHARE, env=env)
    out = run(
        python, "manage.py", "simulate_crowd", "--campaign", "budgeted", "--workers", "6", "--accuracy", "1.0",
        "--seed", "7", "--max-seconds", "300", env=env,
    )
    assert "campaign finished" in out, out
    scores = json.loads(run(python, "manage.py", "campaign_scores", "--campaign", "budgeted", "--format", "json",
                            "--bootstrap", "200", env=env))
    hybrid = scores["hybrid"]
    assert hybrid["human_presence_share"] == 0.5 and hybrid["judge_version"].startswith("lexical")
    assert 0 < hybrid["human_units"] < hybrid["n_units"] == 4 * 8 * 8
    # People (right every time) and the judge together land near each system's true score from the labels.
    for system, score in hybrid["systems"].items():  # name -> hybrid score (under the campaign's scoring rule)
        labels = [[int(x) for x in line.split("\t")] for line in (folder / "labels" / f"{system}.label").read_text().splitlines()]
        truth = float(np.mean([np.mean(row) for row in labels]))
        assert abs(score - truth) < 0.15, (system, score, truth)
        figures = scores["systems"][system]  # under budgeted presence the ranking's figures are the hybrid ones
        low, high = figures["ci95"]
        assert low <= figures["qapyramid"] == score <= high and 0 < figures["human_share"] < 1
    assert scores["ranked_by"] == "hybrid"
    ranked = sorted(hybrid["systems"], key=lambda name: -hybrid["systems"][name])
    assert ranked[0] == "alpha" and ranked[-1] == "delta"
