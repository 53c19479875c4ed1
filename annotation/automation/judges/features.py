"""Pair features of the trained judge: lexical overlap plus similarities from the frozen MiniLM encoder.

For a unit u and a summary s (sentences s_1..s_m), with token vectors from the encoder:

- lexical: content-word recall, ROUGE-1/2 recall of u by s (stemmed tokens, clipped counts),
  and the best ROUGE-1 recall by one sentence;
- semantic: cosine of u's pooled vector with s and with its best sentence
  (max_j cos(u, s_j)), the mean of the top-2 sentence cosines;
- alignment (BERTScore-style recall): each unit token t is matched to its most similar summary token,
  R = mean_t max_k cos(t, s_k); also the minimum over t, and the share of unit tokens matched above 0.6/0.8,
  on the whole summary and on the best sentence;
- sizes: unit and summary lengths in words.

Every text is encoded once however many pairs it appears in (a summary has one vector per unit
it is judged against), which is what makes training and inference cheap.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from annotation.automation.judges.base import PresencePair, clean_summary, summary_sentences
from annotation.automation.judges.lexical import content_word_recall, ngram_recall, stemmed_tokens

FEATURE_NAMES = [
    "content_recall", "rouge1_recall", "rouge2_recall", "best_sentence_rouge1",
    "cos_summary", "cos_best_sentence", "cos_top2_mean",
    "align_recall", "align_min", "align_share_06", "align_share_08",
    "align_best_recall", "align_best_min",
    "unit_words", "summary_words", "n_sentences",
]


def _alignment(unit_tokens: np.ndarray, target_tokens: np.ndarray) -> tuple[float, float, float, float]:
    if unit_tokens.size == 0 or target_tokens.size == 0:
        return 0.0, 0.0, 0.0, 0.0
    best = (unit_tokens @ target_tokens.T).max(axis=1)
    return float(best.mean()), float(best.min()), float((best > 0.6).mean()), float((best > 0.8).mean())


def pair_features(pairs: Sequence[PresencePair], encoder, batch_size: int = 64) -> np.ndarray:
    """The feature matrix (pairs × len(FEATURE_NAMES)) described in the module docstring."""
    return features_and_rankings(pairs, encoder, batch_size)[0]


def features_and_rankings(pairs: Sequence[PresencePair], encoder, batch_size: int = 64) -> tuple[np.ndarray, list[list[str]]]:
    """The feature matrix and, per pair, the summary's sentences ranked by cosine with the unit (closest first).

    The cross-encoder judge reads the ranked sentences, so that truncating its input keeps the
    sentences most likely to carry the unit; computing both here encodes every text once.
    """
    units = list(dict.fromkeys(p.unit for p in pairs))
    summaries = list(dict.fromkeys(p.summary for p in pairs))
    sentences_of = {s: summary_sentences(s) or [clean_summary(s) or " "] for s in summaries}
    sentence_texts = list(dict.fromkeys(t for s in summaries for t in sentences_of[s]))
    unit_at = {u: i for i, u in enumerate(units)}
    summary_at = {s: i for i, s in enumerate(summaries)}
    sentence_at = {t: i for i, t in enumerate(sentence_texts)}
    unit_enc = encoder.encode(units, batch_size=batch_size)
    summary_enc = encoder.encode([clean_summary(s) or " " for s in summaries], batch_size=batch_size)
    sentence_enc = encoder.encode(sentence_texts, batch_size=batch_size)
    rows = np.zeros((len(pairs), len(FEATURE_NAMES)), dtype=np.float32)
    rankings: list[list[str]] = []
    for r, pair in enumerate(pairs):
        u, s = unit_at[pair.unit], summary_at[pair.summary]
        sentence_ids = [sentence_at[t] for t in sentences_of[pair.summary]]
        cos = sentence_enc.pooled[sentence_ids] @ unit_enc.pooled[u]
        best = int(np.argmax(cos))
        rankings.append([sentences_of[pair.summary][j] for j in np.argsort(-cos, kind="stable")])
        top2 = np.sort(cos)[-2:]
        unit_tokens = stemmed_tokens(pair.unit)
        summary_tokens = stemmed_tokens(clean_summary(pair.summary))
        r1, r2 = ngram_recall(unit_tokens, summary_tokens, 1), ngram_recall(unit_tokens, summary_tokens, 2)
        best_r1 = max(ngram_recall(unit_tokens, stemmed_tokens(t), 1) for t in sentences_of[pair.summary])
        align = _alignment(unit_enc.tokens[u], summary_enc.tokens[s])
        align_best = _alignment(unit_enc.tokens[u], sentence_enc.tokens[sentence_ids[best]])
        rows[r] = [
            content_word_recall(pair.unit, pair.summary), r1, r2, best_r1,
            float(summary_enc.pooled[s] @ unit_enc.pooled[u]), float(cos[best]), float(top2.mean()),
            *align, align_best[0], align_best[1],
            len(pair.unit.split()), len(clean_summary(pair.summary).split()), len(sentence_ids),
        ]
    return rows, rankings
