"""Lengths of nQAPyramid in NLTK word tokens, sentence by sentence, with nothing downloaded."""

from __future__ import annotations

import math

import nltk.data
import pytest

from annotation.scoring import length_penalty, repetition_rate, sentences, token_length, word_tokens
from annotation.scoring import tokens as tokens_module


def test_punctuation_and_clitics_are_tokens():
    assert word_tokens("It's John's car, isn't it?") == ["It", "'s", "John", "'s", "car", ",", "is", "n't", "it", "?"]
    assert token_length("It's John's car, isn't it?") == 10  # 5 whitespace words


def test_tokens_are_counted_sentence_by_sentence():
    # Treebank tokenisation separates a period only at the end of the string it gets: on the whole
    # text "left." would stay one token.  Sentence by sentence it is "left" + ".".
    assert sentences("He left. She came.") == ["He left.", "She came."]
    assert word_tokens("He left. She came.") == ["He", "left", ".", "She", "came", "."]
    # Abbreviations do not end a sentence, so "Mr." and "U.S." stay single tokens.
    assert word_tokens("Mr. Smith visited the U.S. Senate.") == ["Mr.", "Smith", "visited", "the", "U.S.", "Senate", "."]
    # Line breaks and <t> tags end sentences.
    assert sentences("<t> one here </t> <t> two there </t>") == ["one here", "two there"]
    assert sentences("first line\nsecond line") == ["first line", "second line"]
    assert word_tokens("") == [] and token_length("   ") == 0


def test_no_nltk_data_is_needed(monkeypatch):
    """Punkt's pre-trained model (what nltk.word_tokenize loads) is a download: we must not need it."""

    def refuse(*args, **kwargs):
        raise LookupError("no NLTK data here")

    monkeypatch.setattr(nltk.data, "find", refuse)
    monkeypatch.setattr(nltk.data, "load", refuse)
    tokens_module._splitters.cache_clear()
    try:
        assert token_length("Dr. Who's here. Isn't he?") == 9
    finally:
        tokens_module._splitters.cache_clear()


def test_length_penalty_on_tokens_differs_from_whitespace_words():
    reference = "The firm's profits rose."  # 6 tokens, 4 words
    summary = "The firm's profits rose. It didn't say why, but it's glad."  # 17 tokens, 11 words
    assert (token_length(reference), token_length(summary)) == (6, 17)
    by_tokens = float(length_penalty(token_length(summary), token_length(reference), 1.0, 6))
    assert by_tokens == pytest.approx(math.exp((1 - 17 / 6) / 6))
    by_words = float(length_penalty(len(summary.split()), len(reference.split()), 1.0, 6))
    assert abs(by_tokens - by_words) > 0.01


def test_repetition_is_counted_in_tokens():
    # Tokens: Wow . It 's a goal goal goal goal -> 3 repeated of 9 (whitespace words would give 3 of 7).
    assert repetition_rate("Wow. It's a goal goal goal goal") == pytest.approx(3 / 9)
    # A list is taken as tokens already.
    assert repetition_rate(["a", "a", "a", "a"]) == pytest.approx(3 / 4)

