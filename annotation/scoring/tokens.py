"""Word tokens of a summary, counted the way the QAPyramid authors count lengths.

The length and repetition penalties of nQAPyramid measure texts in NLTK word
tokens, sentence by sentence: the text is split into sentences, and each
sentence into Treebank-style tokens (punctuation and clitics such as "'s" or
"n't" are tokens of their own).  With these counts the authors' released
length penalties are reproduced; whitespace words are off by up to 0.025.

``nltk.word_tokenize`` would split sentences with the pre-trained Punkt model,
which has to be downloaded.  Here Punkt runs untrained, with a fixed list of
common English abbreviations, so that nothing is fetched at run time; the
word tokenizer itself (``NLTKWordTokenizer``, the one ``word_tokenize`` uses)
needs no data.  The sentence split matters: Treebank tokenisation separates a
period only at the end of the string it is given.
"""

from __future__ import annotations

import re
from functools import lru_cache

# Lower-case, without the final period (Punkt's convention).  Titles, months, states, corporate
# suffixes and Latin abbreviations frequent in news text: without them "Mr." would end a sentence
# and count as two tokens ("Mr", ".") instead of one.
ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof st jr sr rev gen col lt sgt capt cmdr adm gov sen rep pres supt det insp
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thurs fri sat sun
    inc corp co ltd plc llc bros dept univ assn est approx vs etc al e.g i.e cf fig no nos vol pp
    u.s u.k u.n e.u u.s.a d.c a.m p.m mt ft ave blvd rd hwy
    ala ariz ark calif colo conn del fla ga ill ind kan ky la md mass mich minn miss mo mont neb nev
    okla ore pa tenn tex va vt wash wis wyo
    """.split()
)

_SENTENCE_TAGS = re.compile(r"</?t>")


@lru_cache(maxsize=1)
def _splitters():
    # NLTK is imported on first use, not at start (it pulls scikit-learn and takes seconds).
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    parameters = PunktParameters()
    parameters.abbrev_types = set(ABBREVIATIONS)
    return PunktSentenceTokenizer(parameters), NLTKWordTokenizer()


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: line breaks and ``<t>`` tags always end one, Punkt (untrained) finds the rest."""
    sentence_splitter, _ = _splitters()
    found = []
    for line in _SENTENCE_TAGS.sub("\n", text or "").splitlines():
        if line.strip():
            found.extend(sentence_splitter.tokenize(line.strip()))
    return found


def word_tokens(text: str) -> list[str]:
    """NLTK word tokens of ``text``, sentence by sentence."""
    _, word_tokenizer = _splitters()
    return [token for sentence in sentences(text) for token in word_tokenizer.tokenize(sentence)]


def token_length(text: str) -> int:
    """Length of ``text`` in NLTK word tokens (see the module docstring)."""
    return len(word_tokens(text))
