"""The trained presence judges (offline): loading whichever kind a model directory holds.

Two kinds, both built on the packaged MiniLM-L6 encoder and trained on gold labels:

- ``cross-encoder`` (the default): MiniLM reads the unit with the summary's sentences,
  its top layers fine-tuned and its head fused with the pair features
  (``annotation.automation.judges.crossencoder``);
- ``features``: the encoder frozen; a small gradient-boosted head (scikit-learn
  ``HistGradientBoostingClassifier``) learns presence from the pair features of
  ``annotation.automation.judges.features`` (lexical overlap, best-sentence similarity, token
  alignment), its threshold calibrated on out-of-fold predictions of the training data.

Both are saved under ``settings.MODELS_DIR/NAME`` (and published to the bucket of ``STORAGE_BUCKET``, from
which every node loads them) with a ``metadata.json`` (kind, training
data, settings, validation metrics, times, the digest of the weights); ``trained:NAME``
loads whichever kind was saved there.  Training is ``annotation.automation.judges.training``, the
data ``annotation.automation.judges.datasets``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
from django.conf import settings

from annotation.automation.judges import crossencoder
from annotation.automation.judges.base import JudgeError, PresenceJudge, PresencePair, file_sha256
from annotation.automation.judges.encoder import shared_encoder
from annotation.automation.judges.features import FEATURE_NAMES, pair_features
from annotation.services import filestore

KINDS = (crossencoder.KIND, "features")

FORMAT_VERSION = 1


def model_directory(name: str | None) -> Path:
    """``settings.MODELS_DIR/NAME`` (NAME defaults to ``settings.PRESENCE_JUDGE_MODEL``); refuses path tricks.

    Where training writes a judge on this machine; with ``STORAGE_BUCKET`` the judge is then published to the
    bucket (:func:`publish_model`) and loaded on any node from there (:func:`local_model_directory`)."""
    name = name or getattr(settings, "PRESENCE_JUDGE_MODEL", "presence-judge")
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise JudgeError(f"invalid model name {name!r}: use a plain directory name under MODELS_DIR")
    return Path(settings.MODELS_DIR) / name


def model_exists(name: str | None) -> bool:
    """A judge was trained and saved under NAME (on the disk, or in the bucket every node shares)."""
    return filestore.exists(filestore.MODELS, f"{model_directory(name).name}/metadata.json")


def publish_model(directory: Path) -> None:
    """Copy a judge just trained into ``directory`` to the models storage, when that is a bucket (on the disk
    the directory already is the stored judge).  ``metadata.json`` goes last: a judge is there once it is whole."""
    if filestore.is_local(filestore.MODELS):
        return
    files = sorted((p for p in directory.rglob("*") if p.is_file()), key=lambda p: p.name == "metadata.json")
    for path in files:
        filestore.save_path(filestore.MODELS, f"{directory.name}/{path.relative_to(directory).as_posix()}", path)


def local_model_directory(name: str | None) -> Path:
    """A folder on this machine holding the judge NAME, to load its weights from.

    On the disk: ``MODELS_DIR/NAME`` itself.  In a bucket: a cache under ``DATA_DIR/cache/models/DIGEST/NAME``
    keyed by the digest of the stored ``metadata.json`` (which records the weights' digests), filled once per
    node and per trained version; a judge trained again under the same name gets a new digest, hence a new copy.
    """
    import hashlib
    import shutil
    import tempfile

    directory = model_directory(name)
    if filestore.is_local(filestore.MODELS):
        return directory
    try:
        with filestore.open_stream(filestore.MODELS, f"{directory.name}/metadata.json") as stream:
            digest = hashlib.sha256(stream.read()).hexdigest()[:16]
    except FileNotFoundError:
        return directory  # nothing stored: the loader says no judge was trained under that name
    cache = Path(settings.DATA_DIR) / "cache" / "models" / digest
    target = cache / directory.name
    if (cache / ".complete").exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".partial-") as partial:
        for stored in filestore.walk(filestore.MODELS, directory.name):
            with filestore.local_copy(filestore.MODELS, stored) as copy:
                destination = Path(partial) / stored
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(copy, destination)
        shutil.rmtree(target, ignore_errors=True)
        Path(partial, directory.name).rename(target)
    (cache / ".complete").touch()
    return target


class TrainedJudge(PresenceJudge):
    """Frozen MiniLM features + the trained head, loaded from a model directory."""

    name = "trained"

    def __init__(self, directory: Path, head, metadata: dict):
        self.directory = directory
        self.head = head
        self.metadata = metadata
        self.threshold = float(metadata["threshold"])
        self.version = f"trained-{FORMAT_VERSION}/{directory.name}/{metadata['head_sha256'][:12]}"

    def predict(self, pairs: Sequence[PresencePair]) -> np.ndarray:
        if not pairs:
            return np.zeros(0)
        features = pair_features(list(pairs), shared_encoder())
        return self.head.predict_proba(features)[:, 1]


def load_trained_judge(name: str | None = None, **options) -> PresenceJudge:
    """Load ``MODELS_DIR/NAME``, whichever kind was trained there (clear error when none was)."""
    import joblib

    directory = local_model_directory(name)
    meta_path, head_path = directory / "metadata.json", directory / "head.joblib"
    if not meta_path.exists():
        raise JudgeError(
            f"no trained presence judge at {directory}; train one with "
            f"`python manage.py train_presence_judge --folder DIR --out {directory.name}`"
        )
    metadata = json.loads(meta_path.read_text())
    if metadata.get("kind") == crossencoder.KIND:
        return crossencoder.load(directory, metadata)
    if not head_path.exists():
        raise JudgeError(f"{directory} has no head.joblib; train it again")
    if metadata.get("format") != FORMAT_VERSION or metadata.get("features") != FEATURE_NAMES:
        raise JudgeError(f"{directory} was saved by another version of the trained judge; train it again")
    if file_sha256(head_path) != metadata.get("head_sha256"):
        raise JudgeError(f"{head_path} does not match its metadata (changed after training); train it again")
    return TrainedJudge(directory, joblib.load(head_path), metadata)
