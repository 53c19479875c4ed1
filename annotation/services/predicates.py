"""Researcher edits of predicates before a campaign is launched."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import Campaign, ContentUnit, Example, Predicate, ReferenceSentence
from annotation.text.questions import check_answer, check_question, starts_with_question_word


def _require_draft(campaign: Campaign) -> None:
    if campaign.state != Campaign.State.DRAFT:
        raise ValidationError(
            f"campaign '{campaign.slug}' is {campaign.get_state_display().lower()}: predicates can only change before launch"
        )


@transaction.atomic
def add_predicate(sentence: ReferenceSentence, start: int, end: int, lemma: str = "") -> Predicate:
    """Add a predicate spanning ``sentence.text[start:end]`` (researcher edit, before launch)."""
    sentence = ReferenceSentence.objects.select_related("example__campaign").get(pk=sentence.pk)
    _require_draft(sentence.example.campaign)
    if not (0 <= start < end <= len(sentence.text)):
        raise ValidationError(
            f"span [{start}, {end}) is not inside the sentence ({len(sentence.text)} characters)"
        )
    text = sentence.text[start:end]
    if not text.strip():
        raise ValidationError("a predicate span must contain a word")
    if Predicate.objects.filter(sentence=sentence, start=start, end=end).exists():
        raise ValidationError(f"'{text}' is already a predicate of this sentence")
    return Predicate.objects.create(
        sentence=sentence,
        example_id=sentence.example_id,
        start=start,
        end=end,
        text=text[:200],
        lemma=(lemma or text.lower())[:200],
        origin=Predicate.Origin.RESEARCHER,
        edited_by_researcher=True,
    )


@transaction.atomic
def remove_predicate(predicate: Predicate) -> None:
    """Remove a predicate (researcher edit, before launch)."""
    predicate = Predicate.objects.select_related("sentence__example__campaign").get(pk=predicate.pk)
    _require_draft(predicate.sentence.example.campaign)
    predicate.delete()


@transaction.atomic
def redetect_predicates(campaign: Campaign) -> int:
    """Run automatic predicate detection again on a draft campaign's references.

    Predicates found automatically are replaced; predicates a researcher
    added or edited, and those imported from a file, are kept.  Returns the
    number of predicates the campaign has afterwards.
    """
    from annotation.text.predicates import analyse_references

    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    _require_draft(campaign)
    sentences = list(
        ReferenceSentence.objects.filter(example__campaign=campaign).select_related("example").order_by(
            "example__position", "index"
        )
    )
    by_example: dict[int, list[ReferenceSentence]] = {}
    for sentence in sentences:
        by_example.setdefault(sentence.example_id, []).append(sentence)
    examples = [group[0].example for group in by_example.values()]
    bounds = [[(s.start, s.end) for s in by_example[e.pk]] for e in examples]
    analysed = analyse_references([e.reference for e in examples], bounds)
    kept = set(
        Predicate.objects.filter(sentence__example__campaign=campaign)
        .exclude(origin=Predicate.Origin.AUTO, edited_by_researcher=False)
        .values_list("sentence_id", "start", "end")
    )
    Predicate.objects.filter(
        sentence__example__campaign=campaign, origin=Predicate.Origin.AUTO, edited_by_researcher=False
    ).delete()
    new_rows = []
    for example, found_sentences in zip(examples, analysed):
        rows = {(s.start, s.end): s for s in by_example[example.pk]}
        for found in found_sentences:
            sentence = rows.get((found.start, found.end))
            if sentence is None:
                continue
            for p in found.predicates:
                if (sentence.pk, p.start, p.end) not in kept:
                    new_rows.append(
                        Predicate(
                            sentence=sentence,
                            example_id=sentence.example_id,
                            start=p.start,
                            end=p.end,
                            text=p.text[:200],
                            lemma=p.lemma[:200],
                        )
                    )
    Predicate.objects.bulk_create(new_rows, batch_size=2000)
    return Predicate.objects.filter(sentence__example__campaign=campaign).count()


def examples_without_predicates(campaign: Campaign):
    """Examples none of whose sentences has a predicate (verbless references): no crowd QA pair can come for them."""
    return Example.objects.filter(campaign=campaign).exclude(predicates__isnull=False).order_by("position")


@transaction.atomic
def add_handwritten_pair(sentence: ReferenceSentence, predicate_text: str, question: str, answer: str) -> ContentUnit:
    """A researcher's own QA pair for a sentence the crowd gets nothing for (e.g. without a verb), before launch.

    ``predicate_text`` is the word(s) of the sentence the pair is about (a noun of a verbless
    sentence, "deal" in "A new deal for the city"); it becomes a predicate of the researcher, settled
    from the start: no generation HIT is made for it, and its pairs are kept without verification.
    """
    sentence = ReferenceSentence.objects.select_related("example__campaign").get(pk=sentence.pk)
    campaign = sentence.example.campaign
    _require_draft(campaign)
    predicate_text, question, answer = (" ".join((x or "").split()) for x in (predicate_text, question, answer))
    start = sentence.text.find(predicate_text) if predicate_text else -1
    if start < 0:
        raise ValidationError(f"'{predicate_text}' is not in the sentence “{sentence.text}”: give the word(s) the pair is about")
    problems = check_question(question) + check_answer(answer, sentence.text)
    if question and not starts_with_question_word(question):
        problems.append("start the question with a question word")
    if problems:
        raise ValidationError("; ".join(p.rstrip(".") for p in problems))
    end = start + len(predicate_text)
    predicate = Predicate.objects.filter(sentence=sentence, start=start, end=end).first()
    if predicate is None:
        predicate = Predicate.objects.create(
            sentence=sentence, example_id=sentence.example_id, start=start, end=end, text=predicate_text[:200],
            lemma=predicate_text.lower()[:200], origin=Predicate.Origin.RESEARCHER, edited_by_researcher=True, settled=True,
        )
    elif not predicate.settled:
        raise ValidationError(f"'{predicate_text}' is a predicate the crowd will write pairs for: choose a sentence without one")
    last = ContentUnit.objects.filter(example_id=sentence.example_id).order_by("-index").values_list("index", flat=True).first()
    index = 0 if last is None else last + 1
    return ContentUnit.objects.create(
        example_id=sentence.example_id, predicate=predicate, kind=ContentUnit.Kind.QA, index=index, question=question[:300],
        answers=[answer], text=f"{question} {answer}", state=ContentUnit.State.KEPT,
    )
