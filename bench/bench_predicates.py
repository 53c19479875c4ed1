"""Predicate detection against the length of one reference (issue 19: a 300,000-character reference
once held a server thread for about 9 minutes, quadratic in the length).

Prints `predicates chars=N seconds=X per_1k_chars_ms=Y predicates=P` (median of 3 runs) for references
of 5,000 to 300,000 characters; a linear detector keeps per_1k_chars_ms about constant.
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

import django  # noqa: E402

django.setup()

from annotation.text.predicates import analyse_references  # noqa: E402

SENTENCE = "The mayor opened a new park on Sunday and children played there all day. "


def main() -> None:
    analyse_references([SENTENCE])  # loads spaCy once
    sizes = [int(s) for s in os.environ.get("BENCH_PREDICATE_SIZES", "5000,20000,100000,300000").split(",")]
    for size in sizes:
        text = (SENTENCE * (size // len(SENTENCE) + 1))[:size]
        times = []
        for _ in range(3):
            started = time.perf_counter()
            found = analyse_references([text])
            times.append(time.perf_counter() - started)
        seconds = statistics.median(times)
        n = sum(len(s.predicates) for s in found[0])
        print(f"predicates chars={size} seconds={seconds:.2f} per_1k_chars_ms={1000 * seconds / (size / 1000):.1f} predicates={n}", flush=True)


if __name__ == "__main__":
    main()
