"""Rejecting work, and what becomes of its data (issue 40).

Rejecting is about money: the worker is not paid (``hits.payments.reject_assignment``).  Excluding is about
data: the work's presence judgments (or verification verdicts) stop counting, as a disqualified worker's do
(``annotation.services.quality.exclude_worker``).  A researcher who rejects chooses one of:

- ``exclude`` (the default for presence and verification work): the judgments are marked excluded, the gold
  labels of their units and the scores are recomputed without them, and a place reopens for another worker
  where the HIT needs one: under the fixed rule always (every unit is to have ``assignments_presence``
  judgments that count); under the adaptive rule where a unit of the HIT has no decided majority any more
  (``annotation.services.presence_judges``), once the HIT's open places are done.  A verification HIT
  reopens a place while it is still open (its pairs are decided when it completes, from the verdicts that
  count); once decided, its pairs stand and the verdicts only leave the verifier checks and agreement.
- ``keep``: the worker is not paid, but the data counts as before (gold labels, scores, agreement).

Generation work has no such choice: its QA pairs are judged by their verifiers, so they are kept.

An exclusion can be undone (``reinclude_assignment``): the judgments or verdicts count again, gold labels and
scores are recomputed with them as the exclusion recomputed them without, and the replacement place it reopened
is withdrawn if nobody has taken it.  Re-including is about data only: the work stays rejected, nothing is paid
and nothing is charged (approving it after all is the way to pay it).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotation.models import Campaign, PresenceJudgment, Verification
from annotation.services.followups import schedule_cross_checks, schedule_score_update
from annotation.services.gold import refresh_gold
from annotation.services.presence_judges import has_open_places, root_hit_id, undecided_units
from annotation.services.pipeline import finish_campaign_if_done
from annotation.services.quality import reopen_places, withdraw_replacements
from hits import payments
from hits.models import HIT, Assignment
from hits.services import PlacesRefused

KEEP, EXCLUDE = "keep", "exclude"
#: The task types whose data a rejection can exclude (excluded by default).
EXCLUDABLE = ("presence", "verification")


def default_choice(task_slug: str) -> str:
    """What a rejection does with the data unless the researcher says otherwise."""
    return EXCLUDE if task_slug in EXCLUDABLE else KEEP


@dataclass
class Outcome:
    """What a rejection did with the work's data: ``excluded`` judgments or verdicts, ``reopened`` places, and
    ``statement``, the sentence the researcher reads."""

    choice: str
    excluded: int = 0
    reopened: int = 0
    statement: str = ""


def reject_work(assignment: Assignment, message: str, *, by=None, data: str | None = None, settle: bool = True) -> Outcome:
    """Reject ``assignment`` (no reward; ``message`` tells the worker why) and keep or exclude its data
    (``data``: ``"keep"`` or ``"exclude"``; by default ``default_choice``).  One transaction: a refused
    rejection changes nothing.  ``payments.PaymentError`` as ``reject_assignment``; ``ValueError`` for an
    unknown choice."""
    slug = assignment.hit.task_type.slug
    choice = data or default_choice(slug)
    if choice not in (KEEP, EXCLUDE):
        raise ValueError(f"choose to keep or to exclude the rejected work's data, not {choice!r}")
    with transaction.atomic():
        payments.reject_assignment(assignment, message, by=by, settle=settle)
        if choice == EXCLUDE and slug in EXCLUDABLE:
            return exclude_assignment(assignment)
    if slug in EXCLUDABLE:
        return Outcome(KEEP, statement="Its data is kept: it counts in the gold labels, scores and agreement as before.")
    return Outcome(KEEP, statement="Its QA pairs are kept: their verifiers decide them.")


def exclude_assignment(assignment: Assignment) -> Outcome:
    """Exclude a presence or verification assignment's data (idempotent), reopening a place where the HIT
    needs one; inside the caller's transaction.  A place the budget cap refuses is not reopened (said so)."""
    hit = HIT.objects.select_related("task_type", "batch").get(pk=assignment.hit_id)
    campaign = Campaign.objects.get(batch_id=hit.batch_id)
    if hit.task_type.slug == "presence":
        judgments = PresenceJudgment.objects.filter(assignment=assignment, excluded=False)
        pairs = set(judgments.values_list("unit_id", "summary_id"))
        n = judgments.update(excluded=True)
        reopened, why = _reopen_presence(campaign, hit) if n else (0, "")
        refresh_gold(campaign, pairs)
        schedule_score_update(campaign, {s for _, s in pairs})
        what = f"{n} presence judgment{'s' if n != 1 else ''} excluded: gold labels and scores are recomputed without them"
    else:
        n = Verification.objects.filter(assignment=assignment, excluded=False).update(excluded=True)
        reopened, why = _reopen_verification(campaign, hit) if n else (0, "")
        what = f"{n} verification verdict{'s' if n != 1 else ''} excluded from the verifier checks and agreement"
    schedule_cross_checks(campaign, [assignment.worker_id])
    place = "; a place reopened for another worker" if reopened else (f"; no place reopened ({why})" if why else "")
    return Outcome(EXCLUDE, n, reopened, f"{what}{place}.")


class NotReincludable(Exception):
    """The assignment's data was not excluded by a rejection (the message says why)."""


def reinclude_assignment(assignment: Assignment) -> Outcome:
    """Undo ``exclude_assignment`` (idempotent): the rejected assignment's excluded presence judgments or
    verification verdicts count again, gold labels and scores are recomputed with them, and one replacement
    place the exclusion reopened is withdrawn if nobody has taken it.  No money moves: the work stays rejected.
    ``NotReincludable`` for work that is not rejected (its data was excluded with its worker, if at all)."""
    if assignment.state != Assignment.State.REJECTED:
        raise NotReincludable(
            f"assignment {assignment.pk} is {assignment.get_state_display().lower()}, not rejected: only a rejection's "
            "exclusion is undone here (a worker's exclusion is undone on the workers page)"
        )
    hit = HIT.objects.select_related("task_type").get(pk=assignment.hit_id)
    campaign = Campaign.objects.get(batch_id=hit.batch_id)
    with transaction.atomic():
        if hit.task_type.slug == "presence":
            judgments = PresenceJudgment.objects.filter(assignment=assignment, excluded=True)
            pairs = set(judgments.values_list("unit_id", "summary_id"))
            n = judgments.update(excluded=False)
            withdrawn = withdraw_replacements([root_hit_id(hit)], at_most=1) if n and hit.kind == HIT.Kind.REGULAR else 0
            refresh_gold(campaign, pairs)
            schedule_score_update(campaign, {s for _, s in pairs})
            what = f"{n} presence judgment{'s' if n != 1 else ''} count again: gold labels and scores are recomputed with them"
        else:
            n = Verification.objects.filter(assignment=assignment, excluded=True).update(excluded=False)
            withdrawn = withdraw_replacements([hit.pk], at_most=1) if n else 0
            what = f"{n} verification verdict{'s' if n != 1 else ''} count again in the verifier checks and agreement"
        if n:
            schedule_cross_checks(campaign, [assignment.worker_id])
            finish_campaign_if_done(Campaign.objects.get(pk=campaign.pk))
    if not n:
        return Outcome(KEEP, statement="None of its data was excluded: nothing changed.")
    place = "; the replacement place nobody had taken was withdrawn" if withdrawn else ""
    return Outcome(KEEP, n, 0, f"{what}{place}. Nothing was paid or charged: the work stays rejected.")


def _reopen_presence(campaign: Campaign, hit: HIT) -> tuple[int, str]:
    """One more place for the presence HIT (or the HIT holding its places) if it needs one; (places, why not)."""
    if hit.kind != HIT.Kind.REGULAR:
        return 0, "a gold check's answers measure the worker only"
    if campaign.state == Campaign.State.CANCELLED:
        return 0, "the campaign is cancelled"
    root = HIT.objects.get(pk=root_hit_id(hit))
    if campaign.adaptive_presence:
        if has_open_places(root):
            return 0, "the HIT's open places come first; a judge is added after them where a unit stays undecided"
        if not undecided_units(campaign, root.payload):
            return 0, "every unit of the HIT still has a decided majority"
    return _reopen(campaign, root, replacement=not campaign.adaptive_presence)


def _reopen_verification(campaign: Campaign, hit: HIT) -> tuple[int, str]:
    if hit.state not in HIT.UNFINISHED_STATES:
        return 0, "the HIT's QA pairs were already decided from its verdicts; they stand"
    if campaign.state == Campaign.State.CANCELLED:
        return 0, "the campaign is cancelled"
    return _reopen(campaign, hit)


def _reopen(campaign: Campaign, hit: HIT, *, replacement: bool = True) -> tuple[int, str]:
    try:
        with transaction.atomic():
            reopen_places(campaign, hit, 1, replacement=replacement)
    except PlacesRefused as exc:
        return 0, str(exc)
    return 1, ""
