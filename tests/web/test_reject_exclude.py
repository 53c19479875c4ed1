"""Rejecting work asks what becomes of its data (issue 40): excluded (presence and verification's default:
the judgments stop counting, gold and scores are recomputed, a place reopens where the HIT needs one) or kept
(counts as before, and the page says so).  The review page and the export mark both."""

from __future__ import annotations

import csv

import pytest
from django.urls import reverse

from annotation.models import Campaign, GoldPresence, PresenceJudgment, SummaryScore
from annotation.services.export import export_campaign
from annotation.web.hit_pages import presence_field
from hits.models import HIT, Assignment, TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests.conftest import launched_scu_campaign

pytestmark = pytest.mark.django_db

ROWS = [("e1", "A cat sat .", "A cat sat .", ["a cat sat", "a dog ran"])]
#: Two of three judges find the first unit present: gold present, score 1/2.  Without the first judge the
#: other two are tied on it: the tie rule ("absent") gives it absent, score 0.
LABELS = {"j0": [True, False], "j1": [True, False], "j2": [False, False]}


@pytest.fixture(autouse=True)
def _after_commit(django_capture_on_commit_callbacks):
    """The follow-ups (gold labels, scores) run after the commit: each step below runs them (``committed``)."""
    global committed
    committed = lambda: django_capture_on_commit_callbacks(execute=True)  # noqa: E731
    yield


committed = None


@pytest.fixture
def judged(tmp_path, rita):
    campaign = launched_scu_campaign(tmp_path / "c", "Reject study", ROWS, owner=rita)
    assignments = {name: judge(name, labels) for name, labels in LABELS.items()}
    return Campaign.objects.get(pk=campaign.pk), assignments


def judge(name: str, labels: list[bool]) -> Assignment:
    worker = Worker.objects.get_or_create(external_id=name)[0]
    assignment = accept_next(worker, TaskType.objects.get(slug="presence"))
    assert assignment is not None, f"{name} got no presence HIT"
    with committed():
        submit_assignment(worker, assignment.pk, {presence_field(k): "1" if p else "0" for k, p in enumerate(labels, start=1)})
    return Assignment.objects.get(pk=assignment.pk)


def first_unit_gold(campaign) -> GoldPresence:
    return GoldPresence.objects.get(summary__system__campaign=campaign, origin="majority", unit__index=0)


def score(campaign) -> float:
    return SummaryScore.objects.get(summary__system__campaign=campaign).qapyramid


def reject(client, campaign, assignment, **extra):
    url = reverse("campaign-review-assignment", args=[campaign.slug, assignment.pk])
    with committed():
        return client.post(url, {"action": "reject", "message": "You did not read the summary.", **extra}, follow=True).content.decode()


def test_reject_with_exclude_reopens_a_place_recomputes_gold_and_scores_and_the_export_marks_it(client_rita, judged, tmp_path):
    campaign, assignments = judged
    hit = assignments["j0"].hit
    assert (first_unit_gold(campaign).present, score(campaign)) == (True, 0.5)
    assert HIT.objects.get(pk=hit.pk).state == "completed" and campaign.state == "finished"

    html = reject(client_rita, campaign, assignments["j0"], data="exclude")
    assert "rejected; the worker sees your message. 2 presence judgments excluded" in html
    assert "a place reopened for another worker" in html
    assert set(PresenceJudgment.objects.filter(assignment=assignments["j0"]).values_list("excluded", flat=True)) == {True}
    gold = first_unit_gold(campaign)
    assert (gold.present, gold.n_judgments, gold.decided_by) == (False, 2, "tie_rule")
    assert score(campaign) == 0.0
    hit.refresh_from_db()
    assert (hit.state, hit.max_assignments) == ("open", 4)
    assert Campaign.objects.get(pk=campaign.pk).state == "running"

    # The review page marks the judgments: rejected, excluded.
    page = client_rita.get(reverse("campaign-review-example", args=[campaign.slug, gold.unit.example_id])).content.decode()
    assert page.count("excluded: does not count") == 2 and page.count('class="mark rejected">rejected<') == 2

    # The export: excluded=1 and rejected=1 on the rejected judge's rows only.
    export_campaign(campaign, tmp_path / "out")
    rows = list(csv.DictReader((tmp_path / "out" / "judgments.csv").open()))
    assert {(r["worker"], r["excluded"], r["rejected"]) for r in rows} == {("j0", "1", "1"), ("j1", "0", "0"), ("j2", "0", "0")}

    # The replacement judge takes the reopened place: three judgments count again.
    judge("j3", [True, False])
    gold = first_unit_gold(campaign)
    assert (gold.present, gold.n_judgments, score(campaign)) == (True, 3, 0.5)


def test_reject_with_keep_leaves_the_data_counting_and_says_so(client_rita, judged, tmp_path):
    campaign, assignments = judged
    html = reject(client_rita, campaign, assignments["j0"], data="keep")
    assert "Its data is kept: it counts in the gold labels, scores and agreement as before." in html
    assert Assignment.objects.get(pk=assignments["j0"].pk).state == "rejected"
    assert not PresenceJudgment.objects.filter(excluded=True).exists()
    assert (first_unit_gold(campaign).present, first_unit_gold(campaign).n_judgments, score(campaign)) == (True, 3, 0.5)
    hit = HIT.objects.get(pk=assignments["j0"].hit_id)
    assert (hit.state, hit.max_assignments) == ("completed", 3)
    page = client_rita.get(reverse("campaign-review-example", args=[campaign.slug, first_unit_gold(campaign).unit.example_id])).content.decode()
    assert page.count("rejected, data kept") == 2 and "excluded: does not count" not in page
    export_campaign(campaign, tmp_path / "out")
    rows = list(csv.DictReader((tmp_path / "out" / "judgments.csv").open()))
    assert {(r["worker"], r["excluded"], r["rejected"]) for r in rows} == {("j0", "0", "1"), ("j1", "0", "0"), ("j2", "0", "0")}


def test_the_default_for_presence_is_exclude_and_the_review_form_offers_it_checked(client_rita, judged):
    campaign, assignments = judged
    page = client_rita.get(reverse("campaign-review-example", args=[campaign.slug, first_unit_gold(campaign).unit.example_id])).content.decode()
    assert page.count('name="data" value="exclude" checked') == 3  # one per submitted presence assignment
    html = reject(client_rita, campaign, assignments["j2"])  # no choice posted (an old page, the API's default)
    assert "2 presence judgments excluded" in html
    assert set(PresenceJudgment.objects.filter(assignment=assignments["j2"]).values_list("excluded", flat=True)) == {True}


def test_an_unknown_data_choice_is_refused_and_nothing_changes(client_rita, judged):
    campaign, assignments = judged
    html = reject(client_rita, campaign, assignments["j0"], data="shred")
    assert "Select a valid choice" in html
    assert Assignment.objects.get(pk=assignments["j0"].pk).state == "submitted"
    assert not PresenceJudgment.objects.filter(excluded=True).exists()


def test_bulk_rejection_asks_on_its_confirmation_page(client_rita, judged):
    campaign, assignments = judged
    url = reverse("campaign-review-bulk", args=[campaign.slug])
    page = client_rita.post(url, {"action": "reject", "message": "Not read.", "worker": "j1"}).content.decode()
    assert 'name="data" value="exclude" checked' in page and "excluded</strong>" in page
    with committed():
        done = client_rita.post(url, {"action": "reject", "message": "Not read.", "confirmed": "1", "data": "keep",
                                      "ids": [assignments["j1"].pk]}, follow=True).content.decode()
    assert "1 assignment rejected. Their data is kept" in done
    assert not PresenceJudgment.objects.filter(excluded=True).exists()


def test_the_api_rejects_with_the_data_excluded_by_default(judged, rita):
    from rest_framework.test import APIClient

    campaign, assignments = judged
    client = APIClient()
    client.force_authenticate(rita)
    with committed():
        response = client.post(f"/api/campaigns/{campaign.slug}/assignments/{assignments['j0'].pk}/reject/",
                               {"message": "Not read."}, format="json")
    assert response.status_code == 200, response.content
    assert set(PresenceJudgment.objects.filter(assignment=assignments["j0"]).values_list("excluded", flat=True)) == {True}


def reinclude(client, campaign, assignment):
    url = reverse("campaign-review-reinclude", args=[campaign.slug, assignment.pk])
    back = reverse("campaign-review-example", args=[campaign.slug, first_unit_gold(campaign).unit.example_id])
    with committed():
        return client.post(url, {"next": back}, follow=True).content.decode()


def state_of(campaign, hit) -> tuple:
    """What an exclusion changes and a re-inclusion must give back: the first unit's gold label, the score, the
    HIT's places, the campaign's state, and which judgments count."""
    gold = first_unit_gold(campaign)
    hit = HIT.objects.get(pk=hit.pk)
    return (gold.present, gold.n_judgments, gold.decided_by, score(campaign), hit.state, hit.max_assignments,
            hit.payload.get("replacements", 0), Campaign.objects.get(pk=campaign.pk).state,
            sorted(PresenceJudgment.objects.filter(excluded=False).values_list("pk", flat=True)))


def money() -> list:
    from hits.models import LedgerEntry

    return list(LedgerEntry.objects.order_by("pk").values_list("pk", "kind", "state", "amount")) + list(
        Assignment.objects.order_by("pk").values_list("pk", "state", "bonus"))


def test_reinclude_gives_back_the_gold_labels_scores_and_places_of_before_the_exclusion_and_moves_no_money(client_rita, judged):
    campaign, assignments = judged
    j0 = assignments["j0"]
    before = state_of(campaign, j0.hit)
    reject(client_rita, campaign, j0, data="exclude")
    excluded = state_of(campaign, j0.hit)
    assert excluded != before and excluded[:4] == (False, 2, "tie_rule", 0.0)

    # The review page offers the way back on the rejected assignment only, and says it moves no money.
    page = client_rita.get(reverse("campaign-review-example", args=[campaign.slug, first_unit_gold(campaign).unit.example_id])).content.decode()
    action = reverse("campaign-review-reinclude", args=[campaign.slug, j0.pk])
    assert page.count('class="reinclude-form"') == 1 and f'action="{action}"' in page
    assert "Nothing is paid or charged: the work stays rejected." in page

    paid = money()
    html = reinclude(client_rita, campaign, j0)
    assert "2 presence judgments count again: gold labels and scores are recomputed with them" in html
    assert "the replacement place nobody had taken was withdrawn" in html and "Nothing was paid or charged" in html
    assert state_of(campaign, j0.hit) == before
    assert money() == paid and Assignment.objects.get(pk=j0.pk).state == "rejected"
    assert 'class="reinclude-form"' not in html and "excluded: does not count" not in html

    # Again (a double click, a stale page): nothing changes.
    again = reinclude(client_rita, campaign, j0)
    assert "None of its data was excluded: nothing changed." in again
    assert state_of(campaign, j0.hit) == before and money() == paid


def test_reinclude_after_the_replacement_judged_keeps_the_replacement(client_rita, judged):
    campaign, assignments = judged
    reject(client_rita, campaign, assignments["j0"], data="exclude")
    judge("j3", [False, False])  # takes the reopened place: the first unit is 1 present of 3, absent
    assert (first_unit_gold(campaign).present, first_unit_gold(campaign).n_judgments) == (False, 3)
    html = reinclude(client_rita, campaign, assignments["j0"])
    assert "2 presence judgments count again" in html and "withdrawn" not in html
    gold = first_unit_gold(campaign)
    assert (gold.present, gold.n_judgments, gold.decided_by) == (False, 4, "tie_rule")  # 2 of 4: the tie rule
    hit = HIT.objects.get(pk=assignments["j0"].hit_id)
    assert (hit.state, hit.max_assignments) == ("completed", 4)


def test_reinclude_is_refused_for_work_that_was_not_rejected(client_rita, judged):
    campaign, assignments = judged
    before = state_of(campaign, assignments["j1"].hit)
    html = reinclude(client_rita, campaign, assignments["j1"])
    assert "Nothing was re-included: assignment" in html and "is submitted, not rejected" in html
    assert state_of(campaign, assignments["j1"].hit) == before


def test_another_researcher_cannot_reinclude(judged, client_rita, django_user_model):
    from django.test import Client

    from annotation.services.roles import make_researcher

    campaign, assignments = judged
    reject(client_rita, campaign, assignments["j0"], data="exclude")
    other = django_user_model.objects.create_user(username="otto", password="a-long-test-password")
    make_researcher(other)
    client = Client()
    client.force_login(other)
    response = client.post(reverse("campaign-review-reinclude", args=[campaign.slug, assignments["j0"].pk]))
    assert response.status_code == 404
    assert PresenceJudgment.objects.filter(assignment=assignments["j0"], excluded=True).count() == 2


def test_including_a_worker_again_leaves_their_rejected_and_excluded_work_excluded(client_rita, judged):
    from annotation.services.quality import exclude_worker, include_worker

    campaign, assignments = judged
    j0 = assignments["j0"]
    reject(client_rita, campaign, j0, data="exclude")
    rejected = state_of(campaign, j0.hit)
    worker = Worker.objects.get(pk=j0.worker_id)
    exclude_worker(campaign, worker, replace=False)
    include_worker(campaign, worker)
    # Only the worker's exclusion is undone: the rejection's stays (re-including rejected work is its own action).
    assert not PresenceJudgment.objects.filter(assignment=j0, excluded=False).exists()
    assert state_of(campaign, j0.hit) == rejected
