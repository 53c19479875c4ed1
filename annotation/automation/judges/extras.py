"""The neural judges' optional dependencies (torch, transformers): `make demo` starts without them.

They are installed by ``make judges`` (and ``make test``) from ``requirements-judges.txt``; until then
the lexical, ROUGE and LLM judges work, and the neural ones are refused with the command to run.
"""

from __future__ import annotations

import importlib.util

from annotation.automation.judges.base import JudgeError

#: Backends that need the extras.
NEURAL_BACKENDS = ("trained", "nli")
MODULES = ("torch", "transformers")
INSTALL_COMMAND = "make judges"
PIP_COMMANDS = ".venv/bin/python -m pip install torch==2.13.0 && .venv/bin/python -m pip install -r requirements-judges.txt"


def missing_extras() -> list[str]:
    """The extras' modules that cannot be imported here (empty when the neural judges can run)."""
    return [name for name in MODULES if importlib.util.find_spec(name) is None]


def require_extras(backend: str) -> None:
    """Refuse a neural backend, naming the install command, when its extras are missing."""
    missing = missing_extras() if backend in NEURAL_BACKENDS else []
    if missing:
        raise JudgeError(
            f"the {backend} judge needs {' and '.join(missing)}, which are not installed: run `{INSTALL_COMMAND}` "
            f"(or {PIP_COMMANDS}), then restart the platform"
        )
