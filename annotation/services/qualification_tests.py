"""Qualification tests of the QAPyramid protocol: defining them from a file, and grading them.

Qualification tests (4 HITs per task type by default, with known answers)
are graded by these rules:

- **presence**: accuracy of Present / Not present against the key; the
  worker passes when it is *above* the test's threshold (default 0.90).
- **verification**: a question counts as right when the Valid / Invalid
  verdict matches the key and, for a question valid in the key and marked
  valid, one of the worker's answers overlaps a key answer with token F1 of
  at least 0.5 (over content words: function words like "the" do not count).  Pass when the share of right questions is above the
  threshold (default 0.85).
- **generation** (the paper required all 4 items right): an item is right
  when (a) every key argument is covered by one of the worker's answers with
  token F1 of at least 0.5, (b) every question starts with a wh-word, and
  (c) no question repeats content words of the sentence other than the
  predicate (the "someone / something" rule).  All items right: passed.
  Items that fail only on soft grounds, i.e. rule (c), which a rule cannot
  tell from the protocol's exceptions (phrasal verbs, "be" + noun), or an
  argument covered with overlap between 0.3 and 0.5, send the test to a
  researcher's review queue; anything else fails.
"""

from __future__ import annotations

import gc
import re
from contextlib import contextmanager

from django.db import transaction

from annotation.importing.safe_json import first_unstorable
from annotation.models import Campaign
from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from annotation.services.pipeline import ensure_batch, qualification_group, task_type
from annotation.text.questions import WH_WORDS, best_overlap, content_word_violations, words
from annotation.text.search import TextIndex
from annotation.text.spans import normalise
from hits.models import HIT, Assignment, Batch, TaskType
from hits.qualifications import TestGrade

COVERED = 0.5
BORDERLINE = 0.3


def _pass_above(assignments, default: float) -> float:
    values = [a.hit.payload.get("pass_above") for a in assignments if a.hit.payload.get("pass_above") is not None]
    return float(values[0]) if values else default


def grade_presence_test(assignments: list[Assignment]) -> TestGrade:
    right = total = 0
    for assignment in assignments:
        key = (assignment.hit.answer_key or {}).get("labels", {})
        for label in assignment.answers.get("labels", []):
            expected = key.get(str(label["unit"]))
            if expected is None:
                continue
            total += 1
            right += int(bool(label["present"]) == bool(expected))
    accuracy = right / total if total else 0.0
    return TestGrade(accuracy, accuracy > _pass_above(assignments, 0.90), {"right": right, "total": total})


def grade_verification_test(assignments: list[Assignment]) -> TestGrade:
    right = total = 0
    for assignment in assignments:
        key = (assignment.hit.answer_key or {}).get("verdicts", {})
        for verdict in assignment.answers.get("verdicts", []):
            expected = key.get(str(verdict["unit"]))
            if expected is None:
                continue
            total += 1
            ok = bool(verdict["valid"]) == bool(expected["valid"])
            if ok and expected["valid"]:
                ok = best_overlap(verdict.get("answers", []), expected.get("answers", [])) >= COVERED
            right += int(ok)
    share = right / total if total else 0.0
    return TestGrade(share, share > _pass_above(assignments, 0.85), {"right": right, "total": total})


def grade_generation_item(assignment: Assignment) -> dict:
    """Check one generation item; returns {"right", "soft", "problems"}."""
    inline = assignment.hit.payload["inline"]
    sentence = inline["sentence"]
    predicate = sentence[inline["start"] : inline["end"]]
    written = assignment.answers.get("questions", [])
    all_answers = [a for q in written for a in q["answers"]]
    hard, soft = [], []
    for argument in (assignment.hit.answer_key or {}).get("arguments", []):
        overlap = best_overlap(all_answers, argument)
        if overlap < BORDERLINE:
            hard.append(f"no answer covers '{argument[0]}'")
        elif overlap < COVERED:
            soft.append(f"'{argument[0]}' only partly covered ({overlap:.2f})")
    for q in written:
        first = words(q["question"])[:1]
        if not first or first[0] not in WH_WORDS:
            hard.append(f"'{q['question']}' does not start with a question word")
        repeated = content_word_violations(q["question"], sentence, predicate)
        if repeated:
            soft.append(f"'{q['question']}' repeats words of the sentence: {', '.join(repeated)}")
    return {"right": not hard and not soft, "soft": not hard and bool(soft), "problems": hard + soft}


def grade_generation_test(assignments: list[Assignment]) -> TestGrade:
    items = [grade_generation_item(a) for a in assignments]
    n_right = sum(item["right"] for item in items)
    score = n_right / len(items) if items else 0.0
    details = {"items": [item["problems"] for item in items], "right": n_right, "total": len(items)}
    if n_right == len(items):
        return TestGrade(score, True, details)
    if all(item["right"] or item["soft"] for item in items):
        return TestGrade(score, None, details)
    return TestGrade(score, False, details)


# --- feedback after a failed test -------------------------------------------------------------
#
# Only for qualification items (``HIT.Kind.QUALIFICATION``): gold checks hide among regular HITs and are never
# explained, or they would stand out.  Each function gives one line per item, in the test's order.


def _quoted(texts) -> str:
    return ", ".join(f"“{t}”" for t in texts) or "nothing"


def _test_items(assignments: list[Assignment]) -> list[Assignment]:
    return sorted((a for a in assignments if a.hit.kind == HIT.Kind.QUALIFICATION), key=lambda a: a.hit_id)


def generation_feedback(assignments: list[Assignment]) -> list[tuple[bool, str]]:
    """A failed generation test, item by item: (right, what was expected and what the worker wrote)."""
    lines = []
    for assignment in _test_items(assignments):
        inline = assignment.hit.payload["inline"]
        graded = grade_generation_item(assignment)
        arguments = (assignment.hit.answer_key or {}).get("arguments", [])
        written = [f"{q['question']} → {' / '.join(q['answers'])}" for q in assignment.answers.get("questions", [])]
        lines.append((
            bool(graded["right"]),
            f"“{inline['sentence']}”: expected a question with an answer for each of "
            f"{_quoted(' / '.join(a) for a in arguments)}. You wrote: {'; '.join(written) or 'no questions'}."
            + (f" Problems: {'; '.join(graded['problems'])}." if graded["problems"] else ""),
        ))
    return lines


def _against_key(assignment: Assignment, key_name: str, answers_name: str, entries_name: str):
    """(entry shown, its key, the worker's answer or None) for each keyed entry of a test item, in page order."""
    key = (assignment.hit.answer_key or {}).get(key_name, {})
    given = {str(answer["unit"]): answer for answer in assignment.answers.get(answers_name, [])}
    for entry in assignment.hit.payload["inline"].get(entries_name, []):
        expected = key.get(str(entry["id"]))
        if expected is not None:
            yield entry, expected, given.get(str(entry["id"]))


def verification_feedback(assignments: list[Assignment]) -> list[tuple[bool, str]]:
    """A failed verification test, question by question: (right, what was expected and what the worker said)."""
    lines = []
    for assignment in _test_items(assignments):
        for question, expected, yours in _against_key(assignment, "verdicts", "verdicts", "questions"):
            ok = yours is not None and bool(yours["valid"]) == bool(expected["valid"])
            if ok and expected["valid"]:
                ok = best_overlap(yours.get("answers", []), expected.get("answers", [])) >= COVERED
            want = f"valid, answer {_quoted(expected['answers'])}" if expected["valid"] else "invalid"
            got = "no verdict" if yours is None else (f"valid, answer {_quoted(yours.get('answers', []))}" if yours["valid"] else "invalid")
            lines.append((ok, f"“{question['question']}”: expected {want}; you said {got}."))
    return lines


def presence_feedback(assignments: list[Assignment]) -> list[tuple[bool, str]]:
    """A failed presence test, pair by pair: (right, what was expected and what the worker said)."""
    lines = []
    for assignment in _test_items(assignments):
        candidate = assignment.hit.payload["inline"]["candidate"]
        for pair, expected, yours in _against_key(assignment, "labels", "labels", "pairs"):
            text = pair.get("text") or f"{pair.get('question', '')} {pair.get('answer', '')}".strip()
            ok = yours is not None and bool(yours["present"]) == bool(expected)
            said = "nothing" if yours is None else ("present" if yours["present"] else "not present")
            lines.append((ok, f"“{text}” in “{candidate}”: expected {'present' if expected else 'not present'}; you said {said}."))
    return lines


# --- qualification tests from a file ---------------------------------------------------------


class QualificationDefinitionError(ValueError):
    pass


def _shown(text: str, limit: int = 80) -> str:
    """``text`` for a message: a long one cut (a file may hold a sentence of a megabyte)."""
    return text if len(text) <= limit else text[:limit] + "…"


def _span(sentence: str, predicate, where: str, index: TextIndex | None = None) -> tuple[int, int]:
    if isinstance(predicate, dict):
        start, end = predicate.get("start"), predicate.get("end")
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(sentence)):
            raise QualificationDefinitionError(f"{where}: predicate offsets must lie inside the sentence")
        return start, end
    if not isinstance(predicate, str) or not predicate:
        raise QualificationDefinitionError(f"{where}: 'predicate' must be the verb as written in the sentence, or {{start, end}}")
    span = (index or TextIndex(sentence)).find_word(predicate)
    if span is None:
        raise QualificationDefinitionError(f"{where}: predicate '{_shown(predicate)}' is not in the sentence")
    return span


class _Answers:
    """An item's answers that must be words of its sentence (ignoring spacing, as ``is_substring``), checked
    together when the item is read: one pass over the sentence per distinct answer length, not one per answer."""

    def __init__(self, sentence: str):
        self.sentence = sentence
        self.pending: list[tuple[list[str], list[str], str]] = []

    def take(self, answers, where: str) -> list[str]:
        if type(answers) is not list or not answers or any(type(a) is not str for a in answers):
            raise QualificationDefinitionError(f"{where}: answers must be a non-empty list of strings")
        normalised = [" ".join(a.split()) for a in answers]  # normalise(), inline: a file may hold 250,000
        self.pending.append((answers, normalised, where))
        return normalised

    @contextmanager
    def in_order(self):
        """Errors in the file's order: an answer taken before another problem of the item is reported first."""
        try:
            yield
        except QualificationDefinitionError:
            self.check()
            raise

    def check(self) -> None:
        missing = TextIndex(normalise(self.sentence)).absent(norm for _, taken, _ in self.pending for norm in taken)
        for answers, taken, where in self.pending:
            for answer, norm in zip(answers, taken):
                if not norm or norm in missing:
                    raise QualificationDefinitionError(f"{where}: answer '{_shown(answer)}' is not a substring of the sentence")


def _text(obj, key, where) -> str:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise QualificationDefinitionError(f"{where}: '{key}' must be a non-empty string")
    return value


_PLACES = {"questions": "question", "pairs": "pair", "arguments": "argument"}


def _field_words(path: str) -> str:
    """A path inside an item (``questions[1].answers[0]``) as the messages name places: ", question 2: 'answers'"."""
    place = re.match(r"(questions|pairs|arguments)\[(\d+)\]\.?", path)
    words = f", {_PLACES[place[1]]} {int(place[2]) + 1}" if place else ""
    field = re.sub(r"\[\d+\]", "", path[place.end():] if place else path)
    return words + (f": '{field}'" if field else ":")


def _check_shape(definition: dict) -> None:
    """Sections are lists of objects, and so are an item's questions and pairs (the checks of each
    item below may then read them as such), and every text can be stored."""
    for section, items in definition.items():
        for i, item in enumerate(items if isinstance(items, list) else [items], start=1):
            found = first_unstorable(item)
            if found:
                raise QualificationDefinitionError(f"{section} item {i}{_field_words(found[0])} {found[1]}")

    def objects(value, where: str) -> list:
        if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
            raise QualificationDefinitionError(f"{where} must be a list of objects")
        return value

    for section in ("generation", "verification", "presence", "presence_gold"):
        for i, item in enumerate(objects(definition.get(section, []), f"'{section}'"), start=1):
            for key in ("questions", "pairs"):
                if item.get(key) is not None:
                    objects(item[key], f"{section} item {i}: '{key}'")
            if not isinstance(item.get("reference", ""), str):
                raise QualificationDefinitionError(f"{section} item {i}: 'reference' must be a string")


SECTIONS = ("generation", "verification", "presence", "presence_gold")


def build_qualification_hits(campaign: Campaign, definition: dict) -> list[HIT]:
    """Turn a qualification definition (see docs/guides/local-workers.md) into unsaved HITs; raises on any invalid item."""
    if not isinstance(definition, dict):
        raise QualificationDefinitionError("the definition must be a JSON object with generation/verification/presence lists")
    unknown = set(definition) - set(SECTIONS)
    if unknown:
        raise QualificationDefinitionError(f"unknown section(s): {', '.join(sorted(unknown))}")
    _check_shape(definition)
    # A file of 250,000 answers makes as many small lists: the cyclic garbage collector, run every few hundred
    # of them over everything alive, would take most of the time.  Nothing made here is a cycle.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return [
            build_item_hit(campaign, section, item, f"{section} item {i}")
            for section in SECTIONS
            for i, item in enumerate(definition.get(section, []), start=1)
        ]
    finally:
        if collecting:
            gc.enable()


def build_item_hit(campaign: Campaign, section: str, item: dict, where: str) -> HIT:
    """One item of a definition's ``section`` as an unsaved HIT, with every check of the file import;
    ``where`` starts each error message (e.g. "generation item 2")."""
    common = dict(max_assignments=32767, reward=0)
    if section == "generation":
        sentence = _text(item, "sentence", where)
        start, end = _span(sentence, item.get("predicate"), where)
        arguments = item.get("arguments")
        if not isinstance(arguments, list) or not arguments:
            raise QualificationDefinitionError(f"{where}: 'arguments' must list the key answers of each argument")
        answers = _Answers(sentence)
        with answers.in_order():
            key = [answers.take(a, f"{where}, argument {j}") for j, a in enumerate(arguments, start=1)]
        answers.check()
        return HIT(task_type=task_type(GENERATION), kind=HIT.Kind.QUALIFICATION, payload={"inline": {"sentence": sentence, "start": start, "end": end}}, answer_key={"arguments": key}, **common)
    if section == "verification":
        sentence = _text(item, "sentence", where)
        start, end = _span(sentence, item.get("predicate"), where)
        questions, verdicts, answers = [], {}, _Answers(sentence)
        with answers.in_order():
            for j, q in enumerate(item.get("questions") or [], start=1):
                qwhere = f"{where}, question {j}"
                question = _text(q, "question", qwhere)
                if not isinstance(q.get("valid"), bool):
                    raise QualificationDefinitionError(f"{qwhere}: 'valid' must be true or false")
                shown = answers.take(q.get("answers") or [], qwhere)
                key_answers = answers.take(q.get("key_answers") or shown, qwhere) if q["valid"] else []
                questions.append({"id": f"k{j}", "question": question, "answers": shown})
                verdicts[f"k{j}"] = {"valid": q["valid"], "answers": key_answers}
        if not questions:
            raise QualificationDefinitionError(f"{where}: 'questions' must not be empty")
        answers.check()
        return HIT(task_type=task_type(VERIFICATION), kind=HIT.Kind.QUALIFICATION, payload={"inline": {"sentence": sentence, "start": start, "end": end, "questions": questions}, "pass_above": campaign.verifier_agreement_threshold}, answer_key={"verdicts": verdicts}, **common)
    if section not in ("presence", "presence_gold"):
        raise QualificationDefinitionError(f"unknown section: {section}")
    kind = HIT.Kind.GOLD if section == "presence_gold" else HIT.Kind.QUALIFICATION
    candidate = _text(item, "candidate", where)
    reference = item.get("reference", "")
    inline = {"candidate": candidate, "reference": reference, "pairs": []}
    if item.get("predicate"):
        start, end = _span(reference, item["predicate"], where)
        inline["predicate"] = {"start": start, "end": end}
    labels = {}
    for j, pair in enumerate(item.get("pairs") or [], start=1):
        pwhere = f"{where}, pair {j}"
        if not isinstance(pair.get("present"), bool):
            raise QualificationDefinitionError(f"{pwhere}: 'present' must be true or false")
        if pair.get("question"):
            entry = {"id": f"g{j}", "question": _text(pair, "question", pwhere), "answer": _text(pair, "answer", pwhere)}
        else:
            entry = {"id": f"g{j}", "text": _text(pair, "text", pwhere)}
        inline["pairs"].append(entry)
        labels[f"g{j}"] = pair["present"]
    if not labels:
        raise QualificationDefinitionError(f"{where}: 'pairs' must not be empty")
    payload = {"inline": inline}
    if kind == HIT.Kind.QUALIFICATION:
        payload["pass_above"] = campaign.presence_accuracy_threshold
    # Gold items pay what the presence HITs they hide among pay: a $0.00 reward would give them away.
    fields = {**common, "reward": campaign.reward_presence} if kind == HIT.Kind.GOLD else common
    return HIT(task_type=task_type(PRESENCE), kind=kind, payload=payload, answer_key={"labels": labels}, **fields)


def _require_tests(campaign: Campaign, batch: Batch, hits: list[HIT]) -> None:
    """The task types the ``hits`` test now require qualification, with the campaign's retake rules."""
    tested = {h.task_type_id for h in hits if h.kind == HIT.Kind.QUALIFICATION}
    batch.qualification_cooldown_hours = campaign.qualification_cooldown_hours
    batch.qualification_max_attempts = campaign.qualification_max_attempts
    batch.save(update_fields=["qualification_cooldown_hours", "qualification_max_attempts"])
    # MTurk checks one qualification type per task type before our page is shown (hits.mturk.publishing).
    TaskType.objects.filter(pk__in=tested).update(
        requires_qualification=True,
        qualification_cooldown_hours=campaign.qualification_cooldown_hours,
        qualification_max_attempts=campaign.qualification_max_attempts,
    )


@transaction.atomic
def define_qualifications(campaign: Campaign, definition: dict) -> dict[str, int]:
    """Replace the campaign's qualification tests and gold items with those of ``definition``.

    The task types with a test then require qualification.  Returns the
    number of HITs created per section.
    """
    hits = build_qualification_hits(campaign, definition)
    batch = ensure_batch(campaign)
    HIT.objects.filter(batch=batch, kind__in=[HIT.Kind.QUALIFICATION, HIT.Kind.GOLD], n_taken=0).delete()
    HIT.objects.filter(batch=batch, kind__in=[HIT.Kind.QUALIFICATION, HIT.Kind.GOLD]).update(state=HIT.State.CANCELLED)
    for hit in hits:
        hit.batch = batch
    HIT.objects.bulk_create(hits)
    counts: dict[str, int] = {}
    for hit in hits:
        key = f"{hit.task_type.slug}{'_gold' if hit.kind == HIT.Kind.GOLD else ''}"
        counts[key] = counts.get(key, 0) + 1
    _require_tests(campaign, batch, hits)
    return counts


# --- one item at a time (the qualification tests page's forms) ----------------------------------------


def section_of(hit: HIT) -> str:
    """The definition section a qualification or gold HIT belongs to."""
    return "presence_gold" if hit.kind == HIT.Kind.GOLD else hit.task_type.slug


def item_definition(hit: HIT) -> dict:
    """The definition item a qualification or gold HIT was built from (the inverse of ``build_item_hit``)."""
    inline, key = hit.payload.get("inline", {}), hit.answer_key or {}
    section = section_of(hit)
    if section == "generation":
        return {"sentence": inline["sentence"], "predicate": {"start": inline["start"], "end": inline["end"]},
                "arguments": key.get("arguments", [])}
    if section == "verification":
        verdicts = key.get("verdicts", {})
        questions = []
        for q in inline.get("questions", []):
            verdict = verdicts.get(q["id"], {})
            entry = {"question": q["question"], "answers": q["answers"], "valid": bool(verdict.get("valid"))}
            if verdict.get("valid") and verdict.get("answers") != q["answers"]:
                entry["key_answers"] = verdict.get("answers", [])
            questions.append(entry)
        return {"sentence": inline["sentence"], "predicate": {"start": inline["start"], "end": inline["end"]}, "questions": questions}
    labels = key.get("labels", {})
    item = {"candidate": inline["candidate"], "reference": inline.get("reference", ""), "pairs": []}
    if inline.get("predicate"):
        item["predicate"] = dict(inline["predicate"])
    for pair in inline.get("pairs", []):
        entry = {k: v for k, v in pair.items() if k != "id"}
        entry["present"] = bool(labels.get(pair["id"]))
        item["pairs"].append(entry)
    return item


def campaign_test_items(campaign: Campaign):
    """The campaign's qualification and gold HITs in force (not cancelled), by section then id."""
    if not campaign.batch_id:
        return HIT.objects.none()
    return (
        HIT.objects.filter(batch_id=campaign.batch_id, kind__in=[HIT.Kind.QUALIFICATION, HIT.Kind.GOLD])
        .exclude(state=HIT.State.CANCELLED)
        .select_related("task_type")
        .order_by("kind", "task_type__position", "pk")
    )


@transaction.atomic
def save_qualification_item(campaign: Campaign, section: str, item: dict, replacing: HIT | None = None) -> HIT:
    """Add one item to the campaign's tests (or gold items), or change ``replacing``, with the checks of the
    file import (``build_item_hit``); raises ``QualificationDefinitionError`` and changes nothing when the
    item is wrong.  An item no worker has taken is changed in place; one already taken is withdrawn
    (cancelled, its answers kept) and the new version added, as a new definition file does."""
    _check_shape({section: [item]})
    hit = build_item_hit(campaign, section, item, "this item")
    batch = ensure_batch(campaign)
    if replacing is not None:
        replacing = HIT.objects.select_for_update().get(pk=replacing.pk, batch=batch)
        if section_of(replacing) != section:
            raise QualificationDefinitionError("this item belongs to another task type")
        if replacing.n_taken == 0 and replacing.state != HIT.State.CANCELLED:
            hit.pk, hit.created_at, hit.state = replacing.pk, replacing.created_at, replacing.state
        else:
            HIT.objects.filter(pk=replacing.pk).update(state=HIT.State.CANCELLED)
    hit.batch = batch
    hit.save()
    _require_tests(campaign, batch, [hit])
    return hit


@transaction.atomic
def accept_sibling_qualifications(campaign: Campaign, accept: bool) -> None:
    """Opt the campaign in (or out) of accepting workers qualified in its owner's other campaigns of the same
    unit type: such a worker skips this campaign's test for that task type.  Revocations stay per campaign."""
    batch = ensure_batch(campaign)
    Batch.objects.filter(pk=batch.pk).update(qualification_group=qualification_group(campaign), accepts_group_qualifications=accept)
    batch.qualification_group, batch.accepts_group_qualifications = qualification_group(campaign), accept
