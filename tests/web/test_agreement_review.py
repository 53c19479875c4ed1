"""The agreement dashboard and the review page (approve, reject, bonus, correct a QA pair)."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation import scoring
from annotation.models import QAPairCorrection
from annotation.models import ContentUnit, Predicate, PresenceJudgment, SystemSummary
from annotation.services.gold import refresh_gold
from hits.models import HIT, Assignment, Worker
from tests.web.conftest import settle_with_kept_pairs

pytestmark = pytest.mark.django_db


def _judge(campaign, labels_for):
    """Three judges label every (kept unit, summary); ``labels_for(worker index, unit, summary)`` decides."""
    workers = [Worker.objects.create(external_id=f"judge-{i}") for i in range(3)]
    units = list(ContentUnit.objects.filter(example__campaign=campaign, state="kept"))
    rows = []
    for summary in SystemSummary.objects.filter(system__campaign=campaign):
        for unit in units:
            if unit.example_id != summary.example_id:
                continue
            for i, worker in enumerate(workers):
                rows.append(PresenceJudgment(unit=unit, summary=summary, worker=worker, present=labels_for(i, unit, summary)))
    PresenceJudgment.objects.bulk_create(rows)
    refresh_gold(campaign, {(r.unit_id, r.summary_id) for r in rows})
    return workers, rows


def test_dashboard_figures_match_the_scoring_functions(client_rita, draft):
    settle_with_kept_pairs(draft)
    # Judge 2 disagrees on every third unit; the others always say "present" for s2 and alternate for s1.
    workers, rows = _judge(draft, lambda i, u, s: (s.system.name == "s2" or u.index % 2 == 0) != (i == 2 and u.index % 3 == 0))
    Predicate.objects.filter(example__campaign=draft).update(flagged=False)
    flagged = Predicate.objects.filter(example__campaign=draft).first()
    Predicate.objects.filter(pk=flagged.pk).update(flagged=True, flag_reason="only 1 QA pair kept after 3 rounds")
    page = client_rita.get(reverse("campaign-agreement", args=[draft.slug]))
    assert page.status_code == 200
    html = page.content.decode()
    _, pair = np.unique(np.array([[r.unit_id, r.summary_id] for r in rows]), axis=0, return_inverse=True)
    expected = scoring.krippendorff_alpha_nominal(pair.ravel(), np.array([int(r.present) for r in rows]))
    assert f'id="alpha-pooled">{expected:.3f}<' in html
    board = page.context["board"]
    assert {s["name"] for s in board["systems"]} == {"s1", "s2"}
    # Per-worker accuracy against the majority: judges 0 and 1 always agree with it.
    accuracy = {row["worker"]: row["accuracy"] for row in board["worker_accuracy"]}
    assert accuracy["judge-0"] == accuracy["judge-1"] == 1.0 and accuracy["judge-2"] < 1.0
    bars = [int(x) for x in re.findall(r'class="bar" data-count="(\d+)"', html)]
    assert sum(bars) == 3 and bars[-1] == 2
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in html and 'id="worker-accuracy"' in html
    # Split decisions are listed with a link to inspect them; the flagged predicate is shown.
    assert board["disagreement"] and all(0 < d["n_present"] < d["n"] for d in board["disagreement"])
    assert "inspect</a>" in html and "only 1 QA pair kept after 3 rounds" in html


def test_alpha_over_time_in_batches(client_rita, draft):
    settle_with_kept_pairs(draft, pairs_per_predicate=9)
    _judge(draft, lambda i, u, s: (u.index + i) % 4 != 0)
    # Spread the judgments over time so that batches follow completion order.
    start = timezone.now() - timedelta(days=3)
    for k, pk in enumerate(PresenceJudgment.objects.order_by("pk").values_list("pk", flat=True)):
        PresenceJudgment.objects.filter(pk=pk).update(created_at=start + timedelta(minutes=k))
    board = client_rita.get(reverse("campaign-agreement", args=[draft.slug])).context["board"]
    n_pairs = PresenceJudgment.objects.values("unit", "summary").distinct().count()
    assert n_pairs >= 40
    assert len(board["batches"]) == min(10, n_pairs // 20)
    assert sum(b["n_units"] for b in board["batches"]) == n_pairs
    until = [b["until"] for b in board["batches"]]
    assert until == sorted(until)
    for b in board["batches"]:
        if b["alpha"] is not None and b["lo"] is not None:
            assert b["lo"] <= b["alpha"] + 1e-9 and b["alpha"] <= b["hi"] + 1e-9
    html = client_rita.get(reverse("campaign-agreement", args=[draft.slug])).content.decode()
    assert 'id="alpha-over-time"' in html


def test_empty_campaign_dashboard_and_strangers(client_rita, draft, django_user_model):
    html = client_rita.get(reverse("campaign-agreement", args=[draft.slug])).content.decode()
    assert 'id="alpha-pooled">undefined<' in html and "No judgments yet" in html
    stranger = django_user_model.objects.create_user(username="sam", password="a-long-test-password")
    client = Client()
    client.force_login(stranger)
    assert client.get(reverse("campaign-agreement", args=[draft.slug])).status_code == 404


def _submitted_presence_assignment(campaign, worker):
    hit = HIT.objects.filter(batch_id=campaign.batch_id, task_type__slug="presence").first()
    now = timezone.now()
    HIT.objects.filter(pk=hit.pk).update(n_taken=1, n_submitted=1)
    return Assignment.objects.create(
        hit=hit, worker=worker, state=Assignment.State.SUBMITTED, accepted_at=now, expires_at=now + timedelta(hours=1),
        submitted_at=now, answers={"labels": []},
    )


def test_review_page_side_by_side_and_assignment_decisions(client_rita, draft):
    settle_with_kept_pairs(draft)
    draft.refresh_from_db()
    workers, _ = _judge(draft, lambda i, u, s: i != 1)
    assignment = _submitted_presence_assignment(draft, workers[0])
    summary = SystemSummary.objects.get(pk=assignment.hit.payload["summary"])
    url = reverse("campaign-review-example", args=[draft.slug, summary.example_id])
    html = client_rita.get(url).content.decode()
    assert f'data-assignment="{assignment.pk}"' in html
    # Each judge's name links to their worker view.
    assert re.search(r'class="worker-link">judge-1</a>: not present', html) and re.search(r'class="worker-link">judge-0</a>: present', html)
    assert "<strong>present</strong>" in html
    action = reverse("campaign-review-assignment", args=[draft.slug, assignment.pk])
    # A rejection needs a message; nothing changes without one.
    response = client_rita.post(action, {"action": "reject", "message": "", "next": url}, follow=True)
    assert "Say why the work is rejected" in response.content.decode()
    assert Assignment.objects.get(pk=assignment.pk).state == "submitted"
    client_rita.post(action, {"action": "bonus", "amount": "0.25", "message": "careful work", "next": url})
    assert Assignment.objects.get(pk=assignment.pk).bonus == Decimal("0.25")
    client_rita.post(action, {"action": "approve", "message": "thanks", "next": url})
    approved = Assignment.objects.get(pk=assignment.pk)
    assert approved.state == "approved" and approved.review_message == "thanks"
    # Rejecting approved work is refused by the payment service, and said so.
    response = client_rita.post(action, {"action": "reject", "message": "no", "next": url}, follow=True)
    assert "Only submitted work can be rejected" in response.content.decode()
    # A foreign "next" never redirects off the review pages.
    response = client_rita.post(action, {"action": "approve", "next": "https://evil.example/"})
    assert response["Location"] == reverse("campaign-review", args=[draft.slug])


def test_correct_a_qa_pair_is_logged_and_checked(client_rita, rita, draft):
    settle_with_kept_pairs(draft)
    unit = ContentUnit.objects.filter(example__campaign=draft, state="kept").select_related("predicate__sentence").first()
    sentence = unit.predicate.sentence.text
    url = reverse("campaign-correct-pair", args=[draft.slug, unit.pk])
    response = client_rita.post(url, {"question": "What did someone open?", "answers": "a new park\nelephants", "reason": "typo"}, follow=True)
    assert "not found: &#x27;elephants&#x27;" in response.content.decode()
    assert not QAPairCorrection.objects.exists()
    good = sentence.split()[1]
    response = client_rita.post(url, {"question": "What did someone open?", "answers": good, "reason": "clearer"}, follow=True)
    assert "corrected (logged)" in response.content.decode()
    entry = QAPairCorrection.objects.get()
    assert (entry.changed_by, entry.old_question, entry.new_question, entry.new_answers) == (rita, unit.question, "What did someone open?", [good])
    unit.refresh_from_db()
    assert unit.text == f"What did someone open? {good}"
    assert f"was “{entry.old_question}" in response.content.decode()


def test_review_actions_need_csrf_and_the_campaign(draft, rita, django_user_model):
    settle_with_kept_pairs(draft)
    unit = ContentUnit.objects.filter(example__campaign=draft).first()
    client = Client(enforce_csrf_checks=True)
    client.force_login(rita)
    assert client.post(reverse("campaign-correct-pair", args=[draft.slug, unit.pk]), {"question": "Q?", "answers": "x"}).status_code == 403
    stranger = django_user_model.objects.create_user(username="sam", password="a-long-test-password")
    other = Client()
    other.force_login(stranger)
    assert other.get(reverse("campaign-review", args=[draft.slug])).status_code == 404
    assert other.post(reverse("campaign-correct-pair", args=[draft.slug, unit.pk]), {"question": "Q?", "answers": "x"}).status_code == 404


def test_a_bonus_typed_with_approve_is_paid_and_with_reject_refused(client_rita, draft):
    """Issue 28: a typed bonus was silently dropped when the decision stayed on "Approve"."""
    from hits.models import LedgerEntry

    settle_with_kept_pairs(draft)
    draft.refresh_from_db()
    workers, _ = _judge(draft, lambda i, u, s: True)
    first = _submitted_presence_assignment(draft, workers[0])
    second = _submitted_presence_assignment(draft, workers[1])
    url = reverse("campaign-review-example", args=[draft.slug, SystemSummary.objects.get(pk=first.hit.payload["summary"]).example_id])
    # Rejecting with a bonus typed: refused, said so, nothing changes.
    action = reverse("campaign-review-assignment", args=[draft.slug, second.pk])
    response = client_rita.post(action, {"action": "reject", "message": "sloppy", "amount": "0.30", "next": url}, follow=True)
    assert "Rejected work gets no bonus" in response.content.decode()
    assert Assignment.objects.get(pk=second.pk).state == "submitted"
    # Approving with a bonus but no reason: refused too (the worker sees the reason).
    action = reverse("campaign-review-assignment", args=[draft.slug, first.pk])
    response = client_rita.post(action, {"action": "approve", "message": "", "amount": "0.30", "next": url}, follow=True)
    assert "Give the reason for the bonus" in response.content.decode()
    assert Assignment.objects.get(pk=first.pk).state == "submitted"
    # Approving with a bonus and a message: both happen.
    response = client_rita.post(action, {"action": "approve", "message": "great care", "amount": "0.30", "next": url}, follow=True)
    page = response.content.decode()
    assert "approved" in page and "Bonus of $0.30" in page
    approved = Assignment.objects.get(pk=first.pk)
    assert approved.state == "approved" and approved.bonus == Decimal("0.30")
    assert LedgerEntry.objects.filter(assignment=approved, kind=LedgerEntry.Kind.BONUS, amount=Decimal("0.30")).exists()


def _one_to_review(draft):
    """A submitted presence assignment of the campaign, its review page and its review form's action."""
    settle_with_kept_pairs(draft)
    draft.refresh_from_db()
    workers, _ = _judge(draft, lambda i, u, s: True)
    first = _submitted_presence_assignment(draft, workers[0])
    url = reverse("campaign-review-example", args=[draft.slug, SystemSummary.objects.get(pk=first.hit.payload["summary"]).example_id])
    return first, url, reverse("campaign-review-assignment", args=[draft.slug, first.pk])


def test_approve_with_a_refused_bonus_changes_nothing(client_rita, draft, settings):
    """A decision and its typed bonus stand or fall together: a bonus over the assignment's limit left the work
    approved and the bonus dropped (the researcher had to type it again on a row that no longer offered it)."""
    from hits.models import LedgerEntry

    settings.MAX_BONUS = "0.50"
    first, url, action = _one_to_review(draft)
    response = client_rita.post(action, {"action": "approve", "message": "great care", "amount": "0.80", "next": url}, follow=True)
    assert response.status_code == 200
    assert Assignment.objects.get(pk=first.pk).state == "submitted"
    assert not LedgerEntry.objects.filter(assignment_id=first.pk).exists()


def test_a_second_bonus_can_be_confirmed_without_javascript(client_rita, draft):
    """The refusal says "confirm to pay a second one", but only review.js could confirm: the row of an
    assignment with a bonus now has an "a second bonus" box, which is what the form posts when ticked."""
    first, url, action = _one_to_review(draft)
    client_rita.post(action, {"action": "approve", "message": "great care", "amount": "0.30", "next": url})
    row = client_rita.get(url).content.decode().split(f'action="{action}"')[1].split("</form>")[0]
    assert 'type="checkbox" name="confirm_second_bonus" value="1"' in row
    refused = client_rita.post(action, {"action": "bonus", "message": "again", "amount": "0.20", "next": url}, follow=True)
    assert "confirm to pay" in refused.content.decode()
    client_rita.post(action, {"action": "bonus", "message": "again", "amount": "0.20", "confirm_second_bonus": "1", "next": url})
    assert Assignment.objects.get(pk=first.pk).bonus == Decimal("0.50")
