"""Budgeted presence, the two rules: ``evaluate_hybrid --judge lexical --seeds 0..19`` on REALSumm at 10%, 25% and
40% human share, each rule's system scores against the full-human means (issue 37's aims at 25%: coverage >= 0.93,
|mean bias| <= 0.005, mean abs bias <= 0.008, interval width <= 0.11, display system tau >= 0.83).

Prints one line per share and rule, then one line per aim:
  hybrid_rules share=0.25 rule=active coverage=.. mean_bias=.. mean_abs_bias=.. mae=.. ci_width=.. system_tau=.. ...
  hybrid_rules aim coverage>=0.93 value=.. met=yes|no
``BENCH_HYBRID_RULES_SEEDS=N`` (default 20) sets the seeds; ``BENCH_HYBRID_RULES_SHARES`` (default 0.1,0.25,0.4)
the shares.  Skips cleanly without ../shared/data.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

AIMS = (("coverage", ">=", 0.93), ("mean_bias", "abs<=", 0.005), ("mean_abs_bias", "<=", 0.008),
        ("ci_width", "<=", 0.11), ("system_tau_display", ">=", 0.83))


def main() -> int:
    folder = REPO.parent / "shared" / "data" / "realsumm"
    if not folder.is_dir():
        print("hybrid_rules skipped: ../shared/data/realsumm is absent")
        return 0
    django.setup()
    from annotation.automation.judges.datasets import dataset_from_folder
    from annotation.automation.judges.hybrid import evaluate_seeds

    seeds = list(range(int(os.environ.get("BENCH_HYBRID_RULES_SEEDS", "20"))))
    shares = [float(s) for s in os.environ.get("BENCH_HYBRID_RULES_SHARES", "0.1,0.25,0.4").split(",")]
    data = dataset_from_folder(folder)
    at_25 = None
    for share in shares:
        started, cpu = time.perf_counter(), time.process_time()
        result = evaluate_seeds(data, seeds, judge="lexical", share=share, rule="active")
        for rule, figures in result["summary"].items():
            cells = " ".join(f"{k}={v}" for k, v in figures.items())
            print(f"hybrid_rules share={share} rule={rule} {cells}", flush=True)
        print(f"hybrid_rules share={share} seconds wall={time.perf_counter() - started:.0f} cpu={time.process_time() - cpu:.0f}")
        if abs(share - 0.25) < 1e-9:
            at_25 = result["summary"]["active"]
    if at_25 is not None:
        for key, test, bound in AIMS:
            value = at_25[key]
            met = abs(value) <= bound if test == "abs<=" else value <= bound if test == "<=" else value >= bound
            print(f"hybrid_rules aim {key}{test.replace('abs', '|x|')}{bound} value={value} met={'yes' if met else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
