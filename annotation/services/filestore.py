"""Files that another process reads: staged uploads, export archives and trained judges (issue 50).

Each kind of file has its own storage, through Django's storage API (``settings.STORAGES``):

- ``uploads``: campaign files staged between an upload and its import (``annotation.services.uploads``);
- ``exports``: the zip archives export jobs write (``annotation.services.jobs``);
- ``models``: trained presence judges and saved hybrid curves (``annotation.automation.judges``).

The embedded default keeps them on the local disk, where they always were (``DATA_DIR/uploads``,
``EXPORTS_DIR``, ``MODELS_DIR``): :class:`config.storage.DiskStorage`, a ``FileSystemStorage`` that follows
those settings.  With ``STORAGE_BUCKET`` set, all three live in that S3-compatible bucket under the prefixes
``uploads/``, ``exports/`` and ``models/`` (django-storages' S3 backend; credentials, region and endpoint
from the standard AWS chain, ``AWS_ENDPOINT_URL_S3`` included), so that a web node, a worker on another
host and a second web node all see the same files.

A store that cannot be reached (endpoint down, credentials refused, bucket gone) raises
:class:`StorageUnavailable` with a message starting "storage unreachable:", never a bare botocore error.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Iterator

from django.core.files.storage import FileSystemStorage, Storage, storages

from config.storage import KINDS, StorageUnavailable  # noqa: F401 (raised here, caught by the callers)

UPLOADS, EXPORTS, MODELS = KINDS


def storage(kind: str) -> Storage:
    return storages[kind]


def is_local(kind: str) -> bool:
    """The kind's files are on this machine's disk (the embedded default)."""
    return isinstance(storage(kind), FileSystemStorage)


def _store_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a remote store raises when it cannot do what was asked (botocore's, imported only then)."""
    from botocore.exceptions import BotoCoreError, ClientError

    return (BotoCoreError, ClientError)


def describe_store_error(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and response.get("Error"):
        error = response["Error"]
        return f"{error.get('Code', '')} {error.get('Message', '')}".strip() or str(exc)
    return str(exc) or type(exc).__name__


@contextmanager
def reaching(kind: str) -> Iterator[None]:
    """Turn the store's own errors inside the block into :class:`StorageUnavailable` (local disk: left alone)."""
    if is_local(kind):
        yield
        return
    errors = _store_errors()
    try:
        yield
    except errors as exc:
        bucket = getattr(storage(kind), "bucket_name", "")
        raise StorageUnavailable(f"storage unreachable: bucket '{bucket}': {describe_store_error(exc)}") from exc


def save(kind: str, name: str, content) -> str:
    """Store ``content`` (a Django ``File``) as ``name``, replacing a file of that name; returns the name."""
    with reaching(kind):
        return storage(kind).save(name, content)


def save_path(kind: str, name: str, path: Path) -> str:
    """Store the local file ``path`` as ``name`` (streamed from disk)."""
    from django.core.files import File

    with Path(path).open("rb") as handle:
        return save(kind, name, File(handle, name=Path(name).name))


def exists(kind: str, name: str) -> bool:
    with reaching(kind):
        return storage(kind).exists(name)


def delete(kind: str, name: str) -> None:
    with reaching(kind):
        storage(kind).delete(name)


def walk(kind: str, prefix: str = "") -> list[str]:
    """Every file name under ``prefix`` (recursively), relative to the kind's root, sorted."""
    store = storage(kind)
    if is_local(kind) and not os.path.isdir(store.path(prefix or ".")):
        return []
    found: list[str] = []
    with reaching(kind):
        folders, files = store.listdir(prefix)
        found += [posixpath.join(prefix, f) for f in files]
        for folder in folders:
            found += walk(kind, posixpath.join(prefix, folder))
    return sorted(found)


def folders(kind: str, prefix: str = "") -> list[str]:
    """The names of the folders right under ``prefix``."""
    store = storage(kind)
    if is_local(kind) and not os.path.isdir(store.path(prefix or ".")):
        return []
    with reaching(kind):
        return sorted(store.listdir(prefix)[0])


def modified(kind: str, name: str) -> datetime:
    with reaching(kind):
        return storage(kind).get_modified_time(name)


def remove_tree(kind: str, prefix: str) -> int:
    """Remove every file under ``prefix`` (and, on the disk, the emptied folders); returns how many files."""
    names = walk(kind, prefix)
    for name in names:
        delete(kind, name)
    if is_local(kind):
        shutil.rmtree(storage(kind).path(prefix), ignore_errors=True)
    return len(names)


@contextmanager
def local_copy(kind: str, name: str) -> Iterator[Path]:
    """A path on this machine holding the file ``name``: the file itself on the disk, else a download
    (streamed to a temporary folder, under the file's own name, removed afterwards)."""
    store = storage(kind)
    if is_local(kind):
        yield Path(store.path(name))
        return
    with tempfile.TemporaryDirectory(prefix="qapyr-store-") as folder:
        target = Path(folder) / posixpath.basename(name)
        with reaching(kind):
            store.bucket.download_file(object_key(kind, name), str(target))
        yield target


def object_key(kind: str, name: str) -> str:
    """The key of ``name`` in the bucket (remote stores only)."""
    return posixpath.join(storage(kind).location, name)


def open_stream(kind: str, name: str):
    """A binary file object reading ``name`` from the store chunk by chunk (never the whole file into memory).

    ``FileNotFoundError`` when the file is not there."""
    store = storage(kind)
    if is_local(kind):
        return store.open(name, "rb")
    from botocore.exceptions import ClientError

    with reaching(kind):
        try:
            return store.bucket.Object(object_key(kind, name)).get()["Body"]
        except ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                raise FileNotFoundError(name) from exc
            raise


def signed_url(kind: str, name: str, seconds: int, filename: str) -> str | None:
    """A link to ``name`` that the store itself serves for ``seconds`` (a download named ``filename``), or
    None when the store has no such links (the local disk)."""
    if is_local(kind) or seconds <= 0:
        return None
    with reaching(kind):
        return storage(kind).url(
            name, parameters={"ResponseContentDisposition": f'attachment; filename="{filename}"'}, expire=seconds
        )


def check_bucket(bucket: str) -> None:
    """Ask the store once whether ``bucket`` is there (start-up): ``ImproperlyConfigured`` naming it when it is
    missing or refused; a store that cannot be reached at all is logged and left to the jobs to report."""
    import logging

    import boto3
    from botocore.exceptions import ClientError
    from django.core.exceptions import ImproperlyConfigured

    try:
        boto3.session.Session().client("s3").head_bucket(Bucket=bucket)
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        why = "does not exist" if status == 404 else f"cannot be used ({describe_store_error(exc)})"
        raise ImproperlyConfigured(
            f"STORAGE_BUCKET '{bucket}' {why}: create it in the object store, or correct STORAGE_BUCKET "
            "(and AWS_ENDPOINT_URL_S3 for a store other than AWS)."
        ) from exc
    except _store_errors() as exc:
        logging.getLogger(__name__).warning("storage unreachable: bucket '%s': %s", bucket, describe_store_error(exc))
