"""Near-duplicate QA pairs of one predicate, found before the presence stage.

The QAPyramid authors removed about 10% duplicate pairs by hand.  Two kept pairs of the same
predicate are offered to the researcher as near-duplicates when they share an answer span
(ignoring case and spacing), or when their questions differ only in auxiliaries ("Who blamed
someone?" / "Who has blamed someone?", "What was given?" / "What is given?").  The researcher
decides: the rule only proposes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from annotation.text.questions import words
from annotation.text.spans import normalise

AUXILIARIES = frozenset(
    "do does did is are was were be been being am has have had having will would can could should shall may might must "
    "'s 're 've 'd 'll 'm not n't".split()
)


@dataclass(frozen=True)
class PairText:
    """A kept pair as the rule sees it."""

    id: int
    predicate: int
    question: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class NearDuplicate:
    first: int
    second: int
    reason: str


def question_key(question: str) -> tuple[str, ...]:
    """The question's words without auxiliaries (what two near-duplicate questions share)."""
    return tuple(w for w in words(question) if w not in AUXILIARIES)


def near_duplicates(pairs: Iterable[PairText]) -> list[NearDuplicate]:
    """Every pair of pairs (same predicate) sharing an answer or a question up to auxiliaries, in input order."""
    pairs = list(pairs)
    found = []
    for i, a in enumerate(pairs):
        a_answers = {normalise(x).lower() for x in a.answers if x}
        for b in pairs[i + 1 :]:
            if a.predicate != b.predicate:
                continue
            shared = a_answers & {normalise(x).lower() for x in b.answers if x}
            if shared:
                found.append(NearDuplicate(a.id, b.id, f"same answer “{sorted(shared)[0]}”"))
            elif question_key(a.question) == question_key(b.question):
                found.append(NearDuplicate(a.id, b.id, "the questions differ only in auxiliaries"))
    return found
