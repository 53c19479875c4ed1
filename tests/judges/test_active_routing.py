"""The active routing rule in a live budgeted campaign (issue 37): random draws with known inclusion probabilities,
round by round; the judge refitted on 1/pi-weighted labels; cross-fitted probabilities stored; calibration weighted
and applied only when it helps; the setting on the settings page, the API and the import."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.management.simulation import simulate_crowd
from annotation.models import AutoPresence, AutoscoreRun, Campaign, PresenceCandidate, PresenceRound
from annotation.scoring import active, calibration
from annotation.scoring.routing import hit_budget
from annotation.services.hybrid import MIN_DRAW
from annotation.selectors.hybrid import human_labels, latest_labelling
from annotation.services.pipeline import launch_campaign
from hits.models import HIT
from tests.judges.test_hybrid_campaign import budgeted_campaign

SHARE = 0.25


def _capture_adapter_fits(monkeypatch):
    """Record every fit of the judge's adapter: (labels, sample weights)."""
    from annotation.automation.judges import adapt

    fits = []
    real = adapt.fit_adapter

    def recording(features, labels, sample_weight=None, few_labels=False):
        fits.append((np.asarray(labels).copy(), None if sample_weight is None else np.asarray(sample_weight).copy()))
        return real(features, labels, sample_weight=sample_weight, few_labels=few_labels)

    monkeypatch.setattr(adapt, "fit_adapter", recording)
    return fits


@pytest.mark.django_db(transaction=True)
def test_an_scu_campaign_under_the_active_rule_spends_exactly_its_budget_in_random_draws(tmp_path, eager_celery, monkeypatch,
                                                                                        capsys):
    """8 examples x 4 systems x 2 HITs = 64 candidates at 25%, 3 rounds: round 1 decides the first 3 examples (24
    candidates, 6 HITs to people), round 2 the next 3 (48 decided, 12 - 6 = 6 HITs), round 3 the last 2 (16 - 12 =
    4 HITs); 16 = hit_budget(64, 0.25) in all.  Every candidate is decided once, with 0 < pi <= 1; the drawn ones
    are the HITs people judged; round 2's judge learnt from round 1's labels, each weighted by 1/pi."""
    fits = _capture_adapter_fits(monkeypatch)
    campaign = budgeted_campaign(tmp_path, human_presence_share=SHARE, presence_rounds=3)
    assert campaign.routing_rule == "active"  # new campaigns take the active rule
    launch_campaign(campaign)
    campaign.refresh_from_db()
    first = PresenceRound.objects.get(campaign=campaign)
    assert (first.number, first.budget, first.routed, first.mix) == (1, 6, 6, active.DEFAULT_MIX)
    assert "the default" in first.mix_reason and "0 HITs judged by people so far" in first.mix_reason
    # Before round 2 the examples it decides wait undecided.
    assert set(PresenceCandidate.objects.filter(campaign=campaign, stratum__isnull=False)
               .values_list("summary__example__external_id", flat=True)) == {"ex0", "ex1", "ex2"}

    report = simulate_crowd(campaign, 6, seed=7, accuracy=1.0, max_seconds=300)
    assert report.campaign_state == "finished"
    candidates = list(PresenceCandidate.objects.filter(campaign=campaign).select_related("summary__example", "hit"))
    assert len(candidates) == 64
    hits = HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence", kind="regular")
    assert hits.count() == hits.filter(state="completed").count() == hit_budget(64, SHARE) == 16

    rounds = list(PresenceRound.objects.filter(campaign=campaign).order_by("number"))
    assert [(r.number, r.state, r.budget, r.routed) for r in rounds] == [(1, "done", 6, 6), (2, "done", 6, 6), (3, "done", 4, 4)]
    # Every candidate decided exactly once, by one draw, with a probability it could be drawn with.
    assert all(c.stratum is not None and c.decided_round is not None for c in candidates)
    assert all(0 < c.inclusion_probability <= 1 for c in candidates)
    decided = {r: {c.summary.example.external_id for c in candidates if c.decided_round == r} for r in (1, 2, 3)}
    assert decided == {1: {"ex0", "ex1", "ex2"}, 2: {"ex3", "ex4", "ex5"}, 3: {"ex6", "ex7"}}
    assert {c.stratum for c in candidates} == {1, 2, 3}
    for stratum in (1, 2, 3):
        members = [c for c in candidates if c.stratum == stratum]
        drawn = [c for c in members if c.hit_id is not None]
        # Fixed-size sampling: the draw sends exactly sum(pi) HITs to people, the round's budget.
        assert sum(c.inclusion_probability for c in members) == pytest.approx(len(drawn)) == rounds[stratum - 1].routed
        # The drawn HITs were posted in the draw's round, carrying their candidate's units.
        assert all(c.round == c.decided_round == stratum for c in drawn)
        assert all(c.hit.payload == {"summary": c.summary_id, "predicate": None, "units": c.units} for c in drawn)
    # A draw favours the judge's unsure HITs, but not only them: pi grows with the uncertainty at the draw.
    for stratum in (1, 2, 3):
        members = sorted((c for c in candidates if c.stratum == stratum), key=lambda c: c.uncertainty)
        assert members[0].inclusion_probability <= members[-1].inclusion_probability

    # Every round after the first learnt from the rounds before it: round 1's 6 HITs x 4 units = 24 labels, fewer
    # than the adapter's 30 (the demo campaign's "round 2 learnt from 0 human labels").
    assert rounds[0].training_labels == 0 and "adapted" not in rounds[0].judge_version
    assert rounds[1].training_labels == 24 and "adapted/c" in rounds[1].judge_version
    assert rounds[2].training_labels == 48 and rounds[2].judge_version != rounds[1].judge_version
    # ... each label weighted by 1/pi of its HIT.
    round_two_fit = next(weights for labels, weights in fits if len(labels) == 24)
    assert sorted(round_two_fit) == pytest.approx(sorted(1.0 / c.inclusion_probability for c in candidates if c.round == 1 for _ in c.units))

    # What the researcher reads at the end: the AIPW scores with their intervals, and the export's pi and xi.
    call_command("campaign_scores", campaign=campaign.slug, format="json", bootstrap=0)
    printed = json.loads(capsys.readouterr().out)
    hybrid = printed["hybrid"]
    assert hybrid["estimator"]["name"] == "aipw" and not hybrid["provisional"]
    assert set(hybrid["estimator"]["targets"]) == {"ci95", "ci95_examples"}
    for name, figures in printed["systems"].items():
        assert figures["ci_low"] < figures["score"] < figures["ci_high"], name
    scores = [figures["score"] for figures in printed["systems"].values()]
    assert scores == sorted(scores, reverse=True)  # ranked by the AIPW score
    call_command("export_campaign", campaign=campaign.slug, out=str(tmp_path / "export"))
    with (tmp_path / "export" / "hybrid_units.csv").open() as f:
        units = list(csv.DictReader(f))
    assert len(units) == sum(len(c.units) for c in candidates)
    by_candidate = {(c.summary_id, u): c for c in candidates for u in c.units}
    summary_of = {(c.summary.example.external_id, c.summary.system.name): c.summary_id for c in candidates}
    for row in units:
        c = by_candidate[(summary_of[(row["example"], row["system"])], int(row["unit"]))]
        assert float(row["inclusion_probability"]) == pytest.approx(c.inclusion_probability)
        assert row["routed"] == ("1" if c.hit_id else "0")


@pytest.mark.django_db(transaction=True)
def test_the_estimators_f_is_stored_cross_fitted_on_every_unit(tmp_path, eager_celery):
    """AutoPresence.cross_fitted on every unit of the labelling run: where people judged the unit, the judge's
    probability from adapters refitted without the unit's example (it differs from the probability the judge, which
    learnt from that label, gives); elsewhere the probability itself."""
    campaign = budgeted_campaign(tmp_path, human_presence_share=SHARE, presence_rounds=3)
    launch_campaign(campaign)
    campaign.refresh_from_db()
    assert simulate_crowd(campaign, 6, seed=7, accuracy=1.0, max_seconds=300).campaign_state == "finished"
    run = latest_labelling(campaign)
    assert "adapted" in run.judge_version
    rows = list(run.presences.values_list("unit_id", "summary_id", "probability", "cross_fitted"))
    assert len(rows) == 4 * 64 and all(f is not None for *_, f in rows)
    judged = human_labels(campaign)
    assert len(judged) == 4 * 16
    elsewhere = [(p, f) for u, s, p, f in rows if (u, s) not in judged]
    assert all(f == p for p, f in elsewhere)
    by_people = [(p, f) for u, s, p, f in rows if (u, s) in judged]
    assert len(by_people) == 64 and sum(f != p for p, f in by_people) > len(by_people) // 2
    assert all(0 < f < 1 for _, f in by_people)


@pytest.mark.django_db
def test_the_draws_are_seeded_and_reproducible(tmp_path, django_capture_on_commit_callbacks):
    """Round 1's draw is fixed_size_sample(pi, seed=campaign.pk * 1000 + stratum) of the stored pi: a researcher
    re-derives which HITs went to people from the export's pi alone; another seed draws other HITs."""
    campaign = budgeted_campaign(tmp_path, human_presence_share=SHARE, presence_rounds=3)
    with django_capture_on_commit_callbacks(execute=True):
        launch_campaign(campaign)
    members = list(PresenceCandidate.objects.filter(campaign=campaign, stratum=1).order_by("pk"))
    pi = np.array([c.inclusion_probability for c in members])
    drawn = np.array([c.hit_id is not None for c in members])
    assert drawn.sum() == 6 and len(members) == 24
    assert np.array_equal(active.fixed_size_sample(pi, seed=campaign.pk * 1000 + 1), drawn)
    assert np.array_equal(active.fixed_size_sample(pi, seed=campaign.pk * 1000 + 1), drawn)  # same seed, same draw
    assert not all(np.array_equal(active.fixed_size_sample(pi, seed=s), drawn) for s in (1, 2, 3))


@pytest.mark.django_db
def test_the_uncertainty_rule_keeps_least_sure_routing_and_stores_no_draw(tmp_path, django_capture_on_commit_callbacks):
    campaign = budgeted_campaign(tmp_path, human_presence_share=SHARE, presence_rounds=3, routing_rule="uncertainty")
    with django_capture_on_commit_callbacks(execute=True):
        launch_campaign(campaign)
    candidates = list(PresenceCandidate.objects.filter(campaign=campaign))
    routed = [c for c in candidates if c.hit_id]
    waiting = [c for c in candidates if not c.hit_id]
    # Round 1 picks among every example's HITs, the least sure first, and records no probability.
    assert len(routed) == hit_budget(64, SHARE) // 3
    assert min(c.uncertainty for c in routed) >= max(c.uncertainty for c in waiting)
    assert all(c.inclusion_probability is None and c.stratum is None and c.decided_round is None for c in candidates)
    first = PresenceRound.objects.get(campaign=campaign)
    assert first.mix is None and first.mix_reason == ""


@pytest.mark.django_db(transaction=True)
def test_in_the_demo_campaign_every_round_after_the_first_learns_from_the_rounds_before(eager_celery):
    """The issue's demo campaign (QA, 6 examples) at 25% in 3 rounds: rounds route a handful of HITs, fewer labels
    than the adapter's usual minimum; still round k's judge learnt from the labels of rounds 1..k-1."""
    call_command("load_demo", password="demo-pass-123")
    campaign = Campaign.objects.get(slug="demo-news")
    Campaign.objects.filter(pk=campaign.pk).update(human_presence_share=0.25, presence_rounds=3)
    campaign.refresh_from_db()
    assert campaign.routing_rule == "active"
    launch_campaign(campaign)
    assert simulate_crowd(campaign, 8, seed=3, max_seconds=300).campaign_state == "finished"
    rounds = list(PresenceRound.objects.filter(campaign=campaign).order_by("number"))
    # Every round opens and the first routes HITs (a later one may route none when the examples reach presence in
    # one burst before round 1's pass, as with a real Celery worker; see the budgeted rounds' test).
    assert [r.number for r in rounds] == [1, 2, 3] and rounds[0].routed > 0
    candidates = PresenceCandidate.objects.filter(campaign=campaign)
    assert candidates.filter(stratum__isnull=True).count() == 0
    # Examples settle one by one: a draw that would buy fewer than 2 HITs waits for the next ones, and the last
    # buys at least 2, so every HIT had a chance (pi > 0: no unit the judge alone can bias) and every draw has a
    # variance estimate; the spend is the share, or at most 2 HITs over it.
    budget = hit_budget(candidates.count(), 0.25)
    assert budget <= candidates.filter(hit__isnull=False).count() <= budget + MIN_DRAW
    assert candidates.filter(inclusion_probability__lte=0).count() == 0
    for stratum in set(candidates.values_list("stratum", flat=True)):
        members = candidates.filter(stratum=stratum)
        assert members.filter(hit__isnull=False).count() >= min(MIN_DRAW, members.count())
    labels = human_labels(campaign)
    for r in rounds[1:]:
        earlier = {(u, c.summary_id) for c in candidates.filter(round__lt=r.number) for u in c.units}
        assert r.training_labels == len(earlier & set(labels)) > 0
        assert "adapted" in r.judge_version


# ---------------------------------------------------------------------------------------------------------------
# Calibration: weighted by 1/pi, applied only when it helps.


def test_weighted_calibration_figures_count_a_unit_of_weight_2_as_two_units():
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 1, 200)
    y = (rng.random(200) < p ** 2).astype(int)
    weights = rng.integers(1, 4, 200).astype(float)
    expanded_p, expanded_y = np.repeat(p, weights.astype(int)), np.repeat(y, weights.astype(int))
    assert calibration.expected_calibration_error(p, y, weights=weights) == pytest.approx(
        calibration.expected_calibration_error(expanded_p, expanded_y))
    assert calibration.expected_calibration_error(p, y, weights=weights) != pytest.approx(calibration.expected_calibration_error(p, y))
    assert calibration.platt_fit(p, y, weights=weights) == pytest.approx(calibration.platt_fit(expanded_p, expanded_y), abs=0.05)


def _well_calibrated(seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, 80)
    return p, (rng.random(80) < p).astype(int), np.arange(80) // 8


def _not_helping_seed():
    """A seed whose well-calibrated judge Platt scaling does not improve out of fold (there is always one)."""
    for seed in range(50):
        p, y, groups = _well_calibrated(seed)
        fit = calibration.calibrate(p, np.arange(80), y, groups, weights=np.ones(80) * 2)
        if not fit.fitted and fit.ece_after is not None:
            return seed
    raise AssertionError("no seed found")


def test_calibration_that_does_not_lower_the_weighted_ece_is_not_applied_and_says_why():
    p, y, groups = _well_calibrated(_not_helping_seed())
    weights = np.ones(80) * 2
    fit = calibration.calibrate(p, np.arange(80), y, groups, weights=weights)
    assert fit.method == "none" and fit.probabilities is None and fit.weighted
    assert fit.ece_after >= fit.ece_before
    assert fit.reason.startswith("calibration not applied: it does not lower the expected calibration error")
    assert f"{fit.ece_before:.3f} as the judge gives them, {fit.ece_after:.3f} calibrated" in fit.reason
    figures = fit.as_dict()
    assert figures["not_applied"] and not figures["fitted"] and figures["weighted"]
    # A miscalibrated judge is still calibrated, weighted or not.
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.02, 0.98, 400)
    labels = (rng.random(400) < truth).astype(int)
    judge = 1 / (1 + np.exp(-(3.0 * np.log(truth / (1 - truth)) + 1.5)))
    fit = calibration.calibrate(judge, np.arange(400), labels, np.arange(400) // 12, weights=rng.uniform(1, 4, 400))
    assert fit.fitted and fit.ece_after < fit.ece_before and not fit.as_dict()["not_applied"]


@pytest.mark.django_db
def test_judges_page_says_the_calibration_was_not_applied_and_what_its_figure_describes(
        tmp_path, researcher, django_capture_on_commit_callbacks):
    campaign = budgeted_campaign(tmp_path, human_presence_share=0.5)
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    with django_capture_on_commit_callbacks(execute=True):
        launch_campaign(campaign)
    p, y, groups = _well_calibrated(_not_helping_seed())
    fit = calibration.calibrate(p, np.arange(80), y, groups, weights=np.ones(80) * 2)
    run = latest_labelling(campaign)
    AutoscoreRun.objects.filter(pk=run.pk).update(results={**run.results, "calibration": fit.as_dict()})
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/campaigns/{campaign.slug}/judges/").content.decode()
    # The scores keep the judge's label: the calibration would have made it worse.
    assert 'id="judge-calibration" data-scoring="label"' in page
    assert 'id="calibration-not-applied"' in page and "it does not lower the expected calibration error" in page
    assert f'data-field="ece-before">{fit.ece_before:.3f}<' in page and f'data-field="ece-after">{fit.ece_after:.3f}<' in page
    assert 'id="calibration-sample" data-weighted="true"' in page and "weighted by 1/pi" in page
    assert 'id="reliability-plot"' in page
    # Under the uncertainty rule the figures are on the routed units only, and the page says so.
    unweighted = calibration.calibrate(*_well_calibrated(0)[:1], np.arange(80), _well_calibrated(0)[1], _well_calibrated(0)[2])
    AutoscoreRun.objects.filter(pk=run.pk).update(results={**run.results, "calibration": unweighted.as_dict()})
    page = client.get(f"/campaigns/{campaign.slug}/judges/").content.decode()
    assert 'data-weighted="false"' in page and "not a representative sample" in page


@pytest.mark.django_db(transaction=True)
def test_a_live_campaigns_calibration_is_weighted_by_one_over_pi(tmp_path, eager_celery, monkeypatch):
    """The routing pass hands calibration 1/pi of each human label's HIT: its stored figures say "weighted" and
    their bins hold the labels' total weight."""
    campaign = budgeted_campaign(tmp_path, human_presence_share=SHARE, presence_rounds=3)
    launch_campaign(campaign)
    campaign.refresh_from_db()
    assert simulate_crowd(campaign, 6, seed=7, accuracy=1.0, max_seconds=300).campaign_state == "finished"
    figures = latest_labelling(campaign).results["calibration"]
    assert figures["weighted"] and figures["n_labels"] == 64
    pi = {(u, c.summary_id): c.inclusion_probability
          for c in PresenceCandidate.objects.filter(campaign=campaign, hit__isnull=False) for u in c.units}
    assert sum(b["weight"] for b in figures["bins_before"]) == pytest.approx(sum(1 / v for v in pi.values()))


# ---------------------------------------------------------------------------------------------------------------
# The setting.


@pytest.mark.django_db
def test_the_routing_rule_is_set_on_the_settings_page_the_api_and_the_import_and_fixed_at_launch(
        tmp_path, researcher, django_capture_on_commit_callbacks):
    from annotation.web.forms import CampaignSettingsForm
    from tests.judges.conftest import write_scu_folder

    campaign = budgeted_campaign(tmp_path, human_presence_share=0.5)
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    campaign.refresh_from_db()
    client = Client()
    client.force_login(researcher)
    url = f"/campaigns/{campaign.slug}/settings/"
    page = client.get(url).content.decode()
    assert 'name="routing_rule"' in page and "How people&#x27;s presence HITs are chosen" in page
    assert 'id="routing-rule-help"' in page and "Active Statistical Inference" in page
    # Beside the human presence share.
    assert page.index('name="human_presence_share"') < page.index('name="routing_rule"') < page.index('name="presence_judge"')
    form = CampaignSettingsForm(instance=campaign)
    data = {k: v for k, v in ((name, form[name].value()) for name in form.fields) if v is not None and v is not False}
    assert client.post(url, {**data, "routing_rule": "greedy", "action": "save"}).status_code == 400
    assert client.post(url, {**data, "routing_rule": "uncertainty", "action": "save"}).status_code == 302
    campaign.refresh_from_db()
    assert campaign.routing_rule == "uncertainty"

    api = f"/api/campaigns/{campaign.slug}/"
    assert client.get(api).json()["routing_rule"] == "uncertainty"
    assert client.patch(api, {"routing_rule": "active"}, content_type="application/json").status_code == 200
    campaign.refresh_from_db()
    assert campaign.routing_rule == "active"
    bad = client.patch(api, {"routing_rule": "greedy"}, content_type="application/json")
    assert bad.status_code == 400 and "routing_rule" in bad.json()

    with django_capture_on_commit_callbacks(execute=True):
        launch_campaign(campaign)
    refused = client.patch(api, {"routing_rule": "uncertainty"}, content_type="application/json")
    assert refused.status_code == 409 and "routing_rule" in refused.json()["detail"]
    client.post(url, {**data, "routing_rule": "uncertainty", "action": "save"})
    campaign.refresh_from_db()
    assert campaign.routing_rule == "active"
    assert 'name="routing_rule"' in client.get(url).content.decode()  # shown, read-only

    folder = write_scu_folder(tmp_path / "in")
    call_command("import_campaign", name="Least sure", folder=str(folder), owner="rita", human_share=0.25, routing_rule="uncertainty")
    assert Campaign.objects.get(slug="least-sure").routing_rule == "uncertainty"
    (folder / "settings.json").write_text(json.dumps({"human_presence_share": 0.3, "routing_rule": "uncertainty"}))
    call_command("import_campaign", name="From file", folder=str(folder), owner="rita")
    assert Campaign.objects.get(slug="from-file").routing_rule == "uncertainty"
    (folder / "settings.json").write_text(json.dumps({"routing_rule": "greedy"}))
    with pytest.raises(CommandError, match="routing_rule"):
        call_command("import_campaign", name="Bad", folder=str(folder), owner="rita")
    (folder / "settings.json").unlink()
    call_command("import_campaign", name="Default rule", folder=str(folder), owner="rita", human_share=0.3)
    assert Campaign.objects.get(slug="default-rule").routing_rule == "active"


def test_with_few_labels_the_active_rules_judge_moves_towards_them_a_little():
    """Below the adapter's 30 labels (the active rule): a ridge-shrunk shift of the judge's logit, finite even when
    every label says "present", towards the labels, more with more labels; the other rule keeps the judge."""
    from annotation.automation.judges import adapt

    features = np.zeros((12, len(adapt.ADAPTER_FEATURES) + len(adapt.PRIOR_FEATURES)))  # judge at 0.5, no prior
    assert not adapt.fit_adapter(features, np.ones(12, dtype=int)).fitted
    few = adapt.fit_adapter(features[:4], np.ones(4, dtype=int), few_labels=True)
    more = adapt.fit_adapter(features, np.ones(12, dtype=int), few_labels=True)
    assert few.fitted and few.n_labels == 4
    assert 0.5 < few.predict(features)[0] < more.predict(features)[0] < 1.0
    # Weighted: the "present" label of weight 3 (1/pi) pulls harder than the same label of weight 1.
    labels = np.array([1, 0, 0, 0])
    weighted = adapt.fit_adapter(features[:4], labels, sample_weight=[3.0, 1.0, 1.0, 1.0], few_labels=True)
    plain = adapt.fit_adapter(features[:4], labels, few_labels=True)
    assert weighted.predict(features)[0] > plain.predict(features)[0]


def test_a_draw_too_small_to_give_every_hit_a_chance_waits_for_more_examples_and_the_last_buys_two():
    """A QA campaign's examples settle one by one: at 25%, a top-up of 4 new HITs would buy hit_budget = 1 HIT (and
    3 new HITs 0: those would have pi = 0, their units never correcting the judge).  Such a draw waits while
    examples are still to come; the last draw buys at least 2."""
    from annotation.services.hybrid import draw_budget, draw_may_wait

    campaign = Campaign(human_presence_share=0.25)
    # 40 candidates decided with 10 routed; 3 more arrive: hit_budget(43) - 10 = 0 HITs for them.
    assert draw_budget(campaign, 43, 10, 3) == 0
    assert draw_may_wait(campaign, 43, 10, 3, progress=(5, 8))
    # 8 more: hit_budget(48) - 10 = 2 HITs, a draw that may go ahead.
    assert not draw_may_wait(campaign, 48, 10, 8, progress=(6, 8))
    # Every example has its HITs: nothing waits any more, and the last draw buys 2 (or every HIT it has).
    assert not draw_may_wait(campaign, 43, 10, 3, progress=(8, 8))
    assert draw_budget(campaign, 43, 10, 3, last=True) == 2
    assert draw_budget(campaign, 41, 10, 1, last=True) == 1
    assert draw_budget(Campaign(human_presence_share=0.0), 43, 0, 3, last=True) == 0
