"""The researcher's review of near-duplicate kept QA pairs, before an example's presence HITs exist.

With the campaign's ``review_duplicates`` setting (on by default), ``pipeline.start_presence_if_settled``
holds an example whose kept pairs include near-duplicates (``annotation.text.duplicates``).  Here the
researcher merges a duplicate into the pair it repeats (its answers join the kept pair; the other
becomes "merged" and is never judged), then releases the example, which creates its presence HITs.
Skipping the review turns the setting off and releases every held example.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef

from annotation.models import Campaign, ContentUnit, Example, Predicate
from annotation.services import pipeline
from annotation.text.duplicates import PairText, near_duplicates
from hits.mturk.publishing import publish_soon


def held_examples(campaign: Campaign) -> list[tuple[Example, list]]:
    """Examples waiting for the review: every predicate settled, no presence HIT yet, near-duplicates found.

    Only a draft, running or paused campaign can hold examples (a finished or cancelled one never starts
    presence HITs again, an imported finished campaign has none), and only kept QA pairs whose predicate has
    another kept pair can be near-duplicates: they are read in one query, with the examples that hold some.
    """
    if not campaign.review_duplicates or campaign.state not in (Campaign.State.RUNNING, Campaign.State.PAUSED):
        return []
    kept_qa = ContentUnit.objects.filter(state=ContentUnit.State.KEPT, kind=ContentUnit.Kind.QA)
    unsettled = Predicate.objects.filter(sentence__example_id=OuterRef("example_id"), settled=False)
    sibling = kept_qa.filter(predicate_id=OuterRef("predicate_id")).exclude(pk=OuterRef("pk"))
    rows = (
        kept_qa.filter(example__campaign=campaign, example__presence_started=False, example__duplicates_reviewed=False)
        .filter(~Exists(unsettled), Exists(sibling))
        .order_by("example__position", "example_id", "index")
        .values_list("example_id", "pk", "predicate_id", "question", "answers")
    )
    by_example: dict[int, list[PairText]] = {}
    for example_id, pk, predicate_id, question, answers in rows:
        by_example.setdefault(example_id, []).append(PairText(pk, predicate_id, question, tuple(answers or ())))
    found = {example_id: near_duplicates(pairs) for example_id, pairs in by_example.items()}
    found = {example_id: pairs for example_id, pairs in found.items() if pairs}
    if not found:
        return []
    examples = Example.objects.in_bulk(list(found))
    return [(examples[example_id], pairs) for example_id, pairs in found.items()]


@transaction.atomic
def merge_pair(campaign: Campaign, keep: ContentUnit, drop: ContentUnit) -> ContentUnit:
    """Merge ``drop`` into ``keep`` (same predicate, both kept, presence not started): ``drop``'s answers join ``keep``'s."""
    keep = ContentUnit.objects.select_for_update().select_related("example").get(pk=keep.pk, example__campaign=campaign)
    drop = ContentUnit.objects.select_for_update().get(pk=drop.pk, example__campaign=campaign)
    if keep.pk == drop.pk or keep.predicate_id != drop.predicate_id:
        raise ValidationError("only two different pairs of the same predicate can be merged")
    if keep.state != ContentUnit.State.KEPT or drop.state != ContentUnit.State.KEPT:
        raise ValidationError("both pairs must be kept pairs")
    if keep.example.presence_started:
        raise ValidationError("the presence stage of this example has started: its pairs can no longer change")
    answers = list(keep.answers or [])
    for answer in drop.answers or []:
        if answer not in answers:
            answers.append(answer)
    keep.answers = answers[: max(len(keep.answers or []), campaign.max_answers_per_question)]
    keep.text = f"{keep.question} {' / '.join(keep.answers)}"
    keep.save(update_fields=["answers", "text"])
    drop.state = ContentUnit.State.MERGED
    drop.save(update_fields=["state"])
    return keep


@transaction.atomic
def release_example(campaign: Campaign, example: Example) -> int:
    """The researcher is done with this example's duplicates: its presence HITs are created; returns how many."""
    campaign = Campaign.objects.select_related("batch").get(pk=campaign.pk)  # its batch as of now (set at launch)
    Example.objects.filter(pk=example.pk, campaign=campaign).update(duplicates_reviewed=True)
    created = pipeline.start_presence_if_settled(campaign, example.pk)
    if created:
        publish_soon(campaign.batch)
    return created


@transaction.atomic
def skip_duplicate_review(campaign: Campaign) -> int:
    """Turn the review off for the campaign and release every held example; returns the presence HITs created."""
    held = held_examples(campaign)
    Campaign.objects.filter(pk=campaign.pk).update(review_duplicates=False)
    campaign.review_duplicates = False
    return sum(release_example(campaign, example) for example, _ in held)
