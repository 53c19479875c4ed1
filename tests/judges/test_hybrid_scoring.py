"""Budgeted presence scored by the judge's calibrated probability (issue 32) and stored hybrid scores (issue 29).

Calibration on the campaign's own human labels (out of fold, Platt), its fallback, the scores under both
rules of the uncertainty routing rule against a hand computation (leaderboard, API, campaign_scores, export),
no interval under that routing rule (issue 37) and why, and the stored scores that no request recomputes."""

from __future__ import annotations

import csv
import html
import json
import re

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import AutoPresence, AutoscoreRun, Campaign, GoldPresence, HybridScore
from annotation.scoring import calibration
from annotation.scoring.correlation import bootstrap_hybrid_score_ci
from annotation.selectors.hybrid import latest_labelling

pytestmark = pytest.mark.django_db


def _miscalibrated(n=600, seed=0):
    """True presence probabilities, labels drawn from them, and an overconfident, biased judge's probabilities."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.02, 0.98, n)
    labels = (rng.random(n) < truth).astype(int)
    logit = np.log(truth / (1 - truth))
    judge = 1 / (1 + np.exp(-(3.0 * logit + 1.5)))  # far too sure, and leaning to "present"
    return judge, labels, np.arange(n) // 12  # 12 units per example


def test_calibration_lowers_the_expected_calibration_error_of_a_miscalibrated_judge():
    judge, labels, groups = _miscalibrated()
    human_rows = np.arange(400)  # people judged 400 units; the judge alone scores the other 200
    fit = calibration.calibrate(judge, human_rows, labels[:400], groups[:400])
    assert fit.fitted and fit.method == "platt" and fit.n_labels == 400
    assert fit.ece_before > 0.1
    assert fit.ece_after < fit.ece_before / 2
    # On the units nobody judged (the fit never saw them), the calibrated probabilities are closer too.
    unseen = np.arange(400, 600)
    assert calibration.expected_calibration_error(fit.probabilities[unseen], labels[unseen]) < \
        calibration.expected_calibration_error(judge[unseen], labels[unseen]) / 2
    assert len(fit.bins_before) == len(fit.bins_after) == calibration.N_BINS == 10


def test_a_units_own_label_never_calibrates_its_own_probability():
    judge, labels, groups = _miscalibrated(seed=1)
    human_rows = np.arange(300)
    first = calibration.calibrate(judge, human_rows, labels[:300], groups[:300])
    flipped = labels[:300].copy()
    flipped[5] = 1 - flipped[5]
    second = calibration.calibrate(judge, human_rows, flipped, groups[:300])
    # Unit 5's calibrated probability comes from a fit on the other folds: its own label does not move it.
    assert first.probabilities[5] == second.probabilities[5]
    # Units of the other folds, whose fit includes unit 5, do move.
    folds = calibration.example_folds(groups[:300])
    other = np.flatnonzero(folds != folds[5])[0]
    assert first.probabilities[other] != second.probabilities[other]


def test_too_few_human_labels_fall_back_to_labels_and_say_what_is_missing():
    judge, labels, groups = _miscalibrated()
    fit = calibration.calibrate(judge, np.arange(30), labels[:30], groups[:30])
    assert not fit.fitted and fit.probabilities is None
    assert "30 human-labelled units of the 50 needed" in fit.reason
    one_class = calibration.calibrate(judge, np.arange(80), np.ones(80, dtype=int), groups[:80])
    assert not one_class.fitted and "80 present and 0 absent" in one_class.reason


def test_the_interval_under_the_probability_rule_draws_the_judges_part_with_a_fixed_seed():
    # One system, one example, one summary of 10 units all scored by the judge at 0.5: resampling examples alone
    # would give a zero-width interval; drawing presence gives Binomial(10, 0.5) / 10, about [0.2, 0.8].
    args = (np.array([0.0]), np.array([10.0]), np.zeros(10, dtype=np.int64), np.full(10, 0.5), np.array([0]), np.array([0]))
    ci = bootstrap_hybrid_score_ci(*args, n_boot=2000, seed=11)
    assert 0.15 <= ci[0, 0] <= 0.25 and 0.75 <= ci[0, 1] <= 0.85
    again = bootstrap_hybrid_score_ci(*args, n_boot=2000, seed=11)
    assert np.array_equal(ci, again)
    # Human units are fixed: 6 of 10 present by people, 4 judge units at probability 1 -> always 1.0.
    fixed = bootstrap_hybrid_score_ci(np.array([6.0]), np.array([10.0]), np.zeros(4, dtype=np.int64), np.ones(4),
                                      np.array([0]), np.array([0]), n_boot=50, seed=0)
    assert fixed.tolist() == [[1.0, 1.0]]


# ---------------------------------------------------------------------------------------------------------------
# A small budgeted campaign, scored by hand.


def _small_campaign(tmp_path, researcher, capture, judge_scoring):
    """The judges' tiny SCU campaign (3 examples, systems good/fair/poor, 4 + 3 + 2 units), budgeted at 50%, one
    round.  People judged example ex0 of "poor" (all 4 present) and of "good" (2 of 4 present); the judge's latest
    labels are then set by hand: every unit present, calibrated probability 0.25."""
    from annotation.models import ContentUnit, SystemSummary
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign
    from annotation.services.scores import recompute_summary_scores
    from tests.judges.conftest import write_scu_folder

    campaign = import_campaign(name="Small", folder=write_scu_folder(tmp_path / "small")).campaign
    GoldPresence.objects.filter(summary__system__campaign=campaign).delete()
    # The uncertainty rule (least-sure routing), whose scores follow ``judge_scoring``; the active rule: test_hybrid_aipw.py.
    Campaign.objects.filter(pk=campaign.pk).update(human_presence_share=0.5, presence_rounds=1, gold_share=0.0, owner=researcher,
                                                   judge_scoring=judge_scoring, routing_rule="uncertainty")
    campaign.refresh_from_db()
    with capture(execute=True):
        launch_campaign(campaign)
    run = latest_labelling(campaign)
    AutoPresence.objects.filter(run=run).update(present=True, calibrated=0.25)
    AutoscoreRun.objects.filter(pk=run.pk).update(results={**run.results, "calibration": {
        "method": "platt", "fitted": True, "n_labels": 60, "n_present": 30, "reason": "", "ece_before": 0.2, "ece_after": 0.05,
        "bins_before": [], "bins_after": []}})
    for system, present in (("poor", [1, 1, 1, 1]), ("good", [1, 1, 0, 0])):
        summary = SystemSummary.objects.get(system__campaign=campaign, system__name=system, example__external_id="ex0")
        units = ContentUnit.objects.filter(example=summary.example).order_by("index")
        GoldPresence.objects.bulk_create([
            GoldPresence(unit=u, summary=summary, present=bool(p), n_judgments=3, n_present=3 * p, origin="majority")
            for u, p in zip(units, present)
        ])
    recompute_summary_scores(campaign)  # human labels changed: the stored scores follow
    campaign.refresh_from_db()
    return campaign


#: By hand.  Probability rule: poor (1 + 0.25 + 0.25) / 3, good (0.5 + 0.25 + 0.25) / 3, fair 0.25 everywhere.
#: Label rule (every judge unit present): poor (1 + 1 + 1) / 3, good (0.5 + 1 + 1) / 3, fair 1.
BY_HAND = {
    "probability": {"poor": 0.5, "good": 1 / 3, "fair": 0.25},
    "label": {"poor": 1.0, "good": 2.5 / 3, "fair": 1.0},
}


@pytest.mark.parametrize("rule", ["probability", "label"])
def test_leaderboard_api_campaign_scores_and_export_follow_the_rule(rule, tmp_path, researcher, django_capture_on_commit_callbacks, capsys):
    campaign = _small_campaign(tmp_path, researcher, django_capture_on_commit_callbacks, rule)
    expected = BY_HAND[rule]
    order = sorted(expected, key=lambda name: (-expected[name], name))
    client = Client()
    client.force_login(researcher)

    page = client.get(f"/campaigns/{campaign.slug}/leaderboard/").content.decode()
    main = re.search(r'<table class="grid" id="leaderboard" data-ranked-by="hybrid">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r'<tr data-system="(\w+)"><td>\d</td><td>\w+</td>\s*<td class="num">([0-9.]+)</td>', main)
    assert rows == [(name, f"{expected[name]:.3f}") for name in order]
    assert f'id="hybrid-rule" data-scoring="{rule}"' in page
    statement = "its calibrated probability" if rule == "probability" else "its label"
    assert f"units only the judge labelled count as {statement}" in page
    chart = re.search(r'<svg id="score-chart" data-ranked-by="hybrid".*?</svg>', page, re.S).group(0)
    bars = [float(w) for w in re.findall(r'<rect x="220" y="6" width="([0-9.]+)"', chart)]
    assert bars == [round(expected[name] * 640, 1) for name in order]
    caption = "the judge's calibrated probabilities, as the ranking" if rule == "probability" else "the judge's labels, as the ranking"
    assert caption in page

    board = client.get(f"/api/campaigns/{campaign.slug}/leaderboard/").json()
    assert [(s["system"], s["qapyramid"]) for s in board["systems"]] == [(n, pytest.approx(expected[n])) for n in order]
    assert board["hybrid"]["scoring"] == rule
    api = client.get(f"/api/campaigns/{campaign.slug}/scores/?n_boot=0").json()
    assert api["hybrid"]["scoring"] == rule and api["hybrid"]["systems"] == pytest.approx(expected)

    call_command("campaign_scores", campaign=campaign.slug, format="json", bootstrap=0, per_summary=True)
    printed = json.loads(capsys.readouterr().out)
    assert printed["hybrid"]["scoring"] == rule
    assert printed["hybrid"]["systems"] == pytest.approx(expected)
    assert list(printed["systems"]) == order
    # Per summary: poor's ex0 was judged by people (1.0), its ex1 by the judge alone.
    per_summary = {(s["example"], s["system"]): s for s in printed["summaries"]}
    assert per_summary[("ex0", "poor")]["hybrid"] == 1.0 and per_summary[("ex0", "poor")]["hybrid_human_units"] == 4
    assert per_summary[("ex1", "poor")]["hybrid"] == (0.25 if rule == "probability" else 1.0)
    call_command("campaign_scores", campaign=campaign.slug, format="table", bootstrap=0)
    assert f"Scoring rule ({rule}):" in capsys.readouterr().out
    summaries_page = client.get(f"/campaigns/{campaign.slug}/leaderboard/summaries/?system=poor").content.decode()
    assert f'data-scoring="{rule}"' in summaries_page
    assert re.findall(r'data-figure="hybrid">([0-9.]+)<', summaries_page) == ["1.000", f"{per_summary[('ex1', 'poor')]['hybrid']:.3f}",
                                                                               f"{per_summary[('ex2', 'poor')]['hybrid']:.3f}"]

    call_command("export_campaign", campaign=campaign.slug, out=str(tmp_path / "export"))
    exported = json.loads((tmp_path / "export" / "campaign.json").read_text())
    assert exported["hybrid_scores"]["scoring"] == rule
    assert {n: s["qapyramid"] for n, s in exported["hybrid_scores"]["systems"].items()} == pytest.approx(expected)
    with (tmp_path / "export" / "hybrid_units.csv").open() as f:
        units = list(csv.DictReader(f))
    assert len(units) == 27
    people = [u for u in units if u["scored_by"] == "people"]
    assert len(people) == 8 and all(u["human_label"] in ("0", "1") for u in people)
    judged = [u for u in units if u["scored_by"] != "people"]
    # Judge outputs in their own columns; the human label stays empty where people did not judge.
    assert all(u["human_label"] == "" and u["judge_label"] == "1" and float(u["judge_calibrated"]) == 0.25 for u in judged)
    assert {u["scored_by"] for u in judged} == {"judge_probability" if rule == "probability" else "judge_label"}
    assert {float(u["counted_as"]) for u in judged} == {0.25 if rule == "probability" else 1.0}
    # Gold stays gold: examples.jsonl's gold labels are the 8 people gave, none from the judge.
    gold = [label for line in (tmp_path / "export" / "examples.jsonl").read_text().splitlines()
            for system in json.loads(line)["systems"].values() for label in system["gold"].values()]
    assert sorted(gold) == [False, False, True, True, True, True, True, True]


def test_stored_scores_are_read_not_recomputed_on_requests(tmp_path, researcher, django_capture_on_commit_callbacks, monkeypatch):
    campaign = _small_campaign(tmp_path, researcher, django_capture_on_commit_callbacks, "probability")
    stored = HybridScore.objects.get(campaign=campaign)
    assert stored.data["scoring"] == "probability"
    assert stored.data["human_units"] == 8  # the label change refreshed them
    # A few more human labels (one summary's, as after a presence HIT): the stored scores move.
    from annotation.models import ContentUnit, SystemSummary
    from annotation.services.scores import recompute_summary_scores

    summary = SystemSummary.objects.get(system__campaign=campaign, system__name="poor", example__external_id="ex1")
    GoldPresence.objects.bulk_create([GoldPresence(unit=u, summary=summary, present=False, n_judgments=3, n_present=0, origin="majority")
                                      for u in ContentUnit.objects.filter(example=summary.example)])
    recompute_summary_scores(campaign, [summary.pk])
    moved = HybridScore.objects.get(campaign=campaign)
    assert moved.data["human_units"] == 11 and moved.data["systems"]["poor"]["qapyramid"] == pytest.approx((1 + 0 + 0.25) / 3)
    assert moved.data["systems"]["poor"]["ci95"] == [None, None]  # the uncertainty rule: never an interval
    stored = moved

    from annotation import scoring
    from annotation.selectors import hybrid as hybrid_selectors

    def forbidden(*args, **kwargs):
        raise AssertionError("hybrid scores recomputed on a request")

    monkeypatch.setattr(hybrid_selectors, "compute_hybrid_scores", forbidden)
    monkeypatch.setattr(scoring, "bootstrap_hybrid_score_ci", forbidden)
    client = Client()
    client.force_login(researcher)
    assert client.get(f"/campaigns/{campaign.slug}/leaderboard/").status_code == 200
    board = client.get(f"/api/campaigns/{campaign.slug}/leaderboard/").json()
    assert {s["system"]: s["ci95"] for s in board["systems"]} == {n: s["ci95"] for n, s in stored.data["systems"].items()}
    assert client.get(f"/api/campaigns/{campaign.slug}/scores/?n_boot=0").status_code == 200
    assert client.get(f"/campaigns/{campaign.slug}/leaderboard/summaries/").status_code == 200


def test_the_uncertainty_rule_shows_no_interval_and_says_why(tmp_path, researcher, django_capture_on_commit_callbacks, capsys):
    from annotation.selectors.hybrid import NO_INTERVAL_REASON

    campaign = _small_campaign(tmp_path, researcher, django_capture_on_commit_callbacks, "probability")
    call_command("campaign_scores", campaign=campaign.slug, format="json", bootstrap=0)
    printed = json.loads(capsys.readouterr().out)
    hybrid = printed["hybrid"]
    assert hybrid["estimator"]["rule"] == "uncertainty" and hybrid["estimator"]["no_interval_reason"] == NO_INTERVAL_REASON
    assert "the judge chose which units people saw" in NO_INTERVAL_REASON
    for name, figures in printed["systems"].items():
        assert figures["ci95"] == [None, None] and figures["ci_low"] is None and figures["ci_high"] is None
        assert figures["no_interval_reason"] == NO_INTERVAL_REASON
        assert figures["score"] == pytest.approx(BY_HAND["probability"][name])
    assert hybrid["pairs"] == []  # no "A beats B" without an interval that holds
    assert printed["pairs"] == [] and printed["pairs_method"] == "none"
    assert "the judge chose which units people saw" in printed["pairs_no_comparison"]
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/campaigns/{campaign.slug}/leaderboard/").content.decode()
    assert 'id="no-interval-reason"' in page and "the judge chose which units people saw" in page
    main = re.search(r'<table class="grid" id="leaderboard" data-ranked-by="hybrid">(.*?)</table>', page, re.S).group(1)
    assert re.findall(r'data-field="ci95">([^<]*)<', main) == ["—"] * 3
    assert 'id="pairs"' not in page and "no interval holds its 95% under the uncertainty rule" in page
    board = client.get(f"/api/campaigns/{campaign.slug}/leaderboard/").json()
    assert all(s["ci95"] == [None, None] and s["no_interval_reason"] == NO_INTERVAL_REASON for s in board["systems"])
    assert board["pairs"] == [] and board["pairs_no_comparison"] == printed["pairs_no_comparison"]
    assert f"No comparison: {printed['pairs_no_comparison']}." in html.unescape(page)
    call_command("export_campaign", campaign=campaign.slug, out=str(tmp_path / "export"))
    with (tmp_path / "export" / "hybrid_systems.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["ci95_low_full_human_score_on_these_examples"] for r in rows] == ["", "", ""]
    assert {r["no_interval_reason"] for r in rows} == {NO_INTERVAL_REASON}


# ---------------------------------------------------------------------------------------------------------------
# The setting: settings page, API, import_campaign.


def test_import_campaign_sets_the_share_and_the_rule_and_names_the_bound(tmp_path, researcher):
    from tests.judges.conftest import write_scu_folder

    folder = write_scu_folder(tmp_path / "in")
    call_command("import_campaign", name="Cheap", folder=str(folder), owner="rita", human_share=0.25, judge_scoring="label")
    campaign = Campaign.objects.get(slug="cheap")
    assert campaign.human_presence_share == 0.25 and campaign.judge_scoring == "label" and campaign.is_hybrid
    with pytest.raises(CommandError, match=r"--human-share.*less than or equal to 1"):
        call_command("import_campaign", name="Too much", folder=str(folder), owner="rita", human_share=1.5)
    with pytest.raises(CommandError, match=r"--human-share.*greater than or equal to 0"):
        call_command("import_campaign", name="Negative", folder=str(folder), owner="rita", human_share=-0.1)
    with pytest.raises(CommandError, match=r"--human-share.*finite"):
        call_command("import_campaign", name="Nan", folder=str(folder), owner="rita", human_share=float("nan"))
    assert not Campaign.objects.filter(slug__in=["too-much", "negative", "nan"]).exists()  # nothing imported
    call_command("import_campaign", name="Default", folder=str(folder), owner="rita", human_share=0.3)
    assert Campaign.objects.get(slug="default").judge_scoring == "probability"  # new budgeted campaigns: the probability


def test_settings_page_and_api_set_the_rule(tmp_path, researcher):
    from annotation.web.forms import CampaignSettingsForm
    from tests.judges.test_hybrid_campaign import budgeted_campaign

    campaign = budgeted_campaign(tmp_path, human_presence_share=0.5)
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    client = Client()
    client.force_login(researcher)
    url = f"/campaigns/{campaign.slug}/settings/"
    page = client.get(url).content.decode()
    assert 'name="judge_scoring"' in page and "Units the judge labels count as" in page and "Its calibrated probability" in page
    assert 'id="judge-scoring-help"' in page and "labels until there are 50 human-labelled units" in page
    form = CampaignSettingsForm(instance=campaign)
    data = {k: v for k, v in ((name, form[name].value()) for name in form.fields) if v is not None and v is not False}
    assert client.post(url, {**data, "judge_scoring": "sometimes", "action": "save"}).status_code == 400
    assert client.post(url, {**data, "judge_scoring": "label", "action": "save"}).status_code == 302
    campaign.refresh_from_db()
    assert campaign.judge_scoring == "label"
    api = f"/api/campaigns/{campaign.slug}/"
    assert client.get(api).json()["judge_scoring"] == "label"
    response = client.patch(api, {"judge_scoring": "probability", "human_presence_share": 0.25}, content_type="application/json")
    assert response.status_code == 200, response.content
    campaign.refresh_from_db()
    assert campaign.judge_scoring == "probability" and campaign.human_presence_share == 0.25
    bad = client.patch(api, {"human_presence_share": 2}, content_type="application/json")
    assert bad.status_code == 400 and "less than or equal to 1" in bad.content.decode()


# ---------------------------------------------------------------------------------------------------------------
# The judges page.


def test_judges_page_says_when_there_are_too_few_labels_and_shows_the_calibration_once_there_are(
        tmp_path, researcher, django_capture_on_commit_callbacks):
    from annotation.services.pipeline import launch_campaign
    from tests.judges.test_hybrid_campaign import budgeted_campaign

    campaign = budgeted_campaign(tmp_path, human_presence_share=0.5)
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    with django_capture_on_commit_callbacks(execute=True):
        launch_campaign(campaign)
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/campaigns/{campaign.slug}/judges/").content.decode()
    assert 'id="judge-calibration" data-scoring="label"' in page and 'id="calibration-too-few"' in page
    assert "0 human-labelled units of the 50 needed" in page and 'id="reliability-plot"' not in page
    # A routing pass with enough labels calibrates (figures of the labelling run, as the pass writes them).
    judge, labels, groups = _miscalibrated()
    fit = calibration.calibrate(judge, np.arange(400), labels[:400], groups[:400])
    run = latest_labelling(campaign)
    AutoscoreRun.objects.filter(pk=run.pk).update(results={**run.results, "calibration": fit.as_dict()})
    page = client.get(f"/campaigns/{campaign.slug}/judges/").content.decode()
    assert 'id="judge-calibration" data-scoring="probability"' in page and 'id="calibration-too-few"' not in page
    assert f'data-field="ece-before">{fit.ece_before:.3f}<' in page and f'data-field="ece-after">{fit.ece_after:.3f}<' in page
    assert 'id="reliability-plot"' in page and page.count('class="series"') >= 3
    assert 'class="y-label"' in page and '>share present<' in page


class _TimidJudge:
    """The lexical judge squeezed into [0.2, 0.5]: it keeps its order but not its probabilities, so calibration on the
    campaign's labels has something to correct."""

    version = "timid-1"
    threshold = 0.35

    def __init__(self, lexical):
        self.lexical = lexical

    def predict(self, pairs):
        return 0.2 + 0.3 * np.asarray(self.lexical.predict(pairs), dtype=float)


@pytest.mark.django_db(transaction=True)
def test_a_simulated_crowd_finishes_a_campaign_scored_by_probability(tmp_path, researcher, eager_celery, capsys, monkeypatch):
    from annotation.automation.judges import registry
    from annotation.management.simulation import simulate_crowd
    from annotation.services.pipeline import launch_campaign
    from tests.judges.test_hybrid_campaign import write_folder

    # Calibration is applied only when it lowers the calibration error (issue 37): a timid judge, not retrained between
    # rounds (an adapter would recalibrate it), so that it does.
    real_get_judge = registry.get_judge
    monkeypatch.setattr(registry, "get_judge", lambda name, **o: _TimidJudge(real_get_judge("lexical"))
                        if name == "timid" else real_get_judge(name, **o))
    folder = write_folder(tmp_path / "data")
    call_command("import_campaign", name="Probable", folder=str(folder), owner="rita", human_share=0.5, judge_scoring="probability")
    capsys.readouterr()
    campaign = Campaign.objects.get(slug="probable")
    Campaign.objects.filter(pk=campaign.pk).update(presence_rounds=2, gold_share=0.0, presence_judge="timid",
                                                   active_rounds=False, routing_rule="uncertainty")
    campaign.refresh_from_db()
    launch_campaign(campaign)
    campaign.refresh_from_db()
    report = simulate_crowd(campaign, 6, seed=7, accuracy=1.0, max_seconds=300)
    assert report.campaign_state == "finished"
    call_command("campaign_scores", campaign=campaign.slug, format="json", bootstrap=0)
    printed = json.loads(capsys.readouterr().out)
    hybrid = printed["hybrid"]
    assert hybrid["setting"] == "probability" and hybrid["scoring"] == "probability", hybrid["calibration"]["reason"]
    assert hybrid["calibration"]["fitted"] and hybrid["calibration"]["n_labels"] == hybrid["human_units"] == 128
    assert set(hybrid["systems"]) == {"alpha", "beta", "gamma", "delta"}
    assert all(0 < score < 1 for score in hybrid["systems"].values())
    # The judge's units count as calibrated probabilities: not a whole number of units per summary.
    run = latest_labelling(campaign)
    assert AutoPresence.objects.filter(run=run, calibrated__isnull=True).count() == 0
    assert printed["systems"]["alpha"]["ci95"] == [None, None]  # the uncertainty rule: no interval
