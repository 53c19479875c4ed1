"""Predicate extraction on hand-checked sentences, and researcher edits."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Campaign, Predicate, ReferenceSentence
from annotation.text.predicates import analyse_references, strip_sentence_tags
from annotation.services.campaign_import import import_campaign
from annotation.services.predicates import add_predicate, redetect_predicates, remove_predicate


def _predicates(text):
    [sentences] = analyse_references([text])
    return [[(p.text, p.lemma) for p in s.predicates] for s in sentences]


def test_main_verbs_are_predicates_and_auxiliaries_are_not():
    assert _predicates("The mayor has refused to comment.") == [[("refused", "refuse"), ("comment", "comment")]]


def test_copular_be_is_a_predicate():
    assert _predicates("He is out of the hospital.") == [[("is", "be")]]


def test_phrasal_particle_joins_the_verb_and_passive_auxiliary_is_skipped():
    assert _predicates("The search was given up on Friday.") == [[("given up", "give up")]]


def test_sentences_are_split_and_offsets_point_into_the_text():
    text = "Police blamed the driver. Nobody was hurt."
    [sentences] = analyse_references([text])
    assert [s.text for s in sentences] == ["Police blamed the driver.", "Nobody was hurt."]
    for s in sentences:
        assert text[s.start : s.end] == s.text
        for p in s.predicates:
            assert s.text[p.start : p.end] == p.text


def test_sentence_tags_are_stripped_and_give_the_sentence_bounds():
    text, bounds = strip_sentence_tags("<t> First one . </t>  <t> Second   one . </t>")
    assert text == "First one . Second one ."
    assert [text[a:b] for a, b in bounds] == ["First one .", "Second one ."]
    assert strip_sentence_tags("No tags  here.") == ("No tags here.", None)


@pytest.mark.django_db
def test_researcher_adds_and_removes_predicates_before_launch_only(small_files):
    refs, sums = small_files
    import_campaign(name="Edit", references=refs, summaries=sums)
    sentence = ReferenceSentence.objects.get(example__external_id="a", index=0)  # "The mayor opened a new park."
    added = add_predicate(sentence, 23, 27)
    assert (added.text, added.origin, added.edited_by_researcher) == ("park", "researcher", True)
    with pytest.raises(ValidationError, match="not inside the sentence"):
        add_predicate(sentence, 20, 60)
    with pytest.raises(ValidationError, match="already a predicate"):
        add_predicate(sentence, 23, 27)
    opened = Predicate.objects.get(sentence=sentence, text="opened")
    remove_predicate(opened)
    # Re-detection restores automatic predicates and keeps the researcher's.
    total = redetect_predicates(Campaign.objects.get())
    texts = set(Predicate.objects.filter(sentence=sentence).values_list("text", flat=True))
    assert texts == {"opened", "park"}
    assert total == Predicate.objects.count()
    Campaign.objects.update(state=Campaign.State.RUNNING)
    with pytest.raises(ValidationError, match="only change before launch"):
        add_predicate(sentence, 4, 9)
    with pytest.raises(ValidationError, match="only change before launch"):
        remove_predicate(Predicate.objects.get(text="park"))
