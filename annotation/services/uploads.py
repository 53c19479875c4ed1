"""Campaign files uploaded in the browser: kept between the preview and the import, then removed.

A researcher uploads references, summaries and optionally predicates; the
files are staged under ``settings.DATA_DIR / "uploads" / <token>/`` so that
they survive the preview step (and a failed preview: the researcher replaces
only the file that was wrong).  ``preview_import`` runs the same readers and
checks as ``annotation.services.campaign_import.import_campaign`` (and the
same predicate finder) without writing anything, and says what an import
would create.  ``discard_upload`` removes the staged files once imported;
``clean_stale_uploads`` removes uploads nobody came back to.
"""

from __future__ import annotations

import re
import secrets
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils.text import get_valid_filename

from annotation.importing.readers import Problem, ProblemList, read_predicates
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
    return Path(settings.DATA_DIR) / "uploads"


def new_upload() -> str:
    """A fresh upload token (also the name of its directory)."""
    return secrets.token_hex(16)


def _upload_path(token: str) -> Path:
    if not _TOKEN.match(token or ""):
        # Tokens come back from the browser: never let one name a path outside the uploads area.
        raise ValueError("not an upload token")
    return uploads_dir() / token


def stage_file(token: str, role: str, upload) -> Path:
    """Store an uploaded file as the upload's ``role`` file, replacing an earlier one.

    The file keeps its (sanitised) name, so that problems name the file the
    researcher chose.  At most ``IMPORT_MAX_BYTES`` + 1 bytes are stored: the
    reader then reports the size problem without the disk filling up.
    """
    if role not in ROLES:
        raise ValueError(f"unknown upload role '{role}'")
    folder = _upload_path(token) / role
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    name = get_valid_filename(Path(upload.name or role).name) or role
    target = folder / name
    limit = settings.IMPORT_MAX_BYTES + 1
    written = 0
    with target.open("wb") as out:
        for chunk in upload.chunks():
            chunk = chunk[: limit - written]
            out.write(chunk)
            written += len(chunk)
            if written >= limit:
                break
    return target


def staged_files(token: str) -> dict[str, Path]:
    """The files an upload holds, by role."""
    root = _upload_path(token)
    found = {}
    for role in ROLES:
        files = sorted((root / role).glob("*")) if (root / role).is_dir() else []
        if files:
            found[role] = files[0]
    return found


def remove_staged_file(token: str, role: str) -> None:
    folder = _upload_path(token) / role
    if folder.exists():
        shutil.rmtree(folder)


def discard_upload(token: str) -> None:
    """Remove an upload's files (after the import, or when the researcher starts over)."""
    shutil.rmtree(_upload_path(token), ignore_errors=True)


def clean_stale_uploads(max_age_seconds: float = STALE_AFTER_SECONDS) -> int:
    """Remove uploads older than ``max_age_seconds``; returns how many were removed."""
    root = uploads_dir()
    if not root.is_dir():
        return 0
    cutoff = time.time() - max_age_seconds
    removed = 0
    for folder in root.iterdir():
        if folder.is_dir() and _TOKEN.match(folder.name) and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


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
