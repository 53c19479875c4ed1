"""Budgeted presence benchmark: ``evaluate_hybrid --seeds`` on REALSumm (5 folds split by example, the features
judge trained per fold, 25% human share, 3 active rounds, the curve 0-100%) with the zero-shot routing of
PyrXSum, for seeds 0..N-1 on pair features computed once, against the issues' targets (medians over the seeds);
wall and CPU time of the whole run (pair features included).

Prints one line per figure:
  hybrid realsumm share=0.25 rounds=3 seed=S accuracy=.. summary_pearson=.. ... random_summary_pearson=..
  hybrid realsumm median_of_seeds=N ... and range_of_seeds=N with min-max per figure
  hybrid target summary_pearson>=0.75 value=.. met=yes|no   (and the others, on the medians)
  hybrid curve share=X routed_accuracy=.. routed_summary_pearson=.. ... (medians) and the ranges
  hybrid zero_shot pyrxsum ... (medians)
  hybrid seconds wall=.. cpu=.. features=.. routing=.. one_seed_wall=..
``BENCH_HYBRID_SEEDS=N`` (default 5) sets the number of seeds.  Skips cleanly without ../shared/data.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import django  # noqa: E402

django.setup()

DATA = Path(os.environ.get("BENCH_DATA", REPO.parent / "shared" / "data"))
KEYS = ("accuracy", "summary_pearson", "summary_kendall", "system_pearson", "system_kendall", "summary_pearson_probability",
        "human_unit_share", "combined_cost_share")
TARGETS = (("summary_pearson", 0.75), ("summary_pearson_probability", 0.76), ("accuracy", 0.88), ("system_kendall", 0.85))


def _line(prefix: str, figures: dict, random: dict | None = None) -> str:
    text = prefix + " " + " ".join(f"{k}={figures[k]:.4f}" for k in KEYS)
    if random is not None:
        text += " " + " ".join(f"random_{k}={random[k]:.4f}" for k in KEYS[:-2])
    return text


def _range_line(prefix: str, spread: dict, random: dict | None = None) -> str:
    text = prefix + " " + " ".join(f"{k}={spread[k][0]:.4f}-{spread[k][1]:.4f}" for k in KEYS)
    if random is not None:
        text += " " + " ".join(f"random_{k}={random[k][0]:.4f}-{random[k][1]:.4f}" for k in KEYS[:-2])
    return text


def main() -> int:
    from annotation.automation.judges.datasets import dataset_from_folder
    from annotation.automation.judges.hybrid import evaluate_seeds

    if not (DATA / "realsumm").is_dir() or not (DATA / "pyrxsum").is_dir():
        print(f"hybrid skipped: no REALSumm/PyrXSum under {DATA}")
        return 0
    seeds = list(range(int(os.environ.get("BENCH_HYBRID_SEEDS", "5"))))
    wall, cpu = time.perf_counter(), time.process_time()
    data, test = dataset_from_folder(DATA / "realsumm"), dataset_from_folder(DATA / "pyrxsum")

    def done(run):
        print(_line(f"hybrid realsumm share=0.25 rounds=3 seed={run['seed']}", run, run["random"]), flush=True)

    # The timed run is the command's whole work: pair features of both sets, 5 folds, the curve, zero-shot, per seed.
    result = evaluate_seeds(data, seeds, folds=5, share=0.25, rounds=3, curve=True, test_data=test, progress=done)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n, ranges = len(seeds), result["ranges"]
    print(_line(f"hybrid realsumm median_of_seeds={n}", result, result["random"]))
    print(_range_line(f"hybrid realsumm range_of_seeds={n}", ranges, ranges["random"]))
    for key, target in TARGETS:
        print(f"hybrid target {key}>={target} value={result[key]:.4f} met={'yes' if result[key] >= target else 'no'}")
    gain = statistics.median(r["summary_pearson"] - r["random"]["summary_pearson"] for r in result["seeds"])
    print(f"hybrid target summary_pearson_above_random>=0.03 value={gain:.4f} met={'yes' if gain >= 0.03 else 'no'}")
    for measure in result["measures"]:
        print(_line(f"hybrid realsumm measure={measure} median_of_seeds={n}", result["measures"][measure]))
    for point, spread in zip(result["curve"], ranges["curve"]):
        routed, random = point["routed"], point["random"]
        print(f"hybrid curve share={routed['human_share']:.1f} median_of_seeds={n} "
              + " ".join(f"routed_{k}={routed[k]:.4f} ({spread['routed'][k][0]:.4f}-{spread['routed'][k][1]:.4f})"
                         for k in ("accuracy", "summary_pearson", "summary_pearson_probability", "system_kendall",
                                   "human_unit_share", "combined_cost_share"))
              + " " + " ".join(f"random_{k}={random[k]:.4f} ({spread['random'][k][0]:.4f}-{spread['random'][k][1]:.4f})"
                               for k in ("accuracy", "summary_pearson", "summary_pearson_probability", "system_kendall")))
    print(_line(f"hybrid zero_shot pyrxsum share=0.25 median_of_seeds={n}", result["zero_shot"], result["zero_shot"]["random"]))
    print(_range_line(f"hybrid zero_shot pyrxsum share=0.25 range_of_seeds={n}", ranges["zero_shot"], ranges["zero_shot"]["random"]))
    one_seed = result["seconds"]["features"] + result["seeds"][0]["seconds"]["total"]
    print(f"hybrid seconds wall={wall:.1f} cpu={cpu:.1f} features_and_data={result['seconds']['features']:.1f} "
          f"routing={result['seconds']['routing']:.1f} one_seed_wall={one_seed:.1f} "
          f"target_one_seed_wall<=1800 met={'yes' if one_seed <= 1800 else 'no'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
