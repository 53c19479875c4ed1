"""The automated-scoring worker's side of budgeted presence: judge, retrain, route, label.

``route_campaign`` is the Celery task ``annotation.route_presence``.  It is idempotent and does
whatever is due for the campaign:

1. a round whose routed HITs are all complete is closed;
2. the judge is (re)built: the campaign's ``presence_judge`` from the registry (answers cached per
   version), and, with active rounds, an adapter retrained on the campaign's human gold so far
   (``annotation.automation.judges.adapt``);
3. it labels every candidate unit (a finished ``AutoscoreRun`` named ``hybrid:<judge>``: the labels
   the scores use where people did not judge);
4. when a new round is due, the unrouted candidates the judge is least sure of (uncertainty per
   HIT, ``annotation.scoring.routing``) are posted as presence HITs, up to the round's cap.
   Round k < R is due once round k-1 is done and k/R of the campaign's examples have their
   presence HITs, and its cap is k/R of the budget expected once every example has them; the
   last round opens after round R-1 and takes the rest, staying open until every example has
   its HITs (``annotation.services.hybrid.round_due``, ``round_cap``): QA campaigns, whose
   examples settle one by one, get real rounds, not empty ones at launch.  When new candidates
   arrive during a round (the last round's examples, a system added), the round tops up to its
   cap with the same judge;
5. after the last round, the campaign may finish.

Under the active rule (``Campaign.routing_rule`` "active", issue 37) step 4 is a random draw instead
(``_route_active``): every candidate is decided once, in one draw (a stratum, numbered per campaign); round
t < R decides the undecided candidates of its examples (``hybrid.draw_examples``), the last round and any later
draw every undecided one, and a top-up is a draw of its own with the round's judge.  A draw of N candidates
sends ``n = hit_budget(decided after it, share) - routed before it`` of them to people, each with probability
pi = ``active.inclusion_probabilities(u, n, mix)`` (u: the judge's expected errors on the HIT; mix: chosen by
``active.choose_mix`` from the HITs people judged so far, ``active.DEFAULT_MIX`` at first), drawn by
``active.fixed_size_sample`` with the seed ``campaign.pk * 1000 + stratum``.  pi, the stratum and the round are
stored on every candidate of the draw.  The judge is refitted on the labels so far weighted by 1/pi (however few:
round 2 always learns from round 1), the calibration is weighted by 1/pi, and every unit of the labelling run
stores its cross-fitted probability f (out of fold by example where people judged it), the estimator's f.
"""

from __future__ import annotations

import logging

import numpy as np
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.automation.judges.base import PresencePair
from annotation.models import (
    AutoPresence,
    AutoscoreRun,
    AutoSummaryScore,
    Campaign,
    ContentUnit,
    PresenceCandidate,
    PresenceRound,
    SystemSummary,
)
from annotation.scoring import active, calibration, routing
from annotation.selectors.hybrid import human_labels
from annotation.services import hybrid
from annotation.services.hybrid_scores import refresh_hybrid_scores
from annotation.services.pipeline import finish_campaign_if_done

log = logging.getLogger(__name__)

#: The uncertainty of a presence HIT in campaigns: measured best by ``evaluate_hybrid`` (README).
MEASURE = "expected_errors"


class CampaignJudge:
    """Probabilities for a campaign's candidate units: the registry judge, adapted to the human labels so far."""

    def __init__(self, campaign: Campaign, retrain: bool):
        from annotation.automation.judges.registry import get_judge

        self.campaign = campaign
        # The active rule: every round after the first learns from the rounds before it, however few their labels.
        self.few_labels = hybrid.is_active(campaign)
        self.weights = None
        self.base = get_judge(campaign.presence_judge)
        if hasattr(self.base, "prepare"):
            self.base.prepare(campaign)
        self.retrain = retrain
        self.adapter = None

    def judge(self, pairs: list[PresencePair], units: np.ndarray, human_rows: np.ndarray, human_labels: np.ndarray,
              weights: np.ndarray | None = None):
        """(probabilities, threshold, version) for ``pairs`` (``units``: each pair's unit id); the adapter
        learns from the human labels of ``human_rows`` (weighted by ``weights``: 1/pi of each label's HIT under
        the active rule), and reads them as the unit prior of every pair."""
        from annotation.automation.judges.adapt import adapter_features, fit_adapter, with_unit_prior
        from annotation.automation.judges.cache import cached_predict

        base, _ = cached_predict(self.base, pairs)
        self.base_probabilities = np.asarray(base, dtype=float)
        if self.retrain and len(human_rows):
            observed = np.zeros(len(pairs), dtype=bool)
            observed[human_rows] = True
            labels = np.zeros(len(pairs), dtype=bool)
            labels[human_rows] = np.asarray(human_labels, dtype=bool)
            self.base_features = adapter_features(pairs, base)
            features = with_unit_prior(self.base_features, units, labels, observed)
            self.weights = None if weights is None else np.asarray(weights, dtype=float)
            self.adapter = fit_adapter(features[human_rows], human_labels, sample_weight=self.weights, few_labels=self.few_labels)
            if self.adapter.fitted:
                version = f"{self.base.version}+adapted/c{self.campaign.pk}/n{self.adapter.n_labels}"
                return self.adapter.predict(features), 0.5, version
        return base, float(self.base.threshold), self.base.version

    def out_of_fold(self, units: np.ndarray, human_rows: np.ndarray, human_labels: np.ndarray, folds: np.ndarray,
                    probabilities: np.ndarray) -> np.ndarray:
        """The judge's probabilities of the human-labelled rows as it would give them without their labels: with an
        adapter, each fold's from an adapter refitted (unit prior included) on the other folds' labels; the
        registry judge never saw the labels, so its own probabilities are already out of fold.  (Not nested: the
        rows a fold's Platt fit is trained on come from adapters that saw that fold's labels, an indirect path the
        README states.)"""
        if self.adapter is None or not self.adapter.fitted:
            return np.asarray(probabilities, dtype=float)[human_rows]
        from annotation.automation.judges.adapt import fit_adapter, with_unit_prior

        human_labels = np.asarray(human_labels, dtype=bool)
        result = np.empty(len(human_rows))
        for f in np.unique(folds):
            held = folds == f
            observed = np.zeros(len(units), dtype=bool)
            observed[human_rows[~held]] = True
            labels = np.zeros(len(units), dtype=bool)
            labels[human_rows[~held]] = human_labels[~held]
            features = with_unit_prior(self.base_features, units, labels, observed)
            adapter = fit_adapter(features[human_rows[~held]], human_labels[~held].astype(int),
                                  sample_weight=None if self.weights is None else self.weights[~held], few_labels=self.few_labels)
            held_rows = human_rows[held]
            result[held] = adapter.predict(features[held_rows]) if adapter.fitted else self.base_probabilities[held_rows]
        return result


def _candidate_pairs(campaign: Campaign):
    """Every candidate unit: (candidate index, unit id, summary id, pair), the candidates, and the human labels."""
    candidates = list(PresenceCandidate.objects.filter(campaign=campaign).order_by("pk"))
    unit_ids = {u for c in candidates for u in c.units}
    units = dict(ContentUnit.objects.filter(pk__in=unit_ids).values_list("pk", "text"))
    summaries = dict(
        SystemSummary.objects.filter(pk__in={c.summary_id for c in candidates}).values_list("pk", "text")
    )
    rows = [(i, u, c.summary_id) for i, c in enumerate(candidates) for u in c.units if u in units]
    pairs = [PresencePair(summary=summaries[s], unit=units[u]) for _, u, s in rows]
    return candidates, rows, pairs, human_labels(campaign, unit_ids)


def _write_labels(campaign: Campaign, version: str, rows, probabilities, present, calibration=None,
                  cross_fitted=None) -> AutoscoreRun:
    """The judge's labels of every candidate unit, as a finished automatic-scoring run, with their calibrated
    probabilities and the calibration's figures (``results["calibration"]``) when ``calibration`` is given, and
    their cross-fitted probabilities (``AutoPresence.cross_fitted``, the estimator's f) when given."""
    now = timezone.now()
    calibrated = calibration.probabilities if calibration is not None and calibration.fitted else None
    extra = {"calibration": calibration.as_dict()} if calibration is not None else {}
    run = AutoscoreRun.objects.create(
        campaign=campaign, judge_name=f"hybrid:{campaign.presence_judge}", judge_version=version[:200],
        state=AutoscoreRun.State.FINISHED, started_at=now, finished_at=now, results={"hybrid": True, **extra},
    )
    AutoPresence.objects.bulk_create(
        [
            AutoPresence(run=run, summary_id=s, unit_id=u, probability=float(p), present=bool(y),
                         calibrated=None if calibrated is None else float(calibrated[k]),
                         cross_fitted=None if cross_fitted is None else float(cross_fitted[k]))
            for k, ((_, u, s), p, y) in enumerate(zip(rows, probabilities, present))
        ],
        batch_size=2000,
    )
    per_summary: dict[int, list] = {}
    for (_, _, s), p, y in zip(rows, probabilities, present):
        entry = per_summary.setdefault(s, [0, 0, 0.0])
        entry[0] += 1
        entry[1] += int(y)
        entry[2] += float(p)
    AutoSummaryScore.objects.bulk_create(
        [AutoSummaryScore(run=run, summary_id=s, n_units=n, n_present=k, score=k / n, mean_probability=t / n)
         for s, (n, k, t) in per_summary.items()],
        batch_size=2000,
    )
    from annotation.automation.judges.comparison import compare_run_with_gold

    try:
        # The judges page sets the routing judge beside the others (against the gold labels there are so far).
        results = {"hybrid": True, **compare_run_with_gold(run), **extra}
    except Exception:  # noqa: BLE001 - the labels stand even when the comparison cannot be computed
        log.exception("comparison of the labelling run %s failed", run.pk)
        results = {"hybrid": True, **extra}
    AutoscoreRun.objects.filter(pk=run.pk).update(results=results)
    return run


def _calibrate(campaign: Campaign, judge: CampaignJudge, rows, unit_ids, probabilities, human_rows, human_labels,
               weights=None):
    """(calibration, cross-fitted probabilities): the judge's probabilities calibrated on the human labels so far
    (``annotation.scoring.calibration``, weighted by ``weights``: 1/pi under the active rule): folds by example, and
    the judge's own out-of-fold probabilities on the human-labelled units when it was retrained on them.  The
    cross-fitted probability of a unit is that out-of-fold one where people judged it, its probability elsewhere."""
    example_of = dict(SystemSummary.objects.filter(pk__in={s for _, _, s in rows}).values_list("pk", "example_id"))
    groups = np.array([example_of[rows[i][2]] for i in human_rows], dtype=np.int64)
    folds = calibration.example_folds(groups) if len(groups) else np.zeros(0, dtype=np.int64)
    human_probabilities = judge.out_of_fold(unit_ids, human_rows, human_labels, folds, probabilities) if len(groups) else None
    cross_fitted = np.array(probabilities, dtype=float)
    if human_probabilities is not None:
        cross_fitted[human_rows] = human_probabilities
    fit = calibration.calibrate(probabilities, human_rows, human_labels, groups, human_probabilities=human_probabilities,
                                weights=weights)
    return fit, cross_fitted


#: Seconds before a failed routing pass is tried again (with a broker), doubled at each failure up to the cap.
RETRY_FIRST_SECONDS = 60
RETRY_MAX_SECONDS = 3600


def route_campaign(campaign_id: int) -> dict:
    """One routing pass (see the module docstring); returns what it did.

    A pass that fails (the judge cannot be built, or fails while judging) never raises: the error is
    kept on the campaign for its progress page, where the researcher can retry or choose another judge,
    and with a broker the pass is tried again after a backoff.  Nothing is half-done: the pass's writes
    are one transaction, and the judge's cache keeps only complete answers.
    """
    try:
        result = _route_campaign(campaign_id)
    except Exception as exc:  # noqa: BLE001 - any failure must leave the campaign waiting visibly, not stalled silently
        return _routing_failed(campaign_id, exc)
    Campaign.objects.filter(pk=campaign_id, routing_failures__gt=0).update(
        routing_error="", routing_error_at=None, routing_failures=0
    )
    return result


def _routing_failed(campaign_id: int, exc: Exception) -> dict:
    from celery import current_app
    from django.db.models import F

    from annotation.automation.judges.base import JudgeError
    from hits.outbox import send_now

    log.exception("routing pass of campaign %s failed", campaign_id)
    message = str(exc) if isinstance(exc, JudgeError) else f"{type(exc).__name__}: {exc}"
    Campaign.objects.filter(pk=campaign_id).update(
        routing_error=message[:2000], routing_error_at=timezone.now(), routing_failures=F("routing_failures") + 1
    )
    failures = Campaign.objects.filter(pk=campaign_id).values_list("routing_failures", flat=True).first() or 1
    retry_in = None
    if not current_app.conf.task_always_eager:
        # In-process (no broker) a retry now would fail the same way at once: the researcher's retry, a new
        # judge in the settings or the next completed HIT asks again.
        retry_in = min(RETRY_FIRST_SECONDS * 2 ** (failures - 1), RETRY_MAX_SECONDS)
        send_now(hybrid.ROUTE_TASK, [campaign_id], countdown=retry_in)
    return {"failed": message, "failures": failures, "retry_in": retry_in}


def _route_campaign(campaign_id: int) -> dict:
    campaign = Campaign.objects.filter(pk=campaign_id).first()
    if campaign is not None and campaign.is_hybrid:
        # The judge's answers go to its cache first, outside the campaign's row lock: a slow judge (a
        # trained model over tens of thousands of pairs) must not hold up pausing or cancelling.
        from annotation.automation.judges.cache import cached_predict

        cached_predict(CampaignJudge(campaign, retrain=False).base, _candidate_pairs(campaign)[2])
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().filter(pk=campaign_id).first()
        if campaign is None or not campaign.is_hybrid or campaign.state not in (Campaign.State.RUNNING, Campaign.State.PAUSED):
            return {"skipped": True}
        return _route(campaign)


def _route(campaign: Campaign) -> dict:
    rounds = campaign.n_presence_rounds
    current = PresenceRound.objects.filter(campaign=campaign).order_by("-number").first()
    open_hits = hybrid.open_routed_hits(campaign)
    progress = hybrid.example_progress(campaign)
    if (current is not None and current.state == PresenceRound.State.OPEN and open_hits == 0
            and hybrid.round_may_close(campaign, current.number, progress)):
        hybrid.close_round(campaign, current.number)
        current.state = PresenceRound.State.DONE
    candidates, rows, pairs, human = _candidate_pairs(campaign)
    if hybrid.is_active(campaign):
        return _route_active(campaign, current, open_hits, progress, candidates, rows, pairs, human)
    n_candidates = len(candidates)
    routed = sum(1 for c in candidates if c.hit_id is not None)
    if current is None or current.state == PresenceRound.State.DONE:
        number = 1 if current is None else current.number + 1
        # A round waits for its part of the examples (QA campaigns: they settle one by one).
        new_round = hybrid.round_due(campaign, number, progress, n_candidates, routed)
    else:
        number, new_round = current.number, False
    if current is None and not new_round:
        # Before round 1 nothing is routed and no labels are kept: the pass that opens it labels every candidate.
        return {"round": number, "waiting_for_examples": hybrid.examples_needed(campaign, number, progress[1]) - progress[0]}
    cap = hybrid.round_cap(campaign, number, n_candidates, progress)
    topping_up = current is not None and current.state == PresenceRound.State.OPEN and cap > routed
    if current is not None and current.state == PresenceRound.State.OPEN and not topping_up:
        return {"round": number, "waiting": open_hits}
    retrain = campaign.active_rounds
    if topping_up:
        # The judge learns only between rounds: a top-up refits on the labels the round opened with (those of
        # the earlier rounds' HITs), so it routes with the round's judge, the version the round records.
        earlier = {(u, s) for i, u, s in rows if candidates[i].round is not None and candidates[i].round < number}
        human = {key: label for key, label in human.items() if key in earlier}
    human_rows = np.array([i for i, (_, u, s) in enumerate(rows) if (u, s) in human], dtype=np.int64)
    human_labels = np.array([human[(rows[i][1], rows[i][2])] for i in human_rows], dtype=int)
    judge = CampaignJudge(campaign, retrain=retrain)
    unit_ids = np.array([u for _, u, _ in rows], dtype=np.int64)
    probabilities, threshold, version = judge.judge(pairs, unit_ids, human_rows, human_labels)
    present = np.asarray(probabilities) >= threshold
    fit, cross_fitted = _calibrate(campaign, judge, rows, unit_ids, probabilities, human_rows, human_labels)
    run = _write_labels(campaign, version, rows, probabilities, present, fit, cross_fitted)
    hit_index = np.array([r[0] for r in rows], dtype=np.int64)
    # Units per summary, per row (np.unique: summary ids are database ids, not 0..n-1).
    _, summary_code, per_summary = np.unique(np.array([s for _, _, s in rows], dtype=np.int64), return_inverse=True, return_counts=True)
    sizes = per_summary[summary_code.ravel()]
    uncertainty = routing.hit_uncertainty(probabilities, threshold, hit_index, n_candidates, MEASURE, sizes)
    already = np.array([i for i, c in enumerate(candidates) if c.hit_id is not None], dtype=np.int64)
    chosen = np.zeros(0, dtype=np.int64)
    if new_round or topping_up:
        chosen = routing.least_sure(uncertainty, max(0, cap - routed), exclude=already, seed=campaign.pk * 1000 + number)
    for i, c in enumerate(candidates):
        if c.hit_id is None and np.isfinite(uncertainty[i]):
            c.uncertainty = float(uncertainty[i])
    PresenceCandidate.objects.bulk_update([c for c in candidates if c.hit_id is None], ["uncertainty"], batch_size=2000)
    posted = hybrid.post_routed(campaign, number, [candidates[i].pk for i in chosen]) if len(chosen) else 0
    labels_used = judge.adapter.n_labels if judge.adapter is not None and judge.adapter.fitted else 0
    if new_round:
        PresenceRound.objects.create(
            campaign=campaign, number=number, budget=max(0, cap - routed), routed=posted, candidates=n_candidates,
            judge_version=version[:300], training_labels=labels_used, labelling_run=run,
            state=PresenceRound.State.OPEN if posted else PresenceRound.State.DONE,
            done_at=None if posted else timezone.now(),
        )
    else:
        target = current
        updates = {"labelling_run": run, "candidates": n_candidates}
        if topping_up:
            updates.update(routed=target.routed + posted, budget=target.budget + max(0, cap - routed))
        PresenceRound.objects.filter(pk=target.pk).update(**updates)
    result = {"round": number if new_round or current is None else current.number, "new_round": new_round, "posted": posted, "judge_version": version,
              "training_labels": labels_used, "candidates": n_candidates}
    return _end_pass(campaign, run, result, go_on=new_round and not posted and number < rounds)


def _end_pass(campaign: Campaign, run: AutoscoreRun, result: dict, go_on: bool) -> dict:
    """What every pass does last: drop the labels it supersedes, store the scores, and go straight on to the next
    round (``go_on``: a round with nothing to ask people) or let the campaign finish."""
    # A pass relabels every candidate; the labels it supersedes (a top-up's or a late pass's predecessor, no round's
    # any more) are dropped, or a QA campaign settling example by example would keep one full copy per example.
    AutoscoreRun.objects.filter(campaign=campaign, judge_name__startswith="hybrid:").exclude(pk=run.pk).exclude(
        pk__in=PresenceRound.objects.filter(campaign=campaign, labelling_run__isnull=False).values("labelling_run")
    ).delete()
    # The stored scores follow the new labels and calibration (the pages read them, never recompute them).
    refresh_hybrid_scores(campaign)
    if go_on:
        # Nothing to ask people this round (e.g. a share of 0): go straight on to the next.
        return {**result, "next": _route(campaign)}
    finish_campaign_if_done(campaign)
    log.info("routing pass of %s: %s", campaign.slug, result)
    return result


def _route_active(campaign: Campaign, current, open_hits: int, progress, candidates, rows, pairs, human) -> dict:
    """The routing pass under the active rule (the module docstring): open a round or top one up with a draw of its
    undecided candidates, else relabel with the latest judge."""
    rounds = campaign.n_presence_rounds
    n_candidates = len(candidates)
    example_of = dict(
        SystemSummary.objects.filter(pk__in={c.summary_id for c in candidates}).values_list("pk", "example_id")
    )
    undecided = np.array([c.stratum is None for c in candidates], dtype=bool)

    def to_decide(number: int) -> np.ndarray:
        examples = hybrid.draw_examples(campaign, number, progress)
        if examples is None:
            return undecided.copy()
        return undecided & np.array([example_of[c.summary_id] in examples for c in candidates], dtype=bool)

    if current is None or current.state == PresenceRound.State.DONE:
        number = 1 if current is None else current.number + 1
        draw = to_decide(number)
        new_round = hybrid.active_round_due(campaign, number, progress, int(draw.sum()))
    else:
        number, new_round = current.number, False
        draw = to_decide(number)
    if current is None and not new_round:
        return {"round": number, "waiting_for_examples": hybrid.examples_needed(campaign, number, progress[1]) - progress[0]}
    is_open = current is not None and current.state == PresenceRound.State.OPEN
    topping_up = is_open and bool(draw.any())
    if topping_up and hybrid.draw_may_wait(
            campaign, sum(1 for c in candidates if c.stratum is not None) + int(draw.sum()),
            sum(1 for c in candidates if c.hit_id is not None), int(draw.sum()), progress):
        # Too few new candidates for a draw of MIN_DRAW HITs: they wait for the next examples.
        topping_up = False
    if is_open and not topping_up:
        return {"round": number, "waiting": open_hits}
    if topping_up:
        # As under the other rule: a top-up routes with the round's judge (the labels the round opened with).
        earlier = {(u, s) for i, u, s in rows if candidates[i].round is not None and candidates[i].round < number}
        human = {key: label for key, label in human.items() if key in earlier}
    human_rows = np.array([i for i, (_, u, s) in enumerate(rows) if (u, s) in human], dtype=np.int64)
    human_labels = np.array([human[(rows[i][1], rows[i][2])] for i in human_rows], dtype=int)
    # Each label stands for 1/pi labels of the campaign: its HIT went to people with probability pi.
    weights = np.array([1.0 / (candidates[rows[i][0]].inclusion_probability or 1.0) for i in human_rows], dtype=float)
    judge = CampaignJudge(campaign, retrain=campaign.active_rounds)
    unit_ids = np.array([u for _, u, _ in rows], dtype=np.int64)
    probabilities, threshold, version = judge.judge(pairs, unit_ids, human_rows, human_labels, weights=weights)
    probabilities = np.asarray(probabilities, dtype=float)
    present = probabilities >= threshold
    fit, cross_fitted = _calibrate(campaign, judge, rows, unit_ids, probabilities, human_rows, human_labels, weights=weights)
    run = _write_labels(campaign, version, rows, probabilities, present, fit, cross_fitted)
    hit_index = np.array([r[0] for r in rows], dtype=np.int64)
    uncertainty = routing.hit_uncertainty(probabilities, threshold, hit_index, n_candidates, MEASURE)
    posted, budget, mix, mix_reason = 0, 0, None, ""
    if new_round or topping_up:
        budget, mix, mix_reason, drawn = _draw(campaign, number, candidates, rows, human, probabilities, uncertainty, draw,
                                               last=progress[0] >= progress[1] and number >= rounds)
        posted = hybrid.post_routed(campaign, number, [candidates[i].pk for i in drawn]) if len(drawn) else 0
    # The candidates still undecided keep the current judge's uncertainty (the decided keep theirs at their draw).
    waiting = [(i, c) for i, c in enumerate(candidates) if c.stratum is None and np.isfinite(uncertainty[i])]
    for i, c in waiting:
        c.uncertainty = float(uncertainty[i])
    PresenceCandidate.objects.bulk_update([c for _, c in waiting], ["uncertainty"], batch_size=2000)
    labels_used = judge.adapter.n_labels if judge.adapter is not None and judge.adapter.fitted else 0
    if new_round:
        PresenceRound.objects.create(
            campaign=campaign, number=number, budget=budget, routed=posted, candidates=n_candidates,
            judge_version=version[:300], training_labels=labels_used, labelling_run=run, mix=mix, mix_reason=mix_reason,
            state=PresenceRound.State.OPEN if posted else PresenceRound.State.DONE,
            done_at=None if posted else timezone.now(),
        )
    else:
        updates = {"labelling_run": run, "candidates": n_candidates}
        if topping_up:
            updates.update(routed=current.routed + posted, budget=current.budget + budget)
        PresenceRound.objects.filter(pk=current.pk).update(**updates)
    result = {"round": number if new_round or current is None else current.number, "new_round": new_round,
              "posted": posted, "judge_version": version, "training_labels": labels_used, "candidates": n_candidates,
              "decided": int(draw.sum()) if new_round or topping_up else 0, "mix": mix}
    return _end_pass(campaign, run, result, go_on=new_round and not posted and number < rounds)


def _draw(campaign: Campaign, number: int, candidates, rows, human, probabilities, uncertainty, draw, last: bool = False):
    """One draw (stratum) of the active rule over the candidates of ``draw``: (budget, mix, its reason, the indices
    of the candidates drawn).  Stores pi, the stratum, the round and the uncertainty on every candidate of it."""
    stratum = (PresenceCandidate.objects.filter(campaign=campaign).aggregate(m=Max("stratum"))["m"] or 0) + 1
    u = np.where(draw, uncertainty, -np.inf)
    routed = sum(1 for c in candidates if c.hit_id is not None)
    decided_after = sum(1 for c in candidates if c.stratum is not None) + int(draw.sum())
    budget = hybrid.draw_budget(campaign, decided_after, routed, int(np.isfinite(u).sum()), last=last)
    mix, reason = _choose_mix(candidates, rows, human, probabilities, u, budget)
    pi = active.inclusion_probabilities(u, budget, mix)
    members = np.flatnonzero(draw)
    # Over the stratum's candidates only, in their order (pk): the draw can be re-derived from the stored pi.
    drawn = members[active.fixed_size_sample(pi[members], seed=campaign.pk * 1000 + stratum)]
    for i in members:
        c = candidates[i]
        c.stratum, c.decided_round, c.inclusion_probability = stratum, number, float(pi[i])
        c.uncertainty = float(uncertainty[i]) if np.isfinite(uncertainty[i]) else None
    PresenceCandidate.objects.bulk_update([candidates[i] for i in members],
                                          ["stratum", "decided_round", "inclusion_probability", "uncertainty"], batch_size=2000)
    return budget, mix, reason, drawn


def _choose_mix(candidates, rows, human, probabilities, draw_uncertainty, budget: int) -> tuple[float, str]:
    """``active.choose_mix`` from the HITs people judged so far: their uncertainty at their draw, their squared
    residual (sum over the HIT's labelled units of y - f, with the current judge's f, squared) and their pi."""
    n = len(candidates)
    hit_index = np.array([i for i, _, _ in rows], dtype=np.int64)
    known = np.array([(u, s) in human for _, u, s in rows], dtype=bool)
    y = np.array([float(human.get((u, s), 0)) for _, u, s in rows])
    residual = np.bincount(hit_index, weights=np.where(known, y - probabilities, 0.0), minlength=n)
    labelled = np.bincount(hit_index, weights=known.astype(float), minlength=n) > 0
    judged = [i for i, c in enumerate(candidates)
              if labelled[i] and c.hit_id is not None and c.inclusion_probability and c.uncertainty is not None]
    return active.choose_mix([candidates[i].uncertainty for i in judged], residual[judged] ** 2,
                             [candidates[i].inclusion_probability for i in judged], draw_uncertainty, budget)
