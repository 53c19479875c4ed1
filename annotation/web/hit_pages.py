"""The three QAPyramid task types as ``hits`` handlers: page context, validation, reaction.

``annotation.apps`` registers them with ``hits`` at start-up.  What a HIT shows is read by
``annotation.selectors.hit_items``; the rules a question or answer must pass are
``annotation.text.questions``; a submission goes on to ``annotation.services.pipeline`` (regular HITs)
or ``annotation.services.quality`` (gold checks), and a test is graded by
``annotation.services.qualification_tests``.

Form fields (the same on local pages and inside MTurk's frame):

- generation: ``q1``..``q5`` questions, ``q{i}_a1``..``q{i}_a3`` their answers,
  ``feedback`` (optional);
- verification: ``v_<unit>`` = ``valid`` | ``invalid`` per question, and
  ``v_<unit>_a1``..``a3`` the answers of a valid question;
- presence: ``p_<k>`` = ``1`` (present) | ``0`` (not present) for the k-th unit shown (1, 2, ...):
  the same opaque names for a regular HIT's units and a gold item's pairs, so a page's
  fields never tell a gold check from real work.

Qualification and gold HITs carry their whole item in ``payload["inline"]``
(a sentence, its predicate span, questions or pairs with string ids), so
they need no rows of a campaign; the page looks the same either way.

Validation is strict on what a rule can check and lenient on what it cannot:
answers must be substrings of the sentence (ignoring extra spaces), questions
must start with a question word, contain the verb (any inflection) and end
with "?", every written question needs an answer, and lengths are bounded.
A question repeating content words of the sentence is only flagged: the
rule cannot tell its exceptions (phrasal verbs, "be" + noun) apart, so the
writer confirms it with ``q{i}_keep``.  Every error is attached to its field,
and the page is shown again with everything the worker typed.
"""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import mark_safe

from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from annotation.selectors.hit_items import kept_pairs, presence_item, sentence_item, shown_units
from annotation.services import pilot, pipeline, qualification_tests
from annotation.text.questions import (
    MAX_FEEDBACK_CHARS,
    check_answer,
    check_question,
    content_word_violations,
    mentions_verb,
    starts_with_question_word,
)
from annotation.text.spans import clean_text, normalise, sentence_tokens
from hits.handlers import AnswerErrors
from hits.models import HIT


QUESTION_SLOTS = [
    ("Wh-word", "Who, What, When, Where, Why, How, How much"),
    ("Auxiliary", "did, does, is, was, has, will, might, ..."),
    ("Subject", "someone, something (or nothing)"),
    ("Verb", "the highlighted verb, in any form"),
    ("Object", "someone, something (or nothing)"),
    ("Preposition", "to, from, on, with, by, ... (or nothing)"),
    ("Misc", "someone, something, do something (or nothing)"),
]


def highlighted(text: str, start: int, end: int) -> str:
    """The sentence as HTML with the predicate's span marked (everything else escaped)."""
    return mark_safe(
        f'{escape(text[:start])}<mark class="predicate">{escape(text[start:end])}</mark>{escape(text[end:])}'
    )


def task_rules(hit) -> dict:
    """The campaign's numbers the generation and verification pages tell workers (defaults outside a campaign)."""
    from annotation.models import Campaign

    # A worker view made before launch names its campaign (``annotation.services.pilot.worker_view_hit``).
    if hit.payload.get("campaign"):
        campaign = Campaign.objects.filter(pk=hit.payload["campaign"]).first()
    else:
        campaign = Campaign.objects.filter(batch_id=hit.batch_id).first() if hit.batch_id else None
    source = campaign or Campaign()
    return {
        "max_questions": source.max_questions_per_predicate,
        "writer_valid_percent": f"{source.writer_valid_threshold * 100:g}",
        "writer_min_questions": source.writer_min_questions_per_predicate,
        "verifier_agreement_percent": f"{source.verifier_agreement_threshold * 100:g}",
        "grace_period": source.grace_period_items,
    }


def question_problems(question: str, item) -> list[str]:
    """The refusals of the generation rules a server can check: a question word first, the verb in the question."""
    problems = []
    if not starts_with_question_word(question):
        problems.append(
            "Start the question with a question word (Who, What, When, Where, Why, How, Which, Whose, Whom), "
            "e.g. “Who blamed someone?”."
        )
    if not mentions_verb(question, item.predicate_text, item.lemma):
        problems.append(f"Use the highlighted verb “{item.predicate_text}” in the question (in any form).")
    return problems


def content_word_warning(words: list[str]) -> str:
    quoted = ", ".join(f"“{w}”" for w in words)
    return (
        f"This question repeats {quoted} from the sentence. Replace {'it' if len(words) == 1 else 'them'} with someone/something, "
        "or, if this is an exception (part of a phrasal verb, the noun after “be”), tick “Keep as written” and submit again."
    )


def _is_tracked(hit) -> bool:
    """Regular HITs feed the pipeline; gold and qualification HITs only measure the worker, and a pilot's HITs
    only measure times (``annotation.services.pilot``)."""
    return hit.kind == HIT.Kind.REGULAR and not hit.payload.get("pilot")


_IRREGULAR_THIRD_PERSON = {"be": "is", "have": "has", "do": "does", "go": "goes"}


def third_person(lemma: str) -> str:
    """'see' -> 'sees', 'watch' -> 'watches', 'carry' -> 'carries', 'give up' -> 'gives up'."""
    verb, _, rest = lemma.strip().partition(" ")
    verb = verb.lower()
    if verb in _IRREGULAR_THIRD_PERSON:
        inflected = _IRREGULAR_THIRD_PERSON[verb]
    elif verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        inflected = verb + "es"
    elif len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        inflected = verb[:-1] + "ies"
    else:
        inflected = verb + "s"
    return f"{inflected} {rest}".strip()


def example_question(predicate) -> str:
    """A grammatical example question for the generation page's first box, whatever the verb's form."""
    lemma = (getattr(predicate, "lemma", "") or "").strip()
    if not lemma or not lemma.replace(" ", "").replace("-", "").isalpha():
        return "e.g. Who did something?"
    return f"e.g. Who {third_person(lemma)} something?"


class GenerationHandler:
    template_name = "annotation/hits/generation.html"
    instructions_key = "generation"
    # Minutes a HIT takes by the protocol ("about 1-2 minutes per HIT", the upper figure): the typical time before any is measured.
    protocol_minutes = 2

    def page_context(self, hit, assignment, data):
        item = sentence_item(hit)
        data = data or {}
        rows = []
        for i in range(1, item.max_questions + 1):
            value = data.get(f"q{i}", "")
            rows.append(
                {
                    "n": i,
                    "name": f"q{i}",
                    "value": value,
                    # Shown with the "Keep as written" box once a submission flagged the question.
                    "content_words": content_word_violations(value, item.sentence, item.predicate_text) if value else [],
                    "keep": data.get(f"q{i}_keep") == "1",
                    "answers": [
                        {"name": f"q{i}_a{j}", "value": data.get(f"q{i}_a{j}", "")} for j in range(1, item.max_answers + 1)
                    ],
                }
            )
        return {
            "sentence": item.sentence,
            "tokens": sentence_tokens(item.sentence, (item.start, item.end)),
            "predicate_text": item.predicate_text,
            "example_question": example_question(item.predicate),
            "rows": rows,
            "kept": kept_pairs(item.predicate),
            "slots": QUESTION_SLOTS,
            "rules": task_rules(hit),
            "feedback": data.get("feedback", ""),
        }

    def clean(self, hit, data):
        item = sentence_item(hit)
        sentence = item.sentence
        errors: dict[str, list[str]] = {}
        questions, seen = [], {}
        for i in range(1, item.max_questions + 1):
            question = clean_text(data.get(f"q{i}"))
            answers = []
            for j in range(1, item.max_answers + 1):
                field = f"q{i}_a{j}"
                answer = normalise(clean_text(data.get(field)))
                if not answer:
                    continue
                if not question:
                    errors.setdefault(field, []).append("Write the question for this answer, or clear the answer.")
                    continue
                problems = check_answer(answer, sentence)
                if problems:
                    errors.setdefault(field, []).extend(problems)
                elif answer in answers:
                    errors.setdefault(field, []).append("This answer is already given for this question.")
                else:
                    answers.append(answer)
            if not question:
                continue
            problems = check_question(question) + question_problems(question, item)
            repeated = content_word_violations(question, sentence, item.predicate_text)
            if repeated and data.get(f"q{i}_keep") != "1":
                problems.append(content_word_warning(repeated))
            key = normalise(question).lower()
            if key in seen:
                problems.append(f"Same as question {seen[key]}: write each question once.")
            seen.setdefault(key, i)
            if problems:
                errors.setdefault(f"q{i}", []).extend(problems)
            if not answers and not any(k.startswith(f"q{i}_a") for k in errors):
                errors.setdefault(f"q{i}_a1", []).append("Give at least one answer, selected from the sentence.")
            questions.append({"question": normalise(question), "answers": answers})
        if not questions and not errors:
            errors["__all__"] = ["Write at least one question about the highlighted verb."]
        feedback = clean_text(data.get("feedback"))
        if len(feedback) > MAX_FEEDBACK_CHARS:
            errors.setdefault("feedback", []).append(f"Keep feedback under {MAX_FEEDBACK_CHARS} characters.")
        if errors:
            raise AnswerErrors(errors)
        return {"questions": questions, "feedback": feedback}

    def on_submitted(self, assignment):
        if _is_tracked(assignment.hit):
            pipeline.record_generation(assignment)
        elif assignment.hit.payload.get("pilot"):
            pilot.follow_generation(assignment)

    def grade_qualification(self, assignments):
        return qualification_tests.grade_generation_test(assignments)

    def test_feedback(self, assignments):
        return qualification_tests.generation_feedback(assignments)


class VerificationHandler:
    template_name = "annotation/hits/verification.html"
    instructions_key = "verification"
    # Minutes a HIT takes by the protocol ("under a minute", the upper figure): the typical time before any is measured.
    protocol_minutes = 1

    def page_context(self, hit, assignment, data):
        item = sentence_item(hit)
        data = data or {}
        items = []
        for unit in shown_units(hit):
            name = f"v_{unit.pk}"
            items.append(
                {
                    "unit": unit,
                    "name": name,
                    "verdict": data.get(name, ""),
                    "answers": [
                        {"name": f"{name}_a{j}", "value": data.get(f"{name}_a{j}", "")} for j in range(1, item.max_answers + 1)
                    ],
                }
            )
        return {
            "sentence": item.sentence,
            "tokens": sentence_tokens(item.sentence, (item.start, item.end)),
            "predicate_text": item.predicate_text,
            "items": items,
            "slots": QUESTION_SLOTS,
            "rules": task_rules(hit),
            "feedback": data.get("feedback", ""),
        }

    def clean(self, hit, data):
        item = sentence_item(hit)
        errors: dict[str, list[str]] = {}
        verdicts = []
        for unit in shown_units(hit):
            name = f"v_{unit.pk}"
            verdict = data.get(name, "")
            if verdict not in ("valid", "invalid"):
                errors.setdefault(name, []).append("Mark this question Valid or Invalid.")
                continue
            answers = []
            if verdict == "valid":
                for j in range(1, item.max_answers + 1):
                    field = f"{name}_a{j}"
                    answer = normalise(clean_text(data.get(field)))
                    if not answer:
                        continue
                    problems = check_answer(answer, item.sentence)
                    if problems:
                        errors.setdefault(field, []).extend(problems)
                    elif answer not in answers:
                        answers.append(answer)
                if not answers and not any(k.startswith(f"{name}_a") for k in errors):
                    errors.setdefault(f"{name}_a1", []).append("Select the answer of a valid question in the sentence.")
            verdicts.append({"unit": unit.pk, "valid": verdict == "valid", "answers": answers})
        feedback = clean_text(data.get("feedback"))[:MAX_FEEDBACK_CHARS]
        if errors:
            raise AnswerErrors(errors)
        return {"verdicts": verdicts, "feedback": feedback}

    def on_submitted(self, assignment):
        if _is_tracked(assignment.hit):
            pipeline.record_verification(assignment)

    def grade_qualification(self, assignments):
        return qualification_tests.grade_verification_test(assignments)

    def test_feedback(self, assignments):
        return qualification_tests.verification_feedback(assignments)


def presence_field(k: int) -> str:
    """The form field of the k-th unit (from 1) of a presence HIT, regular or gold alike."""
    return f"p_{k}"


class PresenceHandler:
    template_name = "annotation/hits/presence.html"
    instructions_key = "presence"
    # Minutes a HIT takes by the protocol ("under 2 minutes", the upper figure): the typical time before any is measured.
    protocol_minutes = 2

    def page_context(self, hit, assignment, data):
        item = presence_item(hit)
        data = data or {}
        items = [
            {"unit": u, "name": presence_field(k), "value": data.get(presence_field(k), "")} for k, u in enumerate(item.units, start=1)
        ]
        reference_html = [
            highlighted(line.text, *line.highlight) if line.highlight else escape(line.text) for line in item.reference
        ]
        return {
            "candidate": item.candidate,
            "reference_sentences": reference_html,
            "predicate_text": item.predicate_text,
            "items": items,
            "is_scu": item.predicate_text is None,
            "feedback": data.get("feedback", ""),
        }

    def clean(self, hit, data):
        inline = hit.payload.get("inline")
        # The HIT's payload names its units: no need to load texts to check the answers.
        unit_ids = [str(p["id"]) for p in inline["pairs"]] if inline else hit.payload["units"]
        errors: dict[str, list[str]] = {}
        labels = []
        for k, pk in enumerate(unit_ids, start=1):
            value = data.get(presence_field(k), "")
            if value not in ("1", "0"):
                errors.setdefault(presence_field(k), []).append("Choose Present or Not present.")
                continue
            labels.append({"unit": pk, "present": value == "1"})
        feedback = clean_text(data.get("feedback"))[:MAX_FEEDBACK_CHARS]
        if errors:
            raise AnswerErrors(errors)
        return {"labels": labels, "feedback": feedback}

    def on_submitted(self, assignment):
        if _is_tracked(assignment.hit):
            pipeline.record_presence(assignment)
        # A gold HIT's submission runs no cross-check: its result counts only from the worker's next release
        # of gold figures (annotation.services.quality.apply_cross_checks).

    def grade_qualification(self, assignments):
        return qualification_tests.grade_presence_test(assignments)

    def test_feedback(self, assignments):
        return qualification_tests.presence_feedback(assignments)


HANDLERS = {
    GENERATION: GenerationHandler(),
    VERIFICATION: VerificationHandler(),
    PRESENCE: PresenceHandler(),
}
