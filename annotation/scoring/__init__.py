"""Pure scoring functions of the QAPyramid protocol: arrays in, numbers out (no database)."""

from annotation.scoring.agreement import (
    bootstrap_alpha_ci,
    krippendorff_alpha_nominal,
    percent_agreement,
)
from annotation.scoring.correlation import (
    bootstrap_hybrid_score_ci,
    bootstrap_score_ci,
    correlation,
    correlations_by_subgroup,
    summary_level_correlation,
    system_level_correlation,
)
from annotation.scoring.majority import judgment_counts, majority_vote
from annotation.scoring.penalties import (
    calibrate_length_alpha,
    length_penalty,
    nqapyramid,
    repetition_penalty,
    repetition_rate,
)
from annotation.scoring.qapyramid import predicate_level_scores, qapyramid_scores, system_scores
from annotation.scoring.tokens import sentences, token_length, word_tokens

__all__ = [
    "bootstrap_alpha_ci",
    "bootstrap_hybrid_score_ci",
    "bootstrap_score_ci",
    "calibrate_length_alpha",
    "correlation",
    "correlations_by_subgroup",
    "judgment_counts",
    "krippendorff_alpha_nominal",
    "length_penalty",
    "majority_vote",
    "nqapyramid",
    "percent_agreement",
    "predicate_level_scores",
    "qapyramid_scores",
    "repetition_penalty",
    "repetition_rate",
    "sentences",
    "summary_level_correlation",
    "system_level_correlation",
    "system_scores",
    "token_length",
    "word_tokens",
]
