"""Lexical baselines: content-word recall and ROUGE-1/2/L recall of the unit by the summary."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

import numpy as np

from annotation.automation.judges.base import PresenceJudge, PresencePair, clean_summary

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def content_words(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` that are not stop words (numbers are kept: they carry facts)."""
    stops = stop_words()
    return [w for w in _WORD.findall(text.lower()) if w not in stops]


def content_word_recall(unit: str, summary: str) -> float:
    """|content words of the unit that occur in the summary| / |content words of the unit| (1.0 for none)."""
    words = content_words(unit)
    if not words:
        return 1.0
    vocabulary = set(_WORD.findall(clean_summary(summary).lower()))
    return sum(1 for w in words if w in vocabulary) / len(words)


class ContentWordJudge(PresenceJudge):
    """Present when at least ``threshold`` of the unit's content words occur in the summary (default 70%)."""

    name = "lexical"

    def __init__(self, threshold: float = 0.7):
        self.threshold = float(threshold)
        self.version = f"lexical-1/t{self.threshold:g}"

    def predict(self, pairs: Sequence[PresencePair]) -> np.ndarray:
        return np.array([content_word_recall(p.unit, p.summary) for p in pairs], dtype=float)


@lru_cache(maxsize=1)
def rouge_scorer():
    from rouge_score import rouge_scorer as rs

    return rs.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)


def rouge_recalls(unit: str, summary: str) -> tuple[float, float, float]:
    """ROUGE-1, -2 and -L recall of the unit (the target) by the summary (the prediction), with stemming."""
    scores = rouge_scorer().score(unit, clean_summary(summary))
    return scores["rouge1"].recall, scores["rouge2"].recall, scores["rougeL"].recall


@lru_cache(maxsize=50_000)
def stemmed_tokens(text: str) -> tuple[str, ...]:
    """ROUGE's tokens of ``text`` (lower-cased, Porter-stemmed), cached: a summary is judged against many units."""
    scorer = rouge_scorer()
    return tuple(scorer._tokenizer.tokenize(text))


def ngram_recall(target: Sequence[str], prediction: Sequence[str], n: int) -> float:
    """ROUGE-n recall: clipped count of the target's n-grams found in the prediction / number of target n-grams."""
    from collections import Counter

    wanted = Counter(tuple(target[i : i + n]) for i in range(len(target) - n + 1))
    if not wanted:
        return 0.0
    have = Counter(tuple(prediction[i : i + n]) for i in range(len(prediction) - n + 1))
    return sum(min(c, have[g]) for g, c in wanted.items()) / sum(wanted.values())


ROUGE_THRESHOLDS = {"rouge1": 0.6, "rouge2": 0.35, "rougeL": 0.5}


class RougeJudge(PresenceJudge):
    """ROUGE-n recall of the unit as its presence probability (a score, not a calibrated probability)."""

    def __init__(self, variant: str = "rouge1", threshold: float | None = None):
        if variant not in ROUGE_THRESHOLDS:
            raise ValueError(f"unknown ROUGE variant {variant!r}; use one of {', '.join(ROUGE_THRESHOLDS)}")
        self.variant = variant
        self.name = variant
        self.threshold = float(ROUGE_THRESHOLDS[variant] if threshold is None else threshold)
        self.version = f"{variant}-recall-1/t{self.threshold:g}"

    def predict(self, pairs: Sequence[PresencePair]) -> np.ndarray:
        position = ("rouge1", "rouge2", "rougeL").index(self.variant)
        return np.array([rouge_recalls(p.unit, p.summary)[position] for p in pairs], dtype=float)
