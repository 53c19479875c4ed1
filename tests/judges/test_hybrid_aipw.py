"""Budgeted presence under the active rule (issue 37): the AIPW scores a campaign reports, by hand.

The database state is built directly, as the routing pass of the active rule leaves it: every candidate HIT decided
in one draw (stratum 1, round 1) with its inclusion probability pi, four of them posted to people (three done, one
still open), human labels on the done ones (one a tie), and the judge's latest labelling run with its cross-fitted
probabilities f.  campaign_scores (JSON and table), the leaderboard page, the per-summary page, the API and the
export must all report the same AIPW scores with their two intervals, each labelled with its target, the pairwise
differences, and display scores labelled as such."""

from __future__ import annotations

import csv
import html
import json
import math
import re

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import AutoPresence, AutoscoreRun, Campaign, ContentUnit, GoldPresence, PresenceCandidate
from annotation.scoring.active import NO_LABEL_REASON, NO_PAIR_LABEL_REASON, TARGET_DESIGN, TARGET_EXAMPLES
from annotation.scoring.intervals import wilson_interval
from annotation.selectors.hybrid import latest_labelling

pytestmark = pytest.mark.django_db

#: (system, example) -> (pi, HIT state or None when not drawn, human labels per unit (None: a tie) or None)
DRAW = {
    ("good", "ex0"): (0.8, "completed", [1, 1, 1, 0]),
    ("good", "ex1"): (0.5, "completed", [1, None, 0]),
    ("poor", "ex0"): (0.8, "completed", [0, 0, 0, 1]),
    ("fair", "ex2"): (0.5, "open", None),  # drawn, people still at it: its units count as f
}
REST_PI = (4 - 2.6) / 5  # the five candidates not drawn share the rest of the draw's budget of 4


def f_of(system, example):
    """The judge's cross-fitted probability: 0.6 (0.2 for "poor"); none stored for poor/ex2 (its probability, 0.9)."""
    return 0.2 if system == "poor" else 0.6


#: Pseudo-values by hand, p_s = f + (1/|U_s|) sum over labelled units of (y - f) / pi:
PSEUDO = {
    "good": [0.6 + (0.4 * 3 - 0.6) / 0.8 / 4, 0.6 + (0.4 - 0.6) / 0.5 / 3, 0.6],  # ex1's tie counts as f
    "fair": [0.6, 0.6, 0.6],
    "poor": [0.2 + (-0.2 * 3 + 0.8) / 0.8 / 4, 0.2, 0.9],
}
SCORE = {name: sum(values) / 3 for name, values in PSEUDO.items()}  # good 0.6181, fair 0.6, poor 0.4542


def deville(expanded, pi):
    expanded, c = np.asarray(expanded, dtype=float), 1 - np.asarray(pi, dtype=float)
    centre = np.sum(c * expanded) / np.sum(c)
    return len(expanded) / (len(expanded) - 1) * np.sum(c * (expanded - centre) ** 2)


#: Units whose human label enters each system's score (good/ex1's tie is no label; fair's drawn HIT is still open).
LABELLED = {"good": 6, "fair": 0, "poor": 4}


def design_interval(system):
    """The drawn HITs (good/ex0, good/ex1, poor/ex0, fair/ex2), r_h = sum_u w_u (y_u - f_u) for the system's own
    HITs (w_u = 1/3 summaries x 1/units), 0 for the others; Deville's variance over the draw, and the Wilson
    interval at its effective size (None for "fair": no unit judged by people)."""
    if not LABELLED[system]:
        return None, None
    r = {
        "good": [(0.4 * 3 - 0.6) / 12, (0.4 - 0.6) / 9, 0.0, 0.0],
        "fair": [0.0, 0.0, 0.0, 0.0],
        "poor": [0.0, 0.0, (-0.2 * 3 + 0.8) / 12, 0.0],
    }[system]
    pi = [0.8, 0.5, 0.8, 0.5]
    return wilson_interval(SCORE[system], deville([x / p for x, p in zip(r, pi)], pi), LABELLED[system])


def example_interval(system):
    if not LABELLED[system]:
        return None, None
    values = PSEUDO[system]
    return wilson_interval(np.mean(values), np.var(values, ddof=1) / 3, 3)


def active_campaign(tmp_path, researcher, capture):
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign
    from annotation.services.scores import recompute_summary_scores
    from hits.models import HIT
    from tests.judges.conftest import write_scu_folder

    campaign = import_campaign(name="Active", folder=write_scu_folder(tmp_path / "active")).campaign
    GoldPresence.objects.filter(summary__system__campaign=campaign).delete()
    Campaign.objects.filter(pk=campaign.pk).update(human_presence_share=0.5, presence_rounds=1, gold_share=0.0, owner=researcher,
                                                   routing_rule="active")
    campaign.refresh_from_db()
    with capture(execute=True):
        launch_campaign(campaign)
    # The draw, as the active rule's routing pass records it (set by hand here: the hand computation needs it fixed).
    hits = list(HIT.objects.filter(candidate__campaign=campaign).order_by("pk"))
    assert len(hits) >= len(DRAW)
    PresenceCandidate.objects.filter(campaign=campaign).update(hit=None, stratum=1, decided_round=1, round=None,
                                                               inclusion_probability=REST_PI)
    for (system, example), (pi, state, labels) in DRAW.items():
        candidate = PresenceCandidate.objects.get(campaign=campaign, summary__system__name=system, summary__example__external_id=example)
        hit = hits.pop(0)
        HIT.objects.filter(pk=hit.pk).update(state=state)
        PresenceCandidate.objects.filter(pk=candidate.pk).update(hit=hit, inclusion_probability=pi, round=1)
        if labels:
            units = ContentUnit.objects.filter(pk__in=candidate.units).order_by("index")
            GoldPresence.objects.bulk_create([
                GoldPresence(unit=u, summary=candidate.summary, present=None if y is None else bool(y), n_judgments=2,
                             n_present=1 if y is None else 2 * y, origin="majority")
                for u, y in zip(units, labels)
            ])
    run = latest_labelling(campaign)
    presences = AutoPresence.objects.filter(run=run)
    presences.update(present=True, probability=0.9, calibrated=0.7, cross_fitted=0.6)
    presences.filter(summary__system__name="poor").update(cross_fitted=0.2)
    presences.filter(summary__system__name="poor", summary__example__external_id="ex2").update(cross_fitted=None, calibrated=None)
    AutoscoreRun.objects.filter(pk=run.pk).update(results={**run.results, "calibration": {
        "method": "platt", "fitted": True, "n_labels": 60, "n_present": 30, "reason": "", "ece_before": 0.2, "ece_after": 0.05,
        "bins_before": [], "bins_after": []}})
    recompute_summary_scores(campaign)  # human labels changed: the stored scores follow
    campaign.refresh_from_db()
    return campaign


def test_campaign_scores_json_reports_the_aipw_scores_with_both_intervals_by_hand(tmp_path, researcher,
                                                                                   django_capture_on_commit_callbacks, capsys):
    campaign = active_campaign(tmp_path, researcher, django_capture_on_commit_callbacks)
    call_command("campaign_scores", campaign=campaign.slug, format="json", bootstrap=0, per_summary=True)
    printed = json.loads(capsys.readouterr().out)
    hybrid = printed["hybrid"]
    estimator = hybrid["estimator"]
    assert estimator["name"] == "aipw" and estimator["rule"] == "active"
    assert estimator["targets"] == {"ci95": TARGET_DESIGN, "ci95_examples": TARGET_EXAMPLES}
    assert TARGET_DESIGN == "the full-human score on these examples"
    assert {p["arxiv"] for p in estimator["papers"] if "arxiv" in p} == {"2403.03208", "2511.08991"}
    assert any(p.get("venue") == "Science" and p["title"] == "Prediction-powered inference" for p in estimator["papers"])
    assert "unbiased" in estimator["statement"] and "known probability" in estimator["statement"]
    assert hybrid["provisional"] is False and hybrid["undecided_units"] == 0 and hybrid["pending_units"] == 2
    # Ranked by the AIPW score, each with its design interval and the example interval.
    assert list(printed["systems"]) == ["good", "fair", "poor"]
    for name, figures in printed["systems"].items():
        assert figures["score"] == pytest.approx(SCORE[name]) and figures["qapyramid"] == figures["score"]
        assert [figures["ci_low"], figures["ci_high"]] == pytest.approx(design_interval(name))
        assert figures["ci95"] == [figures["ci_low"], figures["ci_high"]]
        assert figures["ci95_examples"] == pytest.approx(example_interval(name))
        if LABELLED[name]:  # in [0, 1] around the score
            assert 0 <= figures["ci_low"] <= figures["score"] <= figures["ci_high"] <= 1
            assert figures["no_interval_reason"] is None
    assert hybrid["systems"] == pytest.approx(SCORE)
    # "fair": no unit labelled by people: no interval yet, and why (not a zero-width [0.6, 0.6]).
    assert printed["systems"]["fair"]["ci95"] == [None, None] and printed["systems"]["fair"]["ci95_examples"] == [None, None]
    assert printed["systems"]["fair"]["no_interval_reason"] == NO_LABEL_REASON
    assert printed["systems"]["good"]["human_share"] == pytest.approx(6 / 9)  # the tie is no label
    # Pairwise differences from the same design, best first; adjacent pairs flagged.
    pairs = {(p["higher"], p["lower"]): p for p in hybrid["pairs"]}
    assert set(pairs) == {("good", "fair"), ("good", "poor"), ("fair", "poor")}
    assert pairs[("good", "fair")]["adjacent"] and pairs[("fair", "poor")]["adjacent"] and not pairs[("good", "poor")]["adjacent"]
    assert pairs[("good", "poor")]["difference"] == pytest.approx(SCORE["good"] - SCORE["poor"])
    for p in pairs.values():
        assert p["separated"] == (p["ci95"][0] is not None and p["ci95"][0] > 0)
        # A pair with "fair" has no comparison yet; the other lies in [-1, 1] around its difference.
        if "fair" in (p["higher"], p["lower"]):
            assert p["ci95"] == [None, None] and p["no_interval_reason"]
        else:
            assert -1 <= p["ci95"][0] <= p["difference"] <= p["ci95"][1] <= 1
    # Per summary: display scores (human label where people judged, calibrated probability elsewhere, raw probability
    # where calibration was not applied), labelled as such.
    per_summary = {(s["system"], s["example"]): s for s in printed["summaries"]}
    assert per_summary[("good", "ex0")]["hybrid"] == pytest.approx(0.75)
    assert per_summary[("good", "ex1")]["hybrid"] == pytest.approx((1 + 0.7 + 0) / 3)
    assert per_summary[("poor", "ex2")]["hybrid"] == pytest.approx(0.9)
    assert per_summary[("fair", "ex2")]["hybrid"] == pytest.approx(0.7)
    assert {s["hybrid_kind"] for s in printed["summaries"]} == {"display score"}

    call_command("campaign_scores", campaign=campaign.slug, format="table", bootstrap=0)
    table = capsys.readouterr().out
    assert f"Design interval: {TARGET_DESIGN}. Example interval: {TARGET_EXAMPLES}." in table
    assert "Every pair of systems (aipw-design+holm)" in table
    assert f"fair: {NO_LABEL_REASON}" in table


def test_the_leaderboard_states_the_method_labels_the_intervals_and_the_display_scores(
        tmp_path, researcher, django_capture_on_commit_callbacks):
    campaign = active_campaign(tmp_path, researcher, django_capture_on_commit_callbacks)
    client = Client()
    client.force_login(researcher)
    page = html.unescape(client.get(f"/campaigns/{campaign.slug}/leaderboard/").content.decode())
    assert 'id="estimator" data-estimator="aipw"' in page
    for paper in ("Active Statistical Inference", "arXiv 2403.03208", "arXiv 2511.08991", "Prediction-powered inference", "Science"):
        assert paper in page
    assert "unbiased whatever the judge" in page and "drawn at random with the stated probabilities" in page
    main = re.search(r'<table class="grid" id="leaderboard" data-ranked-by="hybrid">(.*?)</table>', page, re.S).group(1)
    assert f"target: {TARGET_DESIGN}" in main and f"target: {TARGET_EXAMPLES}" in main
    rows = re.findall(r'<tr data-system="(\w+)"><td>\d</td><td>\w+</td>\s*<td class="num">([0-9.-]+)</td>', main)
    assert rows == [(name, f"{SCORE[name]:.3f}") for name in ("good", "fair", "poor")]
    shown = dict(re.findall(r'<tr data-system="(\w+)">.*?data-field="ci95">([^<]*)<', main, re.S))
    low, high = design_interval("good")
    assert shown["good"] == f"[{low:.3f}, {high:.3f}]"
    assert re.search(r'<tr data-system="fair">.*?data-field="ci95"><span class="no-interval" title="([^"]*)">no interval yet<',
                     main, re.S).group(1) == NO_LABEL_REASON
    shown = dict(re.findall(r'<tr data-system="(\w+)">.*?data-field="ci95-examples">([^<]*)<', main, re.S))
    low, high = example_interval("poor")
    assert shown["poor"] == f"[{low:.3f}, {high:.3f}]"
    # "A beats B" only from the difference's interval.
    pairs = re.search(r'<table class="grid" id="pairs">(.*?)</table>', page, re.S).group(1)
    assert re.findall(r'data-pair="([\w|]+)"', pairs) == ["good|fair", "good|poor", "fair|poor"]
    # Both pairs with "fair", which no person has judged yet: no comparison, with the reason; good - poor is tested.
    assert re.findall(r'data-pair="([\w|]+)" data-separated="none"', pairs) == ["good|fair", "fair|poor"]
    assert pairs.count(f"no comparison: {NO_PAIR_LABEL_REASON}") == 2
    assert "not separated" in pairs or "scores higher than" in pairs
    # The chart: bars at the AIPW scores, whiskers the design interval, dots the display scores, said so.
    chart = re.search(r'<svg id="score-chart" data-ranked-by="hybrid".*?</svg>', page, re.S).group(0)
    bars = [float(w) for w in re.findall(r'<rect x="220" y="6" width="([0-9.]+)"', chart)]
    assert bars == [round(SCORE[name] * 640, 1) for name in ("good", "fair", "poor")]
    caption = re.search(r'<figcaption class="meta" id="chart-caption">(.*?)</figcaption>', page, re.S).group(1)
    assert "display scores" in caption and "not for ranking" in caption and TARGET_DESIGN in caption

    summaries = html.unescape(client.get(f"/campaigns/{campaign.slug}/leaderboard/summaries/?system=good").content.decode())
    assert '<th class="num">Display score</th>' in summaries
    assert 'id="display-note"' in summaries and "for browsing summaries, not for ranking systems" in summaries
    assert re.findall(r'data-figure="hybrid">([0-9.]+)<', summaries) == ["0.750", "0.567", "0.700"]

    board = client.get(f"/api/campaigns/{campaign.slug}/leaderboard/").json()
    api = {s["system"]: s for s in board["systems"]}
    assert api["good"]["ci95"] == pytest.approx(list(design_interval("good")))
    assert api["good"]["ci95_examples"] == pytest.approx(list(example_interval("good")))
    assert board["hybrid"]["estimator"]["targets"]["ci95"] == TARGET_DESIGN
    scores = client.get(f"/api/campaigns/{campaign.slug}/scores/?n_boot=0").json()
    assert scores["systems"]["poor"]["ci_low"] == pytest.approx(design_interval("poor")[0])


def test_the_export_carries_pi_xi_stratum_and_f_and_labels_the_intervals(tmp_path, researcher, django_capture_on_commit_callbacks):
    campaign = active_campaign(tmp_path, researcher, django_capture_on_commit_callbacks)
    call_command("export_campaign", campaign=campaign.slug, out=str(tmp_path / "export"))
    with (tmp_path / "export" / "hybrid_units.csv").open() as f:
        units = list(csv.DictReader(f))
    assert len(units) == 27
    good0 = [u for u in units if (u["system"], u["example"]) == ("good", "ex0")]
    assert {(u["inclusion_probability"], u["routed"], u["stratum"], u["decided_round"]) for u in good0} == {("0.8", "1", "1", "1")}
    assert {float(u["cross_fitted"]) for u in good0} == {0.6}
    # Each unit counts as f + xi (y - f) / pi (people's label entering) or f.
    assert sorted(float(u["counted_as"]) for u in good0) == pytest.approx(sorted([0.6 + 0.4 / 0.8] * 3 + [0.6 - 0.6 / 0.8]))
    assert {u["scored_by"] for u in good0} == {"people"}
    kept = [u for u in units if (u["system"], u["example"]) == ("good", "ex2")]
    assert {(u["routed"], u["scored_by"]) for u in kept} == {("0", "judge")}
    assert [float(u["inclusion_probability"]) for u in kept] == pytest.approx([REST_PI] * 2)
    poor2 = [u for u in units if (u["system"], u["example"]) == ("poor", "ex2")]
    assert {u["cross_fitted"] for u in poor2} == {""} and {float(u["counted_as"]) for u in poor2} == {0.9}  # f falls back
    with (tmp_path / "export" / "hybrid_systems.csv").open() as f:
        systems = list(csv.DictReader(f))
    assert [s["system"] for s in systems] == ["good", "fair", "poor"]
    good = systems[0]
    assert float(good["score"]) == pytest.approx(SCORE["good"])
    assert float(good["ci95_low_full_human_score_on_these_examples"]) == pytest.approx(design_interval("good")[0])
    assert float(good["ci95_high_score_on_documents_like_these"]) == pytest.approx(example_interval("good")[1])
    exported = json.loads((tmp_path / "export" / "campaign.json").read_text())
    assert exported["hybrid_scores"]["estimator"]["targets"]["ci95_examples"] == TARGET_EXAMPLES


def test_candidates_no_draw_decided_yet_make_the_scores_provisional(tmp_path, researcher, django_capture_on_commit_callbacks):
    from annotation.selectors.hybrid import compute_hybrid_scores

    campaign = active_campaign(tmp_path, researcher, django_capture_on_commit_callbacks)
    PresenceCandidate.objects.filter(campaign=campaign, summary__system__name="fair", summary__example__external_id="ex0").update(
        stratum=None, decided_round=None, inclusion_probability=None)
    result = compute_hybrid_scores(campaign)
    assert result["provisional"] is True and result["undecided_units"] == 4
    assert result["systems"]["fair"]["score"] == pytest.approx(0.6)  # its units count as f


def test_every_pair_is_tested_on_its_design_difference_with_holm_over_all_pairs(
        tmp_path, researcher, django_capture_on_commit_callbacks, capsys):
    from annotation.scoring.pairs import holm

    campaign = active_campaign(tmp_path, researcher, django_capture_on_commit_callbacks)
    call_command("campaign_scores", campaign=campaign.slug, format="json", bootstrap=0)
    printed = json.loads(capsys.readouterr().out)
    assert printed["pairs_method"] == "aipw-design+holm" and printed["pairs_no_comparison"] is None
    assert "same draws" in printed["pairs_statement"] and "Holm" in printed["pairs_statement"]
    # r_h of A - B per drawn HIT (good/ex0, good/ex1, poor/ex0, fair/ex2), w_u = 1/3 summaries x 1/units.
    r = {"good": [(0.4 * 3 - 0.6) / 12, (0.4 - 0.6) / 9, 0.0, 0.0], "fair": [0.0] * 4,
         "poor": [0.0, 0.0, (-0.2 * 3 + 0.8) / 12, 0.0]}
    pi = [0.8, 0.5, 0.8, 0.5]
    assert [(p["higher"], p["lower"]) for p in printed["pairs"]] == [("good", "fair"), ("good", "poor"), ("fair", "poor")]
    # "fair" has no human label yet: its pairs are not tested (and take no part in the adjustment).
    untested = [p for p in printed["pairs"] if p["no_comparison"]]
    assert [(p["higher"], p["lower"]) for p in untested] == [("good", "fair"), ("fair", "poor")]
    assert all(p["no_comparison"] == NO_PAIR_LABEL_REASON and p["difference"] is None for p in untested)
    p_values = []
    for p in printed["pairs"]:
        if p["no_comparison"]:
            continue
        variance = deville([(a - b) / q for a, b, q in zip(r[p["higher"]], r[p["lower"]], pi)], pi)
        assert p["difference"] == pytest.approx(SCORE[p["higher"]] - SCORE[p["lower"]])
        assert p["p_value"] == pytest.approx(math.erfc(p["difference"] / math.sqrt(2 * variance)))
        # The design interval on the difference's range, around the difference.
        assert -1.0 <= p["ci95"][0] <= p["difference"] <= p["ci95"][1] <= 1.0
        assert p["ci95_examples"] is not None and len(p["ci95_examples"]) == 2  # beside it, not tested
        p_values.append(p["p_value"])
    assert len(p_values) == 1
    tested = [p for p in printed["pairs"] if not p["no_comparison"]]
    assert [p["p_holm"] for p in tested] == pytest.approx(list(holm(p_values)))
    assert [p["separated"] for p in tested] == [h < 0.05 for h in holm(p_values)]
    assert not any(p["separated"] for p in untested) and all(p["p_holm"] is None for p in untested)

    client = Client()
    client.force_login(researcher)
    page = html.unescape(client.get(f"/campaigns/{campaign.slug}/leaderboard/").content.decode())
    section = re.search(r'<section id="pairs-section" data-pairs-method="aipw-design\+holm">(.*?)</section>', page, re.S).group(1)
    assert "95% interval (examples)" in section and printed["pairs_statement"] in section
    board = client.get(f"/api/campaigns/{campaign.slug}/leaderboard/").json()
    assert board["pairs"] == printed["pairs"] and board["pairs_method"] == "aipw-design+holm"
    call_command("export_campaign", campaign=campaign.slug, out=str(tmp_path / "out"))
    rows = list(csv.DictReader((tmp_path / "out" / "pairs.csv").open()))
    assert [(row["higher"], row["lower"]) for row in rows] == [("good", "fair"), ("good", "poor"), ("fair", "poor")]
    assert float(rows[1]["ci95_examples_low"]) == pytest.approx(printed["pairs"][1]["ci95_examples"][0])
    assert {row["method"] for row in rows} == {"aipw-design+holm"}


def test_scores_stored_before_the_bounded_intervals_are_redone_on_the_next_read(tmp_path, researcher,
                                                                                django_capture_on_commit_callbacks):
    from annotation.models import HybridScore
    from annotation.services.scores import ensure_hybrid_scores

    campaign = active_campaign(tmp_path, researcher, django_capture_on_commit_callbacks)
    stored = HybridScore.objects.get(campaign=campaign)
    # As an earlier version stored them: the estimator without its interval method, a plain interval past 0.
    data = {**stored.data, "estimator": {k: v for k, v in stored.data["estimator"].items() if k != "interval"}}
    data["systems"]["poor"] = {**data["systems"]["poor"], "ci95": [-0.05, 0.9], "ci_low": -0.05}
    HybridScore.objects.filter(pk=stored.pk).update(data=data)
    assert ensure_hybrid_scores(campaign) is True
    redone = HybridScore.objects.get(campaign=campaign).data
    assert redone["systems"]["poor"]["ci95"] == pytest.approx(list(design_interval("poor")))
    assert "Wilson" in redone["estimator"]["interval"]
    assert ensure_hybrid_scores(campaign) is False  # stored under this construction: kept
