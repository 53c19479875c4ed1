"""The presence-judge interface shared by every backend.

A judge reads a batch of (candidate summary, unit text, optional reference
context) pairs and returns, for each, the probability that the unit is
present in (can be inferred from) the summary.  ``version`` names exactly
what produced the numbers (backend, model, settings), so cached results of
one version are never reused for another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class PresencePair:
    """One question to a judge: is ``unit`` present in ``summary``?"""

    summary: str
    unit: str
    context: str = ""


def file_sha256(path) -> str:
    """SHA-256 of a saved model file, read in blocks (weights files can be large)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class JudgeError(Exception):
    """A judge could not be built or could not answer (bad settings, missing model, endpoint failure)."""


class PresenceJudge:
    """Base class: subclasses set ``name`` and ``version`` and implement ``predict``."""

    name: str = ""
    version: str = ""
    #: Probabilities at or above the threshold count as "present".
    threshold: float = 0.5

    def predict(self, pairs: Sequence[PresencePair]) -> np.ndarray:
        """Presence probabilities in [0, 1], one per pair, in order."""
        raise NotImplementedError

    def describe(self) -> dict:
        """What a run should record about how this judge was set up (e.g. the LLM judge's shots)."""
        return {}

    def decide(self, probabilities) -> np.ndarray:
        """Binary labels from probabilities: present iff p >= threshold."""
        return np.asarray(probabilities, dtype=float) >= self.threshold

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.version}>"


_TAGS = re.compile(r"</?t>")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“(\[]?[A-Z0-9])")


def summary_sentences(summary: str) -> list[str]:
    """The sentences of a summary: REALSumm's ``<t> ... </t>`` spans when present, else a punctuation split."""
    if "<t>" in summary:
        parts = [p.strip() for p in re.findall(r"<t>(.*?)</t>", summary, flags=re.S)]
        parts = [p for p in parts if p]
        if parts:
            return parts
    text = " ".join(_TAGS.sub(" ", summary).split())
    parts = [p.strip() for p in _SENTENCE_END.split(text) if p.strip()]
    return parts or ([text] if text else [])


def clean_summary(summary: str) -> str:
    """The summary without REALSumm's sentence tags, whitespace normalised."""
    return " ".join(_TAGS.sub(" ", summary).split())
