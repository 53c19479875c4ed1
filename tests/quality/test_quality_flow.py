"""Qualification tests, cross-checks, revocation, reinstatement and exclusion, end to end."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db.models import Count
from django.utils import timezone

from annotation.models import Campaign, GoldPresence, PresenceJudgment
from annotation.services import qualification_tests
from annotation.services import quality
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.management.simulation import simulate_crowd
from annotation.text.questions import content_word_violations
from hits.handlers import AnswerErrors
from hits import qualifications
from hits.models import HIT, Batch, Qualification, QualificationEvent, TaskType, Worker
from hits.services import NotEligible, accept_next, record_choice, submit_assignment
from tests.conftest import DEMO_DIR, write_jsonl


@pytest.fixture
def small_campaign(tmp_path):
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    return import_campaign(name="Quals", references=refs, summaries=sums).campaign


def _choose(worker, campaign):
    """The worker starts from the campaign (or was invited to it): its tests are offered to them."""
    record_choice(worker, Batch.objects.get(pk=Campaign.objects.get(pk=campaign.pk).batch_id), "start")


def _demo_definition():
    return json.loads((DEMO_DIR / "qualifications.json").read_text())


@pytest.mark.django_db
def test_a_key_answer_that_is_not_in_the_sentence_is_refused_and_nothing_changes(small_campaign):
    definition = _demo_definition()
    definition["generation"][1]["arguments"][0] = ["Volunteer groups"]
    with pytest.raises(qualification_tests.QualificationDefinitionError, match="generation item 2, argument 1: answer 'Volunteer groups' is not a substring"):
        qualification_tests.define_qualifications(small_campaign, definition)
    assert not HIT.objects.exists() and not TaskType.objects.filter(requires_qualification=True).exists()


@pytest.mark.django_db
def test_new_worker_sees_only_the_test_then_real_hits_once_qualified(small_campaign):
    qualification_tests.define_qualifications(small_campaign, _demo_definition())
    launch_campaign(small_campaign)
    worker = Worker.objects.create(external_id="newbie")
    generation = TaskType.objects.get(slug="generation")
    _choose(worker, small_campaign)
    for _ in range(4):
        assignment = accept_next(worker, generation)
        assert assignment.hit.kind == "qualification"
        key = assignment.hit.answer_key["arguments"]
        wh = ["Who", "What", "When", "Where"]
        predicate = assignment.hit.payload["inline"]["sentence"][assignment.hit.payload["inline"]["start"]:assignment.hit.payload["inline"]["end"]]
        data = {}
        for i, answers in enumerate(key, start=1):
            data[f"q{i}"] = f"{wh[i - 1]} did someone {predicate}?"
            data[f"q{i}_a1"] = answers[0]
        submit_assignment(worker, assignment.pk, data)
    qualification = Qualification.objects.get(worker=worker, task_type=generation)
    assert qualification.state == "qualified" and qualification.score == 1.0
    assert QualificationEvent.objects.filter(worker=worker, action="grant", automatic=True).exists()
    assert accept_next(worker, generation).hit.kind == "regular"


@pytest.mark.django_db
def test_failed_worker_retries_after_the_cooldown_a_limited_number_of_times(small_campaign):
    small_campaign.qualification_max_attempts = 2
    small_campaign.qualification_cooldown_hours = 12
    small_campaign.save()
    qualification_tests.define_qualifications(small_campaign, _demo_definition())
    launch_campaign(small_campaign)
    worker = Worker.objects.create(external_id="struggler")
    presence = TaskType.objects.get(slug="presence")
    _choose(worker, small_campaign)
    # The campaign's presence test is offered while it has presence work (a judge's HIT of its own).
    HIT.objects.create(batch_id=Campaign.objects.get(pk=small_campaign.pk).batch_id, task_type=presence, payload={}, max_assignments=3)

    def take_test_wrongly():
        for _ in range(4):
            assignment = accept_next(worker, presence)
            assert assignment.hit.kind == "qualification"
            pairs = assignment.hit.payload["inline"]["pairs"]
            submit_assignment(worker, assignment.pk, {f"p_{k}": "1" for k, _ in enumerate(pairs, start=1)})

    take_test_wrongly()
    qualification = Qualification.objects.get(worker=worker, task_type=presence)
    assert qualification.state == "failed" and qualification.attempts == 1
    assert accept_next(worker, presence) is None  # cool-down
    allowed, why = qualifications.can_attempt(qualification, small_campaign.batch)
    assert not allowed and "try again after" in why
    Qualification.objects.filter(pk=qualification.pk).update(last_attempt_at=timezone.now() - timedelta(hours=13))
    take_test_wrongly()  # the same four HITs again, as attempt 2
    qualification.refresh_from_db()
    assert qualification.attempts == 2 and qualification.state == "failed"
    Qualification.objects.filter(pk=qualification.pk).update(last_attempt_at=timezone.now() - timedelta(days=3))
    assert accept_next(worker, presence) is None
    assert "no attempts left" in qualifications.can_attempt(Qualification.objects.get(pk=qualification.pk), Batch.objects.get(pk=small_campaign.batch_id))[1]


@pytest.mark.django_db
def test_borderline_generation_test_goes_to_review_and_a_researcher_decides(small_campaign, researcher):
    qualification_tests.define_qualifications(small_campaign, _demo_definition())
    launch_campaign(small_campaign)
    worker = Worker.objects.create(external_id="borderline")
    generation = TaskType.objects.get(slug="generation")
    _choose(worker, small_campaign)
    for _ in range(4):
        assignment = accept_next(worker, generation)
        inline = assignment.hit.payload["inline"]
        words = inline["sentence"].split()
        data = {}
        for i, answers in enumerate(assignment.hit.answer_key["arguments"], start=1):
            # Repeats a content word of the sentence: a soft problem only, which the writer confirms.
            data[f"q{i}"] = f"What did {words[1]} {inline['sentence'][inline['start']:inline['end']]} {i}?"
            data[f"q{i}_a1"] = answers[0]
        verb = inline["sentence"][inline["start"] : inline["end"]]
        if any(content_word_violations(q, inline["sentence"], verb) for k, q in data.items() if "_" not in k):
            with pytest.raises(AnswerErrors, match="Keep as written"):
                submit_assignment(worker, assignment.pk, data)
        submit_assignment(worker, assignment.pk, {**data, **{f"q{i}_keep": "1" for i in range(1, 6)}})
    assert Qualification.objects.get(worker=worker, task_type=generation).state == "review"
    # Nothing of this campaign's generation work until a researcher decides.
    assert accept_next(worker, generation) is None
    qualifications.reinstate(worker, generation, small_campaign.batch, "questions fine on review", by=researcher)
    assert Qualification.objects.get(worker=worker, task_type=generation).state == "qualified"
    assert QualificationEvent.objects.filter(worker=worker, decided_by=researcher, action="grant").exists()


def _scu_campaign(tmp_path, n_examples=20, n_systems=3, n_units=4, gold_share=0.4, grace=20):
    import random

    rng = random.Random(7)
    folder = tmp_path / "scu"
    (folder / "summaries").mkdir(parents=True)
    (folder / "labels").mkdir()
    ids = [f"x{i}" for i in range(n_examples)]
    (folder / "ids.txt").write_text("\n".join(ids) + "\n")
    (folder / "references.txt").write_text("\n".join(f"Reference number {i} says things ." for i in ids) + "\n")
    (folder / "SCUs.txt").write_text("\n".join("\t".join(f"fact {u} of {i}" for u in range(n_units)) for i in ids) + "\n")
    for s in range(n_systems):
        (folder / "summaries" / f"sys{s}.summary").write_text("\n".join(f"Summary {s} of {i} ." for i in ids) + "\n")
        (folder / "labels" / f"sys{s}.label").write_text(
            "\n".join("\t".join(str(int(rng.random() < 0.5)) for _ in range(n_units)) for _ in ids) + "\n"
        )
    campaign = import_campaign(name="Gold study", folder=folder).campaign
    Campaign.objects.filter(pk=campaign.pk).update(gold_share=gold_share, grace_period_items=grace)
    campaign.refresh_from_db()
    launch_campaign(campaign)
    return campaign


def _agreement_with_known_labels(campaign) -> float:
    """Share of crowd gold labels (majority) equal to the imported labels, on units judged by the crowd."""
    imported = dict(
        ((u, s), p)
        for u, s, p in GoldPresence.objects.filter(summary__system__campaign=campaign, origin="imported").values_list("unit_id", "summary_id", "present")
    )
    majority = list(
        PresenceJudgment.objects.filter(summary__system__campaign=campaign, excluded=False)
        .values_list("unit_id", "summary_id").distinct()
    )
    from annotation.services.gold import majority_label
    from django.db.models import Count, Q

    rows = (
        PresenceJudgment.objects.filter(summary__system__campaign=campaign, excluded=False)
        .values("unit_id", "summary_id").annotate(n=Count("pk"), n_present=Count("pk", filter=Q(present=True)))
    )
    right = total = 0
    for row in rows:
        label = majority_label(row["n"], row["n_present"], "absent")
        total += 1
        right += int(label == imported[(row["unit_id"], row["summary_id"])])
    assert total == len(majority)
    return right / total


@pytest.mark.django_db(transaction=True)
def test_gold_checks_drop_the_inaccurate_judges_at_the_right_moment(tmp_path, eager_celery, settings):
    # The check reads the gold figure as released to the worker (issue 27): releases every 3 regular HITs
    # suit this small campaign (about 15 regular HITs a judge).
    settings.GOLD_FEEDBACK_EVERY = 3
    campaign = _scu_campaign(tmp_path)
    # The inaccurate judges are clearly under the 90% check: at 0.88 a judge's 20 gold items come out above 0.90
    # about 3 times in 10 (binomial), so whether they were revoked depended on the draw (a CI run kept one).
    accuracies = {"sim-1": 0.95, "sim-2": 0.95, "sim-3": 0.95, "sim-4": 0.95, "sim-5": 0.75, "sim-6": 0.70, "sim-7": 0.50}
    report = simulate_crowd(campaign, 7, seed=1, accuracies=accuracies)
    assert report.campaign_state == "finished"
    presence = TaskType.objects.get(slug="presence")
    status = {w: qualifications.status_label(Worker.objects.get(external_id=w), presence, campaign.batch) for w in accuracies}
    assert status == {"sim-1": "qualified", "sim-2": "qualified", "sim-3": "qualified", "sim-4": "qualified",
                      "sim-5": "revoked", "sim-6": "revoked", "sim-7": "revoked"}
    for name in ("sim-5", "sim-6", "sim-7"):
        event = QualificationEvent.objects.get(worker__external_id=name, action="revoke")
        assert event.automatic and event.figures["n_items"] >= campaign.grace_period_items
        assert "accuracy on gold items is" in event.reason and "needs to be above 0.90" in event.reason
        # Not a moment too early: the decision came once the grace period was over; nor long after, allowing for
        # the release of gold figures in batches (about 2 gold HITs of 4 items each per 3 regular HITs).
        assert event.figures["gold_accuracy"]["n"] < campaign.grace_period_items + 12 + 8
    # The worker sees why.
    qualification = Qualification.objects.get(worker__external_id="sim-7", task_type=presence)
    assert qualification.state == "revoked" and "accuracy on check items is not above 90%" in qualification.reason


@pytest.mark.django_db(transaction=True)
def test_excluding_careless_judges_and_replacing_their_work_improves_gold(tmp_path, eager_celery):
    campaign = _scu_campaign(tmp_path, gold_share=0.25)
    report = simulate_crowd(campaign, 6, seed=2, careless=2, accuracy=0.95)
    assert report.campaign_state == "finished"
    before = _agreement_with_known_labels(campaign)
    presence = TaskType.objects.get(slug="presence")
    careless = list(Worker.objects.filter(external_id__startswith="sim-careless-"))
    assert all(qualifications.status_label(w, presence, campaign.batch) == "revoked" for w in careless)
    n_before = PresenceJudgment.objects.filter(excluded=False).count()
    for worker in careless:
        result = quality.exclude_worker(campaign, worker)
        assert result["judgments"] > 0
    campaign.refresh_from_db()
    assert campaign.state == "running"  # replacement places are open
    assert HIT.objects.filter(batch=campaign.batch, kind="regular", state="open").exists()
    report = simulate_crowd(campaign, 6, seed=3, careless=2, accuracy=0.95)
    assert report.campaign_state == "finished"
    after = _agreement_with_known_labels(campaign)
    assert after > before
    assert PresenceJudgment.objects.filter(excluded=False, worker__in=careless).count() == 0
    # Every regular unit again has its three counted judgments.
    counts = PresenceJudgment.objects.filter(excluded=False).values("unit_id", "summary_id").annotate(n=Count("pk"))
    assert {row["n"] for row in counts} == {3}
    assert n_before > 0
    # Reversible: counting them again brings their judgments back into gold.
    quality.include_worker(campaign, careless[0])
    assert PresenceJudgment.objects.filter(excluded=False, worker=careless[0]).exists()
    print(f"agreement with known labels: without quality control {before:.3f}, with exclusion and replacement {after:.3f}")



@pytest.mark.django_db
def test_researcher_defines_tests_in_the_browser_form_and_errors_keep_the_text(small_campaign, researcher):
    from django.test import Client

    small_campaign.owner = researcher
    small_campaign.save()
    client = Client()
    client.force_login(researcher)
    definition = _demo_definition()
    bad = json.loads(json.dumps(definition))
    bad["verification"][0]["questions"][0]["answers"] = ["The manager"]
    bad_text = json.dumps(bad)
    response = client.post("/campaigns/quals/qualifications/", {"definition": bad_text})
    assert response.status_code == 400
    assert b"Verification item 1, question 1: answer &#x27;The manager&#x27; is not a substring" in response.content
    assert bad_text.replace('"', "&quot;").encode()[:200] in response.content  # what was typed is still there
    assert not HIT.objects.exists()
    response = client.post("/campaigns/quals/qualifications/", {"definition": json.dumps(definition)}, follow=True)
    assert b"Qualification tests saved: 4 generation, 4 presence, 4 presence_gold, 4 verification." in response.content
    assert HIT.objects.filter(kind="qualification").count() == 12 and HIT.objects.filter(kind="gold").count() == 4
    assert client.post("/campaigns/quals/qualifications/", {"definition": "{not json"}).status_code == 400


@pytest.mark.django_db
def test_a_redo_rounds_questions_do_not_pull_a_writers_questions_per_predicate_down(tmp_path, django_user_model):
    """A redo round's HIT asks only for what its predicate still lacks: a writer who wrote 2 questions on each
    first-round HIT and 1 on each of three redo HITs has 2.0 questions per predicate (not 1.5) and stays qualified
    on that count; their redo questions still count toward the share kept."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import ContentUnit, Predicate
    from annotation.selectors.quality import workers_figures
    from annotation.services.pipeline import launch_campaign
    from hits.models import Assignment
    from hits.services import worker_for_user

    refs = write_jsonl(tmp_path / "r.jsonl", [
        {"id": f"e{i}", "reference": f"The council approved plan {i} on Monday after a long debate."} for i in range(6)
    ])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": f"e{i}", "system": "s", "summary": "A plan passed."} for i in range(6)])
    campaign = import_campaign(name="Redo", references=refs, summaries=sums).campaign
    launch_campaign(campaign)
    campaign.refresh_from_db()
    writer = worker_for_user(django_user_model.objects.create_user("wri"))
    generation = TaskType.objects.get(slug="generation")
    now = timezone.now()
    predicates = list(Predicate.objects.filter(sentence__example__campaign=campaign)[:6])
    index = 0

    def hit_with_questions(predicate, round_number, n_questions, kept=True):
        nonlocal index
        hit = HIT.objects.create(batch_id=campaign.batch_id, task_type=generation, payload={"predicate": predicate.pk, "round": round_number},
                                 max_assignments=1, reward=campaign.reward_generation)
        Assignment.objects.create(hit=hit, worker=writer, state=Assignment.State.SUBMITTED, accepted_at=now,
                                  expires_at=now + timedelta(minutes=30), submitted_at=now, answers={})
        for _ in range(n_questions):
            index += 1
            ContentUnit.objects.create(example=predicate.sentence.example, predicate=predicate, kind=ContentUnit.Kind.QA, author=writer,
                                       index=1000 + index, text=f"q{index}", question=f"What did someone approve {index}?",
                                       round=round_number, state=ContentUnit.State.KEPT if kept else ContentUnit.State.REJECTED)

    for predicate in predicates:
        hit_with_questions(predicate, 1, 2)
    for predicate in predicates[:3]:
        hit_with_questions(predicate, 2, 1, kept=False)
    campaign.grace_period_items = 5
    figures = workers_figures(campaign, [writer.pk])[writer.pk]["generation"]
    assert figures["questions_per_predicate"]["value"] == 2.0 and figures["questions_per_predicate"]["status"] == "ok"
    assert figures["questions_per_predicate"]["n"] == 6 and figures["hits_done"] == 9
    # The redo questions count where they belong: 12 of the 15 resolved pairs kept.
    assert figures["valid_share"]["value"] == 12 / 15
