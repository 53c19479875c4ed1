"""Normalised QAPyramid: repetition and length penalties.

nQAPyramid_i = p_r · p_l · QAPyramid_i, with

- repetition penalty p_r = 1 − rp_i, where rp_i is the share of the
  summary's tokens taken by degenerate repetition;
- length penalty p_l = exp(min(0, (1 − |s_i|·p_r / |r_i|) / alpha)),
  |s_i|·p_r being the effective length.

Lengths and repetition are counted in NLTK word tokens, sentence by sentence
(``annotation.scoring.tokens``), as the authors count them.
"""

from __future__ import annotations

import numpy as np

from annotation.scoring.tokens import word_tokens

MIN_REPEATS = 4  # "repeated consecutively more than 3 times"
MAX_SPAN_WORDS = 64


def _run_length(tokens: list[str], i: int, span: int) -> int:
    """How many times tokens[i:i+span] occurs back to back from position i."""
    first = tokens[i : i + span]
    k = 1
    while tokens[i + k * span : i + (k + 1) * span] == first:
        k += 1
    return k


def repetition_rate(text_or_tokens, min_repeats: int = MIN_REPEATS) -> float:
    """Share of a summary's tokens that are degenerate repetition.

    A text is split into NLTK word tokens sentence by sentence (a list is
    taken as the tokens already).  A degenerate run is a span of 1 to 64
    tokens repeated back to back at least ``min_repeats`` (4) times, i.e.
    more than 3 times.  The first copy is ordinary content; the tokens of
    the copies after it are the repeated text.  Runs are found left to right
    (at each position the span covering most tokens wins) and do not
    overlap; rp = repeated tokens / all tokens, in [0, 1).
    """
    tokens = word_tokens(text_or_tokens) if isinstance(text_or_tokens, str) else list(text_or_tokens)
    n = len(tokens)
    repeated = 0
    i = 0
    while i < n:
        best_cover, best_span, best_k = 0, 0, 0
        for span in range(1, min(MAX_SPAN_WORDS, (n - i) // min_repeats) + 1):
            if tokens[i : i + span] != tokens[i + span : i + 2 * span]:
                continue
            k = _run_length(tokens, i, span)
            if k >= min_repeats and k * span > best_cover:
                best_cover, best_span, best_k = k * span, span, k
        if best_k:
            repeated += (best_k - 1) * best_span
            i += best_cover
        else:
            i += 1
    return repeated / n if n else 0.0


def repetition_penalty(rp):
    """p_r = 1 − rp."""
    return 1.0 - np.asarray(rp, dtype=float)


def length_penalty(summary_len, reference_len, rep_penalty, alpha: float):
    """p_l = exp(min(0, (1 − |s|·p_r / |r|) / alpha)); 1 when the effective length is at most the reference's."""
    if alpha <= 0:
        raise ValueError("alpha must be positive")
    s = np.asarray(summary_len, dtype=float)
    r = np.asarray(reference_len, dtype=float)
    p_r = np.asarray(rep_penalty, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        exponent = np.minimum(0.0, (1.0 - s * p_r / r) / alpha)
    return np.exp(exponent)


def nqapyramid(qapyramid, summary_len, reference_len, rep_penalty, alpha: float):
    """nQAPyramid = p_r · p_l · QAPyramid (never above QAPyramid)."""
    p_r = np.asarray(rep_penalty, dtype=float)
    return p_r * length_penalty(summary_len, reference_len, p_r, alpha) * np.asarray(qapyramid, dtype=float)


def calibrate_length_alpha(qapyramid, summary_len, reference_len, rep_penalty, candidates=range(1, 11)):
    """Pick the length-penalty alpha that makes p_l · QAPyramid least correlated with effective length.

    For each candidate alpha, Pearson r between p_l·QAPyramid and the
    effective length |s|·p_r; the alpha with the smallest |r| wins (ties go
    to the smaller alpha).  Returns (best alpha, {alpha: r}).
    """
    q = np.asarray(qapyramid, dtype=float)
    p_r = np.asarray(rep_penalty, dtype=float)
    effective = np.asarray(summary_len, dtype=float) * p_r
    keep = ~np.isnan(q)
    correlations = {}
    from scipy import stats  # here, not at start: SciPy's statistics take seconds to import

    for alpha in candidates:
        penalised = length_penalty(summary_len, reference_len, p_r, alpha) * q
        x, y = penalised[keep], effective[keep]
        if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
            correlations[alpha] = float("nan")
        else:
            correlations[alpha] = float(stats.pearsonr(x, y)[0])
    defined = {a: abs(r) for a, r in correlations.items() if not np.isnan(r)}
    if not defined:
        return None, correlations
    best = min(defined, key=lambda a: (defined[a], a))
    return best, correlations
