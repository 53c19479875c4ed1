"""Every third-party import is declared, pinned, in the requirements file of the install that runs it.

deptry checks each install's code against that install's files (see pyproject.toml): an import missing
from them, or installed only as another package's dependency, is a demo or CI install that breaks.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

JUDGES = "annotation/automation/judges"

# (code scanned, what it must not scan, the install's requirements files, test tools that must stay out)
INSTALLS = {
    "platform": (["."], [JUDGES, "tests", "bench", "var", "docs_hooks", "site"], ["requirements.txt"], "requirements-dev.txt"),
    # The documentation site's build hook (`make docs`): the platform's install and requirements-docs.txt.
    "docs": (["docs_hooks"], [], ["requirements.txt", "requirements-docs.txt"], "requirements-dev.txt"),
    "judges": ([JUDGES], [], ["requirements.txt", "requirements-judges.txt"], "requirements-dev.txt"),
    "tests": (
        ["tests", "bench"],
        [],
        ["requirements.txt", "requirements-judges.txt", "requirements-dev.txt"],
        None,
    ),
}


def deptry(roots, excluded, files, dev_file):
    command = [sys.executable, "-m", "deptry", *roots, "--no-ansi", "--requirements-files", ",".join(files)]
    # A scope checks imports against its files; whether every pinned package is imported somewhere is not its
    # question (DEP002: several are used by name only, e.g. gunicorn, whitenoise, psycopg).
    command += ["--ignore", "DEP002", "--exclude", r"\.venv", "--exclude", r".*/__pycache__"]
    for path in excluded:
        command += ["--extend-exclude", path]
    command += ["--requirements-files-dev", dev_file or "no-dev-requirements.txt"]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("install", sorted(INSTALLS))
def test_every_import_is_declared_in_its_installs_requirements(install):
    result = deptry(*INSTALLS[install])
    assert result.returncode == 0, f"deptry ({install}):\n{result.stdout}\n{result.stderr}"
    assert "Success! No dependency issues found." in result.stderr + result.stdout
