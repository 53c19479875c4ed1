"""The checks of a qualification file against its size (issue 40: a 1.2 MB file with a long predicate in a long
sentence, and 250,000 answers against a 500 KB sentence, each held a server thread past 60 s).

Prints `qualification_checks file=NAME bytes=B seconds=X cpu_seconds=C` (medians of 5 runs of
``build_qualification_hits``, every check of the command, upload and paste; cpu_seconds is this process's CPU
time, which other processes on a busy machine inflate less than the wall clock) for the issue's two files and
one a tenth of each; the target is under a second for each of the issue's files.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")
# A scratch database (the checks read the task types): never the developer's var/.
os.environ["DATA_DIR"] = tempfile.mkdtemp(prefix="bench-qualifications-")
os.environ.pop("DATABASE_URL", None)

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from annotation.models import Campaign  # noqa: E402
from annotation.services.qualification_tests import build_qualification_hits  # noqa: E402
from tests.quality.test_qualification_input import answers_file, predicate_file  # noqa: E402


def main() -> None:
    files = {
        "predicate-1.2MB": predicate_file(1_200_000, 2_000),
        "predicate-120KB": predicate_file(120_000, 200),
        "answers-250k-500KB": answers_file(250_000, 500_000),
        "answers-25k-50KB": answers_file(25_000, 50_000),
    }
    call_command("migrate", verbosity=0)
    campaign = Campaign(name="bench")
    build_qualification_hits(campaign, files["predicate-120KB"])  # task types created, imports warm
    for name, definition in files.items():
        times, cpu = [], []
        for _ in range(5):
            started, started_cpu = time.perf_counter(), time.process_time()
            build_qualification_hits(campaign, definition)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        size = len(json.dumps(definition).encode())
        print(f"qualification_checks file={name} bytes={size} seconds={statistics.median(times):.3f} "
              f"cpu_seconds={statistics.median(cpu):.3f}", flush=True)


if __name__ == "__main__":
    main()
