"""95% intervals of scores that live on a bounded scale: one construction for every interval the platform shows.

A score (a share of present units) lies in [0, 1], a difference of two in [-1, 1]; a plain estimate +- 1.96 sd can
leave that range, and it has zero width when the estimated variance is 0 (nothing measured the error yet).  Every
interval is therefore a **Wilson score interval at the effective sample size** of its estimate (the usual
interval for a proportion estimated from a complex sample: Kish's effective size n = p (1 - p) / v, after Korn &
Graubard 1998), on the estimate's own range [lower, upper]:

    p = (estimate - lower) / (upper - lower),  v_p = variance / (upper - lower)^2,  n = p (1 - p) / v_p,
    centre = (p + z^2 / 2n) / (1 + z^2 / n),   half = z sqrt(p (1 - p) / n + z^2 / 4n^2) / (1 + z^2 / n),

mapped back to [lower, upper].  It is the set of values p0 whose distance to the estimate is within z standard
errors when the variance is taken to scale as p0 (1 - p0), as a proportion's does; far from the bounds it is the
estimate +- z sd (about 0.5% narrower), near them it leans inward and never crosses them.  It always contains its
estimate.  Where the estimate sits on a bound (p = 0 or 1, for instance an AIPW estimate below 0 reported at 0) or
the variance is 0, the effective size cannot be read from the variance: ``n_fallback`` (the number of human labels
the estimate rests on) is used, so the interval keeps the width that this many observations allow (for example
[0, 0.071] for 0 out of 50), instead of collapsing to a point.  When the estimate itself fell outside the range
(an AIPW estimate can: a correction (y - f) / pi overshoots), that count overstates what the estimate knows, so
the interval also spans the plain estimate +- z sd clipped to the range (on PyrXSum at 10% this is what keeps a
system scored -0.03 +- 0.07 from an interval [0, 0.05]).

``unknown`` adds the part of the target no observation speaks for yet (units whose draw has not happened): their
true value lies anywhere in that range, so the interval of the known part is widened by it (a bound that holds
whatever those labels turn out to be) rather than pretending they are known.
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054
#: A variance below this share of p (1 - p) (an effective size above 10^12) is rounding noise, read as 0.
NUMERICALLY_ZERO = 1e-12


def clip(value: float, lower: float = 0.0, upper: float = 1.0) -> float:
    """``value`` moved to the nearest point of [lower, upper] (NaN stays NaN).  The target lies in that range, so
    moving an estimate there can only bring it nearer the target."""
    return float(value) if math.isnan(value) else float(min(max(value, lower), upper))


def wilson_interval(estimate: float, variance: float, n_fallback: float, lower: float = 0.0, upper: float = 1.0,
                    unknown: tuple[float, float] = (0.0, 0.0), z: float = Z95) -> tuple[float, float]:
    """(low, high): the Wilson score interval of the module docstring for an estimate on [lower, upper] (clipped
    there first), widened by ``unknown`` = (how far below, how far above) the part of the target nothing has
    measured can lie.  (NaN, NaN) when the estimate or the variance is NaN, or when the variance cannot be used
    (0, or the estimate on a bound) and ``n_fallback`` is not positive: no interval rests on nothing."""
    if upper <= lower:
        raise ValueError(f"an interval needs lower < upper (got {lower}, {upper})")
    if not (math.isfinite(estimate) and math.isfinite(variance)) or variance < 0:
        return float("nan"), float("nan")
    span = upper - lower
    p = (clip(estimate, lower, upper) - lower) / span
    spread = p * (1.0 - p)
    v = variance / span**2
    if v <= NUMERICALLY_ZERO * spread:
        # Rounding noise, not a measured error (a bootstrap of examples that all score the same gives ~1e-32):
        # an effective size of 10^12 and more would make the interval a point.  Read as 0.
        v = 0.0
    n = spread / v if v > 0 and spread > 0 else float(n_fallback)
    if not n > 0:
        return float("nan"), float("nan")
    k = z * z / n
    centre = (p + k / 2.0) / (1.0 + k)
    half = z * math.sqrt(spread / n + k / (4.0 * n)) / (1.0 + k)
    # The interval holds p in exact arithmetic; min/max keep it so at the last bit too.
    low, high = min(max(centre - half, 0.0), p), max(min(centre + half, 1.0), p)
    raw = (estimate - lower) / span
    if v > 0 and not 0.0 <= raw <= 1.0:
        # The estimate fell outside the range: at the bound the effective size says nothing, and the label count
        # overstates what a noisy estimate knows.  The interval then spans the plain one, clipped, as well.
        sd = math.sqrt(v)
        low, high = min(low, max(raw - z * sd, 0.0)), max(high, min(raw + z * sd, 1.0))
    return lower + span * low - unknown[0], lower + span * high + unknown[1]

