"""What simulated workers answer (see the package docstring): template questions, verdicts, presence labels."""

from __future__ import annotations

import random
import re
import threading

from annotation.models import ContentUnit, GoldPresence, Predicate, PresenceJudgment, SystemSummary
from annotation.text.spans import normalise, sentence_tokens
from hits.models import HIT

_STOPWORDS = {
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "by", "with", "from", "is", "was", "were",
    "are", "be", "been", "has", "have", "had", "it", "its", "that", "this", "as",
}
_TWO_WORD_PREPOSITIONS = {"because", "due", "instead", "according", "ahead", "prior", "out"}
_WHEN_ADVERBS = {"now", "then", "later", "soon", "already", "yesterday", "today", "tomorrow", "recently", "previously",
                 "once", "again", "finally", "eventually", "earlier", "ago", "still"}
_NOT_MANNER = {"only", "reportedly", "allegedly", "apparently", "really", "nearly", "likely", "early", "recently",
               "previously", "finally", "eventually", "currently", "simply", "certainly", "probably"}
_WHERE_ADVERBS = {"home", "here", "there", "abroad", "away", "back", "overseas", "outside", "inside", "nearby",
                  "upstairs", "downstairs", "elsewhere", "everywhere"}
_WHEN_MARKS = {"when", "after", "before", "until", "while", "as", "once", "since"}
_WHY_MARKS = {"because", "to", "so"}
_PARSING = threading.Lock()
_PERSON_WORDS = {"he", "she", "they", "i", "we", "you", "him", "her", "them", "who", "someone", "people", "police"}


class Answerer:
    """Decides what a simulated worker answers (see the module docstring).

    A worker's accuracy is applied deterministically: errors are spread
    evenly over their answers (an accuracy of 0.9 is exactly one wrong answer
    in ten, starting at a seeded offset), so a simulation is reproducible
    and a worker's figures converge quickly to their accuracy.
    """

    def __init__(self, rng: random.Random, accuracy: float, accuracies: dict[str, float] | None = None,
                 same_answers_seed: int | None = None):
        self.rng = rng
        self.accuracy = accuracy
        self.same_answers_seed = same_answers_seed
        self.accuracies = accuracies or {}
        self._arguments: dict[int, list[tuple[str, str]]] = {}
        # What a run never changes, read once: predicates with their sentence; a summary's words and imported gold.
        self._predicates: dict[int, Predicate] = {}
        self._summaries: dict[int, tuple[set[str], dict[int, bool]]] = {}
        self._answered: dict[str, int] = {}
        self._offset: dict[str, float] = {}

    def right(self, worker: str, stream: str = "") -> bool:
        """Whether the worker's next answer is right (evenly spread errors at their accuracy).

        Each stream (kind of HIT) spreads its errors on its own, so that gold
        items see the worker's accuracy as well as regular ones do.
        """
        error_rate = 1.0 - self.accuracies.get(worker, self.accuracy)
        key = f"{worker}:{stream}"
        k = self._answered.get(key, 0)
        self._answered[key] = k + 1
        offset = self._offset.setdefault(key, self.rng.random())
        return int((k + 1) * error_rate + offset) == int(k * error_rate + offset)

    def predicate(self, pk: int) -> Predicate:
        if pk not in self._predicates:
            self._predicates[pk] = Predicate.objects.select_related("sentence").get(pk=pk)
        return self._predicates[pk]

    def summary(self, pk: int) -> tuple[set[str], dict[int, bool]]:
        """A summary's words, and its imported gold labels (unit id -> present)."""
        if pk not in self._summaries:
            text = SystemSummary.objects.values_list("text", flat=True).get(pk=pk)
            gold = GoldPresence.objects.filter(summary_id=pk, origin=GoldPresence.Origin.IMPORTED)
            self._summaries[pk] = (set(re.findall(r"\w+", text.lower())), dict(gold.values_list("unit_id", "present")))
        return self._summaries[pk]

    def arguments(self, predicate: Predicate) -> list[tuple[str, str]]:
        """(question, answer) templates from the predicate's dependents in the parse (one parse at a time: the
        simulated crowd may work in several threads, and a spaCy pipeline is not documented as thread-safe)."""
        if predicate.pk not in self._arguments:
            with _PARSING:
                self._arguments[predicate.pk] = template_questions(predicate.sentence.text, predicate.start, predicate.end, predicate.lemma)
        return self._arguments[predicate.pk]

    def generation(self, hit: HIT, worker: str, careless: bool) -> dict:
        inline = hit.payload.get("inline")
        if inline:
            sentence, lemma = inline["sentence"], inline["sentence"][inline["start"] : inline["end"]]
            wh = ["Who", "What", "When", "Where", "How"]
            arguments = (hit.answer_key or {}).get("arguments", [])
            pairs = [(f"{wh[i % 5]} did someone {lemma}?", answers[0]) for i, answers in enumerate(arguments)]
            if not careless and not self.right(worker, hit.kind) and len(pairs) > 1:
                pairs = pairs[1:]  # leaves one argument uncovered
        else:
            predicate = self.predicate(hit.payload["predicate"])
            sentence = predicate.sentence.text
            kept = set(
                ContentUnit.objects.filter(predicate=predicate, state=ContentUnit.State.KEPT).values_list("question", flat=True)
            )
            pairs = [(q, a) for q, a in self.arguments(predicate) if q not in kept][:5] or [
                (f"What did someone {predicate.lemma}?", predicate.text)
            ]
        if careless:
            # Random words around the verb: past the server's checks (a question word, the verb, words of
            # the sentence confirmed as an exception), so only the verifiers can catch it.
            tokens = [t["text"] for t in sentence_tokens(sentence) if t["text"].isalnum()] or [sentence.split()[0]]
            verb = lemma if inline else predicate.text
            return {"q1": f"What {verb} {self.rng.choice(tokens)}?", "q1_keep": "1", "q1_a1": self.rng.choice(tokens)}
        data = {}
        for i, (question, answer) in enumerate(pairs[:5], start=1):
            data[f"q{i}"] = question
            data[f"q{i}_a1"] = answer
        return data

    def verification(self, hit: HIT, worker: str, careless: bool) -> dict:
        inline = hit.payload.get("inline")
        data = {}
        if inline:
            key = (hit.answer_key or {}).get("verdicts", {})
            items = [(q["id"], key[q["id"]]["valid"], (key[q["id"]]["answers"] or q["answers"] or [""])[0]) for q in inline["questions"]]
        else:
            predicate = self.predicate(hit.payload["predicate"])
            sound_answers = {normalise(a) for _, a in self.arguments(predicate)} | {normalise(predicate.text)}
            items = [
                (u.pk, bool(u.answers) and normalise(u.answers[0]) in sound_answers, u.answers[0] if u.answers else predicate.text)
                for u in ContentUnit.objects.filter(pk__in=hit.payload["units"])
            ]
        for pk, sound, answer in items:
            valid = self.rng.random() < 0.5 if careless else (sound if self.right(worker, hit.kind) else not sound)
            data[f"v_{pk}"] = "valid" if valid else "invalid"
            if valid:
                data[f"v_{pk}_a1"] = answer
        return data

    def presence(self, hit: HIT, worker: str, careless: bool) -> dict:
        inline = hit.payload.get("inline")
        data = {}
        if inline or hit.kind == HIT.Kind.GOLD:
            truths = {str(k): v for k, v in (hit.answer_key or {}).get("labels", {}).items()}
            ids = [p["id"] for p in inline["pairs"]] if inline else hit.payload["units"]
            items = [(pk, truths[str(pk)]) for pk in ids]
        else:
            words, gold = self.summary(hit.payload["summary"])
            items = []
            for unit in ContentUnit.objects.filter(pk__in=hit.payload["units"]):
                truth = gold.get(unit.pk)
                if truth is None:
                    content = [w for w in re.findall(r"\w+", " ".join(unit.answers or [unit.text]).lower()) if w not in _STOPWORDS]
                    truth = bool(content) and all(w in words for w in content)
                items.append((unit.pk, truth))
        # The page names the units by position, in the HIT's order.
        order = [str(p["id"]) for p in hit.payload["inline"]["pairs"]] if hit.payload.get("inline") else [str(u) for u in hit.payload["units"]]
        positional = self.same_answers_seed is not None and not (inline or hit.kind == HIT.Kind.GOLD)
        for pk, truth in items:
            if careless:
                label = self.rng.random() < 0.5
            elif positional:
                label = truth if self.right_by_position(hit, pk, worker) else not truth
            else:
                label = truth if self.right(worker, hit.kind) else not truth
            data[f"p_{order.index(str(pk)) + 1}"] = "1" if label else "0"
        return data

    def right_by_position(self, hit: HIT, unit_id: int, worker: str) -> bool:
        """``same_answers``: whether the next judgment of this unit in this summary is right, from the seed, the
        example, the unit's index, the system and the judgments the unit has so far (names, not database ids,
        so two campaigns on the same data agree)."""
        unit = ContentUnit.objects.select_related("example").get(pk=unit_id)
        summary = SystemSummary.objects.select_related("system").get(pk=hit.payload["summary"])
        k = PresenceJudgment.objects.filter(unit_id=unit_id, summary=summary, excluded=False).count()
        key = f"{self.same_answers_seed}:{unit.example.external_id}:{unit.index}:{summary.system.name}:{k}"
        return random.Random(key).random() < self.accuracies.get(worker, self.accuracy)


def template_questions(sentence: str, start: int, end: int, lemma: str) -> list[tuple[str, str]]:
    """QA-SRL-like template questions for a predicate, from spaCy's dependency parse.

    Each argument dependent of the predicate becomes one question whose
    answer is the dependent's whole phrase (always a substring of the sentence).
    """
    from annotation.text.predicates import english_pipeline

    doc = english_pipeline()(sentence)
    head = next((t for t in doc if t.idx == start), None) or next((t for t in doc if t.idx <= start < t.idx + len(t)), None)
    if head is None:
        return []
    verb = lemma.split()[0] if lemma else head.lemma_
    pairs: list[tuple[str, str]] = []
    for child in head.children:
        span = doc[child.left_edge.i : child.right_edge.i + 1]
        answer = span.text
        if child.dep_ in ("nsubj", "nsubjpass", "csubj", "agent"):
            if child.dep_ == "agent":
                span = doc[child.i + 1 : child.right_edge.i + 1] if child.right_edge.i > child.i else span
                answer = span.text
            who = "Who" if child.ent_type_ == "PERSON" or child.lower_ in _PERSON_WORDS or child.pos_ == "PROPN" else "What"
            if child.dep_ == "nsubjpass":
                pairs.append((f"{who} was {head.text}?", answer))
            elif head.tag_ in ("VBD", "VBZ", "VBP"):
                pairs.append((f"{who} {head.text} something?", answer))
            else:
                pairs.append((f"{who} might {verb} something?", answer))
        elif child.dep_ == "dative" and child.right_edge.i >= child.i:
            pairs.append((f"{_who(child)} did someone {verb} something to?", answer))
        elif child.dep_ in ("dobj", "attr", "oprd", "acomp"):
            pairs.append((f"What did someone {verb}?", answer))
        elif child.dep_ == "prep" and child.right_edge.i > child.i:
            # A two-word preposition ("because of", "due to") goes whole into the question's preposition slot.
            two_words = child.lower_ in _TWO_WORD_PREPOSITIONS and doc[child.i + 1].lower_ in ("of", "to")
            prep = f"{child.lower_} {doc[child.i + 1].lower_}" if two_words else child.lower_
            obj = doc[child.i + 1 + two_words : child.right_edge.i + 1].text
            wh = "When" if any(t.ent_type_ in ("DATE", "TIME") for t in doc[child.i : child.right_edge.i + 1]) else (
                "Where" if child.lower_ in ("in", "at", "near", "inside", "outside", "across") else "What"
            )
            if wh == "What":
                if obj:
                    pairs.append((f"What did someone {verb} {prep}?", obj))
            else:
                pairs.append((f"{wh} did someone {verb} something?", answer))
        elif child.dep_ in ("npadvmod", "advmod") and (child.ent_type_ in ("DATE", "TIME") or child.lower_ in _WHEN_ADVERBS):
            pairs.append((f"When did someone {verb}?", answer))
        elif child.dep_ in ("advmod", "npadvmod") and child.lower_ in _WHERE_ADVERBS:
            pairs.append((f"Where did someone {verb} something?", answer))
        elif child.dep_ == "advmod" and child.lower_.endswith("ly") and child.lower_ not in _NOT_MANNER:
            pairs.append((f"How did someone {verb}?", answer))
        elif child.dep_ == "ccomp" and span.text.strip():
            pairs.append((f"What did someone {verb}?", answer))
        elif child.dep_ == "advcl" and span.text.strip():
            mark = next((t.lower_ for t in child.children if t.dep_ in ("mark", "aux")), "")
            if mark in _WHEN_MARKS:
                pairs.append((f"When did someone {verb}?", answer))
            elif mark in _WHY_MARKS:
                pairs.append((f"Why did someone {verb}?", answer))
            else:
                pairs.append((f"What did someone {verb} to do?", answer))
        elif child.dep_ == "xcomp" and span.text.strip():
            pairs.append((f"What did someone {verb} to do?", answer))
    pairs += _arguments_outside(doc, head, verb, pairs)
    seen, unique = set(), []
    for question, answer in pairs:
        if answer and question not in seen and answer in sentence:
            seen.add(question)
            unique.append((question, answer))
    return unique


def _who(token) -> str:
    return "Who" if token.ent_type_ == "PERSON" or token.lower_ in _PERSON_WORDS or token.pos_ == "PROPN" else "What"


def _arguments_outside(doc, head, verb: str, found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The arguments a careful writer finds beyond the verb's own dependents (as QA-SRL asks for every argument,
    about 2.2 kept per predicate in the paper): the subject it shares with the verb it completes or is joined to
    ("were forced to evacuate", "were left homeless and met"), and the noun a relative clause or a participle
    describes ("the children she cares for", "those sold by Porto")."""
    pairs = []
    has_subject = any(c.dep_ in ("nsubj", "nsubjpass", "csubj") for c in head.children)
    governor = head.head
    if not has_subject:
        # Up through the clauses that share their subject ("forced to evacuate", "after seeing", "and met").
        clause, subject = head, None
        for _ in range(3):
            if clause.dep_ not in ("xcomp", "conj", "advcl", "pcomp", "prep") or clause.head is clause:
                break
            clause = clause.head
            subject = next((c for c in clause.children if c.dep_ in ("nsubj", "nsubjpass")), None)
            if subject is not None:
                break
        if subject is not None:
            pairs.append((f"{_who(subject)} might {verb} something?", doc[subject.left_edge.i : subject.right_edge.i + 1].text))
    if head.dep_ in ("relcl", "acl", "amod") and governor is not head and governor.pos_ in ("NOUN", "PROPN", "PRON"):
        # The noun the verb describes, without the verb's own words ("the children", "arm" of "trailing arm").
        noun = doc[governor.left_edge.i if governor.i < head.i else head.right_edge.i + 1 : governor.i + 1].text
        has_object = any(c.dep_ in ("dobj", "attr") for c in head.children)
        if head.tag_ == "VBN":
            pairs.append((f"{_who(governor)} was {head.text}?", noun))
        elif has_subject and not has_object:
            pairs.append((f"{_who(governor)} did someone {verb}?", noun))
        elif not has_subject:
            pairs.append((f"{_who(governor)} might {verb} something?", noun))
    asked = {q for q, _ in found}
    return [(q, a) for q, a in pairs if q not in asked]
