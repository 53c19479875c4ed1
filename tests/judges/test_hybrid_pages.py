"""Budgeted presence where researchers see it: settings and cost, progress rounds, leaderboard, API, export,
the judges page's curve, and the evaluate_hybrid command."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Campaign
from annotation.services.costs import campaign_cost_preview
from annotation.services.pipeline import launch_campaign
from tests.judges.test_hybrid_campaign import budgeted_campaign, write_folder

pytestmark = pytest.mark.django_db


def _owned(campaign, researcher):
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    client = Client()
    client.force_login(researcher)
    return client


def test_cost_preview_shows_the_saving_at_the_chosen_share(tmp_path, researcher):
    campaign = budgeted_campaign(tmp_path, human_presence_share=0.25, presence_judges="fixed")
    preview = campaign_cost_preview(campaign)
    presence = [s for s in preview.stages if s.task_type == "presence"][0]
    assert preview.presence_hits_full == 64 and presence.hits == 16
    # 48 HITs x 3 judges x $0.20 not paid to people
    assert preview.saving == Decimal("28.80")
    assert preview.as_dict()["saving"] == "28.80"
    client = _owned(campaign, researcher)
    page = client.get(f"/campaigns/{campaign.slug}/settings/").content.decode()
    assert 'id="cost-saving"' in page and "people judge 16 of 64 presence HITs" in page and "$28.80" in page
    Campaign.objects.filter(pk=campaign.pk).update(human_presence_share=1.0)
    campaign.refresh_from_db()
    assert campaign_cost_preview(campaign).saving == Decimal("0.00")


def test_settings_form_saves_the_share_and_refuses_bad_values(tmp_path, researcher):
    campaign = budgeted_campaign(tmp_path, human_presence_share=1.0)
    client = _owned(campaign, researcher)
    url = f"/campaigns/{campaign.slug}/settings/"
    page = client.get(url).content.decode()
    assert "Budgeted presence" in page and 'name="human_presence_share"' in page
    from annotation.web.forms import CampaignSettingsForm

    form = CampaignSettingsForm(instance=campaign)  # an "scu" campaign's form: its QA settings left out
    data = {name: form[name].value() for name in form.fields}
    data = {k: v for k, v in data.items() if v is not None and v is not False}
    bad = client.post(url, {**data, "human_presence_share": "1.5", "action": "save"})
    assert bad.status_code == 400
    bad = client.post(url, {**data, "human_presence_share": "0.3", "presence_judge": "oracle", "action": "save"})
    assert bad.status_code == 400 and "unknown judge" in bad.content.decode()
    campaign.refresh_from_db()
    assert campaign.human_presence_share == 1.0  # nothing saved from a refused form
    ok = client.post(url, {**data, "human_presence_share": "0.3", "presence_judge": "lexical", "presence_rounds": "2",
                           "active_rounds": "on", "action": "save"})
    assert ok.status_code == 302
    campaign.refresh_from_db()
    assert campaign.human_presence_share == 0.3 and campaign.is_hybrid


def test_progress_leaderboard_api_and_export_say_what_people_judged(tmp_path, researcher, django_capture_on_commit_callbacks):
    campaign = budgeted_campaign(tmp_path)
    with django_capture_on_commit_callbacks(execute=True):
        launch_campaign(campaign)
    campaign.refresh_from_db()
    client = _owned(campaign, researcher)
    progress = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert 'id="routing-rounds"' in progress and 'data-round="1"' in progress
    assert "16</strong> of a budget of 32 presence HITs" in progress and "out of 64" in progress
    board = client.get(f"/campaigns/{campaign.slug}/leaderboard/").content.decode()
    assert 'data-ranked-by="hybrid"' in board and "lexical-1/t0.7" in board
    for system in ("alpha", "beta", "gamma", "delta"):
        assert f'data-system="{system}"' in board
    api = client.get(f"/api/campaigns/{campaign.slug}/scores/?n_boot=50").json()
    hybrid = api["hybrid"]
    assert hybrid["judge_version"] == "lexical-1/t0.7" and hybrid["human_units"] == 0  # nobody has judged yet
    assert set(hybrid["systems"]) == {"alpha", "beta", "gamma", "delta"}
    assert all(s["human_share"] == 0.0 and s["qapyramid"] is not None for s in api["systems"].values())
    # ``hybrid.systems``: each system's score under the campaign's rule, stated in ``hybrid.scoring``.
    assert hybrid["systems"] == {name: s["qapyramid"] for name, s in api["systems"].items()}
    # A new budgeted campaign follows the active rule: the AIPW estimate, named with its intervals' targets.
    assert hybrid["scoring"] == "aipw" and hybrid["estimator"]["name"] == "aipw" and hybrid["setting"] == "probability"
    assert set(hybrid["estimator"]["targets"]) == {"ci95", "ci95_examples"}
    assert client.get(f"/api/campaigns/{campaign.slug}/leaderboard/").json()["hybrid"]["judge_version"] == "lexical-1/t0.7"
    api_progress = client.get(f"/api/campaigns/{campaign.slug}/progress/").json()
    assert api_progress["routing"]["routed"] == 16 and api_progress["routing"]["rounds"][0]["state"] == "open"
    call_command("export_campaign", campaign=campaign.slug, out=str(tmp_path / "export"))
    exported = json.loads((tmp_path / "export" / "campaign.json").read_text())
    assert exported["hybrid_scores"]["judge_version"] == "lexical-1/t0.7"
    assert exported["campaign"]["human_presence_share"] == 0.5


def test_evaluate_hybrid_command_reports_routed_and_random_and_the_curve(tmp_path, capsys, settings):
    settings.MODELS_DIR = tmp_path / "models"
    folder = write_folder(tmp_path / "data", n_examples=10)
    # The least-sure routing's own figures (the uncertainty rule) against random routing.
    call_command("evaluate_hybrid", folder=str(folder), folds=5, human_share=0.25, judge="lexical", format="json",
                 curve=True, save="tiny", rule="uncertainty")
    result = json.loads(capsys.readouterr().out)
    for key in ("human_share", "accuracy", "summary_pearson", "summary_kendall", "system_pearson", "system_kendall"):
        assert key in result and key in result["random"]
    assert result["human_share"] == 0.25 and result["random"]["human_share"] == 0.25
    assert set(result["measures"]) == {"margin", "expected_errors", "expected_error_rate", "expected_score_error"}
    assert result["presence_hits"] == 10 * 4 * 2 and result["human_hits"] == 20  # 25% of 80 HITs, never more
    assert result["random"]["human_hits"] == 20
    # Routing the least sure beats routing at random on data where the judge's doubts are real.
    assert result["accuracy"] > result["random"]["accuracy"]
    shares = [p["routed"]["human_share"] for p in result["curve"]]
    assert shares == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    everything = result["curve"][-1]
    assert everything["routed"]["accuracy"] == 1.0 and everything["random"]["accuracy"] == 1.0
    assert result["curve"][0]["routed"] == {**result["curve"][0]["random"]}  # nobody asked: the judge alone
    accuracies = [p["routed"]["accuracy"] for p in result["curve"]]
    assert accuracies == sorted(accuracies)
    # The saved curve is drawn on the judges page.
    from annotation.automation.judges.hybrid import saved_curves

    assert [c["name"] for c in saved_curves()] == ["tiny"]


def test_evaluate_hybrid_rounds_refit_the_judge(tmp_path, capsys):
    folder = write_folder(tmp_path / "data", n_examples=10, n_units=12)
    call_command("evaluate_hybrid", folder=str(folder), folds=5, human_share=0.5, judge="lexical", rounds=2, format="json")
    result = json.loads(capsys.readouterr().out)
    assert result["rounds"] == 2 and sum(result["hits_per_round"]) == result["human_hits"] == 60
    assert result["hits_per_round"] == [30, 30]


def test_evaluate_hybrid_refuses_bad_options(tmp_path):
    folder = write_folder(tmp_path / "data")
    with pytest.raises(CommandError, match="between 0 and 1"):
        call_command("evaluate_hybrid", folder=str(folder), human_share=1.5, judge="lexical")
    with pytest.raises(CommandError, match="cannot be split"):
        call_command("evaluate_hybrid", folder=str(folder), folds=20, judge="lexical")
    with pytest.raises(CommandError, match="add --curve"):
        call_command("evaluate_hybrid", folder=str(folder), judge="lexical", save="x")
    with pytest.raises(CommandError, match="trained per fold"):
        call_command("evaluate_hybrid", folder=str(folder), judge="trained")
    with pytest.raises(CommandError):
        call_command("evaluate_hybrid", folder=str(tmp_path / "missing"), judge="lexical")


def test_judges_page_draws_the_saved_curve_beside_random(gold_campaign, researcher, tmp_path, settings, capsys):
    settings.MODELS_DIR = tmp_path / "models"
    folder = write_folder(tmp_path / "data", n_examples=10)
    call_command("evaluate_hybrid", folder=str(folder), folds=5, judge="lexical", curve=True, save="demo curve", format="json")
    capsys.readouterr()
    client = Client()
    client.force_login(researcher)
    html = client.get(f"/campaigns/{gold_campaign.slug}/judges/").content.decode()
    assert 'id="hybrid-curves"' in html and 'data-curve="demo-curve"' in html
    assert 'data-series="random HITs"' in html and 'data-series="least sure first (' in html
    assert html.count("<polyline") == 4  # Pearson and accuracy, routed and random


def _rankings_differ(tmp_path, researcher, capture):
    """A budgeted campaign without imported labels where people judged little: one "poor" summary, all its units
    present, and one "good" summary, half its units present.  On human labels alone poor (1.000 from one summary)
    beats good (0.500 from one summary); with the judge's labels of every other unit, good leads."""
    from annotation.models import ContentUnit, GoldPresence, SystemSummary
    from annotation.services.campaign_import import import_campaign
    from annotation.services.scores import recompute_summary_scores
    from tests.judges.conftest import write_scu_folder

    campaign = import_campaign(name="Ranked", folder=write_scu_folder(tmp_path / "ranked")).campaign
    GoldPresence.objects.filter(summary__system__campaign=campaign).delete()
    # The uncertainty rule: the judge's labels count as such (the active rule's ranking: test_hybrid_aipw.py).
    Campaign.objects.filter(pk=campaign.pk).update(human_presence_share=0.5, presence_rounds=1, gold_share=0.0, owner=researcher,
                                                   routing_rule="uncertainty")
    campaign.refresh_from_db()
    with capture(execute=True):
        launch_campaign(campaign)
    for system, present in (("poor", [1, 1, 1, 1]), ("good", [1, 1, 0, 0])):
        summary = SystemSummary.objects.get(system__campaign=campaign, system__name=system, example__external_id="ex0")
        units = ContentUnit.objects.filter(example=summary.example).order_by("index")
        GoldPresence.objects.bulk_create([
            GoldPresence(unit=u, summary=summary, present=bool(p), n_judgments=3, n_present=3 * p, origin="majority")
            for u, p in zip(units, present)
        ])
    recompute_summary_scores(campaign)
    campaign.refresh_from_db()
    return campaign


def test_campaign_scores_rank_a_budgeted_campaign_on_the_hybrid_scores(tmp_path, researcher, django_capture_on_commit_callbacks, capsys):
    from annotation.selectors.scores import campaign_scores

    campaign = _rankings_differ(tmp_path, researcher, django_capture_on_commit_callbacks)
    scores = campaign_scores(campaign, n_boot=50)
    assert scores["ranked_by"] == "hybrid"
    hybrid = scores["hybrid"]["systems"]
    assert list(scores["systems"]) == sorted(hybrid, key=lambda name: -hybrid[name])
    assert list(scores["systems"])[0] == "good" and list(scores["systems"])[-1] == "poor"
    assert [s["rank"] for s in scores["systems"].values()] == [1, 2, 3]
    assert all(scores["systems"][name]["qapyramid"] == hybrid[name] for name in hybrid)
    # The human-only figures are there, apart, with what each rests on.
    human = scores["human_only"]
    assert human["poor"]["qapyramid"] == 1.0 and human["poor"]["n_summaries"] == 1 and human["poor"]["n_units"] == 4
    assert human["good"]["qapyramid"] == 0.5 and human["good"]["n_summaries"] == 1 and human["good"]["n_units"] == 4
    assert human["fair"]["qapyramid"] is None and human["fair"]["n_units"] == 0
    call_command("campaign_scores", campaign=campaign.slug, format="table", bootstrap=20)
    table = capsys.readouterr().out
    ranking, human_part = table.split("Human labels only")
    lines = [line.split() for line in ranking.splitlines() if line.split()[:1] in (["1"], ["2"], ["3"])]
    assert [line[1] for line in lines] == list(scores["systems"])
    assert "not a ranking" in human_part
    poor_line = next(line.split() for line in human_part.splitlines() if line.startswith("poor"))
    assert poor_line[1] == "1.000" and poor_line[-2:] == ["1", "4"]


def test_leaderboard_page_and_api_rank_a_budgeted_campaign_on_the_hybrid_scores(tmp_path, researcher, django_capture_on_commit_callbacks):
    import re

    from annotation.selectors.hybrid import hybrid_scores

    campaign = _rankings_differ(tmp_path, researcher, django_capture_on_commit_callbacks)
    hybrid = hybrid_scores(campaign, fresh=True)["systems"]
    expected = sorted(hybrid, key=lambda name: -hybrid[name]["qapyramid"])
    assert expected[0] == "good" and expected[-1] == "poor"
    client = _owned(campaign, researcher)
    page = client.get(f"/campaigns/{campaign.slug}/leaderboard/").content.decode()
    main = re.search(r'<table class="grid" id="leaderboard" data-ranked-by="hybrid">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r'<tr data-system="(\w+)"><td>(\d)</td><td>\w+</td>\s*<td class="num">([0-9.]+)</td>', main)
    assert [(name, rank) for name, rank, _ in rows] == [(name, str(i + 1)) for i, name in enumerate(expected)]
    assert [float(q) for _, _, q in rows] == [round(hybrid[name]["qapyramid"], 3) for name in expected]
    # The chart draws the same ranking, bars at the hybrid scores.
    chart = re.search(r'<svg id="score-chart" data-ranked-by="hybrid".*?</svg>', page, re.S).group(0)
    labels = re.findall(r'text-anchor="end" font-size="14">(\w+)</text>', chart)
    bars = [float(w) for w in re.findall(r'<rect x="220" y="6" width="([0-9.]+)"', chart)]
    assert labels == expected and bars == [round(hybrid[name]["qapyramid"] * 640, 1) for name in expected]
    # The human-only figures: a secondary table, labelled as such, with their coverage.
    assert "Human labels only (not a ranking)" in page
    secondary = re.search(r'<table class="grid" id="human-only-scores">(.*?)</table>', page, re.S).group(1)
    poor = re.search(r'<tr data-system="poor">(.*?)</tr>', secondary, re.S).group(1)
    assert "1.000" in poor and '<td class="num" data-field="summaries">1</td>' in poor and '<td class="num" data-field="units">4</td>' in poor

    board = client.get(f"/api/campaigns/{campaign.slug}/leaderboard/").json()
    assert board["ranked_by"] == "hybrid"
    assert [row["system"] for row in board["systems"]] == expected and [row["rank"] for row in board["systems"]] == [1, 2, 3]
    assert all(row["qapyramid"] == pytest.approx(hybrid[row["system"]]["qapyramid"]) and row["score"] is None for row in board["systems"])
    human = {row["system"]: row for row in board["human_only"]}
    assert human["poor"]["score"]["qapyramid"] == 1.0 and human["poor"]["score"]["n_summaries"] == 1 and human["poor"]["n_units"] == 4
    api_scores = client.get(f"/api/campaigns/{campaign.slug}/scores/?n_boot=20").json()
    assert api_scores["ranked_by"] == "hybrid" and list(api_scores["systems"]) == expected
    assert api_scores["human_only"]["poor"]["n_units"] == 4
