"""The three QAPyramid task types as ``hits`` handlers: page context, validation, reaction.

Form fields (the same on local pages and inside MTurk's frame):

- generation: ``q1``..``q5`` questions, ``q{i}_a1``..``q{i}_a3`` their answers,
  ``feedback`` (optional);
- verification: ``v_<unit>`` = ``valid`` | ``invalid`` per question, and
  ``v_<unit>_a1``..``a3`` the answers of a valid question;
- presence: ``p_<unit>`` = ``1`` (present) | ``0`` (not present) per unit.

Qualification and gold HITs carry their whole item in ``payload["inline"]``
(a sentence, its predicate span, questions or pairs with string ids), so
they need no rows of a campaign; the page looks the same either way.

Validation is strict on what a rule can check and lenient on what it cannot:
answers must be substrings of the sentence (ignoring extra spaces), questions
must end with "?", every written question needs an answer, and lengths are
bounded.  Every error is attached to its field, and the page is shown again
with everything the worker typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import mark_safe

from annotation.models import Campaign, ContentUnit, Predicate, ReferenceSentence, SystemSummary
from annotation.services import pipeline, quality
from hits import sql
from hits.handlers import AnswerErrors
from hits.models import HIT

MAX_QUESTION_CHARS = 200
MAX_ANSWER_CHARS = 300
MAX_FEEDBACK_CHARS = 2000
_TOKEN = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]", re.UNICODE)
_SPACES = re.compile(r"\s+")

QUESTION_SLOTS = [
    ("Wh-word", "Who, What, When, Where, Why, How, How much"),
    ("Auxiliary", "did, does, is, was, has, will, might, ..."),
    ("Subject", "someone, something (or nothing)"),
    ("Verb", "the highlighted verb, in any form"),
    ("Object", "someone, something (or nothing)"),
    ("Preposition", "to, from, on, with, by, ... (or nothing)"),
    ("Misc", "someone, something, do something (or nothing)"),
]


def normalise(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def is_substring(answer: str, sentence: str) -> bool:
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


def highlighted(text: str, start: int, end: int) -> str:
    return mark_safe(
        f'{escape(text[:start])}<mark class="predicate">{escape(text[start:end])}</mark>{escape(text[end:])}'
    )


def _clean_text(value: str | None) -> str:
    # Control characters other than ordinary whitespace never belong in an answer.
    return "".join(ch for ch in (value or "") if ch.isprintable() or ch in " \t").strip()


def _check_question(question: str) -> list[str]:
    problems = []
    if len(question) > MAX_QUESTION_CHARS:
        problems.append(f"Keep the question under {MAX_QUESTION_CHARS} characters.")
    if not question.endswith("?"):
        problems.append('A question ends with "?".')
    if len(question.rstrip("?").split()) < 2:
        problems.append("Write a whole question, e.g. “Who blamed someone?”.")
    return problems


def _check_answer(answer: str, sentence: str) -> list[str]:
    if len(answer) > MAX_ANSWER_CHARS:
        return [f"Keep the answer under {MAX_ANSWER_CHARS} characters."]
    if not is_substring(answer, sentence):
        return ["An answer must be words copied from the sentence: select them in the sentence above."]
    return []



@dataclass
class ShownUnit:
    """A question or unit as a HIT page shows it (a database row or an inline item)."""

    pk: object
    question: str
    answers: list
    text: str


@dataclass
class SentenceItem:
    sentence: str
    start: int
    end: int
    predicate_text: str
    max_questions: int
    max_answers: int
    predicate: Predicate | None = None


def sentence_item(hit) -> SentenceItem:
    """The sentence and predicate a generation or verification HIT is about."""
    inline = hit.payload.get("inline")
    if inline:
        sentence, start, end = inline["sentence"], inline["start"], inline["end"]
        return SentenceItem(sentence, start, end, sentence[start:end], inline.get("max_questions", 5), inline.get("max_answers", 3))
    predicate = Predicate.objects.select_related("sentence__example__campaign").get(pk=hit.payload["predicate"])
    campaign: Campaign = predicate.sentence.example.campaign
    return SentenceItem(
        predicate.sentence.text,
        predicate.start,
        predicate.end,
        predicate.text,
        campaign.max_questions_per_predicate,
        campaign.max_answers_per_question,
        predicate,
    )


def _shown_units(hit) -> list[ShownUnit]:
    inline = hit.payload.get("inline")
    if inline:
        return [
            ShownUnit(str(q["id"]), q.get("question", ""), list(q.get("answers", [])), q.get("text") or f"{q.get('question', '')} {' / '.join(q.get('answers', []))}")
            for q in inline.get("questions", [])
        ]
    rows = {u.pk: u for u in ContentUnit.objects.filter(pk__in=hit.payload["units"])}
    return [ShownUnit(pk, rows[pk].question, rows[pk].answers, rows[pk].text) for pk in hit.payload["units"] if pk in rows]


def _is_tracked(hit) -> bool:
    """Regular HITs feed the pipeline; gold and qualification HITs only measure the worker."""
    return hit.kind == HIT.Kind.REGULAR


class GenerationHandler:
    template_name = "annotation/hits/generation.html"
    instructions_key = "generation"

    def page_context(self, hit, assignment, data):
        item = sentence_item(hit)
        data = data or {}
        rows = []
        for i in range(1, item.max_questions + 1):
            rows.append(
                {
                    "n": i,
                    "name": f"q{i}",
                    "value": data.get(f"q{i}", ""),
                    "answers": [
                        {"name": f"q{i}_a{j}", "value": data.get(f"q{i}_a{j}", "")} for j in range(1, item.max_answers + 1)
                    ],
                }
            )
        kept = []
        if item.predicate is not None:
            kept = ContentUnit.objects.filter(predicate=item.predicate, state=ContentUnit.State.KEPT).order_by("index")
        return {
            "sentence": item.sentence,
            "tokens": sentence_tokens(item.sentence, (item.start, item.end)),
            "predicate_text": item.predicate_text,
            "rows": rows,
            "kept": kept,
            "slots": QUESTION_SLOTS,
            "feedback": data.get("feedback", ""),
        }

    def clean(self, hit, data):
        item = sentence_item(hit)
        sentence = item.sentence
        errors: dict[str, list[str]] = {}
        questions, seen = [], {}
        for i in range(1, item.max_questions + 1):
            question = _clean_text(data.get(f"q{i}"))
            answers = []
            for j in range(1, item.max_answers + 1):
                field = f"q{i}_a{j}"
                answer = normalise(_clean_text(data.get(field)))
                if not answer:
                    continue
                if not question:
                    errors.setdefault(field, []).append("Write the question for this answer, or clear the answer.")
                    continue
                problems = _check_answer(answer, sentence)
                if problems:
                    errors.setdefault(field, []).extend(problems)
                elif answer in answers:
                    errors.setdefault(field, []).append("This answer is already given for this question.")
                else:
                    answers.append(answer)
            if not question:
                continue
            problems = _check_question(question)
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
        feedback = _clean_text(data.get("feedback"))
        if len(feedback) > MAX_FEEDBACK_CHARS:
            errors.setdefault("feedback", []).append(f"Keep feedback under {MAX_FEEDBACK_CHARS} characters.")
        if errors:
            raise AnswerErrors(errors)
        return {"questions": questions, "feedback": feedback}

    def on_submitted(self, assignment):
        if _is_tracked(assignment.hit):
            pipeline.record_generation(assignment)

    def grade_qualification(self, assignments):
        return quality.grade_generation_test(assignments)


class VerificationHandler:
    template_name = "annotation/hits/verification.html"
    instructions_key = "verification"

    def page_context(self, hit, assignment, data):
        item = sentence_item(hit)
        data = data or {}
        items = []
        for unit in _shown_units(hit):
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
            "feedback": data.get("feedback", ""),
        }

    def clean(self, hit, data):
        item = sentence_item(hit)
        errors: dict[str, list[str]] = {}
        verdicts = []
        for unit in _shown_units(hit):
            name = f"v_{unit.pk}"
            verdict = data.get(name, "")
            if verdict not in ("valid", "invalid"):
                errors.setdefault(name, []).append("Mark this question Valid or Invalid.")
                continue
            answers = []
            if verdict == "valid":
                for j in range(1, item.max_answers + 1):
                    field = f"{name}_a{j}"
                    answer = normalise(_clean_text(data.get(field)))
                    if not answer:
                        continue
                    problems = _check_answer(answer, item.sentence)
                    if problems:
                        errors.setdefault(field, []).extend(problems)
                    elif answer not in answers:
                        answers.append(answer)
                if not answers and not any(k.startswith(f"{name}_a") for k in errors):
                    errors.setdefault(f"{name}_a1", []).append("Select the answer of a valid question in the sentence.")
            verdicts.append({"unit": unit.pk, "valid": verdict == "valid", "answers": answers})
        feedback = _clean_text(data.get("feedback"))[:MAX_FEEDBACK_CHARS]
        if errors:
            raise AnswerErrors(errors)
        return {"verdicts": verdicts, "feedback": feedback}

    def on_submitted(self, assignment):
        if _is_tracked(assignment.hit):
            pipeline.record_verification(assignment)

    def grade_qualification(self, assignments):
        return quality.grade_verification_test(assignments)


class PresenceHandler:
    template_name = "annotation/hits/presence.html"
    instructions_key = "presence"

    def _view(self, hit):
        """(candidate text, reference sentences as HTML, predicate text or None, units)."""
        inline = hit.payload.get("inline")
        if inline:
            reference = inline.get("reference", "")
            span = inline.get("predicate")
            html = [highlighted(reference, span["start"], span["end"]) if span else escape(reference)]
            pairs = [
                ShownUnit(str(p["id"]), p.get("question", ""), [p["answer"]] if p.get("answer") else [], p.get("text") or f"{p.get('question', '')} {p.get('answer', '')}")
                for p in inline["pairs"]
            ]
            predicate_text = reference[span["start"] : span["end"]] if span else None
            return inline["candidate"], html, predicate_text, pairs
        # Every presence HIT page runs these (the bulk of a campaign's HITs): hand-written SQL, see hits.sql.
        rows = sql.fetchall(_presence_sql("reference"), [hit.payload["summary"]])
        if not rows:
            raise SystemSummary.DoesNotExist(f"no system summary {hit.payload['summary']}")
        predicate = None
        if hit.payload.get("predicate"):
            row = sql.fetchone(_presence_sql("predicate"), [hit.payload["predicate"]])
            if row is None:
                raise Predicate.DoesNotExist(f"no predicate {hit.payload['predicate']}")
            predicate = sql.instance(Predicate, row)
        html = []
        for _, sentence_id, sentence_text in rows:
            if sentence_id is None:  # a reference without sentences (the LEFT JOIN's empty row)
                continue
            if predicate is not None and sentence_id == predicate.sentence_id:
                html.append(highlighted(sentence_text, predicate.start, predicate.end))
            else:
                html.append(escape(sentence_text))
        wanted = list(hit.payload["units"])
        found = {}
        if wanted:
            statement = _presence_sql("units").replace("%s", ", ".join(["%s"] * len(wanted)))
            found = {u.pk: u for u in (sql.instance(ContentUnit, r) for r in sql.fetchall(statement, wanted))}
        units = [ShownUnit(pk, found[pk].question, found[pk].answers, found[pk].text) for pk in wanted if pk in found]
        return rows[0][0], html, (predicate.text if predicate else None), units

    def page_context(self, hit, assignment, data):
        candidate, reference_html, predicate_text, units = self._view(hit)
        data = data or {}
        items = [{"unit": u, "name": f"p_{u.pk}", "value": data.get(f"p_{u.pk}", "")} for u in units]
        return {
            "candidate": candidate,
            "reference_sentences": reference_html,
            "predicate_text": predicate_text,
            "items": items,
            "is_scu": predicate_text is None,
            "feedback": data.get("feedback", ""),
        }

    def clean(self, hit, data):
        inline = hit.payload.get("inline")
        # The HIT's payload names its units: no need to load texts to check the answers.
        unit_ids = [str(p["id"]) for p in inline["pairs"]] if inline else hit.payload["units"]
        errors: dict[str, list[str]] = {}
        labels = []
        for pk in unit_ids:
            value = data.get(f"p_{pk}", "")
            if value not in ("1", "0"):
                errors.setdefault(f"p_{pk}", []).append("Choose Present or Not present.")
                continue
            labels.append({"unit": pk, "present": value == "1"})
        feedback = _clean_text(data.get("feedback"))[:MAX_FEEDBACK_CHARS]
        if errors:
            raise AnswerErrors(errors)
        return {"labels": labels, "feedback": feedback}

    def on_submitted(self, assignment):
        if _is_tracked(assignment.hit):
            pipeline.record_presence(assignment)
        else:
            quality.after_gold_submission(assignment)

    def grade_qualification(self, assignments):
        return quality.grade_presence_test(assignments)


def _presence_sql(name: str) -> str:
    """The presence page's statements (composed once per process, see ``hits.sql.statement``)."""

    def build():
        if name == "reference":
            return (
                f"SELECT s.{sql.quote('text')}, r.id, r.{sql.quote('text')} FROM {sql.table(SystemSummary)} s "
                f"LEFT JOIN {sql.table(ReferenceSentence)} r ON r.example_id = s.example_id "
                f"WHERE s.id = %s ORDER BY r.{sql.quote('index')}"
            )
        if name == "predicate":
            return f"SELECT {sql.columns(Predicate, 'p')} FROM {sql.table(Predicate)} p WHERE p.id = %s"
        return f"SELECT {sql.columns(ContentUnit, 'u')} FROM {sql.table(ContentUnit)} u WHERE u.id IN (%s)"

    return sql.statement(("presence", name), build)


HANDLERS = {
    pipeline.GENERATION: GenerationHandler(),
    pipeline.VERIFICATION: VerificationHandler(),
    pipeline.PRESENCE: PresenceHandler(),
}
