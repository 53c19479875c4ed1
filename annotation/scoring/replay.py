"""Replay of raw presence judgments under the fixed and the adaptive judging rule (issue 29).

A presence HIT is one system summary x one predicate; its pairs are the
predicate's QA pairs, each with its judgments in the order they were
collected.  The two rules:

- fixed (the paper): 3 assignments on every HIT; a pair's label is the
  majority of its 3 judgments;
- adaptive: 2 assignments; one more only when the first two judgments
  differ on some pair of the HIT.  A pair's label is the first two
  judgments' label where they agree on every pair of the HIT, else the
  majority of the 3.

So, over H replayed HITs of which D need the third judgment:

    assignments_fixed    = 3 H
    assignments_adaptive = 2 H + D
    saved_share          = 1 - assignments_adaptive / assignments_fixed = (H - D) / 3 H

Only HITs whose pairs all have exactly 3 judgments can be replayed: a pair
with 1 or 2 never had a full panel, and a fourth judge has no place in
either rule.  Other HITs are counted by their pattern of judgment counts
(e.g. "1", "1+3", "4") and left out of every figure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from annotation.scoring.agreement import krippendorff_alpha_nominal

RULES = ("fixed", "adaptive")
PAPER_JUDGES = 3


@dataclass(frozen=True)
class PresenceHIT:
    """One HIT of a raw file: where it is, and each pair's labels (0/1) in the order judged."""

    system: str
    example: str
    predicate: str
    pairs: tuple[tuple[int, ...], ...]


def judgment_pattern(hit: PresenceHIT) -> str:
    """The distinct judgment counts of the HIT's pairs, joined by '+': "3", "1+3", "4"."""
    return "+".join(str(n) for n in sorted({len(p) for p in hit.pairs}))


def _majority(labels) -> int:
    return 1 if 2 * sum(labels) > len(labels) else 0


def needs_third(hit: PresenceHIT) -> bool:
    """The adaptive rule asks for a third judgment: the first two differ on some pair."""
    return any(p[0] != p[1] for p in hit.pairs)


def replay_presence(hits: list[PresenceHIT], rule: str = "adaptive") -> dict:
    """Replay ``hits`` in order under both rules; figures for the HITs whose pairs all have 3 judgments.

    Returns ``hits`` (replayed), ``pairs``, ``assignments_fixed``, ``assignments_adaptive``,
    ``third_needed``, ``saved_share``, ``rule`` with ``assignments`` under it, ``labels_changed``
    (pairs whose label under ``rule`` differs from the fixed rule's majority), ``alpha_first_two``
    (nominal Krippendorff alpha over the first two judgments of every replayed pair: the balanced
    design the adaptive rule always has), ``alpha_all`` (over all 3), and the HITs left out:
    ``hits_left_out`` and ``hits_by_judgments`` (HIT count per judgment-count pattern, replayed ones
    under "3").
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}")
    patterns: Counter[str] = Counter()
    replayed = third = changed = n_pairs = 0
    first_two_units: list[int] = []
    first_two_labels: list[int] = []
    all_units: list[int] = []
    all_labels: list[int] = []
    for hit in hits:
        pattern = judgment_pattern(hit)
        patterns[pattern] += 1
        if pattern != str(PAPER_JUDGES):
            continue
        replayed += 1
        asks_third = needs_third(hit)
        third += asks_third
        for labels in hit.pairs:
            fixed_label = _majority(labels)
            if rule == "adaptive":
                label = _majority(labels) if asks_third else labels[0]
            else:
                label = fixed_label
            changed += label != fixed_label
            first_two_units += [n_pairs, n_pairs]
            first_two_labels += labels[:2]
            all_units += [n_pairs] * len(labels)
            all_labels += labels
            n_pairs += 1
    fixed = PAPER_JUDGES * replayed
    adaptive = (PAPER_JUDGES - 1) * replayed + third
    return {
        "rule": rule,
        "hits": replayed,
        "pairs": n_pairs,
        "assignments_fixed": fixed,
        "assignments_adaptive": adaptive,
        "assignments": adaptive if rule == "adaptive" else fixed,
        "third_needed": third,
        "saved_share": round(1 - adaptive / fixed, 4) if fixed else 0.0,
        "labels_changed": changed,
        "alpha_first_two": _alpha(first_two_units, first_two_labels, n_pairs),
        "alpha_all": _alpha(all_units, all_labels, n_pairs),
        "hits_left_out": sum(n for p, n in patterns.items() if p != str(PAPER_JUDGES)),
        "hits_by_judgments": dict(sorted(patterns.items())),
    }


def _alpha(units, labels, n_units) -> float | None:
    """Rounded alpha, or None (JSON null) where it is undefined."""
    if not units:
        return None
    alpha = krippendorff_alpha_nominal(units, labels, n_units)
    return None if alpha != alpha else round(alpha, 4)
