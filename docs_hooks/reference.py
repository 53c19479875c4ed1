"""MkDocs hook: the reference pages generated from the code at build time (issue 42).

``manage.py docs_reference`` writes them (commands from their argument parsers, settings from
``config/settings_table.py``, API routes from the OpenAPI schema, campaign settings from the model) into a
temporary folder, on the embedded default with a throw-away data folder; they are added to the build as
``reference/*.md`` and never exist as files in ``docs/``, so they cannot be edited by hand or drift.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
# What the generator writes -> where the page sits in the site.
GENERATED = {"commands.md": "commands.md", "settings.md": "settings.md", "api.md": "api-routes.md",
             "campaign-settings.md": "campaign-settings.md"}


def on_files(files, config):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "reference"
        env = {**os.environ, "DEBUG": "1", "DATA_DIR": str(Path(tmp) / "var"), "DJANGO_SETTINGS_MODULE": "config.settings"}
        for name in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "CACHE_URL"):
            env.pop(name, None)  # the embedded default: nothing to connect to
        result = subprocess.run([sys.executable, "manage.py", "docs_reference", str(out)], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise PluginError(f"manage.py docs_reference failed:\n{result.stderr[-3000:]}")
        for written, page in GENERATED.items():
            uri = f"reference/{page}"
            if files.get_file_from_path(uri) is not None:
                raise PluginError(f"docs/{uri} exists: it is generated, remove the file")
            files.append(File.generated(config, uri, content=(out / written).read_text()))
    return files
