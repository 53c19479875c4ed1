"""Commands, the web process and the Celery worker start without the heavy scientific libraries (issue 50).

SciPy's statistics, NLTK (which pulls scikit-learn), spaCy, krippendorff, torch and transformers take seconds
to import; they are imported inside the functions that use them, so ``manage.py check`` and every command
that does not use them start in about a second of CPU.  These tests read what a fresh process imports
(``python -X importtime``), not how long it takes: a timed test would depend on the machine's load.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO
from tests.workers import celery_worker

HEAVY = ("scipy.stats", "nltk", "sklearn", "spacy", "krippendorff", "torch", "transformers")


def heavy_imports(importtime: str) -> dict[str, str]:
    """``{heavy module: "a -> b -> module"}`` from ``-X importtime`` output: each heavy library imported, with
    the chain of imports from the top-level one that brought it in."""
    entries: list[tuple[int, str]] = []  # (depth, module) in the order printed: children before their parent
    parent: dict[int, int] = {}
    waiting: dict[int, list[int]] = {}  # depth -> entries printed at that depth whose parent is still to come
    for line in importtime.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2 or "imported package" in line:
            continue
        field = line.split("|")[2][1:]
        depth, module = (len(field) - len(field.lstrip(" "))) // 2, field.strip()
        index = len(entries)
        entries.append((depth, module))
        for child in waiting.pop(depth + 1, []):
            parent[child] = index
        waiting.setdefault(depth, []).append(index)

    def chain(index: int) -> list[str]:
        names = [entries[index][1]]
        while index in parent:
            index = parent[index]
            names.append(entries[index][1])
        return names[::-1]

    found: dict[str, str] = {}
    for index, (_, module) in enumerate(entries):
        library = next((h for h in HEAVY if module == h or module.startswith(h + ".")), None)
        if library is None:
            continue
        names = chain(index)
        # Up to the first heavy module of the chain: that import is the one to move into a function.
        first = next(i for i, name in enumerate(names) if any(name == h or name.startswith(h + ".") for h in HEAVY))
        found.setdefault(library, " -> ".join(names[: first + 1]))
    return found


def _env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "REDIS_URL", "CACHE_URL")}
    return env | {"DJANGO_SETTINGS_MODULE": "config.settings", "DATA_DIR": str(tmp_path / "var"), "PYTHONPATH": str(REPO)}


def _importtime(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def _report(found: dict[str, str]) -> str:
    return "imported at start (import it inside the function that uses it):\n" + "\n".join(found.values())


def test_the_detector_names_a_heavy_import_and_the_chain_that_brought_it():
    """The check below is not blind: a process that does import krippendorff and NLTK (which brings scikit-learn
    and SciPy's statistics) is caught, each library named with the import that brought it in."""
    found = heavy_imports(_importtime(["-c", "import json; import krippendorff; import nltk.tokenize"], os.environ.copy()))
    assert found == {"krippendorff": "krippendorff", "nltk": "nltk.tokenize", "sklearn": "nltk.tokenize",
                     "scipy.stats": "nltk.tokenize"}, found
    nested = "import time:       10 |        10 |     scipy.stats._stats_py\n" \
             "import time:       10 |        20 |   annotation.scoring.correlation\n" \
             "import time:       10 |        30 | annotation.scoring\n"
    assert heavy_imports(nested) == {"scipy.stats": "annotation.scoring -> annotation.scoring.correlation -> scipy.stats._stats_py"}


def test_manage_py_check_imports_no_heavy_library(tmp_path):
    found = heavy_imports(_importtime(["manage.py", "check"], _env(tmp_path)))
    assert not found, _report(found)


PROCESSES = """
import django
from django.core.management import get_commands, load_command_class

from config.wsgi import application  # the web process: settings, apps, middleware
from django.urls import get_resolver

get_resolver().url_patterns  # every URL module and the views it names
from config.celery import app

app.loader.import_default_modules()  # what a Celery worker imports before it takes a task
for name, where in get_commands().items():  # every command of the project, loaded as `manage.py NAME` loads it
    if where.split(".")[0] in ("annotation", "hits", "config"):
        load_command_class(where, name)
print("tasks:", len([t for t in app.tasks if not t.startswith("celery.")]))
"""


def test_the_web_process_the_task_modules_and_every_command_module_import_no_heavy_library(tmp_path):
    out = _importtime(["-c", PROCESSES], _env(tmp_path))
    assert "annotation.scoring" in out and "annotation.tasks" in out and "hits.mturk.tasks" in out
    found = heavy_imports(out)
    assert not found, _report(found)


def test_a_real_celery_worker_starts_without_heavy_library(tmp_path):
    """``celery -A config worker`` to its "ready" line (on the in-memory broker of the embedded default: the
    same imports as on Redis), then stopped."""
    with celery_worker(tmp_path / "worker.log", "startup", env=_env(tmp_path), python_args=("-X", "importtime")) as worker:
        worker.wait_ready()
    out = worker.output()
    assert "annotation.tasks" in out
    found = heavy_imports(out)
    assert not found, _report(found)
