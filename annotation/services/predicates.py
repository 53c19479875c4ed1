"""Researcher edits of predicates before a campaign is launched."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import Campaign, Predicate, ReferenceSentence


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
