"""Spans of a sentence as workers select them: whitespace-insensitive matching and click tokens."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]", re.UNICODE)


def normalise(text: str) -> str:
    """Runs of whitespace as one space, trimmed (``str.split`` splits on what ``\\s`` matches, faster)."""
    return " ".join(text.split())


def is_substring(answer: str, sentence: str) -> bool:
    """Whether a (non-empty) answer is words of the sentence, ignoring differences in spacing."""
    answer = normalise(answer)
    return bool(answer) and answer in normalise(sentence)


def sentence_tokens(text: str, highlight: tuple[int, int] | None = None) -> list[dict]:
    """Words and punctuation of a sentence with their offsets, for click selection.

    ``before`` keeps the text between tokens (spaces as written), so the
    sentence shows exactly as it is; tokens inside ``highlight`` are marked.
    """
    tokens, cursor = [], 0
    for m in _TOKEN.finditer(text):
        inside = highlight is not None and highlight[0] <= m.start() and m.end() <= highlight[1]
        tokens.append({"start": m.start(), "end": m.end(), "text": m.group(), "before": text[cursor : m.start()], "predicate": inside})
        cursor = m.end()
    return tokens


def clean_text(value: str | None) -> str:
    """A typed value without control characters (other than ordinary whitespace), stripped: they never belong in an answer."""
    return "".join(ch for ch in (value or "") if ch.isprintable() or ch in " \t").strip()
