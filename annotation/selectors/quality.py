"""Reads behind worker quality control: each worker's figures in a campaign, against the campaign's thresholds.

- writers: share of their resolved QA pairs kept by both verifiers, and questions per predicate;
- verifiers: agreement with the other verifier on the same questions;
- presence judges: accuracy on gold HITs mixed into their stream, with agreement with the majority beside it.

A figure is "pending" until ``grace_period_items`` items were judged; thresholds are strict (exactly the
threshold fails).  ``annotation.services.quality`` acts on them.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, Q

from annotation.models import Campaign, ContentUnit, GoldPresence, PresenceJudgment, Verification
from hits.models import HIT, Assignment, Worker


@dataclass
class Check:
    value: float | None
    n: int
    threshold: float
    status: str  # "pending", "ok" or "failing"

    def as_dict(self) -> dict:
        return {"value": self.value, "n": self.n, "threshold": self.threshold, "status": self.status}


def threshold_check(numerator: int, n: int, threshold: float, grace: int) -> Check:
    """The share ``numerator / n`` against a strict threshold: "pending" before ``grace`` items, then "ok" or "failing"."""
    value = numerator / n if n else None
    if n == 0 or n < grace:
        return Check(value, n, threshold, "pending")
    return Check(value, n, threshold, "ok" if value > threshold else "failing")


#: A release of the worker's gold figure holds at least this many gold answers not shown before.
GOLD_RELEASE_MIN = 2


def worker_figures(campaign: Campaign, worker: Worker, *, as_shown: bool = False) -> dict[str, dict]:
    """The worker's figures per task type in a campaign, each against its threshold.

    ``as_shown``: as the worker's own standing page shows them: the presence figures (accuracy on check
    items, agreement with the majority) as of their release (``figure_releases_many``).
    """
    if not as_shown:
        return workers_figures(campaign, [worker.pk])[worker.pk]
    figures_at, gold_at = figure_releases_many(campaign, [worker.pk])[worker.pk]
    return workers_figures(campaign, [worker.pk], gold_until={worker.pk: gold_at}, presence_until={worker.pk: figures_at})[worker.pk]


def gold_released(campaign: Campaign, worker: Worker, every: int | None = None):
    """The moment up to which the worker's gold answers count in the figure shown to them (None: none yet);
    see ``figure_releases_many``."""
    return gold_released_many(campaign, [worker.pk], every)[worker.pk]


def gold_released_many(campaign: Campaign, worker_ids, every: int | None = None) -> dict:
    """``gold_released`` of many workers at once (one query): worker id -> moment or None."""
    return {w: gold for w, (_, gold) in figure_releases_many(campaign, worker_ids, every).items()}


def figure_releases_many(campaign: Campaign, worker_ids, every: int | None = None) -> dict:
    """When the presence figures shown to each worker were last released: worker id -> (moment of the
    agreement figures, moment of the gold figure), each None before the first.

    Both move only when the worker's HITs of the campaign, regular and gold counted alike, reach a multiple
    of ``every`` (``settings.GOLD_FEEDBACK_EVERY``): what the worker sees changes after their 10th, 20th...
    HIT whatever its kind, never after one gold HIT.  The gold figure needs besides at least
    ``GOLD_RELEASE_MIN`` gold answers not shown before: a change never points at one gold HIT's answer key.
    Work counts when it was submitted before the moment (the release's own HIT waits for the next one).
    """
    from django.conf import settings

    every = every or settings.GOLD_FEEDBACK_EVERY
    worker_ids = list(dict.fromkeys(worker_ids))
    done = (
        Assignment.objects.filter(
            worker_id__in=worker_ids, hit__batch_id=campaign.batch_id, hit__kind__in=[HIT.Kind.REGULAR, HIT.Kind.GOLD],
            state__in=Assignment.DONE_STATES,
        )
        .order_by("worker_id", "submitted_at", "pk")
        .values_list("worker_id", "hit__kind", "submitted_at")
    )
    released = {w: [None, None] for w in worker_ids}
    tally = {w: [0, 0] for w in worker_ids}  # HITs, gold waiting
    for worker_id, kind, submitted_at in done:
        counts = tally[worker_id]
        counts[0] += 1
        counts[1] += kind == HIT.Kind.GOLD
        if counts[0] % every == 0:
            released[worker_id][0] = submitted_at
            if counts[1] >= GOLD_RELEASE_MIN:
                released[worker_id][1], counts[1] = submitted_at, 0
    return {w: tuple(moments) for w, moments in released.items()}


def workers_figures(
    campaign: Campaign, worker_ids, *, gold_until: dict | None = None, presence_until: dict | None = None
) -> dict[int, dict[str, dict]]:
    """``worker_figures`` of many workers at once: a fixed number of grouped queries, however many workers.

    ``gold_until``: worker id -> the moment up to which their gold answers count (None: none count); the gold
    figure then says that moment (``as_of``, ISO text).  ``presence_until``: the same for their presence
    judgments (agreement with the majority, judgments made).
    """
    worker_ids = list(dict.fromkeys(worker_ids))
    grace = campaign.grace_period_items
    batch_id = campaign.batch_id

    written = {
        row["author_id"]: row
        for row in ContentUnit.objects.filter(example__campaign=campaign, author_id__in=worker_ids, kind=ContentUnit.Kind.QA)
        .values("author_id")
        .annotate(
            written=Count("pk"),
            # Questions of first-round HITs: a redo round's HIT asks only for what its predicate still lacks (the
            # pairs kept before are on its page), so its questions count for the share kept, not per predicate.
            written_first=Count("pk", filter=Q(round=1)),
            kept=Count("pk", filter=Q(state=ContentUnit.State.KEPT)),
            resolved=Count("pk", filter=Q(state__in=[ContentUnit.State.KEPT, ContentUnit.State.REJECTED])),
        )
    }
    # Per writer: (generation HITs done, of them first-round HITs).
    generation_hits = {
        worker_id: (n, first)
        for worker_id, n, first in Assignment.objects.filter(
            worker_id__in=worker_ids, hit__batch_id=batch_id, hit__task_type__slug="generation", hit__kind=HIT.Kind.REGULAR,
            state__in=Assignment.DONE_STATES,
        ).exclude(hit__payload__has_key="pilot")  # a pilot's pairs are not kept: its HITs count for no writer figure
        .values("worker_id")
        .annotate(n=Count("pk"), first=Count("pk", filter=Q(hit__payload__round=1) | ~Q(hit__payload__has_key="round")))
        .values_list("worker_id", "n", "first")
    }

    # Verification: each verdict against the other verifier's verdict on the same QA pair.
    mine = list(
        Verification.objects.filter(worker_id__in=worker_ids, unit__example__campaign=campaign, excluded=False).values_list("worker_id", "unit_id", "valid")
    )
    verdicts: dict[int, list[tuple[int, bool]]] = {}
    for worker_id, unit_id, is_valid in (
        Verification.objects.filter(unit_id__in={u for _, u, _ in mine}, excluded=False).order_by("pk").values_list("worker_id", "unit_id", "valid")
    ):
        verdicts.setdefault(unit_id, []).append((worker_id, is_valid))
    verification = {w: [0, 0, 0] for w in worker_ids}  # judged, compared, agreed
    for worker_id, unit_id, is_valid in mine:
        tally = verification[worker_id]
        tally[0] += 1
        other = next((v for w, v in verdicts.get(unit_id, []) if w != worker_id), None)
        if other is not None:
            tally[1] += 1
            tally[2] += int(other == is_valid)

    gold = {w: [0, 0] for w in worker_ids}  # right, total
    for worker_id, answers, key, submitted_at in Assignment.objects.filter(
        worker_id__in=worker_ids, hit__batch_id=batch_id, hit__kind=HIT.Kind.GOLD, state__in=Assignment.DONE_STATES
    ).values_list("worker_id", "answers", "hit__answer_key", "submitted_at"):
        if gold_until is not None and (gold_until.get(worker_id) is None or submitted_at >= gold_until[worker_id]):
            continue
        labels = (key or {}).get("labels", {})
        for label in (answers or {}).get("labels", []):
            expected = labels.get(str(label["unit"]))
            if expected is not None:
                gold[worker_id][1] += 1
                gold[worker_id][0] += int(bool(label["present"]) == bool(expected))
    judged = PresenceJudgment.objects.filter(worker_id__in=worker_ids, summary__system__campaign=campaign)
    if presence_until is not None:
        # Only judgments of HITs submitted before each worker's release moment (none before the first).
        released = Q(pk__in=[])
        for worker_id, moment in presence_until.items():
            if moment is not None:
                released |= Q(worker_id=worker_id, assignment__submitted_at__lt=moment)
        judged = judged.filter(released)
    n_judged = dict(judged.values("worker_id").annotate(n=Count("pk")).values_list("worker_id", "n"))
    majority = {
        row["worker_id"]: row
        for row in judged.filter(
            unit__gold__summary=F("summary"), unit__gold__origin=GoldPresence.Origin.MAJORITY, unit__gold__present__isnull=False
        )
        .values("worker_id")
        .annotate(n=Count("pk"), agree=Count("pk", filter=Q(present=F("unit__gold__present"))))
    }

    result = {}
    for worker_id in worker_ids:
        counts = written.get(worker_id, {"written": 0, "written_first": 0, "kept": 0, "resolved": 0})
        n_hits, n_first = generation_hits.get(worker_id, (0, 0))
        valid = threshold_check(counts["kept"], counts["resolved"], campaign.writer_valid_threshold, grace)
        per_predicate = counts["written_first"] / n_first if n_first else None
        qpp_status = "pending" if n_first == 0 or counts["resolved"] < grace else (
            "ok" if per_predicate >= campaign.writer_min_questions_per_predicate else "failing"
        )
        judged_n, compared, agreed = verification[worker_id]
        right, total = gold[worker_id]
        n_majority = majority.get(worker_id, {}).get("n", 0)
        agree_majority = majority.get(worker_id, {}).get("agree", 0)
        gold_check = threshold_check(right, total, campaign.presence_accuracy_threshold, grace).as_dict()
        if gold_until is not None:
            released = gold_until.get(worker_id)
            gold_check["as_of"] = released.isoformat() if released is not None else None
        majority_check = {"value": agree_majority / n_majority if n_majority else None, "n": n_majority}
        if presence_until is not None:
            moment = presence_until.get(worker_id)
            majority_check["as_of"] = moment.isoformat() if moment is not None else None
        result[worker_id] = {
            "generation": {
                "valid_share": valid.as_dict(),
                "questions_per_predicate": {"value": per_predicate, "n": n_first, "threshold": campaign.writer_min_questions_per_predicate, "status": qpp_status},
                "hits_done": n_hits,
            },
            "verification": {
                "agreement": threshold_check(agreed, compared, campaign.verifier_agreement_threshold, grace).as_dict(),
                "questions_judged": judged_n,
            },
            "presence": {
                "gold_accuracy": gold_check,
                "majority_agreement": majority_check,
                "judgments": n_judged.get(worker_id, 0),
            },
        }
    return result
