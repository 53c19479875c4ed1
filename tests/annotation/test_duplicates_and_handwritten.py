"""The researcher steps before presence: near-duplicate review (on by default, skippable) and hand-written
QA pairs for examples without a predicate; the progress page's count of examples without a unit."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from annotation.models import Campaign, ContentUnit, Example
from annotation.services import duplicates
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.predicates import add_handwritten_pair
from annotation.text.duplicates import PairText, near_duplicates, question_key
from hits.models import HIT, TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db


def test_the_near_duplicate_rule():
    pairs = [
        PairText(1, 10, "Who blamed someone?", ("Police",)),
        PairText(2, 10, "Who has blamed someone?", ("the police chief",)),  # auxiliaries only
        PairText(3, 10, "Who did someone blame?", ("the  driver",)),
        PairText(4, 10, "What did someone blame someone for?", ("The driver",)),  # same answer as 3
        PairText(5, 11, "Who blamed someone?", ("Police",)),  # another predicate: never compared with 1
    ]
    found = [(d.first, d.second, d.reason) for d in near_duplicates(pairs)]
    assert found == [(1, 2, "the questions differ only in auxiliaries"), (3, 4, "same answer “the driver”")]
    assert question_key("What was given?") == question_key("What is given?") == ("what", "given")


@pytest.fixture
def campaign(tmp_path):
    refs = write_jsonl(tmp_path / "r.jsonl", [
        {"id": "e1", "reference": "Police blamed the driver for the crash."},
        {"id": "e2", "reference": "A new deal for the city."},
    ])
    sums = write_jsonl(tmp_path / "s.jsonl", [
        {"id": "e1", "system": "s", "summary": "The driver was blamed."}, {"id": "e2", "system": "s", "summary": "A deal."},
    ])
    return import_campaign(name="Steps", references=refs, summaries=sums).campaign


def _work(slug, name, data_for):
    worker = Worker.objects.get_or_create(external_id=name)[0]
    assignment = accept_next(worker, TaskType.objects.get(slug=slug))
    submit_assignment(worker, assignment.pk, data_for(assignment))


def _verify_all_valid(assignment):
    data = {}
    for unit in ContentUnit.objects.filter(pk__in=assignment.hit.payload["units"]):
        data[f"v_{unit.pk}"], data[f"v_{unit.pk}_a1"] = "valid", unit.answers[0]
    return data


def _write_duplicates(campaign):
    _work("generation", "writer", lambda a: {
        "q1": "Who blamed someone?", "q1_a1": "Police", "q2": "Who has blamed someone?", "q2_a1": "Police",
        "q3": "Who did someone blame?", "q3_a1": "the driver",
    })
    _work("verification", "v1", _verify_all_valid)
    _work("verification", "v2", _verify_all_valid)


def _presence_hits(campaign):
    campaign.refresh_from_db()
    return HIT.objects.filter(batch=campaign.batch, task_type__slug="presence")


def test_near_duplicates_hold_presence_until_the_researcher_merges_and_releases(campaign, researcher):
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    launch_campaign(campaign)
    _write_duplicates(campaign)
    assert not _presence_hits(campaign).exists()  # held: the step is on by default
    client = Client()
    client.force_login(researcher)
    progress = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert 'id="held-link"' in progress and "1 example waits for the duplicate review" in progress
    page = client.get(f"/campaigns/{campaign.slug}/duplicates/").content.decode()
    assert 'data-example="e1"' in page and "Who has blamed someone?" in page and "same answer “police”" in page
    keep = ContentUnit.objects.get(question="Who blamed someone?")
    drop = ContentUnit.objects.get(question="Who has blamed someone?")
    client.post(f"/campaigns/{campaign.slug}/duplicates/", {"action": "merge", "keep": keep.pk, "drop": drop.pk})
    drop.refresh_from_db()
    assert drop.state == "merged"
    example = Example.objects.get(external_id="e1")
    client.post(f"/campaigns/{campaign.slug}/duplicates/", {"action": "release", "example": example.pk})
    (hit,) = _presence_hits(campaign)
    assert sorted(hit.payload["units"]) == sorted(ContentUnit.objects.filter(state="kept").values_list("pk", flat=True))
    assert drop.pk not in hit.payload["units"]
    with pytest.raises(ValidationError, match="presence stage of this example has started"):
        duplicates.merge_pair(campaign, keep, ContentUnit.objects.get(question="Who did someone blame?"))


def test_the_review_can_be_skipped_for_the_whole_campaign(campaign, researcher):
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    launch_campaign(campaign)
    _write_duplicates(campaign)
    client = Client()
    client.force_login(researcher)
    client.post(f"/campaigns/{campaign.slug}/duplicates/", {"action": "skip"})
    campaign.refresh_from_db()
    assert campaign.review_duplicates is False and _presence_hits(campaign).count() == 1
    assert ContentUnit.objects.filter(state="kept").count() == 3


def test_with_the_step_off_presence_starts_at_once(campaign):
    Campaign.objects.filter(pk=campaign.pk).update(review_duplicates=False)
    campaign.refresh_from_db()
    launch_campaign(campaign)
    _write_duplicates(campaign)
    assert _presence_hits(campaign).count() == 1


def test_handwritten_pairs_for_a_verbless_example_before_launch(campaign, researcher):
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    client = Client()
    client.force_login(researcher)
    progress = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    # A draft QA campaign has no QA pair yet by construction: the page says when they come, not "2 of 2 without".
    assert "QA pairs are written once the campaign is launched: 2 examples" in progress and "1 example has no predicate" in progress
    assert 'id="examples-without-unit"' not in progress
    page = client.get(f"/campaigns/{campaign.slug}/handwritten/").content.decode()
    assert 'data-example="e2"' in page and 'data-example="e1"' not in page
    sentence = Example.objects.get(external_id="e2").sentences.get()
    # A bad pair is refused with the typed text kept.
    bad = client.post(f"/campaigns/{campaign.slug}/handwritten/add/",
                      {"sentence": sentence.pk, "predicate_text": "deal", "question": "What is new", "answer": "for the city"})
    assert bad.status_code == 400
    html = bad.content.decode()
    assert 'value="What is new"' in html and "ends with" in html and 'value="deal"' in html
    bad = client.post(f"/campaigns/{campaign.slug}/handwritten/add/",
                      {"sentence": sentence.pk, "predicate_text": "contract", "question": "What is new?", "answer": "A new deal"})
    assert bad.status_code == 400 and "not in the sentence" in bad.content.decode()
    client.post(f"/campaigns/{campaign.slug}/handwritten/add/",
                {"sentence": sentence.pk, "predicate_text": "deal", "question": "What is something for?", "answer": "the city"})
    unit = ContentUnit.objects.get(example__external_id="e2")
    assert (unit.state, unit.question, unit.answers, unit.predicate.settled) == ("kept", "What is something for?", ["the city"], True)
    launch_campaign(campaign)
    campaign.refresh_from_db()
    # No writer for the researcher's predicate; its example goes straight to presence.
    generation = HIT.objects.filter(batch=campaign.batch, task_type__slug="generation")
    assert [h.payload["predicate"] for h in generation] == [p.pk for p in Example.objects.get(external_id="e1").predicates.all()]
    (presence,) = _presence_hits(campaign)
    assert presence.payload["units"] == [unit.pk]
    progress = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert 'id="examples-without-unit">1<' in progress and "have no predicate" not in progress
    with pytest.raises(ValidationError, match="only change before launch"):
        add_handwritten_pair(sentence, "deal", "What is new?", "A new deal")


def test_a_budgeted_launch_asks_for_one_routing_pass_for_all_examples_settled_at_launch(tmp_path, monkeypatch):
    """Examples with hand-written pairs reach presence at launch: in a budgeted campaign their HITs become
    candidates, and one routing pass is asked for all of them (not one pass per example, each judging everything)."""
    from annotation.models import PresenceCandidate
    from annotation.services import hybrid

    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": f"e{i}", "reference": "A new deal for the city."} for i in range(4)])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": f"e{i}", "system": "s", "summary": "A deal."} for i in range(4)])
    campaign = import_campaign(name="Budgeted steps", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(human_presence_share=0.5)
    campaign.refresh_from_db()
    for example in Example.objects.filter(campaign=campaign):
        add_handwritten_pair(example.sentences.get(), "deal", "What is something for?", "the city")
    asked = []
    monkeypatch.setattr(hybrid, "request_routing", lambda c: asked.append(c.pk))
    launch_campaign(campaign)
    assert PresenceCandidate.objects.filter(campaign=campaign).count() == 4
    assert asked == [campaign.pk]


def test_a_refusal_quoting_the_sentence_keeps_its_capitals(campaign, researcher):
    """Issue 28 (wording): messages built with str.capitalize() lower-cased everything after the first letter."""
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    client = Client()
    client.force_login(researcher)
    sentence = Example.objects.get(external_id="e2").sentences.get()
    assert sentence.text != sentence.text.lower()
    bad = client.post(f"/campaigns/{campaign.slug}/handwritten/add/",
                      {"sentence": sentence.pk, "predicate_text": "contract", "question": "What is new?", "answer": "A new deal"})
    html = bad.content.decode()
    assert bad.status_code == 400 and f"is not in the sentence “{sentence.text}”" in html
    assert ".." not in html.split('class="errors', 1)[-1].split("</", 1)[0]


def test_a_finished_imported_campaign_has_no_example_waiting_for_the_duplicate_review(tmp_path, researcher):
    """The released shape imports a finished campaign: its pairs may look alike, but no presence HIT will ever
    wait for them, so neither the progress page nor the review page offers a review."""
    line = {
        "example_id": "x1",
        "reference": "Police blamed the driver for the crash.",
        "QAs": ["Who blamed someone? Police", "Who has blamed someone? Police", "Who did someone blame? the driver"],
        "QA_labels": {"a": [1, 1, 0]},
        "system_outputs": {"a": "Police blamed the driver."},
    }
    data = write_jsonl(tmp_path / "released.jsonl", [line])
    campaign = import_campaign(name="Released", qapyramid=data, owner=researcher).campaign
    assert campaign.state == "finished" and campaign.review_duplicates
    kept = ContentUnit.objects.filter(example__campaign=campaign, state="kept")
    assert near_duplicates(PairText(u.pk, u.predicate_id, u.question, tuple(u.answers)) for u in kept)  # they look alike
    assert duplicates.held_examples(campaign) == []
    client = Client()
    client.force_login(researcher)
    progress = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert "duplicate review" not in progress and 'id="held-link"' not in progress
    assert 'data-example="x1"' not in client.get(f"/campaigns/{campaign.slug}/duplicates/").content.decode()


def test_the_review_pages_read_every_held_example_in_the_same_number_of_queries(tmp_path, researcher):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    refs = write_jsonl(tmp_path / "r.jsonl", [
        {"id": f"e{i}", "reference": "Police blamed the driver for the crash."} for i in range(1, 4)
    ])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": f"e{i}", "system": "s", "summary": "A crash."} for i in range(1, 4)])
    campaign = import_campaign(name="Three", references=refs, summaries=sums, owner=researcher).campaign
    launch_campaign(campaign)
    campaign.refresh_from_db()
    client = Client()
    client.force_login(researcher)

    def counts():
        out = []
        for page in ("duplicates", "progress"):
            with CaptureQueriesContext(connection) as queries:
                assert client.get(f"/campaigns/{campaign.slug}/{page}/").status_code == 200
            out.append(len(queries.captured_queries))
        return out

    _write_duplicates(campaign)
    assert len(duplicates.held_examples(campaign)) == 1
    one = counts()
    _write_duplicates(campaign)
    _write_duplicates(campaign)
    assert [e.external_id for e, _ in duplicates.held_examples(campaign)] == ["e1", "e2", "e3"]
    assert "3 examples wait for the duplicate review" in client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert counts() == one
