"""The trained presence judges (offline): loading whichever kind a model directory holds.

Two kinds, both built on the packaged MiniLM-L6 encoder and trained on gold labels:

- ``cross-encoder`` (the default): MiniLM reads the unit with the summary's sentences,
  its top layers fine-tuned and its head fused with the pair features
  (``annotation.automation.judges.crossencoder``);
- ``features``: the encoder frozen; a small gradient-boosted head (scikit-learn
  ``HistGradientBoostingClassifier``) learns presence from the pair features of
  ``annotation.automation.judges.features`` (lexical overlap, best-sentence similarity, token
  alignment), its threshold calibrated on out-of-fold predictions of the training data.

Both are saved under ``settings.MODELS_DIR/NAME`` with a ``metadata.json`` (kind, training
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

KINDS = (crossencoder.KIND, "features")

FORMAT_VERSION = 1


def model_directory(name: str | None) -> Path:
    """``settings.MODELS_DIR/NAME`` (NAME defaults to ``settings.PRESENCE_JUDGE_MODEL``); refuses path tricks."""
    name = name or getattr(settings, "PRESENCE_JUDGE_MODEL", "presence-judge")
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise JudgeError(f"invalid model name {name!r}: use a plain directory name under MODELS_DIR")
    return Path(settings.MODELS_DIR) / name


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

    directory = model_directory(name)
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
