"""Budgeted presence with known inclusion probabilities: the sampling rule, the estimator and its variance.

Pure functions (arrays in, numbers out) behind the "active" routing rule, after active statistical inference
(Zrnic & Candes, "Active Statistical Inference", ICML 2024) and its robust sampling (Li, Zrnic & Candes, 2025),
both built on prediction-powered inference (Angelopoulos et al., Science 2023).

The design.  Presence HITs are decided in strata (a routing round, or a round's top-up when new HITs arrive).
In a stratum of N HITs with a budget of n, HIT h goes to people with probability

    pi_h = n * ((1 - mix) / N + mix * u_h / sum(u)),  capped at 1 (the excess spread over the others),

where u_h is the judge's expected number of wrong labels on the HIT's units: a mix of uniform and
uncertainty-proportional sampling.  ``fixed_size_sample`` draws exactly n HITs with these first-order
inclusion probabilities (systematic sampling in a random order), so a round spends its budget exactly, and
every HIT that may be drawn has pi > 0 as long as mix < 1.

The estimator.  A system's score is a weighted sum of its units' presence, theta = sum_u w_u y_u (w_u =
1 / (summaries of the system x units of u's summary)).  With f_u the judge's probability and xi_h whether
HIT h was judged by people, the augmented inverse-probability-weighted (AIPW) estimate is

    theta_hat = sum_u w_u f_u + sum_h xi_h r_h / pi_h,   r_h = sum_{u in h} w_u (y_u - f_u),

unbiased whatever the judge when f does not depend on the HIT's own draw (the caller cross-fits it).  Its
design variance, summed over the strata, is Deville's estimator for fixed-size unequal-probability sampling:

    v = sum_strata n / (n - 1) * sum_{h sampled} c_h (r_h / pi_h - A)^2,   c_h = 1 - pi_h,
    A = sum c_h r_h / pi_h / sum c_h,

and the 95% interval is the Wilson score interval at the effective sample size theta_hat (1 - theta_hat) / v
(``annotation.scoring.intervals``), so it stays inside [0, 1] (a difference's inside [-1, 1]) and holds the score.
Its target is the full-human score on these examples.  A second interval also resamples examples (its target:
documents like these): the spread over examples of the per-example AIPW pseudo-values, with the same construction.

The reported score is the AIPW estimate moved into [0, 1] when it falls outside (possible near the bounds: a
correction (y - f) / pi can overshoot); that only brings it nearer the full-human score.  A system none of whose
units people have judged yet has no interval (``NO_LABEL_REASON``): its score is the judge's alone and nothing has
measured the judge's error on it.  Units whose draw has not happened yet count as f in the score; the intervals
hold whatever their labels turn out to be (they are widened by those units' weight), so they never have zero width
while the score is provisional.
"""

from __future__ import annotations

import math

import numpy as np

from annotation.scoring.intervals import clip, wilson_interval

#: The mixing weight of the first round, before any human label says how good the judge's uncertainty is.
DEFAULT_MIX = 0.5
#: Labelled HITs needed before the mixing weight is chosen from the labels instead of ``DEFAULT_MIX``.
MIN_HITS_FOR_MIX = 20
MIX_GRID = tuple(round(0.1 * i, 1) for i in range(10))  # 0.0 .. 0.9: never pure uncertainty (pi > 0 everywhere)
#: Why a system (or a pair) has no interval yet.
NO_LABEL_REASON = ("no interval yet: no unit of this system has been judged by people, so its score is the judge's "
                   "alone and nothing has measured the judge's error on it")
NO_PAIR_LABEL_REASON = ("no interval yet: no unit of one of the two systems has been judged by people, so nothing has "
                        "measured the judge's error on it")


def inclusion_probabilities(uncertainty, budget: int, mix: float = DEFAULT_MIX) -> np.ndarray:
    """Each HIT's probability of going to people (the module docstring's pi); 0 for a HIT that cannot be drawn.

    ``uncertainty[h]``: the judge's expected errors on HIT h (>= 0), NaN or -inf for a HIT that may not be drawn
    (no units, already routed).  The probabilities sum to ``budget`` (at most the drawable HITs), each at most 1.
    """
    u = np.asarray(uncertainty, dtype=float)
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"the mixing weight must be between 0 and 1, not {mix!r}")
    eligible = np.isfinite(u)
    pi = np.zeros(u.shape)
    n_eligible = int(eligible.sum())
    budget = max(0, min(int(budget), n_eligible))
    if budget == 0:
        return pi
    u_e = np.clip(u[eligible], 0.0, None)
    total = u_e.sum()
    shape = (1.0 - mix) / n_eligible + (mix * u_e / total if total > 0 else mix / n_eligible)
    p = np.zeros(n_eligible)
    free = np.ones(n_eligible, dtype=bool)
    remaining = float(budget)
    # Cap at 1: a HIT whose share would pass 1 is certain, and the rest of the budget is spread over the others in
    # the same proportions (at most one pass per HIT).
    for _ in range(n_eligible):
        scaled = remaining * shape[free] / shape[free].sum()
        over = scaled >= 1.0
        if not over.any():
            p[free] = scaled
            break
        indices = np.flatnonzero(free)[over]
        p[indices] = 1.0
        free[indices] = False
        remaining -= indices.size
        if remaining <= 1e-12 or not free.any():
            break
    pi[eligible] = p
    return pi


def fixed_size_sample(pi, seed: int = 0) -> np.ndarray:
    """A mask of exactly round(sum(pi)) HITs, HIT h drawn with probability ``pi[h]``: systematic sampling along the
    HITs in a random order (one uniform start, one draw per unit of cumulated probability)."""
    pi = np.asarray(pi, dtype=float)
    if np.any(pi < -1e-12) or np.any(pi > 1 + 1e-9):
        raise ValueError("inclusion probabilities must lie in [0, 1]")
    n = int(round(float(pi.sum())))
    if n == 0:
        return np.zeros(pi.size, dtype=bool)
    if abs(pi.sum() - n) > 1e-6:
        raise ValueError(f"fixed-size sampling needs probabilities summing to a whole number (got {pi.sum():.6f})")
    rng = np.random.default_rng(seed)
    order = rng.permutation(pi.size)
    cumulative = np.cumsum(pi[order])
    cumulative *= n / cumulative[-1]  # absorb floating-point drift so exactly n points fall inside
    start = rng.random()
    points = start + np.arange(n)
    # HIT k (in the random order) covers [cumulative[k-1], cumulative[k]): it is drawn when a point falls there (a
    # HIT of probability 0 covers nothing; points are 1 apart, so no HIT takes two).
    hits = np.searchsorted(cumulative, points, side="right")
    mask = np.zeros(pi.size, dtype=bool)
    mask[order[np.minimum(hits, pi.size - 1)]] = True
    return mask


def choose_mix(labelled_uncertainty, labelled_squared_residual, labelled_pi, candidate_uncertainty, budget: int,
               default: float = DEFAULT_MIX, grid=MIX_GRID) -> tuple[float, str]:
    """The mixing weight of the next stratum, chosen to minimise the estimator's variance, and why.

    From the HITs people judged so far: how the squared residual (sum over the HIT's units of y - f, squared) grows
    with the judge's uncertainty, fitted as e = a u + b (a, b >= 0) by least squares weighted by 1/pi (so the fit is
    representative of every HIT, not only of the ones routing favoured).  Then for each mix of ``grid``, the
    Poisson approximation of the variance of the stratum's inverse-probability sum, sum_h e_h / pi_h(mix), over the
    candidates; the smallest wins.  Below ``MIN_HITS_FOR_MIX`` labelled HITs: ``default``."""
    u = np.asarray(labelled_uncertainty, dtype=float)
    e = np.asarray(labelled_squared_residual, dtype=float)
    w = 1.0 / np.clip(np.asarray(labelled_pi, dtype=float), 1e-9, None)
    if u.size < MIN_HITS_FOR_MIX:
        return default, f"the default ({default}): {u.size} HITs judged by people so far, {MIN_HITS_FOR_MIX} needed to choose"
    design = np.column_stack([u, np.ones_like(u)])
    root = np.sqrt(w)
    (a, b), *_ = np.linalg.lstsq(design * root[:, None], e * root, rcond=None)
    a, b = max(float(a), 0.0), max(float(b), 0.0)
    if a == 0.0:
        b = float(np.average(e, weights=w))
    c = np.asarray(candidate_uncertainty, dtype=float)
    drawable = np.isfinite(c)
    expected = a * np.clip(c[drawable], 0.0, None) + b + 1e-12
    best, best_value = default, math.inf
    for mix in grid:
        pi = inclusion_probabilities(c, budget, mix)[drawable]
        taken = pi > 0
        if not taken.any():
            return default, "no HIT to draw"
        value = float(np.sum(expected[taken] * (1.0 / pi[taken] - 1.0)) + np.sum(expected[~taken]) * 1e6)
        if value < best_value - 1e-15:
            best, best_value = float(mix), value
    return best, (f"chosen from {u.size} HITs judged by people: squared residual ~ {a:.3f} x uncertainty + {b:.3f}, "
                  f"least variance at {best}")


def aipw_estimate(weights, f, y, hit, pi, sampled) -> float:
    """theta_hat = sum_u w_u f_u + sum_h xi_h r_h / pi_h (module docstring).  Per unit: ``weights``, the judge's
    probability ``f``, the human label ``y`` (read where the unit's HIT is ``sampled``; NaN there: no label, the
    unit counts as f), its ``hit`` index; per HIT: ``pi`` and ``sampled``."""
    w, f = np.asarray(weights, dtype=float), np.asarray(f, dtype=float)
    r = hit_residuals(weights, f, y, hit, sampled, len(pi))
    pi, sampled = np.asarray(pi, dtype=float), np.asarray(sampled, dtype=bool)
    return float(np.sum(w * f) + np.sum(r[sampled] / pi[sampled]))


def hit_residuals(weights, f, y, hit, sampled, n_hits: int) -> np.ndarray:
    """r_h = sum over the units of HIT h of w_u (y_u - f_u), for the ``sampled`` HITs (0 elsewhere, and for a unit
    without a label)."""
    hit = np.asarray(hit, dtype=np.int64)
    y = np.asarray(y, dtype=float)
    known = np.asarray(sampled, dtype=bool)[hit] & np.isfinite(y)
    residual = np.where(known, np.asarray(weights, dtype=float) * (np.where(known, y, 0.0) - np.asarray(f, dtype=float)), 0.0)
    return np.bincount(hit, weights=residual, minlength=int(n_hits))


def design_variance(residuals, pi, sampled, stratum) -> float:
    """Deville's variance estimate of sum_h xi_h r_h / pi_h under fixed-size sampling in each stratum (module
    docstring); a stratum with fewer than two drawn HITs that are not certain adds nothing it can estimate."""
    r = np.asarray(residuals, dtype=float)
    pi = np.asarray(pi, dtype=float)
    sampled = np.asarray(sampled, dtype=bool)
    stratum = np.asarray(stratum, dtype=np.int64)
    total = 0.0
    for s in np.unique(stratum[sampled]):
        rows = sampled & (stratum == s)
        n = int(rows.sum())
        if n < 2:
            continue
        c = 1.0 - pi[rows]
        if c.sum() <= 0:
            continue
        expanded = r[rows] / pi[rows]
        centre = float(np.sum(c * expanded) / np.sum(c))
        total += n / (n - 1) * float(np.sum(c * (expanded - centre) ** 2))
    return total


def example_spread(values, example_index) -> tuple[float, float, int]:
    """(mean, variance of the mean, examples) of per-example means: ``values[i]`` belongs to example
    ``example_index[i]``; the mean of the per-example means and their variance over examples / examples (NaN with
    fewer than two examples)."""
    values = np.asarray(values, dtype=float)
    examples = np.unique(np.asarray(example_index), return_inverse=True)[1].ravel()
    per_example = np.bincount(examples, weights=values) / np.bincount(examples)
    mean = float(per_example.mean()) if per_example.size else float("nan")
    if per_example.size < 2:
        return mean, float("nan"), int(per_example.size)
    return mean, float(per_example.var(ddof=1)) / per_example.size, int(per_example.size)


# ---------------------------------------------------------------------------------------------------------------
# Per-system scores and pairwise differences over a whole campaign (the selector gathers the arrays).
#
# The arrays.  Per unit u: ``unit_summary`` (its summary's index), the judge's ``f`` (cross-fitted), the human
# label ``y`` (NaN: none, it counts as f), ``unit_hit`` (its HIT's index).  Per HIT h: ``pi``, ``sampled`` (xi),
# ``stratum`` (its draw; a HIT no draw decided yet is simply not sampled).  Per summary s: ``summary_example``.
# A linear contrast gives each summary a weight c_s (a system: 1 / its summaries; A - B: +1/n_A, -1/n_B); unit u
# then weighs w_u = c_s / |U_s| and the estimate is sum_u w_u f_u + sum_h xi_h r_h / pi_h as above.  Its design
# variance is Deville's over every HIT of the campaign (those of other systems have r_h = 0 but still count in
# their draw's fixed size).  HITs belong to one summary, so for A - B the residuals of the two systems never mix.

TARGET_DESIGN = "the full-human score on these examples"
TARGET_EXAMPLES = "the system's score on documents like these"


def summary_pseudo_values(unit_summary, f, y, unit_hit, pi, sampled, n_summaries: int) -> np.ndarray:
    """Each summary's AIPW score: p_s = (1 / |U_s|) (sum_{u in s} f_u + sum_{u in s} xi_h(u) (y_u - f_u) / pi_h(u)),
    an unlabelled unit (y NaN, or its HIT not sampled) counting as f.  Their mean over a system's summaries is the
    system's AIPW estimate."""
    s = np.asarray(unit_summary, dtype=np.int64)
    f = np.asarray(f, dtype=float)
    y = np.asarray(y, dtype=float)
    hit = np.asarray(unit_hit, dtype=np.int64)
    pi = np.asarray(pi, dtype=float)
    drawn = np.asarray(sampled, dtype=bool)[hit]
    known = drawn & np.isfinite(y)
    correction = np.zeros(s.size)
    correction[known] = (y[known] - f[known]) / pi[hit[known]]
    sizes = np.bincount(s, minlength=n_summaries).astype(float)
    totals = np.bincount(s, weights=f + correction, minlength=n_summaries)
    with np.errstate(invalid="ignore", divide="ignore"):
        return totals / sizes


def paired_example_spread(pseudo_a, example_a, pseudo_b, example_b) -> tuple[float, float, int]:
    """(mean, variance of the mean, examples) of A - B paired by example: per example present in both, d_e = mean of
    A's pseudo-values - mean of B's (``example_spread`` of the d_e; NaN without a shared example)."""
    def per_example(values, examples):
        values, examples = np.asarray(values, dtype=float), np.asarray(examples)
        keys, inverse = np.unique(examples, return_inverse=True)
        return dict(zip(keys.tolist(), (np.bincount(inverse.ravel(), weights=values) / np.bincount(inverse.ravel())).tolist()))

    a, b = per_example(pseudo_a, example_a), per_example(pseudo_b, example_b)
    shared = sorted(set(a) & set(b))
    if not shared:
        return float("nan"), float("nan"), 0
    return example_spread([a[e] - b[e] for e in shared], shared)


class Design:
    """One campaign's draws reduced once, so every system and every pair reads them without going over the units
    again (a leaderboard of S systems asks for S + S (S - 1) / 2 contrasts).  A HIT belongs to one summary, so the
    residual of a contrast with summary weights c is r_h = c_{s(h)} b_h, b_h = sum_{u in h} (y_u - f_u) / |U_s| on the
    drawn HITs, and sum_u w_u f_u = sum_s c_s fbar_s: ``contrast`` gives the AIPW estimate
    (``aipw_estimate`` with w_u = c_s / |U_s|) and its Deville variance per draw from these.

    Per summary it also keeps what the intervals need (module docstring): the share of its units no draw has
    decided yet (``undecided``), their mean f (``f_undecided``, their part of the score) and how many of its units
    carry a human label that enters the estimate (``labelled``)."""

    def __init__(self, unit_summary, f, y, unit_hit, pi, sampled, stratum, summary_system, summary_example):
        s = np.asarray(unit_summary, dtype=np.int64)
        f = np.asarray(f, dtype=float)
        y = np.asarray(y, dtype=float)
        hit = np.asarray(unit_hit, dtype=np.int64)
        self.system = np.asarray(summary_system, dtype=np.int64)
        self.example = np.asarray(summary_example)
        n_summaries, n_hits = self.system.size, len(pi)
        sizes = np.bincount(s, minlength=n_summaries).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.f_mean = np.bincount(s, weights=f, minlength=n_summaries) / sizes
        self.sampled = np.asarray(sampled, dtype=bool)
        self.pi = np.where(self.sampled, np.asarray(pi, dtype=float), 1.0)
        self.stratum = np.nan_to_num(np.asarray(stratum, dtype=float), nan=-1)
        self.base = hit_residuals(1.0 / sizes[s], f, y, hit, self.sampled, n_hits)
        self.hit_summary = np.full(n_hits, -1, dtype=np.int64)
        self.hit_summary[hit] = s
        self.pseudo = summary_pseudo_values(s, f, y, hit, pi, sampled, n_summaries)
        undecided = (self.stratum[hit] < 0).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.undecided = np.nan_to_num(np.bincount(s, weights=undecided, minlength=n_summaries) / sizes)
            self.f_undecided = np.nan_to_num(np.bincount(s, weights=undecided * f, minlength=n_summaries) / sizes)
        self.labelled = np.bincount(s, weights=self.sampled[hit] & np.isfinite(y), minlength=n_summaries)
        self._systems: dict[int, dict | None] = {}

    def contrast(self, summary_weight) -> tuple[float, float]:
        """(estimate, design variance) of sum_s c_s theta_s for summary weights c (theta_s: the summary's full-human
        score); a HIT no draw decided yet has stratum -1 and is never drawn."""
        c = np.asarray(summary_weight, dtype=float)
        r = np.where(self.hit_summary >= 0, c[np.maximum(self.hit_summary, 0)], 0.0) * self.base
        used = c != 0
        estimate = float(np.sum(c[used] * self.f_mean[used]) + np.sum(r[self.sampled] / self.pi[self.sampled]))
        return estimate, design_variance(r, self.pi, self.sampled, self.stratum)

    def _system(self, k: int) -> dict | None:
        """System k's parts, computed once: the AIPW estimate split into its decided part (``known``, moved into
        its range [0, ``decided``]) and the undecided units' f (``f_undecided``, of weight ``undecided``), the
        design variance and the labels it rests on."""
        if k not in self._systems:
            mine = self.system == k
            if not mine.any():
                self._systems[k] = None
            else:
                weight = np.where(mine, 1.0 / mine.sum(), 0.0)
                estimate, variance = self.contrast(weight)
                undecided = float(np.sum(weight * self.undecided))
                f_undecided = float(np.sum(weight * self.f_undecided))
                decided = max(1.0 - undecided, 0.0)
                known = clip(estimate - f_undecided, 0.0, decided)
                self._systems[k] = {
                    "mine": mine, "estimate": estimate, "variance": variance, "known": known, "decided": decided,
                    "undecided": undecided, "f_undecided": f_undecided, "score": known + f_undecided,
                    "labelled": int(self.labelled[mine].sum()),
                    # The per-summary pseudo-values without the undecided units' f (their part is widened instead).
                    "known_pseudo": self.pseudo[mine] - self.f_undecided[mine],
                }
        return self._systems[k]

    def system_estimate(self, k: int) -> dict | None:
        """System k's figures (``system_estimates``), None without summaries."""
        part = self._system(k)
        if part is None:
            return None
        result = {"score": part["score"], "estimate": part["estimate"], "variance": part["variance"],
                  "undecided": part["undecided"], "labelled": part["labelled"],
                  "pseudo_values": self.pseudo[part["mine"]], "no_interval_reason": None}
        if part["labelled"] == 0:
            nothing = (float("nan"), float("nan"))
            return {**result, "ci95": nothing, "ci95_examples": nothing, "no_interval_reason": NO_LABEL_REASON}
        unknown = (0.0, part["undecided"])
        result["ci95"] = wilson_interval(part["known"], part["variance"], part["labelled"], 0.0, part["decided"], unknown)
        # The example interval: the same construction around the same score, from the spread over examples.
        _, spread, n_examples = example_spread(part["known_pseudo"], self.example[part["mine"]])
        result["ci95_examples"] = wilson_interval(part["known"], spread, n_examples, 0.0, part["decided"], unknown)
        return result

    def difference(self, a: int, b: int) -> dict:
        """System a minus system b (``difference_estimate``): the difference of their scores, its design variance
        from the same draws, and both intervals on its range (no interval while either system has no human label)."""
        pa, pb = self._system(a), self._system(b)
        if pa is None or pb is None:
            nan = float("nan")
            return {"difference": nan, "variance": nan, "ci95": (nan, nan), "ci95_examples": (nan, nan),
                    "no_interval_reason": "no summaries"}
        weight = np.where(pa["mine"], 1.0 / pa["mine"].sum(), 0.0) - np.where(pb["mine"], 1.0 / pb["mine"].sum(), 0.0)
        _, variance = self.contrast(weight)
        result = {"difference": pa["score"] - pb["score"], "variance": variance, "no_interval_reason": None}
        if min(pa["labelled"], pb["labelled"]) == 0:
            nothing = (float("nan"), float("nan"))
            return {**result, "ci95": nothing, "ci95_examples": nothing, "no_interval_reason": NO_PAIR_LABEL_REASON}
        # The decided parts' difference lies in [-B's decided weight, A's]; the undecided parts widen it both ways.
        lower, upper = -pb["decided"], pa["decided"]
        unknown = (pb["undecided"], pa["undecided"])
        result["ci95"] = wilson_interval(pa["known"] - pb["known"], variance, min(pa["labelled"], pb["labelled"]),
                                         lower, upper, unknown)
        _, spread, n_examples = paired_example_spread(pa["known_pseudo"], self.example[pa["mine"]], pb["known_pseudo"],
                                                      self.example[pb["mine"]])
        result["ci95_examples"] = wilson_interval(pa["known"] - pb["known"], spread, n_examples, lower, upper, unknown)
        return result


def system_estimates(unit_summary, f, y, unit_hit, pi, sampled, stratum, summary_system, summary_example,
                     n_systems: int) -> list[dict | None]:
    """Per system k (None without summaries): ``score`` (the AIPW estimate, the mean of its summaries' pseudo-values,
    moved into [0, 1] when outside; ``estimate`` as computed), ``variance`` and ``ci95`` (the design interval: target
    ``TARGET_DESIGN``), ``ci95_examples`` (the same construction around the score, from the spread over examples of
    its summaries' pseudo-values, ``example_spread``: target
    ``TARGET_EXAMPLES``), ``pseudo_values`` per summary (ordered as its summaries' indices), ``labelled`` (units
    whose human label enters), ``undecided`` (the weight of units no draw decided yet) and ``no_interval_reason``
    (None, or why both intervals are NaN)."""
    design = Design(unit_summary, f, y, unit_hit, pi, sampled, stratum, summary_system, summary_example)
    return [design.system_estimate(k) for k in range(n_systems)]


def difference_estimate(a: int, b: int, unit_summary, f, y, unit_hit, pi, sampled, stratum, summary_system,
                        summary_example) -> dict:
    """System a minus system b from the same design: ``difference`` (score A - score B), its design ``variance``
    and ``ci95`` (Deville's over r^A_h - r^B_h, the Wilson interval on [-1, 1]: target, the full-human difference on
    these examples), ``ci95_examples`` (from ``paired_example_spread``: documents like these) and
    ``no_interval_reason``."""
    return Design(unit_summary, f, y, unit_hit, pi, sampled, stratum, summary_system, summary_example).difference(a, b)
