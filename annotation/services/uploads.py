"""Campaign files uploaded in the browser: kept between the preview and the import, then removed.

A researcher uploads references, summaries and optionally predicates; the
files are staged in the uploads storage under ``<token>/<role>/<file>``
(``DATA_DIR/uploads`` on the disk, or the bucket of ``STORAGE_BUCKET`` that
every web node and worker shares: ``annotation.services.filestore``) so that
they survive the preview step (and a failed preview: the researcher replaces
only the file that was wrong).  ``preview_import`` runs the same readers and
checks as ``annotation.services.campaign_import.import_campaign`` (and the
same predicate finder) without writing anything, and says what an import
would create.  ``discard_upload`` removes the staged files once imported;
``clean_stale_uploads`` removes uploads nobody came back to.
"""

from __future__ import annotations

import posixpath
import re
import secrets
import tempfile
import time
from collections import Counter
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from django.conf import settings
from django.core.files import File
from django.utils.text import get_valid_filename

from annotation.importing.readers import Problem, ProblemList, read_predicates
from annotation.services import filestore
from annotation.services.campaign_import import (
    PREDICATES_AUTO,
    PREDICATES_NONE,
    check_cross_references,
    place_predicates,
    read_inputs,
)

ROLES = ("references", "summaries", "predicates")
_TOKEN = re.compile(r"^[0-9a-f]{32}$")
STALE_AFTER_SECONDS = 24 * 3600


def uploads_dir() -> Path:
    """Where uploads are staged on the local disk (without ``STORAGE_BUCKET``)."""
    return Path(settings.DATA_DIR) / "uploads"


def new_upload() -> str:
    """A fresh upload token (also the name of its folder in the uploads storage)."""
    return secrets.token_hex(16)


def _checked(token: str) -> str:
    if not _TOKEN.match(token or ""):
        # Tokens come back from the browser: never let one name a path outside the uploads area.
        raise ValueError("not an upload token")
    return token


@dataclass(frozen=True)
class StagedFile:
    """A staged file: its name in the uploads storage (``TOKEN/ROLE/FILE``) and the file name the researcher chose."""

    key: str

    @property
    def name(self) -> str:
        return posixpath.basename(self.key)


def stage_file(token: str, role: str, upload) -> StagedFile:
    """Store an uploaded file as the upload's ``role`` file, replacing an earlier one.

    The file keeps its (sanitised) name, so that problems name the file the
    researcher chose.  At most ``IMPORT_MAX_BYTES`` + 1 bytes are stored: the
    reader then reports the size problem without the store filling up.  The
    file goes to the uploads storage (the disk, or the bucket every node shares).
    """
    if role not in ROLES:
        raise ValueError(f"unknown upload role '{role}'")
    folder = f"{_checked(token)}/{role}"
    filestore.remove_tree(filestore.UPLOADS, folder)
    name = get_valid_filename(Path(upload.name or role).name) or role
    limit = settings.IMPORT_MAX_BYTES + 1
    written = 0
    with tempfile.SpooledTemporaryFile(max_size=4 * 1024 * 1024) as spool:
        for chunk in upload.chunks():
            chunk = chunk[: limit - written]
            spool.write(chunk)
            written += len(chunk)
            if written >= limit:
                break
        spool.seek(0)
        return StagedFile(filestore.save(filestore.UPLOADS, f"{folder}/{name}", File(spool, name=name)))


def staged_files(token: str) -> dict[str, StagedFile]:
    """The files an upload holds, by role."""
    names = filestore.walk(filestore.UPLOADS, _checked(token))
    found = {}
    for role in ROLES:
        files = [n for n in names if n.startswith(f"{token}/{role}/")]
        if files:
            found[role] = StagedFile(files[0])
    return found


@contextmanager
def local_files(staged: dict[str, StagedFile]) -> Iterator[dict[str, Path]]:
    """The staged files as paths on this machine, by role (downloaded from the bucket when they are there)."""
    with ExitStack() as stack:
        yield {role: stack.enter_context(filestore.local_copy(filestore.UPLOADS, f.key)) for role, f in staged.items()}


def remove_staged_file(token: str, role: str) -> None:
    filestore.remove_tree(filestore.UPLOADS, f"{_checked(token)}/{role}")


def discard_upload(token: str) -> None:
    """Remove an upload's files (after the import, or when the researcher starts over)."""
    filestore.remove_tree(filestore.UPLOADS, _checked(token))


def clean_stale_uploads(max_age_seconds: float = STALE_AFTER_SECONDS) -> int:
    """Remove uploads whose newest file is older than ``max_age_seconds``; returns how many were removed."""
    cutoff = time.time() - max_age_seconds
    removed = 0
    for token in filestore.folders(filestore.UPLOADS):
        if not _TOKEN.match(token):
            continue
        names = filestore.walk(filestore.UPLOADS, token)
        if all(filestore.modified(filestore.UPLOADS, n).timestamp() < cutoff for n in names):
            filestore.remove_tree(filestore.UPLOADS, token)
            removed += 1
    return removed


def clean_stale_uploads_here() -> int:
    """On the local disk, each new upload also removes the stale ones (the embedded default runs no beat); in a
    bucket that is the hourly beat task's work alone (listing the bucket per upload would slow every upload)."""
    return clean_stale_uploads() if filestore.is_local(filestore.UPLOADS) else 0


@dataclass
class ImportPreview:
    """What importing the staged files would create, or the problems that stop it."""

    problems: list[Problem] = field(default_factory=list)
    n_examples: int = 0
    n_examples_judged: int = 0
    n_sentences: int = 0
    n_predicates: int = 0
    n_summaries: int = 0
    systems: list[tuple[str, int]] = field(default_factory=list)
    # A few references with their predicates, to eyeball before importing.
    samples: list[dict] = field(default_factory=list)
    # Large uploads: sentences and predicates are counted on the first ``analysed_examples`` references only
    # and scaled to all (the import counts them exactly); 0 when every reference was analysed.
    analysed_examples: int = 0

    @property
    def estimated(self) -> bool:
        return self.analysed_examples > 0

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def predicates_per_reference(self) -> float:
        return self.n_predicates / self.n_examples if self.n_examples else 0.0


def preview_import(
    references: Path | None, summaries: Path | None, predicates: str | Path = PREDICATES_AUTO, n_samples: int = 3
) -> ImportPreview:
    """Read and check the files exactly as the import does, find predicates, and count; write nothing.

    Uses the import service's own readers and cross-checks, so that the web
    preview and ``manage.py import_campaign`` report the same problems with
    the same file, line and field.
    """
    from annotation.text.predicates import FoundSentence, analyse_references

    problems = ProblemList()
    contents = read_inputs(references, summaries, None, problems)
    records = None
    if predicates not in (PREDICATES_AUTO, PREDICATES_NONE):
        records = read_predicates(Path(predicates), problems)
    check_cross_references(contents, problems)
    preview = ImportPreview()
    if problems:
        preview.problems = list(problems)
        return preview
    references = contents.references
    cap = settings.IMPORT_PREVIEW_ANALYSE_CHARS
    sizes = [len(r.reference) for r in references]
    if records is None and sum(sizes) > cap:
        # Predicate detection is linear but not free (about 30 s per MB): a preview of a large upload analyses
        # the first references up to ``cap`` characters and scales the counts, so that the request stays well
        # inside the server's timeout.  A predicates file is always checked whole (its problems must all show).
        taken, k = 0, 0
        while k < len(references) and (taken < cap or k < n_samples):
            taken += sizes[k]
            k += 1
        references = references[:k]
        preview.analysed_examples = k if k < len(contents.references) else 0
    analysed = analyse_references([r.reference for r in references], [r.sentence_bounds for r in references])
    if records is not None:
        analysed = place_predicates(contents.references, analysed, records, Path(predicates).name, problems)
        if problems:
            preview.problems = list(problems)
            return preview
    elif predicates == PREDICATES_NONE:
        analysed = [[FoundSentence(s.start, s.end, s.text, ()) for s in sentences] for sentences in analysed]
    per_system = Counter(s.system for s in contents.summaries)
    preview.n_examples = len(contents.references)
    preview.n_examples_judged = len({s.id for s in contents.summaries})
    preview.n_sentences = sum(len(sentences) for sentences in analysed)
    preview.n_predicates = sum(len(s.predicates) for sentences in analysed for s in sentences)
    if preview.estimated:
        scale = sum(sizes) / max(1, sum(sizes[: preview.analysed_examples]))
        preview.n_sentences = round(preview.n_sentences * scale)
        preview.n_predicates = round(preview.n_predicates * scale)
    preview.n_summaries = len(contents.summaries)
    preview.systems = sorted(per_system.items())
    for record, sentences in list(zip(contents.references, analysed))[:n_samples]:
        preview.samples.append(
            {"id": record.id, "sentences": [{"text": s.text, "predicates": [p.text for p in s.predicates]} for s in sentences]}
        )
    return preview
