"""The embedded default's secret key: generated once, kept under DATA_DIR.

Without ``DATABASE_URL`` the platform is one machine's own install (SQLite under ``var/``); its commands
must work as the documentation writes them, without ``DEBUG=1``.  A production deployment (``DATABASE_URL`` set)
still has to give ``SECRET_KEY`` in the environment.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

FILE_NAME = "secret_key"


def embedded_secret_key(data_dir: Path) -> str:
    """The key stored in ``data_dir/secret_key``, created (readable by its owner only) on first use."""
    path = Path(data_dir) / FILE_NAME
    try:
        key = path.read_text(encoding="utf-8").strip()
        if key:
            return key
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    # Two commands starting at once must end up with the same key, and neither may read a file still empty: the
    # key is written to a file of this process's own, then linked to its name (the name appears with the whole
    # key, or not at all; the second process reads the first's).
    own = path.with_name(f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(own, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(key + "\n")
    try:
        os.link(own, path)
    except FileExistsError:
        key = path.read_text(encoding="utf-8").strip()
    finally:
        own.unlink()
    return key
