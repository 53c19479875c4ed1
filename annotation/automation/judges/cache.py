"""The judge cache: one probability per (judge version, pair hash), so re-runs cost nothing."""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from annotation.automation.judges.base import PresenceJudge, PresencePair

LOOKUP_BATCH = 500


def pair_hash(pair: PresencePair) -> str:
    """SHA-256 of the pair's three texts, separated by a byte that never occurs in text."""
    data = "\x1f".join((pair.summary, pair.unit, pair.context)).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def cached_predict(judge: PresenceJudge, pairs: Sequence[PresencePair]) -> tuple[np.ndarray, int]:
    """Probabilities for ``pairs``, asking the judge only for pairs its version has not judged yet.

    Returns (probabilities, number served from the cache).  New results are
    stored with ``ignore_conflicts`` so that two workers judging the same
    pair at once both succeed and keep one row.
    """
    from annotation.models import JudgeCacheEntry

    hashes = [pair_hash(p) for p in pairs]
    known: dict[str, float] = {}
    unique = list(dict.fromkeys(hashes))
    for start in range(0, len(unique), LOOKUP_BATCH):
        known.update(
            JudgeCacheEntry.objects.filter(
                judge_version=judge.version, pair_hash__in=unique[start : start + LOOKUP_BATCH]
            ).values_list("pair_hash", "probability")
        )
    n_cached = sum(1 for h in hashes if h in known)
    missing: dict[str, PresencePair] = {}
    for h, p in zip(hashes, pairs):
        if h not in known and h not in missing:
            missing[h] = p
    if missing:
        probabilities = np.clip(np.asarray(judge.predict(list(missing.values())), dtype=float), 0.0, 1.0)
        if probabilities.shape != (len(missing),):
            raise ValueError(f"judge {judge.version} returned {probabilities.shape} for {len(missing)} pairs")
        fresh = dict(zip(missing, probabilities.tolist()))
        JudgeCacheEntry.objects.bulk_create(
            [JudgeCacheEntry(judge_version=judge.version, pair_hash=h, probability=v) for h, v in fresh.items()],
            ignore_conflicts=True,
            batch_size=LOOKUP_BATCH,
        )
        known.update(fresh)
    return np.array([known[h] for h in hashes], dtype=float), n_cached
