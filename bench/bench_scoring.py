"""Scoring benchmark: synthetic campaigns of 100k to 1M judgments, and the released raw judgments end to end.

Prints one line per size: `scoring judgments=N seconds=X peak_mb=Y` (median of 3 runs), then the
time to import QA_presence.json and compute its scores through the command line (when the file exists).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from annotation import scoring  # noqa: E402

RAW = REPO.parent / "shared" / "data" / "qapyramid" / "QA_presence.json"


def synthetic(n_judgments: int, seed: int = 0):
    """3 judges per unit, ~30 units per summary, 10 systems; judges right 85% of the time."""
    rng = np.random.default_rng(seed)
    n_units = n_judgments // 3
    n_summaries = max(1, n_units // 30)
    n_examples = max(1, n_summaries // 10)
    unit_summary = rng.integers(0, n_summaries, n_units)
    truth = rng.random(n_units) < 0.45
    units = np.repeat(np.arange(n_units), 3)
    labels = np.where(rng.random(units.size) < 0.85, truth[units], ~truth[units]).astype(np.int64)
    summary_system = np.arange(n_summaries) % 10
    summary_example = np.arange(n_summaries) // 10 % n_examples
    return units, labels, unit_summary, summary_system, summary_example, n_units, n_summaries


def score_everything(data) -> None:
    units, labels, unit_summary, summary_system, summary_example, n_units, n_summaries = data
    gold = scoring.majority_vote(units, labels, n_units)
    summary_scores = scoring.qapyramid_scores(unit_summary, gold, n_summaries)
    scoring.system_scores(summary_system, summary_scores, 10)
    scoring.krippendorff_alpha_nominal(units, labels, n_units)
    scoring.bootstrap_alpha_ci(units, labels, summary_example[unit_summary[units]], n_boot=1000)
    scoring.bootstrap_score_ci(summary_scores, summary_example, summary_system, n_boot=1000)


def measure(n: int, runs: int = 3) -> tuple[float, float]:
    times, peaks = [], []
    for run in range(runs):
        data = synthetic(n, seed=run)
        tracemalloc.start()
        started = time.perf_counter()
        score_everything(data)
        times.append(time.perf_counter() - started)
        peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
        tracemalloc.stop()
    return statistics.median(times), statistics.median(peaks)


def raw_import() -> None:
    if not RAW.exists():
        print("scoring_raw skipped (../shared/data/qapyramid/QA_presence.json absent)")
        return
    with tempfile.TemporaryDirectory() as data_dir:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
        env.update(DATA_DIR=data_dir, DEBUG="1")
        manage = [sys.executable, str(REPO / "manage.py")]
        subprocess.run(manage + ["migrate", "-v0"], env=env, check=True)
        started = time.perf_counter()
        subprocess.run(manage + ["import_qapyramid_raw", str(RAW), "--campaign", "raw"], env=env, check=True, stdout=subprocess.DEVNULL)
        imported = time.perf_counter() - started
        out = subprocess.run(manage + ["campaign_scores", "--campaign", "raw", "--format", "json"], env=env, check=True, capture_output=True, text=True).stdout
        total = time.perf_counter() - started
    import json

    alpha = json.loads(out)["alpha"]["pooled"]
    print(f"scoring_raw import_s={imported:.2f} import_and_scores_s={total:.2f} pooled_alpha={alpha:.3f}")


def main() -> None:
    for n in (100_000, 300_000, 1_000_000):
        seconds, peak = measure(n)
        print(f"scoring judgments={n} seconds={seconds:.2f} peak_mb={peak:.0f}")
    raw_import()


if __name__ == "__main__":
    main()
