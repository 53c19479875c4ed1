"""Rejecting verification work with its data excluded (issue 40): the verdicts stop counting where the pairs
are decided, a place reopens while the HIT is open, and once decided the pairs stand (said so)."""

from __future__ import annotations

import pytest

from annotation.models import ContentUnit, Verification
from annotation.selectors.agreement import verification_agreement
from annotation.services.pipeline import launch_campaign
from annotation.services.rejection import reject_work
from hits.models import HIT, Assignment
from tests.annotation.test_pipeline import GOOD_QUESTIONS, W, one_predicate_campaign, verify, write  # noqa: F401

pytestmark = pytest.mark.django_db
def verification_by(name: str) -> Assignment:
    return Assignment.objects.select_related("hit__task_type").get(worker__external_id=name, hit__task_type__slug="verification")


ALL_VALID = [(True, "Police"), (True, "the driver"), (True, "the crash")]


def test_an_excluded_verdict_of_an_open_hit_reopens_a_place_and_does_not_decide_the_pairs(one_predicate_campaign):
    launch_campaign(one_predicate_campaign)
    write(W("writer"), GOOD_QUESTIONS)
    verify(W("v1"), [(False, ""), (False, ""), (False, "")])
    outcome = reject_work(verification_by("v1"), "Every pair marked invalid unread.")
    assert outcome.choice == "exclude" and outcome.excluded == 3 and outcome.reopened == 1
    assert "3 verification verdicts excluded" in outcome.statement and "a place reopened" in outcome.statement
    hit = HIT.objects.get(task_type__slug="verification")
    assert (hit.state, hit.max_assignments) == ("open", 3)
    verify(W("v2"), ALL_VALID)
    assert set(ContentUnit.objects.values_list("state", flat=True)) == {"proposed"}  # one verdict that counts so far
    verify(W("v3"), ALL_VALID)
    # Decided from the two verdicts that count: all kept (the excluded "invalid" would have rejected them all).
    assert set(ContentUnit.objects.values_list("state", flat=True)) == {"kept"}
    assert verification_agreement(one_predicate_campaign)["n_questions"] == 3
    assert verification_agreement(one_predicate_campaign)["percent"] == 1.0


def test_once_the_pairs_are_decided_they_stand_and_keep_leaves_the_verdicts_counting(one_predicate_campaign):
    launch_campaign(one_predicate_campaign)
    write(W("writer"), GOOD_QUESTIONS)
    verify(W("v1"), ALL_VALID)
    verify(W("v2"), ALL_VALID)
    kept = reject_work(verification_by("v1"), "Too fast.", data="keep")
    assert kept.choice == "keep" and not Verification.objects.filter(excluded=True).exists()
    assert "kept" in kept.statement
    excluded = reject_work(verification_by("v2"), "Too fast.")
    assert excluded.reopened == 0 and "already decided" in excluded.statement
    assert Verification.objects.filter(excluded=True).count() == 3
    assert set(ContentUnit.objects.values_list("state", flat=True)) == {"kept"}
    assert HIT.objects.get(task_type__slug="verification").state == "completed"
