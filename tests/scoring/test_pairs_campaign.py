"""Every pair of systems on a campaign: ``campaign_scores --format json``, the leaderboard page and API, the export,
and "no comparison" (one system, no decided unit) everywhere, never a number."""

from __future__ import annotations

import csv
import html
import json
import re

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Campaign
from annotation.scoring import pairs as pair_tests
from annotation.selectors import pairs as pair_selectors
from annotation.selectors.scores import campaign_scores, summary_scores
from annotation.services.raw_import import import_qapyramid_raw

pytestmark = pytest.mark.django_db

#: The demo's systems; each unit is present in a system's summary with this probability (fixed seed below).
QUALITY = {"abstractive-large": 0.8, "extractive-lead": 0.45, "abstractive-small": 0.4, "degenerate-baseline": 0.1}
QUESTIONS = ["Who won? the team", "What did someone win? the cup", "When did someone win? on Sunday",
             "Where did someone win? in Paris"]


def _raw(tmp_path, quality=QUALITY, n_examples=6, seed=7):
    """A released-format raw file shaped like the demo (4 systems, 6 examples) with three judges per unit."""
    rng = np.random.default_rng(seed)
    data = {}
    for system, p in quality.items():
        data[system] = {}
        for e in range(n_examples):
            units = {}
            for predicate in range(2):
                for question in QUESTIONS:
                    present = int(rng.random() < p)
                    units.setdefault(f"ex{e}_{predicate}", {})[question] = [["w1", present], ["w2", present], ["w3", 1 - present]]
            data[system][f"ex{e}"] = units
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(data))
    return path


def _expected_pairs(campaign, ranking):
    """The paired t-test by hand from the per-summary scores ``campaign_scores --per-summary`` gives."""
    rows = summary_scores(campaign)
    examples = sorted({r["example"] for r in rows})
    table = np.full((len(examples), len(ranking)), np.nan)
    for r in rows:
        if r["qapyramid"] is not None:
            table[examples.index(r["example"]), ranking.index(r["system"])] = r["qapyramid"]
    return table


def test_campaign_scores_json_compares_every_pair_of_the_demo_shape(tmp_path, capsys):
    import_qapyramid_raw(_raw(tmp_path), name="Pairs")
    call_command("campaign_scores", campaign="pairs", format="json", bootstrap=0)
    first = capsys.readouterr().out
    call_command("campaign_scores", campaign="pairs", format="json", bootstrap=0)
    assert capsys.readouterr().out == first  # two reads, the same figures
    printed = json.loads(first)
    assert printed["pairs_method"] == "paired-t+holm" and printed["pairs_no_comparison"] is None
    assert "Holm" in printed["pairs_statement"] and "Paired t-test" in printed["pairs_statement"]
    ranking = list(printed["systems"])
    assert len(printed["pairs"]) == 6 == len(ranking) * (len(ranking) - 1) // 2
    assert {frozenset((p["higher"], p["lower"])) for p in printed["pairs"]} == {
        frozenset((a, b)) for i, a in enumerate(ranking) for b in ranking[i + 1:]}
    table = _expected_pairs(Campaign.objects.get(slug="pairs"), ranking)
    raw_p = []
    for p in printed["pairs"]:
        assert set(p) >= {"higher", "lower", "difference", "ci95", "separated", "p_value", "p_holm"}
        d = table[:, ranking.index(p["higher"])] - table[:, ranking.index(p["lower"])]
        mean, low, high, p_value = pair_tests.paired_t(d)
        assert p["difference"] == pytest.approx(mean) and p["difference"] >= 0
        assert p["ci95"] == pytest.approx([low, high]) and p["p_value"] == pytest.approx(p_value)
        assert p["n_examples"] == 6
        raw_p.append(p_value)
    holm = pair_tests.holm(raw_p)
    assert [p["p_holm"] for p in printed["pairs"]] == pytest.approx(list(holm))
    assert [p["separated"] for p in printed["pairs"]] == [bool(h < 0.05) for h in holm]
    # The best system clearly beats the worst; the two middle ones (0.45 and 0.40) are not told apart.
    by_pair = {frozenset((p["higher"], p["lower"])): p for p in printed["pairs"]}
    assert by_pair[frozenset(("abstractive-large", "degenerate-baseline"))]["separated"]
    assert not by_pair[frozenset(("extractive-lead", "abstractive-small"))]["separated"]

    call_command("campaign_scores", campaign="pairs", format="table", bootstrap=0)
    table_out = capsys.readouterr().out
    assert "Every pair of systems (paired-t+holm)" in table_out
    assert "abstractive-large scores higher than degenerate-baseline" in table_out


def test_leaderboard_page_api_and_export_carry_the_same_pairs(tmp_path, researcher):
    import_qapyramid_raw(_raw(tmp_path), name="Board pairs", owner=researcher)
    campaign = Campaign.objects.get(slug="board-pairs")
    expected = campaign_scores(campaign, n_boot=0)
    client = Client()
    client.force_login(researcher)
    page = html.unescape(client.get("/campaigns/board-pairs/leaderboard/").content.decode())
    section = re.search(r'<section id="pairs-section" data-pairs-method="paired-t\+holm">(.*?)</section>', page, re.S).group(1)
    assert expected["pairs_statement"] in section
    matrix = re.search(r'<table class="grid pair-matrix" id="pair-matrix">(.*?)</table>', section, re.S).group(1)
    ranking = list(expected["systems"])
    # Upper triangle: rows are every system but the last, columns every system but the first, by rank.
    assert re.findall(r'<tr data-system="([\w-]+)">', matrix) == ranking[:-1]
    assert re.findall(r'<th class="num" scope="col" title="([\w-]+)">', matrix) == ranking[1:]
    cells = re.findall(r'<tr data-system="([\w-]+)">.*?</tr>', matrix, re.S)
    assert len(cells) == 3
    shown = {}
    for row in re.findall(r'<tr data-system="([\w-]+)">(.*?)</tr>', matrix, re.S):
        for against, separated, value in re.findall(
                r'data-against="([\w-]+)" data-separated="(yes|no)" title="[^"]*">(-?[0-9.]+)', row[1]):
            shown[(row[0], against)] = (separated == "yes", value)
    assert len(shown) == 6
    for p in expected["pairs"]:
        i, j = ranking.index(p["higher"]), ranking.index(p["lower"])
        row, col, sign = (p["higher"], p["lower"], 1) if i < j else (p["lower"], p["higher"], -1)
        assert shown[(row, col)] == (p["separated"], f"{sign * p['difference']:.2f}")
    marks = len(re.findall(r'aria-label="separated"', matrix))
    assert marks == sum(p["separated"] for p in expected["pairs"]) > 0
    details = re.search(r'<table class="grid" id="pairs">(.*?)</table>', section, re.S).group(1)
    assert len(re.findall(r"data-pair=", details)) == 6

    board = client.get("/api/campaigns/board-pairs/leaderboard/").json()
    assert board["pairs_method"] == "paired-t+holm" and board["pairs_no_comparison"] is None
    assert board["pairs"] == [{k: v for k, v in p.items()} for p in json.loads(json.dumps(expected["pairs"]))]
    assert client.get("/api/campaigns/board-pairs/scores/?n_boot=0").json()["pairs"] == board["pairs"]

    call_command("export_campaign", campaign="board-pairs", out=str(tmp_path / "out"))
    rows = list(csv.DictReader((tmp_path / "out" / "pairs.csv").open()))
    assert list(rows[0]) == pair_selectors.PAIR_COLUMNS and len(rows) == 6
    for row, p in zip(rows, expected["pairs"]):
        assert (row["higher"], row["lower"]) == (p["higher"], p["lower"])
        assert float(row["difference"]) == pytest.approx(p["difference"])
        assert [float(row["ci95_low"]), float(row["ci95_high"])] == pytest.approx(p["ci95"])
        assert float(row["p_holm"]) == pytest.approx(p["p_holm"]) and row["separated"] == str(int(p["separated"]))
        assert row["method"] == "paired-t+holm" and row["ci95_examples_low"] == "" and row["no_comparison"] == ""
    exported = json.loads((tmp_path / "out" / "campaign.json").read_text())["pairs"]
    assert exported == {"pairs_method": "paired-t+holm", "pairs_statement": expected["pairs_statement"], "pairs_no_comparison": None}


def _no_number(client, slug, reason, tmp_path):
    """The page, the API, the JSON and the export all say "no comparison" with ``reason`` and show no pair."""
    page = html.unescape(client.get(f"/campaigns/{slug}/leaderboard/").content.decode())
    section = re.search(r'<section id="pairs-section"[^>]*>(.*?)</section>', page, re.S).group(1)
    assert f"No comparison: {reason}." in section
    assert 'id="pair-matrix"' not in section and not re.search(r"\d\.\d", section)
    board = client.get(f"/api/campaigns/{slug}/leaderboard/").json()
    assert board["pairs"] == [] and board["pairs_no_comparison"] == reason and board["pairs_method"] == "paired-t+holm"
    printed = campaign_scores(Campaign.objects.get(slug=slug), n_boot=0)
    assert printed["pairs"] == [] and printed["pairs_no_comparison"] == reason
    call_command("export_campaign", campaign=slug, out=str(tmp_path / slug))
    assert list(csv.reader((tmp_path / slug / "pairs.csv").open())) == [pair_selectors.PAIR_COLUMNS]
    assert json.loads((tmp_path / slug / "campaign.json").read_text())["pairs"]["pairs_no_comparison"] == reason


def test_one_system_shows_no_comparison_with_the_reason(tmp_path, researcher):
    import_qapyramid_raw(_raw(tmp_path, quality={"alone": 0.5}), name="Alone", owner=researcher)
    client = Client()
    client.force_login(researcher)
    _no_number(client, "alone", pair_selectors.ONE_SYSTEM, tmp_path)


def test_no_decided_unit_shows_no_comparison_with_the_reason(tmp_path, researcher, small_files):
    from annotation.services.campaign_import import import_campaign

    refs, sums = small_files
    campaign = import_campaign(name="Undecided", references=refs, summaries=sums, owner=researcher).campaign
    assert campaign.systems.count() == 2
    client = Client()
    client.force_login(researcher)
    _no_number(client, campaign.slug, pair_selectors.NO_GOLD, tmp_path)
