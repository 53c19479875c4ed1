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
# The words of a QA-SRL question's preposition slot ("What did someone spill onto?", "What did someone sleep
# because of?"): never a content word repeated from the sentence, whatever else the sentence does with them.
PREPOSITIONS = {
    "about", "above", "across", "after", "against", "along", "amid", "amidst", "among", "amongst", "around", "as",
    "at", "because", "before", "behind", "below", "beneath", "beside", "besides", "between", "beyond", "by",
    "despite", "down", "due", "during", "except", "following", "for", "from", "in", "inside", "instead", "into",
    "like", "near", "of", "off", "on", "onto", "out", "outside", "over", "past", "per", "regarding", "since",
    "through", "throughout", "till", "to", "toward", "towards", "under", "underneath", "unlike", "until", "up",
    "upon", "versus", "via", "with", "within", "without",
}


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
    """Content words of the sentence, other than the predicate's, that a question repeats (prepositions are the
    question's preposition slot, never content words)."""
    predicate_stems = {stem(w) for w in words(predicate)}
    sentence_stems = {stem(w) for w in words(sentence) if w not in FUNCTION_WORDS}
    found = []
    for w in words(question):
        word_stem = stem(w)
        if w in FUNCTION_WORDS or w in PREPOSITIONS or word_stem in predicate_stems:
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


# Irregular past and participle forms of common English verbs (regular ones are derived by rule).
_IRREGULAR = {
    "be": "am is are was were been being 's 're 'm",
    "have": "has had having 's 've 'd",
    "do": "does did done doing",
    "go": "goes went gone going",
    "arise": "arose arisen", "awake": "awoke awoken", "bear": "bore born borne", "beat": "beaten",
    "become": "became", "begin": "began begun", "bend": "bent", "bet": "bet", "bind": "bound", "bite": "bit bitten",
    "bleed": "bled", "blow": "blew blown", "break": "broke broken", "breed": "bred", "bring": "brought",
    "build": "built", "burn": "burnt", "burst": "burst", "buy": "bought", "catch": "caught", "choose": "chose chosen",
    "cling": "clung", "come": "came", "cost": "cost", "creep": "crept", "cut": "cut", "deal": "dealt", "dig": "dug",
    "draw": "drew drawn", "dream": "dreamt", "drink": "drank drunk", "drive": "drove driven", "eat": "ate eaten",
    "fall": "fell fallen", "feed": "fed", "feel": "felt", "fight": "fought", "find": "found", "flee": "fled",
    "fly": "flew flown flies", "forbid": "forbade forbidden", "forget": "forgot forgotten", "forgive": "forgave forgiven",
    "freeze": "froze frozen", "get": "got gotten", "give": "gave given", "grind": "ground", "grow": "grew grown",
    "hang": "hung", "hear": "heard", "hide": "hid hidden", "hit": "hit", "hold": "held", "hurt": "hurt",
    "keep": "kept", "kneel": "knelt", "know": "knew known", "lay": "laid", "lead": "led", "lean": "leant",
    "leap": "leapt", "learn": "learnt", "leave": "left", "lend": "lent", "let": "let", "lie": "lay lain lying",
    "light": "lit", "lose": "lost", "make": "made", "mean": "meant", "meet": "met", "mislead": "misled",
    "overcome": "overcame", "pay": "paid", "prove": "proven", "put": "put", "quit": "quit", "read": "read",
    "ride": "rode ridden", "ring": "rang rung", "rise": "rose risen", "run": "ran", "say": "said", "see": "saw seen",
    "seek": "sought", "sell": "sold", "send": "sent", "set": "set", "shake": "shook shaken", "shed": "shed",
    "shine": "shone", "shoot": "shot", "show": "shown", "shrink": "shrank shrunk", "shut": "shut", "sing": "sang sung",
    "sink": "sank sunk", "sit": "sat", "sleep": "slept", "slide": "slid", "speak": "spoke spoken", "speed": "sped",
    "spend": "spent", "spin": "spun", "split": "split", "spread": "spread", "spring": "sprang sprung",
    "stand": "stood", "steal": "stole stolen", "stick": "stuck", "sting": "stung", "strike": "struck stricken",
    "swear": "swore sworn", "sweep": "swept", "swim": "swam swum", "swing": "swung", "take": "took taken",
    "teach": "taught", "tear": "tore torn", "tell": "told", "think": "thought", "throw": "threw thrown",
    "undergo": "underwent undergone", "understand": "understood", "undertake": "undertook undertaken",
    "upset": "upset", "wake": "woke woken", "wear": "wore worn", "weave": "wove woven", "weep": "wept",
    "win": "won", "wind": "wound", "withdraw": "withdrew withdrawn", "withhold": "withheld", "write": "wrote written",
    "can": "could", "will": "would", "shall": "should", "may": "might",
}
_VOWELS = set("aeiou")
# "gave" -> {"give"}: a predicate known only by its form in the sentence (a test item) finds its base.
_BASES: dict[str, set[str]] = {}
for _base, _forms in _IRREGULAR.items():
    for _form in _forms.split():
        _BASES.setdefault(_form, set()).add(_base)


def verb_forms(lemma: str) -> set[str]:
    """Every inflection of a verb's head word (lower case): base, -s, -ed, -ing and irregular forms.

    Regular forms follow English spelling rules loosely ("stop" -> "stopped", "try" -> "tried", "make"
    -> "making"); a few impossible forms are harmless since they are only matched against questions.
    """
    parts = (lemma or "").lower().split()
    if not parts:
        return set()
    base = parts[0]
    forms = {base, base + "s", base + "es", base + "ed", base + "d", base + "ing"}
    if base.endswith("e"):
        forms.add(base[:-1] + "ing")
    if base.endswith("y") and len(base) > 2 and base[-2] not in _VOWELS:
        forms |= {base[:-1] + "ies", base[:-1] + "ied"}
    if len(base) >= 3 and base[-1] not in _VOWELS | {"w", "x", "y"} and base[-2] in _VOWELS and base[-3] not in _VOWELS:
        forms |= {base + base[-1] + "ed", base + base[-1] + "ing"}
    if base.endswith("ie"):
        forms.add(base[:-2] + "ying")
    forms |= set(_IRREGULAR.get(base, "").split())
    return forms


def verb_bases(word: str) -> set[str]:
    """The base forms an inflected verb may come from, by inverting -ed, -ing and -s and by the irregular list
    ("fired" -> "fire", "stopped" -> "stop", "tried" -> "try", "making" -> "make", "gave" -> "give").

    A word may yield a few bases that are no verb ("fired" -> "fir" too): they are only matched against
    questions, as inflections of the real base, and bases under three letters made by a rule are left out
    (the irregular list's "be", "do" and "go" stay)."""
    word = (word or "").lower()
    found = {word} | _BASES.get(word, set())
    stems = []
    if word.endswith(("ied", "ies")):
        found.add(word[:-3] + "y")
    if word.endswith("ed"):
        stems += [word[:-2], word[:-1]]  # "planted" -> "plant", "fired" -> "fire"
    if word.endswith("ing"):
        stems += [word[:-3], word[:-3] + "e"]  # "opening" -> "open", "making" -> "make"
        if word.endswith("ying"):
            found.add(word[:-4] + "ie")  # "lying" -> "lie"
    if word.endswith("es"):
        stems += [word[:-2], word[:-1]]  # "watches" -> "watch", "fires" -> "fire"
    elif word.endswith("s") and not word.endswith("ss"):
        stems.append(word[:-1])
    for candidate in stems:
        found.add(candidate)
        if len(candidate) >= 4 and candidate[-1] == candidate[-2] and candidate[-1] not in _VOWELS | {"l", "s"}:
            found.add(candidate[:-1])  # "stopped" -> "stop" (but "called", "passed" keep theirs)
    return {base for base in found if len(base) >= 3} | {word} | _BASES.get(word, set())


def starts_with_question_word(question: str) -> bool:
    """Whether the question's first word is a question word (who, what, when, where, why, how, which, whose, whom)."""
    found = words(question)
    return bool(found) and found[0] in WH_WORDS


def mentions_verb(question: str, predicate_text: str, lemma: str = "") -> bool:
    """Whether a question contains the predicate's verb in any inflection.

    The verb is the predicate's lemma (its first word: "give" of "give up") or, without a lemma, the
    predicate as it stands in the sentence, led back to its base (``verb_bases``: "fired" -> "fire"); a
    question word matches an inflection of it, the form in the sentence itself, or a word with the same
    crude stem ("blames" / "blamed").
    """
    heads = [w for w in (words(lemma)[:1] + words(predicate_text)[:1]) if w]
    if not heads:
        return True
    # A test item has no lemma: its verb as it stands in the sentence ("fired") leads back to its base ("fire").
    heads += [base for h in heads for base in verb_bases(h)]
    forms = set()
    for head in heads:
        forms |= verb_forms(head)
    stems = {stem(h) for h in heads}
    return any(w in forms or stem(w) in stems for w in words(question))
