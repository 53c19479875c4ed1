"""The ``STORAGES`` entries of the files another process reads (``annotation.services.filestore`` uses them).

Three kinds: ``uploads`` (staged campaign files), ``exports`` (export archives), ``models`` (trained judges).
Without a bucket each is a folder of the local disk that a setting names; with ``STORAGE_BUCKET`` all three are
prefixes of that bucket, through django-storages' S3 backend (imported only then).
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.files.storage import FileSystemStorage

KINDS = ("uploads", "exports", "models")


class StorageUnavailable(Exception):
    """The object store did not answer as it should; the message says why ("storage unreachable: ...")."""

# Where each kind lives on the local disk: (setting, sub-folder).
DISK_LOCATIONS = {"uploads": ("DATA_DIR", "uploads"), "exports": ("EXPORTS_DIR", ""), "models": ("MODELS_DIR", "")}


class DiskStorage(FileSystemStorage):
    """``FileSystemStorage`` under the folder a setting names (read at each use, so a changed setting is followed)."""

    def __init__(self, setting: str = "DATA_DIR", subfolder: str = "", **options):
        self.setting, self.subfolder = setting, subfolder
        super().__init__(allow_overwrite=True, **options)

    @property
    def base_location(self):
        return os.path.join(str(getattr(settings, self.setting)), self.subfolder)

    @property
    def location(self):
        return os.path.abspath(self.base_location)


def storages_setting(bucket: str, signed_url_seconds: int) -> dict:
    """The ``STORAGES`` entries of the three kinds: on the disk, or in ``bucket`` when one is set."""
    if not bucket:
        return {
            kind: {"BACKEND": "config.storage.DiskStorage", "OPTIONS": {"setting": setting, "subfolder": subfolder}}
            for kind, (setting, subfolder) in DISK_LOCATIONS.items()
        }
    return {
        kind: {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": bucket,
                "location": kind,
                "file_overwrite": True,
                "default_acl": None,
                # Objects are private: a link to one is signed, and short-lived.
                "querystring_auth": True,
                "querystring_expire": max(1, signed_url_seconds or 60),
                # A file opened through the storage spools to disk past this size, never whole in memory.
                "max_memory_size": 4 * 1024 * 1024,
            },
        }
        for kind in KINDS
    }
