"""A researcher's correction of a QA pair, logged with who changed what.

The pair keeps its id, verifications and presence judgments (they were given
on the old wording, which the log keeps); its question, answers and one-line
text change.  Answers must still be substrings of the predicate's sentence,
as every answer a worker writes must be.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import QAPairCorrection
from annotation.models import ContentUnit


@transaction.atomic
def correct_qa_pair(unit: ContentUnit, question: str, answers: list[str], *, by=None, reason: str = "") -> QAPairCorrection:
    """Replace a QA pair's question and answers; returns the log entry (old and new wording, who, why).

    Raises ``ValidationError`` (nothing changed) for a unit that is not a QA
    pair, an empty question, no answers, more than three, or an answer that
    is not in the sentence.
    """
    # Lock the pair's row only: the predicate and sentence are read, not changed (and PostgreSQL refuses
    # FOR UPDATE on the nullable side of the outer join to the sentence).
    unit = ContentUnit.objects.select_for_update(of=("self",)).select_related("predicate__sentence").get(pk=unit.pk)
    if unit.kind != ContentUnit.Kind.QA or unit.predicate is None:
        raise ValidationError("only QA pairs can be corrected here")
    question = " ".join((question or "").split())
    answers = [" ".join(a.split()) for a in answers if a and a.strip()]
    if not question:
        raise ValidationError("the question is empty")
    if len(question) > 300:
        raise ValidationError("the question is longer than 300 characters")
    if not answers:
        raise ValidationError("give at least one answer")
    if len(answers) > 3:
        raise ValidationError("at most 3 answers per question")
    sentence = unit.predicate.sentence.text if unit.predicate.sentence_id else ""
    if sentence:
        outside = [a for a in answers if a not in sentence]
        if outside:
            raise ValidationError(
                "every answer must be a substring of the sentence; not found: " + ", ".join(f"'{a}'" for a in outside)
            )
    if question == unit.question and answers == list(unit.answers):
        raise ValidationError("nothing changed")
    entry = QAPairCorrection.objects.create(
        unit=unit,
        changed_by=by if getattr(by, "is_authenticated", False) else None,
        old_question=unit.question,
        old_answers=list(unit.answers),
        new_question=question,
        new_answers=answers,
        reason=(reason or "").strip()[:500],
    )
    unit.question = question
    unit.answers = answers
    unit.text = f"{question} {' / '.join(answers)}"
    unit.save(update_fields=["question", "answers", "text"])
    return entry
