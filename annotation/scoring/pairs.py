"""Every pair of systems compared, with one multiplicity adjustment over all the pairs.

A leaderboard of S systems invites S (S - 1) / 2 comparisons; read one by one at 95%, a campaign of 10 systems
would declare about two of its 45 pairs different by chance even when no system differs.  Each pair here gets
its own 95% interval of the difference and a two-sided p-value, and the verdict ``separated`` comes from the
p-values after Holm's step-down adjustment over every pair that could be tested (the family-wise error rate,
the chance of declaring any tied pair different, stays at or below 5%; Holm, "A simple sequentially
rejective multiple test procedure", Scandinavian Journal of Statistics, 1979).  The interval is the pair's
own, unadjusted: a pair whose interval just excludes 0 can stay "not separated" once the other pairs count.

Two tests, one per kind of campaign:

- full-human (gold) scores: the paired t-test over examples.  Per example scored for both systems, d_e = A's
  summary score - B's; the difference is the mean of d_e, its interval mean +- t(0.975, n - 1) sd / sqrt(n),
  its p-value Student's.  Pairing by example removes the examples' own difficulty from the comparison; no
  resampling, so two reads of the same scores give the same figures.
- budgeted presence under the active rule: the design-based difference of the two AIPW estimates from the same
  draws (``annotation.scoring.active.Design.difference``): difference / sqrt(design variance) against the
  normal, the interval the design interval; the example interval is carried beside it, not tested.

A pair that cannot be tested (a system without a score, fewer than two shared examples, a design interval of
zero width) has no figures, only its ``no_comparison`` reason, and does not count in the adjustment.
"""

from __future__ import annotations

import math

import numpy as np

#: The family-wise error rate the verdicts hold.
FAMILY_ALPHA = 0.05
ADJUSTMENT = "holm"

PAIRED_T = "paired-t"
DESIGN = "aipw-design"

METHOD_STATEMENTS = {
    PAIRED_T: "Paired t-test over the examples scored for both systems (mean of the per-example differences, 95% t "
              "interval); separated after Holm's adjustment over all pairs (family-wise error 5%).",
    DESIGN: "Difference of the two AIPW estimates from the same draws, tested against its design variance (normal, "
            "95% design interval; the example interval beside it); separated after Holm's adjustment over all pairs "
            "(family-wise error 5%).",
}

KEY_ORDER = ("higher", "lower", "difference", "ci95", "ci95_examples", "p_value", "p_holm", "separated", "no_comparison",
             "n_examples")
NO_SHARED_EXAMPLES = "fewer than two examples have a score for both systems"
NO_SCORE = "a system has no score yet"
ZERO_WIDTH = ("its design interval has zero width: no unit of either system was drawn for people with a probability "
              "below 1, so the difference rests on the judge alone")


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (same order): the i-th smallest of m becomes the running maximum of
    (m - j + 1) p_(j) over j <= i, capped at 1.  NaN entries (pairs not tested) stay NaN and do not count in m."""
    p = np.asarray(p_values, dtype=float)
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = tested.size
    if m == 0:
        return adjusted
    order = tested[np.argsort(p[tested], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def paired_t(differences) -> tuple[float, float, float, float]:
    """(mean, low, high, p) of the paired t-test on per-example ``differences`` (NaN: not shared, left out).
    All differences equal: the interval has zero width and p is 1 when they are 0, else 0.  Fewer than two: NaNs."""
    d = np.asarray(differences, dtype=float)
    d = d[~np.isnan(d)]
    if d.size < 2:
        return (float(d.mean()) if d.size else math.nan), math.nan, math.nan, math.nan
    (mean, low, high, p), = _t_tests(np.array([d.mean()]), np.array([d.std(ddof=1)]), np.array([d.size]))
    return mean, low, high, p


def _t_tests(means, sds, sizes) -> list[tuple[float, float, float, float]]:
    """``paired_t`` for many pairs at once from each pair's mean, standard deviation and count (at least 2): one
    call of the t distribution for all of them (45 pairs at the paper's size)."""
    from scipy import stats

    means, sds, sizes = (np.asarray(a, dtype=float) for a in (means, sds, sizes))
    se = sds / np.sqrt(sizes)
    flat = sds <= 1e-15 * np.maximum(1.0, np.abs(means))
    with np.errstate(invalid="ignore", divide="ignore"):
        half = stats.t.ppf(0.975, sizes - 1) * se
        p = 2 * stats.t.sf(np.abs(means) / se, sizes - 1)
    half = np.where(flat, 0.0, half)
    p = np.where(flat, np.where(means == 0, 1.0, 0.0), p)
    # A difference of two scores on [0, 1] lies in [-1, 1]: the interval is cut there (it only loses values the
    # difference cannot take, so it covers as often).
    return [(float(m), max(-1.0, float(m - h)), min(1.0, float(m + h)), float(q)) for m, h, q in zip(means, half, p)]


def normal_p(estimate: float, variance: float) -> float:
    """The two-sided p-value of estimate / sqrt(variance) against the standard normal."""
    return math.erfc(abs(estimate) / math.sqrt(2.0 * variance))


def _finish(pairs: list[dict]) -> list[dict]:
    """Holm over the tested pairs: ``p_holm`` and ``separated`` (adjusted p below ``FAMILY_ALPHA``)."""
    adjusted = holm([math.nan if p["p_value"] is None else p["p_value"] for p in pairs])
    for pair, p_holm in zip(pairs, adjusted):
        pair["p_holm"] = None if math.isnan(p_holm) else float(p_holm)
        pair["separated"] = pair["p_holm"] is not None and pair["p_holm"] < FAMILY_ALPHA
    # One order of keys for every entry (the JSON reads alike whatever the kind of campaign).
    return [{key: pair[key] for key in KEY_ORDER if key in pair} for pair in pairs]


def _untested(higher: str, lower: str, reason: str, **extra) -> dict:
    return {"higher": higher, "lower": lower, "difference": None, "ci95": [None, None], "p_value": None,
            "no_comparison": reason, **extra}


def paired_example_comparisons(names, example_scores) -> list[dict]:
    """Every pair of systems by the paired t-test over examples, Holm-adjusted.

    ``names``: the systems, best first (the ranking); ``example_scores``: one row per example, one column per
    system in that order, NaN where the system's summary of that example has no score.  One entry per pair
    (S (S - 1) / 2, ranking order), ``higher`` the system with the larger mean difference (the better ranked one
    on a tie), with ``difference`` (higher - lower, >= 0), ``ci95``, ``p_value``, ``p_holm``, ``separated``,
    ``n_examples`` (examples scored for both) and, for a pair not tested, ``no_comparison`` (the reason)."""
    names = list(names)
    scores = np.asarray(example_scores, dtype=float).reshape(-1, len(names))
    pairs, tested, figures = [], [], []
    for j in range(len(names)):
        for k in range(j + 1, len(names)):
            d = scores[:, j] - scores[:, k]
            d = d[~np.isnan(d)]
            if np.all(np.isnan(scores[:, j])) or np.all(np.isnan(scores[:, k])):
                pairs.append(_untested(names[j], names[k], NO_SCORE, n_examples=int(d.size)))
            elif d.size < 2:
                pairs.append(_untested(names[j], names[k], NO_SHARED_EXAMPLES, n_examples=int(d.size)))
            else:
                tested.append(len(pairs))
                figures.append((d.mean(), d.std(ddof=1), d.size))
                pairs.append({"higher": names[j], "lower": names[k], "n_examples": int(d.size)})
    for i, (mean, low, high, p) in zip(tested, _t_tests(*np.array(figures).reshape(-1, 3).T)):
        pair = pairs[i]
        if mean < 0:  # the lower-ranked system has the higher mean: the pair turns, the difference stays >= 0
            pair["higher"], pair["lower"], mean, low, high = pair["lower"], pair["higher"], -mean, -high, -low
        pair.update({"difference": mean, "ci95": [low, high], "p_value": p, "no_comparison": None})
    return _finish(pairs)


def design_comparisons(differences) -> list[dict]:
    """Holm-adjusted verdicts for the active rule's pairwise differences.

    ``differences``: one dict per pair (``higher``, ``lower``, ``difference``, design ``variance``, ``ci95`` the
    design interval, ``ci95_examples``; ``difference`` None for a pair without one).  Returns new dicts with
    ``p_value`` (difference / sqrt(variance) against the normal), ``p_holm``, ``separated`` and
    ``no_comparison``; a pair whose variance is 0 is not tested (``ZERO_WIDTH``)."""
    pairs = []
    for entry in differences:
        d, v = entry.get("difference"), entry.get("variance")
        examples = list(entry.get("ci95_examples") or [None, None])
        if entry.get("no_interval_reason"):
            # A system no person has judged yet (``active.Design.difference``): no interval, so no test.
            pairs.append(_untested(entry["higher"], entry["lower"], entry["no_interval_reason"], ci95_examples=examples))
            continue
        if d is None or v is None or (isinstance(v, float) and math.isnan(v)):
            pairs.append(_untested(entry["higher"], entry["lower"], NO_SCORE, ci95_examples=examples))
            continue
        if v <= 0:
            pairs.append(_untested(entry["higher"], entry["lower"], ZERO_WIDTH, ci95_examples=examples))
            continue
        pairs.append({"higher": entry["higher"], "lower": entry["lower"], "difference": float(d),
                      "ci95": list(entry["ci95"]), "ci95_examples": examples, "p_value": normal_p(d, v),
                      "no_comparison": None})
    return _finish(pairs)
