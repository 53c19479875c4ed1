"""The NLI judge: any Hugging Face sequence-classification NLI model, premise = summary, hypothesis = unit.

Readings of the model's logits z (as in Lite2Pyramid):

- three-class: P(present) = softmax(z)[entailment];
- two-class: entailment against non-entailment only,
  P(present) = exp(z_e) / (exp(z_e) + exp(z_c)) where c is the contradiction
  label (neutral dropped) of a three-label model, or the "not entailment"
  label of a two-label model.

The entailment label is found by name in ``config.id2label`` (a label containing "entail" and not
"not"/"non"); a model whose labels are anonymous (LABEL_0...) needs ``entailment_index``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from django.conf import settings

from annotation.automation.judges.base import JudgeError, PresenceJudge, PresencePair, clean_summary


def label_indices(id2label: dict, entailment_index: int | None = None) -> tuple[int, int | None, int | None]:
    """(entailment, contradiction or not-entailment, neutral) indices from a model's labels."""
    names = {int(i): str(name).lower() for i, name in id2label.items()}
    negative = lambda n: n.startswith(("not", "non")) or "not_" in n or "non_" in n or "not " in n  # noqa: E731
    entail = entailment_index
    if entail is None:
        found = [i for i, n in names.items() if "entail" in n and not negative(n)]
        if len(found) != 1:
            raise JudgeError(
                f"cannot tell the entailment label among {sorted(names.values())}; give entailment_index"
            )
        entail = found[0]
    contradiction = next((i for i, n in names.items() if "contradict" in n), None)
    if contradiction is None:
        contradiction = next((i for i, n in names.items() if i != entail and "entail" in n and negative(n)), None)
    neutral = next((i for i, n in names.items() if "neutral" in n), None)
    if contradiction is None and len(names) == 2:
        contradiction = next(i for i in names if i != entail)
    return entail, contradiction, neutral


class NLIJudge(PresenceJudge):
    name = "nli"

    def __init__(self, model: str, reading: str = "three-class", batch_size: int = 16, max_length: int = 256,
                 entailment_index: int | None = None, threshold: float = 0.5):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from annotation.automation.judges.encoder import torch_threads

        if reading not in ("three-class", "two-class"):
            raise JudgeError("reading must be 'three-class' or 'two-class'")
        torch.set_num_threads(torch_threads())
        local = Path(model).exists()
        # A hub id is read from the local Hugging Face cache only, unless downloads are allowed explicitly.
        offline = local or not getattr(settings, "JUDGE_ALLOW_DOWNLOADS", False)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=offline)
            self.model = AutoModelForSequenceClassification.from_pretrained(model, local_files_only=offline)
        except (OSError, ValueError) as exc:
            raise JudgeError(f"cannot load the NLI model {model!r}: {exc}") from exc
        self.model.eval()
        self.entail, self.contradiction, self.neutral = label_indices(self.model.config.id2label, entailment_index)
        if reading == "two-class" and self.contradiction is None:
            raise JudgeError("the two-class reading needs a contradiction or not-entailment label")
        self.reading = reading
        self.batch_size = batch_size
        self.max_length = max_length
        self.threshold = threshold
        self.version = f"nli-1/{Path(model).name if local else model}/{reading}"

    def probabilities(self, logits: np.ndarray) -> np.ndarray:
        """P(present) from a (pairs × labels) logit matrix, per the chosen reading."""
        if self.reading == "two-class":
            logits = logits[:, [self.entail, self.contradiction]]
            index = 0
        else:
            index = self.entail
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        return exp[:, index] / exp.sum(axis=1)

    def predict(self, pairs: Sequence[PresencePair]) -> np.ndarray:
        import torch

        premises = [clean_summary(p.summary) for p in pairs]
        hypotheses = [p.unit for p in pairs]
        lengths = [len(p) + len(h) for p, h in zip(premises, hypotheses)]
        order = np.argsort(lengths, kind="stable")  # length-sorted batches: little padding per batch
        logits = np.zeros((len(pairs), self.model.config.num_labels), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(pairs), self.batch_size):
                rows = order[start : start + self.batch_size]
                batch = self.tokenizer(
                    [premises[i] for i in rows], [hypotheses[i] for i in rows],
                    truncation="only_first", max_length=self.max_length, padding="longest", return_tensors="pt",
                )
                logits[rows] = self.model(**batch).logits.float().numpy()
        return self.probabilities(logits)
