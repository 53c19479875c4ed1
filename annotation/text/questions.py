"""The word-level rules of QA-SRL questions and answers: question words, placeholders, content words,
token overlap, and the checks every written question and answer must pass."""

from __future__ import annotations

import re
from collections import Counter

from annotation.text.spans import is_substring

MAX_QUESTION_CHARS = 200
MAX_ANSWER_CHARS = 300
MAX_FEEDBACK_CHARS = 2000
_WORD = re.compile(r"[\w']+", re.UNICODE)

WH_WORDS = {"who", "what", "when", "where", "why", "how", "which", "whose", "whom"}
PLACEHOLDERS = {"someone", "something", "somewhere", "do", "does", "did", "doing", "done", "somebody", "one"}
FUNCTION_WORDS = {
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "by", "with", "from", "is", "was", "were",
    "are", "be", "been", "being", "has", "have", "had", "it", "its", "that", "this", "as", "into", "about", "up",
    "out", "off", "over", "not", "no", "will", "would", "can", "could", "should", "might", "may", "must", "shall",
    "he", "she", "they", "them", "his", "her", "their", "i", "we", "you", "there", "than", "then", "so", "if",
    "but", "also", "very", "just", "all", "any", "some", "much", "many", "more", "most", "after", "before",
} | WH_WORDS | PLACEHOLDERS


def words(text: str) -> list[str]:
    """Lower-cased words (letters, digits, apostrophes)."""
    return [w.lower() for w in _WORD.findall(text or "")]


def content_words(text: str) -> list[str]:
    """Lower-cased words without function words (all words when nothing else is left)."""
    all_words = words(text)
    return [w for w in all_words if w not in FUNCTION_WORDS] or all_words


def token_f1(a: str, b: str) -> float:
    """Token-overlap F1 of two strings over their content words: 2|A∩B| / (|A|+|B|).

    Function words are left out so that "the crash" does not half-cover "the driver".
    """
    ca, cb = Counter(content_words(a)), Counter(content_words(b))
    common = sum((ca & cb).values())
    total = sum(ca.values()) + sum(cb.values())
    return 2 * common / total if total else 0.0


def best_overlap(answers: list[str], keys: list[str]) -> float:
    """The highest ``token_f1`` of any answer against any key answer (0 when either list is empty)."""
    return max((token_f1(a, k) for a in answers for k in keys), default=0.0)


def stem(word: str) -> str:
    """A crude suffix-stripping stem ("blamed" -> "blam"), enough to match inflections of the same word."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_word_violations(question: str, sentence: str, predicate: str) -> list[str]:
    """Content words of the sentence, other than the predicate's, that a question repeats."""
    predicate_stems = {stem(w) for w in words(predicate)}
    sentence_stems = {stem(w) for w in words(sentence) if w not in FUNCTION_WORDS}
    found = []
    for w in words(question):
        word_stem = stem(w)
        if w in FUNCTION_WORDS or word_stem in predicate_stems:
            continue
        if word_stem in sentence_stems:
            found.append(w)
    return found


def check_question(question: str) -> list[str]:
    """What is wrong with a written question (length, "?" at the end, a whole question); empty when nothing."""
    problems = []
    if len(question) > MAX_QUESTION_CHARS:
        problems.append(f"Keep the question under {MAX_QUESTION_CHARS} characters.")
    if not question.endswith("?"):
        problems.append('A question ends with "?".')
    if len(question.rstrip("?").split()) < 2:
        problems.append("Write a whole question, e.g. “Who blamed someone?”.")
    return problems


def check_answer(answer: str, sentence: str) -> list[str]:
    """What is wrong with an answer (length, not copied from the sentence); empty when nothing."""
    if len(answer) > MAX_ANSWER_CHARS:
        return [f"Keep the answer under {MAX_ANSWER_CHARS} characters."]
    if not is_substring(answer, sentence):
        return ["An answer must be words copied from the sentence: select them in the sentence above."]
    return []
