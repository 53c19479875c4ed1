"""Automatic QA generation for AutoQAPyramid: QA-SRL-style questions and answers per predicate.

The dependency generator reads spaCy's parse (the pipeline of
``annotation.text.predicates``, loaded once per process) and turns each argument
of a verb predicate into one question whose answer is the argument's span:

- subject (active) -> "Who/What <verb> (something)?"; passive subject -> "What/Who was <verb-ed>?";
- direct object -> "What did someone <verb>?"; agent ("by ...") -> "Who/What <verb> something?"
  (active wording of the passive);
- prepositional object -> "When" (time words), "Where" (in/at/near/... with a place), "Why"
  (because of/due to), else "What did someone <verb> <prep>?";
- temporal noun modifier ("Monday") -> "When"; reason clause ("because ...") -> "Why";
  manner adverb ("quickly") -> "How"; clausal complement ("said that ...") -> "What did someone <verb>?".

"Who" is used for persons (personal pronouns, person nouns, proper names that
act as agents), "What" otherwise.  Any other generator (e.g. an LLM with the
protocol's "Question: ... Answer: ..." prompt) implements ``QAGenerator``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from annotation.text.predicates import is_predicate, english_pipeline, strip_sentence_tags


@dataclass(frozen=True)
class GeneratedQA:
    predicate: str
    question: str
    answer: str
    sentence: str = ""

    @property
    def text(self) -> str:
        """The unit as one line, as for human QA pairs: the question followed by its answer."""
        return f"{self.question} {self.answer}"


class QAGenerator:
    """Interface: QA pairs for every predicate of a reference text."""

    name = ""

    def generate_for_text(self, text: str) -> list[GeneratedQA]:
        raise NotImplementedError


PERSON_PRONOUNS = {"i", "you", "he", "she", "we", "they", "me", "him", "her", "us", "them", "who", "whom", "someone", "everyone", "anyone", "nobody"}
PERSON_NOUNS = {
    "man", "woman", "men", "women", "child", "children", "boy", "girl", "people", "person", "player", "mayor",
    "president", "minister", "police", "officer", "officers", "doctor", "teacher", "student", "students",
    "worker", "workers", "fan", "fans", "official", "officials", "father", "mother", "son", "daughter",
    "wife", "husband", "family", "friend", "friends", "victim", "victims", "manager", "coach", "judge",
    "lawyer", "leader", "resident", "residents", "passenger", "passengers", "driver", "soldier", "soldiers",
    "singer", "actor", "actress", "star", "captain", "spokesman", "spokeswoman", "author", "researcher",
    "researchers", "scientist", "scientists", "team", "couple", "baby", "patient", "patients", "suspect",
}
TIME_WORDS = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "today", "yesterday",
    "tomorrow", "tonight", "morning", "afternoon", "evening", "night", "week", "month", "year", "day",
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "weekend", "hour", "hours", "minutes", "season", "decade", "century", "time",
    "days", "weeks", "months", "years", "spring", "summer", "autumn", "fall", "winter", "christmas",
}
TIME_PREPS = {"during", "after", "before", "since", "until", "till"}
PLACE_PREPS = {"in", "at", "near", "inside", "outside", "across", "around", "into", "onto", "from", "to", "under", "over", "behind", "within", "throughout"}
REASON_MARKERS = {"because", "since", "as"}
# Questions speak of "someone"/"something" (singular): "were cancelled" -> "What was cancelled?"
SINGULAR = {"were": "was", "are": "is", "have": "has", "do": "does"}
_YEAR = re.compile(r"^(1[89]|20)\d\d$")


def _span(token) -> str:
    tokens = list(token.subtree)
    doc = token.doc
    return doc[tokens[0].i : tokens[-1].i + 1].text.strip(" ,")


def _is_time(token) -> bool:
    words = [t.lower_ for t in token.subtree]
    return any(w in TIME_WORDS or _YEAR.match(w) for w in words)


def _is_person(token) -> bool:
    if token.lower_ in PERSON_PRONOUNS or token.lemma_.lower() in PERSON_NOUNS or token.lower_ in PERSON_NOUNS:
        return True
    return token.pos_ == "PROPN" and token.ent_type_ in ("", "PERSON") and not _is_time(token) and token.dep_ in ("nsubj", "nsubjpass", "pobj") and token.head.dep_ in ("agent", "ROOT", "ccomp", "conj", "advcl", "relcl")


class DependencyQAGenerator(QAGenerator):
    """QA-SRL-style templates over the dependency parse (see the module docstring)."""

    name = "dependency"

    def generate_for_text(self, text: str) -> list[GeneratedQA]:
        plain, _ = strip_sentence_tags(text)
        if not plain:
            return []
        doc = english_pipeline()(plain)
        result: list[GeneratedQA] = []
        seen = set()
        for sentence in doc.sents:
            for token in sentence:
                if token.pos_ != "VERB" or not is_predicate(token):
                    continue
                if token.tag_ in ("VBG", "VBN") and not any(c.dep_ in ("aux", "auxpass") for c in token.children):
                    continue  # participles modifying a noun ("efforts assisting ...") make no well-formed question
                for qa in self.questions(token):
                    key = (qa.question.lower(), qa.answer.lower())
                    if qa.answer and key not in seen:
                        seen.add(key)
                        result.append(GeneratedQA(token.text, qa.question, qa.answer, sentence.text))
        return result

    def questions(self, verb) -> list[GeneratedQA]:
        children = list(verb.children)
        # "to" of an infinitive is not an auxiliary a question can start with ("forced to evacuate").
        auxes = [c for c in children if c.dep_ == "aux" and c.tag_ != "TO"]
        auxpass = next((c for c in children if c.dep_ == "auxpass"), None)
        negation = any(c.dep_ == "neg" for c in children)
        subject = next((c for c in children if c.dep_ in ("nsubj", "csubj")), None)
        passive_subject = next((c for c in children if c.dep_ == "nsubjpass"), None)
        obj = next((c for c in children if c.dep_ in ("dobj", "obj")), None)
        agent = next((c for c in children if c.dep_ == "agent"), None)
        agent_obj = next((c for c in agent.children if c.dep_ == "pobj"), None) if agent is not None else None
        particle = next((c.text for c in children if c.dep_ == "prt"), "")
        verb_text = f"{verb.text} {particle}".strip()
        lemma = f"{verb.lemma_} {particle}".strip()
        neg = " not" if negation else ""

        def who(token) -> str:
            return "Who" if token is not None and _is_person(token) else "What"

        def placeholder(token) -> str:
            return "someone" if token is not None and _is_person(token) else "something"

        out: list[GeneratedQA] = []

        def add(question: str, answer_token=None, answer: str | None = None):
            text = answer if answer is not None else _span(answer_token)
            out.append(GeneratedQA(verb.text, question[0].upper() + question[1:], text))

        if auxpass is not None:
            # Passive: "The park was opened by the mayor."
            be = SINGULAR.get(auxpass.text.lower(), auxpass.text.lower())
            lead = " ".join(SINGULAR.get(a.text.lower(), a.text.lower()) if i == 0 else a.text.lower() for i, a in enumerate(auxes))
            frame = f"{lead} {be}".strip() if lead else be
            first, *rest = frame.split()
            rest_text = " ".join(rest)
            thing = placeholder(passive_subject)
            if passive_subject is not None:
                add(f"{who(passive_subject)} {frame}{neg} {verb_text}?", passive_subject)
            if agent_obj is not None:
                add(f"{who(agent_obj)} {verb_text} {thing}?", agent_obj)
            tail = f"{first} {thing}{neg} {rest_text + ' ' if rest_text else ''}{verb_text}"
            clause_tail = tail
        else:
            clause = next((c for c in children if c.dep_ == "ccomp"), None)
            obj_word = f" {placeholder(obj)}" if obj is not None else (" something" if clause is not None else "")
            subj_word = placeholder(subject)
            if auxes:
                first = SINGULAR.get(auxes[0].text.lower(), auxes[0].text.lower())
                rest = " ".join(a.text.lower() for a in auxes[1:])
                tail = f"{first} {subj_word}{neg} {rest + ' ' if rest else ''}{verb_text}"
                subject_q = f"{first}{' ' + rest if rest else ''}{neg} {verb_text}"
            else:
                do = {"VBD": "did", "VBZ": "does", "VBP": "does"}.get(verb.tag_, "did")
                tail = f"{do} {subj_word}{neg} {lemma}"
                subject_q = f"{do} not {lemma}" if negation else verb_text
            if subject is not None:
                add(f"{who(subject)} {subject_q}{obj_word}?", subject)
            if obj is not None:
                add(f"{who(obj)} {tail}?", obj)
            clause_tail = tail
            tail = f"{tail}{obj_word}"
        for child in children:
            if child.dep_ == "prep":
                pobj = next((c for c in child.children if c.dep_ == "pobj"), None) or next(
                    (c for c in child.children if c.dep_ == "pcomp"), None
                )
                if pobj is not None and pobj.dep_ == "pcomp" and pobj.pos_ == "ADP":
                    # two-word prepositions ("because of", "due to", "out of"): the object hangs one level down
                    pobj = next((c for c in pobj.children if c.dep_ == "pobj"), None)
                if pobj is None:
                    continue
                prep = child.lower_
                if _is_time(pobj) and (prep in TIME_PREPS or prep in {"on", "in", "at", "by", "during"}):
                    add(f"When {tail}?", pobj)
                elif prep in PLACE_PREPS and not _is_person(pobj):
                    add(f"Where {tail}?", pobj)
                elif prep in {"because", "due"}:
                    add(f"Why {tail}?", pobj)
                else:
                    add(f"{who(pobj)} {tail} {prep}?", pobj)
            elif child.dep_ == "npadvmod" and _is_time(child):
                add(f"When {tail}?", child)
            elif child.dep_ == "advcl":
                mark = next((c for c in child.children if c.dep_ == "mark"), None)
                if mark is not None and mark.lower_ in REASON_MARKERS:
                    tokens = [t for t in child.subtree if t.i != mark.i]
                    add(f"Why {tail}?", answer=child.doc[tokens[0].i : tokens[-1].i + 1].text)
            elif child.dep_ == "advmod" and child.lower_.endswith("ly") and child.pos_ == "ADV":
                add(f"How {tail}?", child)
            elif child.dep_ == "ccomp" and obj is None:
                add(f"What {clause_tail}?", child)
        return out


QA_PROMPT = (
    "Read the sentence, then write question-answer pairs about the given verb, one pair per argument of the "
    "verb (who did what to whom, when, where, why, how). Each answer must be a span copied from the sentence. "
    "Write each pair as two lines:\nQuestion: ...?\nAnswer: ..."
)


class LLMQAGenerator(QAGenerator):
    """The protocol's QA-generation prompt for every predicate, on an OpenAI-compatible chat endpoint
    (the ``LLM_*`` settings of the LLM judge).  Answers that are not spans of the sentence are dropped."""

    name = "llm"

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 retries: int | None = None, timeout: float | None = None, backoff: float = 0.5):
        from django.conf import settings

        from annotation.automation.judges.base import JudgeError

        self.base_url = (base_url or getattr(settings, "LLM_BASE_URL", "")).rstrip("/")
        self.model = model or getattr(settings, "LLM_MODEL", "")
        self.api_key = api_key if api_key is not None else getattr(settings, "LLM_API_KEY", "")
        if not self.base_url or not self.model:
            raise JudgeError("the llm QA generator needs LLM_BASE_URL and LLM_MODEL")
        self.retries = int(getattr(settings, "LLM_RETRIES", 3) if retries is None else retries)
        self.timeout = float(getattr(settings, "LLM_TIMEOUT", 30) if timeout is None else timeout)
        self.backoff = backoff

    def generate_for_text(self, text: str) -> list[GeneratedQA]:
        from annotation.automation.judges.llm import chat_completion
        from annotation.text.predicates import analyse_references

        plain, bounds = strip_sentence_tags(text)
        if not plain:
            return []
        result = []
        for sentence in analyse_references([plain], [bounds] if bounds else None)[0]:
            for predicate in sentence.predicates:
                messages = [
                    {"role": "system", "content": QA_PROMPT},
                    {"role": "user", "content": f"Sentence: {sentence.text}\nVerb: {predicate.text}"},
                ]
                pairs = chat_completion(self, messages, lambda reply: parse_generated_pairs(reply, predicate.text), max_tokens=300)
                result += [
                    GeneratedQA(predicate.text, qa.question, qa.answer, sentence.text)
                    for qa in pairs
                    if qa.answer.lower() in sentence.text.lower()
                ]
        return result


def default_generator() -> QAGenerator:
    """The generator of AutoQAPyramid runs: ``settings.AUTOSCORE_QA_GENERATOR`` ("dependency" or "llm")."""
    from django.conf import settings

    if getattr(settings, "AUTOSCORE_QA_GENERATOR", "dependency") == "llm":
        return LLMQAGenerator()
    return DependencyQAGenerator()


def parse_generated_pairs(reply: str, predicate: str = "") -> list[GeneratedQA]:
    """Read "Question: ...? Answer: ..." pairs (the protocol's QA-generation format) from a generator's reply.

    A question must end with "?"; the answer runs to the end of its line; anything else is skipped.
    """
    pairs = []
    for match in re.finditer(r"Question\s*:\s*([^\n]+?\?)\s*Answer\s*:\s*([^\n]+)", reply, re.I):
        question, answer = " ".join(match.group(1).split()), " ".join(match.group(2).split())
        if question and answer:
            pairs.append(GeneratedQA(predicate, question, answer))
    return pairs
