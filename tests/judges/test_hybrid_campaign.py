"""A budgeted campaign (human presence share below 100%) end to end with the simulated crowd."""

from __future__ import annotations

import random

import numpy as np
import pytest

from annotation.models import Campaign, GoldPresence, PresenceCandidate, PresenceRound
from annotation.scoring.routing import hit_budget
from annotation.selectors.hybrid import latest_labelling
from annotation.selectors.scores import campaign_scores
from annotation.services.campaign_import import import_campaign
from annotation.selectors.hybrid import routing_progress
from annotation.services.pipeline import launch_campaign
from annotation.management.simulation import simulate_crowd
from hits.models import HIT, FollowUp

pytestmark = pytest.mark.django_db(transaction=True)

SUBJECTS = ["mayor", "council", "storm", "company", "police", "school", "river", "team", "doctor", "court"]
VERBS = ["opened", "closed", "reported", "praised", "blocked", "funded", "moved", "won", "treated", "ruled"]
OBJECTS = ["park", "airport", "profits", "bridge", "road", "library", "village", "match", "patients", "case"]
PLACES = ["Denver", "Leeds", "Osaka", "Lagos", "Lima", "Oslo", "Perth", "Quito", "Riga", "Seoul"]


def write_folder(folder, n_examples=8, n_units=8, systems=("alpha", "beta", "gamma", "delta"), seed=4):
    """SCU folder: a unit is copied into a summary (present), half-copied (present or not: the unsure cases),
    or left out (absent); the labels say which."""
    rng = random.Random(seed)
    (folder / "summaries").mkdir(parents=True)
    (folder / "labels").mkdir()
    units, references = [], []
    for e in range(n_examples):
        row = []
        for u in range(n_units):
            k = (e * n_units + u) % 10
            row.append(f"The {SUBJECTS[k]} {VERBS[(k + e) % 10]} the {OBJECTS[(k + u) % 10]} in {PLACES[(u + e) % 10]} number{e}x{u}")
        units.append(row)
        references.append(" ".join(f"<t> {t} . </t>" for t in row))
    (folder / "ids.txt").write_text("".join(f"ex{e}\n" for e in range(n_examples)))
    (folder / "references.txt").write_text("".join(r + "\n" for r in references))
    (folder / "SCUs.txt").write_text("".join("\t".join(r) + "\n" for r in units))
    for quality, system in enumerate(systems):
        lines, labels = [], []
        for e in range(n_examples):
            sentences, row = [], []
            for text in units[e]:
                draw = rng.random() + 0.1 * quality
                words = text.split()
                if draw < 0.45:
                    sentences.append(text)
                    row.append(1)
                elif draw < 0.75:
                    sentences.append(" ".join(words[: len(words) // 2 + rng.randint(0, 2)]))
                    row.append(int(rng.random() < 0.5))
                else:
                    row.append(0)
            lines.append(" ".join(f"<t> {s} . </t>" for s in sentences) or "<t> Nothing happened . </t>")
            labels.append(row)
        (folder / "summaries" / f"{system}.summary").write_text("".join(line + "\n" for line in lines))
        (folder / "labels" / f"{system}.label").write_text("".join("\t".join(map(str, r)) + "\n" for r in labels))
    return folder


def budgeted_campaign(tmp_path, **fields):
    campaign = import_campaign(name="Budgeted", folder=write_folder(tmp_path / "data")).campaign
    settings = dict(human_presence_share=0.5, presence_rounds=2, active_rounds=True, gold_share=0.0, assignments_presence=3)
    settings.update(fields)
    Campaign.objects.filter(pk=campaign.pk).update(**settings)
    campaign.refresh_from_db()
    return campaign


def test_only_the_least_sure_share_is_posted_at_launch(tmp_path):
    campaign = budgeted_campaign(tmp_path, routing_rule="uncertainty")
    assert launch_campaign(campaign) == 0  # nothing posted by the launch itself: the routing pass posts
    campaign.refresh_from_db()
    candidates = list(PresenceCandidate.objects.filter(campaign=campaign))
    assert len(candidates) == 8 * 4 * 2  # examples x systems x HITs of 4 units
    budget = hit_budget(len(candidates), 0.5)
    posted = HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence")
    assert posted.count() == budget // 2  # round 1 of 2
    first = PresenceRound.objects.get(campaign=campaign)
    assert first.number == 1 and first.state == "open" and first.routed == posted.count()
    routed = [c for c in candidates if c.hit_id]
    waiting = [c for c in candidates if not c.hit_id]
    assert {c.hit_id for c in routed} == set(posted.values_list("pk", flat=True))
    # The least sure went to people: every routed HIT is at least as unsure as every one kept back.
    assert min(c.uncertainty for c in routed) >= max(c.uncertainty for c in waiting)
    # Routed HITs carry exactly their candidate's units and summary.
    for c in routed:
        assert c.hit.payload == {"summary": c.summary_id, "predicate": None, "units": c.units}


def test_a_budgeted_campaign_runs_to_its_end_with_the_simulated_crowd(tmp_path, eager_celery, monkeypatch):
    from annotation.automation.judges import adapt

    monkeypatch.setattr(adapt, "MIN_LABELS", 20)
    # The uncertainty rule, the judge's units counted as its labels (the hand computation below); the probability rule
    # and the active rule have their own tests.
    campaign = budgeted_campaign(tmp_path, judge_scoring="label", routing_rule="uncertainty")
    launch_campaign(campaign)
    campaign.refresh_from_db()
    report = simulate_crowd(campaign, 6, seed=7, accuracy=1.0, max_seconds=300)
    assert report.campaign_state == "finished"
    n_candidates = PresenceCandidate.objects.filter(campaign=campaign).count()
    budget = hit_budget(n_candidates, 0.5)
    hits = HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence", kind="regular")
    # Only the routed HITs were ever created, and no more than the share.
    assert hits.count() == budget <= 0.5 * n_candidates
    assert hits.filter(state="completed").count() == budget
    rounds = list(PresenceRound.objects.filter(campaign=campaign).order_by("number"))
    assert [r.number for r in rounds] == [1, 2] and all(r.state == "done" for r in rounds)
    assert [r.routed for r in rounds] == [budget // 2, budget - budget // 2]
    # Active rounds: round 2 was routed by a judge retrained on round 1's human labels.
    assert "adapted" not in rounds[0].judge_version
    assert "adapted" in rounds[1].judge_version and rounds[1].training_labels == 4 * (budget // 2)
    labelling = latest_labelling(campaign)
    assert labelling.judge_version.startswith("lexical")
    assert "adapted" in labelling.judge_version  # the last refit (after round 2) labelled the rest

    result = campaign_scores(campaign, n_boot=200)
    scores = result["hybrid"]
    assert scores["scoring"] == "label" and scores["systems"] == {n: s["qapyramid"] for n, s in result["systems"].items()}
    scores = {**scores, "systems": result["systems"]}
    assert scores["judge_version"] == labelling.judge_version
    assert scores["n_units"] == 4 * n_candidates
    human_units = 4 * budget
    assert scores["human_units"] == human_units
    for name, system in scores["systems"].items():
        assert system["n_summaries"] == 8 and system["n_units"] == 64
        assert 0 < system["human_share"] < 1
        # The judge chose which units people saw: no interval, and the reason.
        assert system["ci95"] == [None, None] and "no interval" in system["no_interval_reason"].lower()
    # The score mixes the two sources: recompute one summary by hand.
    human = dict(((u, s), p) for u, s, p in GoldPresence.objects.filter(
        summary__system__campaign=campaign, origin="majority").values_list("unit_id", "summary_id", "present"))
    judge = dict(((u, s), p) for u, s, p in labelling.presences.values_list("unit_id", "summary_id", "present"))
    by_system = {}
    for candidate in PresenceCandidate.objects.filter(campaign=campaign).select_related("summary__system"):
        for unit in candidate.units:
            key = (unit, candidate.summary_id)
            by_system.setdefault(candidate.summary.system.name, {}).setdefault(candidate.summary_id, []).append(
                human[key] if key in human else judge[key])
    for name, summaries in by_system.items():
        expected = np.mean([np.mean(labels) for labels in summaries.values()])
        assert scores["systems"][name]["qapyramid"] == pytest.approx(expected)
    progress = routing_progress(campaign)
    assert progress["finished"] and progress["routed"] == budget and progress["completed"] == budget
    # The page says "all rounds done" only when the pipeline agrees: an example whose presence has not started
    # (a QA example still settling) still owes HITs.
    from annotation.models import Example

    Example.objects.filter(pk=Example.objects.filter(campaign=campaign).values("pk")[:1]).update(presence_started=False)
    assert not routing_progress(campaign)["finished"]


def test_a_broker_outage_mid_round_loses_nothing(tmp_path, eager_celery, monkeypatch, settings):
    """Round 1's HITs complete while the broker is down: the next round waits in the outbox and opens when it returns."""
    from config.celery import app
    from hits import outbox

    # The completed HITs' follow-ups run in the submissions (with a Redis broker, as in CI, they would otherwise be
    # gathered in Redis for a worker this test does not run): what waits in the outbox is the routing pass itself.
    settings.FOLLOWUP_COALESCE_SECONDS = 0

    campaign = budgeted_campaign(tmp_path)
    launch_campaign(campaign)
    campaign.refresh_from_db()
    real_publish = outbox._publish

    def broker_down(task_name, args, countdown=None):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(outbox, "_publish", broker_down)
    app.conf.task_always_eager = False
    try:
        # The crowd finishes round 1 (its follow-ups run in the submission without a Redis broker).
        report = simulate_crowd(campaign, 6, seed=3, accuracy=1.0, max_seconds=120)
    finally:
        app.conf.task_always_eager = True
    assert report.campaign_state == "running"
    assert PresenceRound.objects.get(campaign=campaign).state == "open"  # nobody could close it
    stored = list(FollowUp.objects.values_list("task_name", "args"))
    assert ("annotation.route_presence", [campaign.pk]) in stored
    round_one = HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence")
    assert round_one.count() == round_one.filter(state="completed").count() > 0
    # The broker returns: the stored pass runs, closes round 1 and posts round 2.
    monkeypatch.setattr(outbox, "_publish", real_publish)
    assert outbox.flush() >= 1
    assert not FollowUp.objects.filter(task_name="annotation.route_presence").exists()
    assert list(PresenceRound.objects.filter(campaign=campaign).values_list("number", "state")) == [(1, "done"), (2, "open")]
    report = simulate_crowd(campaign, 6, seed=4, accuracy=1.0, max_seconds=120)
    assert report.campaign_state == "finished"
    budget = hit_budget(PresenceCandidate.objects.filter(campaign=campaign).count(), 0.5)
    assert HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence", state="completed").count() == budget


def test_the_paper_protocol_is_the_default(tmp_path):
    campaign = import_campaign(name="Paper", folder=write_folder(tmp_path / "data")).campaign
    assert campaign.human_presence_share == 1.0 and not campaign.is_hybrid
    launch_campaign(campaign)
    campaign.refresh_from_db()
    assert not PresenceCandidate.objects.exists()
    assert HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence").count() == 8 * 4 * 2
    assert "hybrid" not in campaign_scores(campaign, n_boot=0)


@pytest.mark.parametrize("n_rounds", [1, 2])
def test_a_budgeted_qa_campaign_routes_presence_as_its_examples_settle(eager_celery, n_rounds):
    """QA pairs written and verified by the crowd: each example's presence HITs become candidates when its
    predicates settle, and the rounds route the share of them that arrived; the last round takes each example's
    share as it comes and closes on the last (one round: one round, not "round 2 of 1")."""
    from django.core.management import call_command

    call_command("load_demo", password="demo-pass-123")
    campaign = Campaign.objects.get(slug="demo-news")
    Campaign.objects.filter(pk=campaign.pk).update(human_presence_share=0.5, presence_rounds=n_rounds)
    campaign.refresh_from_db()
    launch_campaign(campaign)
    campaign.refresh_from_db()
    report = simulate_crowd(campaign, 8, seed=3, max_seconds=300)
    assert report.campaign_state == "finished"
    candidates = PresenceCandidate.objects.filter(campaign=campaign)
    assert candidates.exists() and all(c.predicate_id for c in candidates)
    budget = hit_budget(candidates.count(), 0.5)
    posted = HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence", kind="regular")
    assert posted.count() == budget == candidates.filter(hit__isnull=False).count()
    rounds = PresenceRound.objects.filter(campaign=campaign).order_by("number")
    assert [(r.number, r.state) for r in rounds] == [(k, "done") for k in range(1, n_rounds + 1)]
    assert all(r.routed > 0 for r in rounds) and sum(r.routed for r in rounds) == budget
    hybrid = campaign_scores(campaign, n_boot=100)["hybrid"]
    assert hybrid["n_units"] == sum(len(c.units) for c in candidates)
    assert 0 < hybrid["human_units"] < hybrid["n_units"]


def test_a_budgeted_qa_campaign_spends_its_budget_in_real_rounds_with_a_retrained_judge(eager_celery, monkeypatch, researcher):
    """3 rounds in a QA campaign, whose presence HITs arrive as examples settle: no round closes empty at launch,
    each routes HITs, the judge is retrained on the labels so far before each next round, and the progress page
    shows each round's HITs, done counts and judge version."""
    from django.core.management import call_command
    from django.test import Client

    from annotation.automation.judges import adapt

    monkeypatch.setattr(adapt, "MIN_LABELS", 10)
    call_command("load_demo", password="demo-pass-123")
    campaign = Campaign.objects.get(slug="demo-news")
    Campaign.objects.filter(pk=campaign.pk).update(human_presence_share=0.5, presence_rounds=3, owner=researcher)
    campaign.refresh_from_db()
    launch_campaign(campaign)
    # At launch no example is settled: no round yet (none opened and closed empty).
    assert not PresenceRound.objects.filter(campaign=campaign).exists()
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    started = campaign.examples.filter(presence_started=True).count()
    assert f"Round 1 opens when 2 of the 6 examples have their presence HITs ({started} so far)." in page
    report = simulate_crowd(campaign, 8, seed=3, max_seconds=300)
    assert report.campaign_state == "finished"
    candidates = PresenceCandidate.objects.filter(campaign=campaign)
    budget = hit_budget(candidates.count(), 0.5)
    rounds = list(PresenceRound.objects.filter(campaign=campaign).order_by("number"))
    assert [r.number for r in rounds] == [1, 2, 3]  # no "round 4 of 3"
    # Every round closes done, and the first routes HITs.  (Not every round: when the examples reach presence in
    # one burst, as the simulated writers' fuller questions now make them do on the demo, round 1 opens with most
    # candidates already there and routes most of the budget, and a later round may close with nothing left to
    # route.  Whether the schedule should hold back a share for later rounds is open; see the closing note.)
    assert all(r.state == "done" for r in rounds) and rounds[0].routed > 0
    assert sum(r.routed for r in rounds) == budget == candidates.filter(hit__isnull=False).count()
    # Each round's HITs are the candidates it routed.
    assert [candidates.filter(round=r.number).count() for r in rounds] == [r.routed for r in rounds]
    # Round k opened once k/3 of the examples had their presence HITs: round 1 saw no more candidates than round 3
    # (as many when the examples reached presence in one burst before round 1's pass ran, as with a real worker).
    assert rounds[0].candidates <= rounds[2].candidates == candidates.count()
    # The judge learnt between rounds: each round's version differs from the one before, on more labels.
    versions = [r.judge_version for r in rounds]
    assert "adapted" not in versions[0] and all("adapted" in v for v in versions[1:])
    assert rounds[0].training_labels == 0
    for before, after in zip(rounds, rounds[1:]):  # retrained on more labels after every round that routed HITs
        if before.routed:
            assert after.judge_version != before.judge_version and after.training_labels > before.training_labels
        else:
            assert after.training_labels >= before.training_labels
    page = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    import re

    for r in rounds:
        row = re.search(rf'<tr data-round="{r.number}">(.*?)</tr>', page, re.S).group(1)
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        # Round, state, HITs routed, done, labels learnt from, judge version.
        assert [cells[0], cells[1], cells[2], cells[3], cells[5]] == [str(r.number), "done", str(r.routed), str(r.routed), r.judge_version]
    assert "All rounds done." in page


def test_a_system_added_after_presence_started_gets_only_its_share_routed(tmp_path, eager_celery, monkeypatch):
    """A finished budgeted campaign takes a new system: its presence HITs become candidates, the campaign runs
    again, and people get only the share of the new HITs (the least-sure first), not all of them."""
    import json as _json

    from annotation.automation.judges import adapt
    from annotation.services.systems import add_systems

    monkeypatch.setattr(adapt, "MIN_LABELS", 20)
    campaign = budgeted_campaign(tmp_path)
    launch_campaign(campaign)
    campaign.refresh_from_db()
    assert simulate_crowd(campaign, 6, seed=7, accuracy=1.0, max_seconds=300).campaign_state == "finished"
    before = PresenceCandidate.objects.filter(campaign=campaign).count()
    posted_before = HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence", kind="regular").count()

    units = (tmp_path / "data" / "SCUs.txt").read_text().splitlines()
    lines = [_json.dumps({"id": f"ex{e}", "system": "epsilon", "summary": row.split("\t")[e % 8] + "."})
             for e, row in enumerate(units)]
    path = tmp_path / "epsilon.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = add_systems(campaign, path)
    new = PresenceCandidate.objects.filter(campaign=campaign, summary__system__name="epsilon")
    assert result.n_hits == 0 and result.n_routed_candidates == new.count() == 8 * 2
    campaign.refresh_from_db()
    assert campaign.state == "running"  # the routing pass (eager here) ran after the commit
    total = before + new.count()
    regular = HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence", kind="regular")
    # People are asked for no more than the share of all the campaign's presence HITs, the new ones included.
    assert regular.count() == hit_budget(total, 0.5) < posted_before + new.count()
    assert regular.count() > posted_before  # some of the new HITs went to people
    extra = PresenceRound.objects.filter(campaign=campaign).order_by("-number").first()
    assert extra.number == 3 and extra.routed == regular.count() - posted_before
    report = simulate_crowd(campaign, 6, seed=8, accuracy=1.0, max_seconds=300)
    assert report.campaign_state == "finished"
    result = campaign_scores(campaign, n_boot=50)
    scores = result["hybrid"]
    assert result["systems"]["epsilon"]["n_summaries"] == 8 and scores["n_units"] == 4 * total


def test_gold_checks_hide_among_the_routed_hits_of_a_budgeted_scu_campaign(tmp_path, eager_celery, monkeypatch):
    """With a gold share and imported labels, each round turns that share of its routed HITs into gold checks:
    workers meet them among their work, rounds do not wait for them, and their units count as judged by people
    with the known labels."""
    from annotation.automation.judges import adapt
    from hits.models import Assignment

    monkeypatch.setattr(adapt, "MIN_LABELS", 20)
    campaign = budgeted_campaign(tmp_path, gold_share=0.25)
    launch_campaign(campaign)
    campaign.refresh_from_db()
    n_candidates = PresenceCandidate.objects.filter(campaign=campaign).count()
    budget = hit_budget(n_candidates, 0.5)
    first = list(PresenceCandidate.objects.filter(campaign=campaign, round=1).select_related("hit"))
    gold_first = [c for c in first if c.hit.kind == "gold"]
    assert len(first) == budget // 2 and len(gold_first) == round(len(first) * 0.25) > 0
    imported = dict(((u, s), p) for u, s, p in GoldPresence.objects.filter(
        summary__system__campaign=campaign, origin="imported").values_list("unit_id", "summary_id", "present"))
    for c in gold_first:
        assert c.hit.answer_key == {"labels": {str(u): imported[(u, c.summary_id)] for u in c.units}}

    report = simulate_crowd(campaign, 6, seed=7, accuracy=1.0, max_seconds=300)
    assert report.campaign_state == "finished"  # the gold checks, open for every worker, held no round up
    routed = PresenceCandidate.objects.filter(campaign=campaign, hit__isnull=False).select_related("hit")
    gold = [c for c in routed if c.hit.kind == "gold"]
    assert routed.count() == budget and len(gold) >= len(gold_first)
    assert Assignment.objects.filter(hit__in=[c.hit_id for c in gold], state__in=Assignment.DONE_STATES).exists()
    assert PresenceRound.objects.filter(campaign=campaign).count() == 2
    scores = campaign_scores(campaign, n_boot=50)["hybrid"]
    # Every routed unit, gold checks included, is labelled by people.
    assert scores["human_units"] == 4 * budget
    progress = routing_progress(campaign)
    assert progress["completed"] == budget and sum(r["gold_checks"] for r in progress["rounds"]) == len(gold)


class _BrokenJudge:
    """A judge whose model cannot answer (as a trained model whose files went missing would)."""

    version = "broken-1"
    threshold = 0.5

    def predict(self, pairs):
        from annotation.automation.judges.base import JudgeError

        raise JudgeError("the model directory 'models/judge-x' has no weights")


def test_a_failing_judge_stops_routing_visibly_and_a_retry_resumes_it(tmp_path, eager_celery, monkeypatch, researcher):
    """The judge fails during the pass: the launch still works, nothing is posted or half-written, the progress
    page says why and offers a retry; the retry with another judge opens round 1 and clears the error."""
    from django.test import Client

    from annotation.automation.judges import registry

    real_get_judge = registry.get_judge
    monkeypatch.setattr(registry, "get_judge", lambda name, **o: _BrokenJudge() if name == "broken" else real_get_judge(name, **o))
    campaign = budgeted_campaign(tmp_path, presence_judge="broken")
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    launch_campaign(campaign)  # the pass runs in-process after the commit: its failure must not reach the caller
    campaign.refresh_from_db()
    assert campaign.state == "running" and campaign.routing_failures == 1
    assert "has no weights" in campaign.routing_error
    assert not HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence").exists()
    assert not PresenceRound.objects.filter(campaign=campaign).exists()
    assert latest_labelling(campaign) is None

    client = Client()
    client.force_login(researcher)
    page = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert 'id="routing-error"' in page and "has no weights" in page and "Retry routing now" in page
    refused = client.post(f"/campaigns/{campaign.slug}/routing/retry/", {"presence_judge": "oracle"}, follow=True)
    assert "Routing not retried" in refused.content.decode() and "unknown judge" in refused.content.decode()
    campaign.refresh_from_db()
    assert campaign.presence_judge == "broken" and campaign.routing_failures == 1

    retried = client.post(f"/campaigns/{campaign.slug}/routing/retry/", {"presence_judge": "lexical"}, follow=True)
    assert "Routing pass asked for with the judge lexical" in retried.content.decode()
    campaign.refresh_from_db()
    assert campaign.presence_judge == "lexical" and campaign.routing_error == "" and campaign.routing_failures == 0
    first = PresenceRound.objects.get(campaign=campaign)
    assert first.number == 1 and first.routed > 0 and first.judge_version.startswith("lexical")
    assert 'id="routing-error"' not in client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()


def test_with_a_broker_a_failed_routing_pass_is_tried_again_with_backoff(tmp_path, monkeypatch):
    """Not in-process: each failure schedules the next pass, later each time (capped)."""
    from annotation.automation import hybrid as automation_hybrid
    from annotation.automation.judges import registry
    from config.celery import app as current_app
    from hits import outbox

    monkeypatch.setattr(registry, "get_judge", lambda name, **o: _BrokenJudge())
    campaign = budgeted_campaign(tmp_path, presence_judge="broken")
    sent = []
    monkeypatch.setattr(outbox, "send_now", lambda name, args, countdown=None: sent.append((name, args, countdown)) or True)
    launch_campaign(campaign)  # its routing request is captured, not run
    sent.clear()
    was = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False  # as with a broker (restored below, as the eager_celery fixture does)
    try:
        results = [automation_hybrid.route_campaign(campaign.pk) for _ in range(8)]
    finally:
        current_app.conf.task_always_eager = was
    assert [r["retry_in"] for r in results] == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    assert [s[2] for s in sent] == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    assert all(name == "annotation.route_presence" and args == [campaign.pk] for name, args, _ in sent)
    campaign.refresh_from_db()
    assert campaign.routing_failures == 8 and campaign.state == "running"


def test_the_api_shows_a_routing_error_and_retries_it(tmp_path, eager_celery, monkeypatch, researcher):
    from rest_framework.test import APIClient

    from annotation.automation.judges import registry

    real_get_judge = registry.get_judge
    monkeypatch.setattr(registry, "get_judge", lambda name, **o: _BrokenJudge() if name == "broken" else real_get_judge(name, **o))
    campaign = budgeted_campaign(tmp_path, presence_judge="broken")
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    launch_campaign(campaign)
    api = APIClient()
    api.force_authenticate(researcher)
    progress = api.get(f"/api/campaigns/{campaign.slug}/progress/").json()
    assert "has no weights" in progress["routing"]["error"]["message"] and progress["routing"]["error"]["failures"] == 1
    bad = api.post(f"/api/campaigns/{campaign.slug}/retry-routing/", {"presence_judge": "oracle"}, format="json")
    assert bad.status_code == 400 and "unknown judge" in bad.json()["presence_judge"][0]
    again = api.post(f"/api/campaigns/{campaign.slug}/retry-routing/", {}, format="json")  # same broken judge
    assert again.status_code == 200
    assert api.get(f"/api/campaigns/{campaign.slug}/progress/").json()["routing"]["error"]["failures"] == 2
    fixed = api.post(f"/api/campaigns/{campaign.slug}/retry-routing/", {"presence_judge": "lexical"}, format="json")
    assert fixed.status_code == 200 and fixed.json()["detail"].endswith("judge lexical.")
    routing = api.get(f"/api/campaigns/{campaign.slug}/progress/").json()["routing"]
    assert routing["error"] is None and routing["rounds"][0]["routed"] > 0
    Campaign.objects.filter(pk=campaign.pk).update(human_presence_share=1.0)
    refused = api.post(f"/api/campaigns/{campaign.slug}/retry-routing/", {}, format="json")
    assert refused.status_code == 409 and "does not route" in refused.json()["detail"]


def test_a_top_up_pass_replaces_the_labels_it_supersedes(tmp_path, eager_celery):
    """New candidates during an open round (here: a system added) top the round up with a new labelling of every
    unit; the round points at the new labels and the superseded copy is dropped, not kept per pass."""
    import json as _json

    from annotation.models import AutoPresence, AutoscoreRun
    from annotation.services.systems import add_systems

    campaign = budgeted_campaign(tmp_path)
    launch_campaign(campaign)
    first = latest_labelling(campaign)
    routed_before = PresenceRound.objects.get(campaign=campaign).routed
    units = (tmp_path / "data" / "SCUs.txt").read_text().splitlines()
    path = tmp_path / "epsilon.jsonl"
    path.write_text("".join(_json.dumps({"id": f"ex{e}", "system": "epsilon", "summary": row.split("\t")[0] + "."}) + "\n"
                            for e, row in enumerate(units)))
    add_systems(campaign, path)
    round_one = PresenceRound.objects.get(campaign=campaign)
    assert round_one.state == "open" and round_one.routed > routed_before  # topped up
    runs = AutoscoreRun.objects.filter(campaign=campaign, judge_name__startswith="hybrid:")
    assert list(runs) == [round_one.labelling_run] and round_one.labelling_run != first
    assert AutoPresence.objects.filter(run__campaign=campaign).count() == 4 * PresenceCandidate.objects.filter(campaign=campaign).count()


def test_the_launch_line_counts_the_hits_the_routing_pass_posted(tmp_path, eager_celery):
    """Issue 40: simulate_crowd printed "Launched …: 0 HITs" although the routing pass had posted them."""
    from io import StringIO

    from django.core.management import call_command

    campaign = budgeted_campaign(tmp_path)
    out = StringIO()
    call_command("simulate_crowd", campaign=campaign.slug, workers=1, max_seconds=1, stdout=out)
    posted = HIT.objects.filter(batch=Campaign.objects.get(pk=campaign.pk).batch_id, kind="regular").count()
    assert posted > 0
    assert f"Launched '{campaign.slug}': {posted} HITs" in out.getvalue()
