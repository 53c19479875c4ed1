"""Gold data and scores in the database: raw import, recomputation, command line, leaderboard, export."""

from __future__ import annotations

import csv
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from annotation.importing.readers import CampaignImportError
from annotation.models import Campaign, GoldPresence, PresenceJudgment, SummaryScore, SystemScore
from annotation.services.raw_import import import_qapyramid_raw, split_qa_key
from annotation.selectors.scores import campaign_scores
from annotation.services.scores import recompute_gold
from hits.models import Worker
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.django_db
QA_PRESENCE = SHARED_DATA / "qapyramid" / "QA_presence.json"


def _tiny_raw(tmp_path, data=None):
    data = data or {
        "sysA": {"ex1": {"ex1_0": {"Who won? the team": [["w1", 1], ["w2", 1], ["w3", 0]], "What did someone win? the cup": [["w1", 0], ["w2", 0], ["w3", 0]]}}},
        "sysB": {"ex1": {"ex1_0": {"Who won? the team": [["w1", 1], ["w2", 1], ["w3", 1]], "What did someone win? the cup": [["w1", 1], ["w2", 0]]}}},
    }
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(data))
    return path


def test_split_qa_key():
    assert split_qa_key("Who gave something? Police") == ("Who gave something?", "Police")
    assert split_qa_key("Why? because? yes") == ("Why?", "because? yes")


def test_raw_import_builds_units_judgments_gold_and_scores(tmp_path):
    report = import_qapyramid_raw(_tiny_raw(tmp_path), name="Tiny raw")
    assert (report.n_systems, report.n_units, report.n_judged_units, report.n_judgments, report.n_workers) == (2, 2, 4, 11, 3)
    gold = {(g.summary.system.name, g.unit.question): g.present for g in GoldPresence.objects.select_related("summary__system", "unit")}
    # sysB's "cup" pair has a 1-1 tie: "not present" by default.
    assert gold == {("sysA", "Who won?"): True, ("sysA", "What did someone win?"): False,
                    ("sysB", "Who won?"): True, ("sysB", "What did someone win?"): False}
    scores = campaign_scores(Campaign.objects.get(), n_boot=50)
    assert scores["systems"]["sysA"]["qapyramid"] == 0.5 and scores["systems"]["sysB"]["qapyramid"] == 0.5
    assert scores["systems"]["sysA"]["nqapyramid"] is None  # no texts in the released file
    assert scores["n_units"] == 4 and scores["n_judgments"] == 11
    with pytest.raises(CampaignImportError, match="already exists"):
        import_qapyramid_raw(_tiny_raw(tmp_path), name="Tiny raw")


@pytest.mark.parametrize(
    "data, message",
    [
        ({"s": {"e": {"p": {"no question mark here": [["w", 1]]}}}}, "s → e → p → no question mark here: a QA pair must be"),
        ({"s": {"e": {"p": {"Who? x": [["w", 2]]}}}}, "judgment ['w', 2] is not [worker id, 0 or 1]"),
        ({"s": {"e": ["not", "an", "object"]}}, "s → e: expected an object of predicates"),
        ([], "expected a JSON object of systems"),
    ],
)
def test_malformed_raw_files_are_refused_whole(tmp_path, data, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CampaignImportError) as info:
        import_qapyramid_raw(path, name="Bad")
    assert message in str(info.value)
    assert not Campaign.objects.exists() and not Worker.objects.exists()


def test_tie_rule_setting_and_full_recomputation(tmp_path):
    import_qapyramid_raw(_tiny_raw(tmp_path), name="Ties")
    campaign = Campaign.objects.get()
    campaign.tie_rule = Campaign.TieRule.PRESENT
    campaign.save()
    call_command("recompute_gold", campaign="ties")
    tied = GoldPresence.objects.get(summary__system__name="sysB", unit__question="What did someone win?")
    assert tied.present is True and (tied.n_present, tied.n_judgments) == (1, 2)
    assert SystemScore.objects.get(system__name="sysB").qapyramid == 1.0
    # Excluding a worker's judgments changes gold after recomputation.
    PresenceJudgment.objects.filter(worker__external_id="w1").update(excluded=True)
    recompute_gold(campaign)
    assert GoldPresence.objects.get(summary__system__name="sysB", unit__question="What did someone win?").present is False


def test_campaign_scores_command_json_and_table(tmp_path, capsys):
    import_qapyramid_raw(_tiny_raw(tmp_path), name="Cmd")
    call_command("campaign_scores", campaign="cmd", format="json", bootstrap=50)
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"campaign", "n_units", "n_judgments", "alpha", "systems"}
    assert set(result["alpha"]) == {"pooled", "ci95", "per_system"} and set(result["alpha"]["per_system"]) == {"sysA", "sysB"}
    assert result["systems"]["sysA"]["n_summaries"] == 1
    call_command("campaign_scores", campaign="cmd", format="table", bootstrap=50)
    assert "sysA" in capsys.readouterr().out
    with pytest.raises(CommandError, match="no campaign with slug 'nope'"):
        call_command("campaign_scores", campaign="nope")


def test_export_reproduces_the_study_and_is_safe_in_spreadsheets(tmp_path):
    data = {"s": {"e": {"p": {"What? =HYPERLINK(\"http://x\")": [["=cmd", 1], ["w2", 0], ["w3", 1]]}}}}
    import_qapyramid_raw(_tiny_raw(tmp_path, data), name="Export")
    call_command("export_campaign", campaign="export", out=str(tmp_path / "out"))
    rows = list(csv.reader((tmp_path / "out" / "judgments.csv").open()))
    assert rows[0][:3] == ["example", "system", "unit"] and len(rows) == 4
    assert {r[5] for r in rows[1:]} == {"'=cmd", "w2", "w3"}
    assert rows[1][4].startswith("'=HYPERLINK")
    example = json.loads((tmp_path / "out" / "examples.jsonl").read_text().splitlines()[0])
    assert example["systems"]["s"]["gold"] and example["predicates"][0]["pairs"][0]["question"] == "What?"
    settings = json.loads((tmp_path / "out" / "campaign.json").read_text())
    assert settings["campaign"]["tie_rule"] == "absent" and settings["counts"]["judgments"] == 3
    call_command("export_campaign", campaign="export", out=str(tmp_path / "pseudo"), pseudonymise=True, salt="k")
    workers = {r[5] for r in list(csv.reader((tmp_path / "pseudo" / "judgments.csv").open()))[1:]}
    assert all(w.startswith("w-") for w in workers) and len(workers) == 3


def test_leaderboard_page_for_the_owner_only(tmp_path, researcher, other_researcher):
    import_qapyramid_raw(_tiny_raw(tmp_path), name="Board", owner=researcher)
    owner = Client()
    owner.force_login(researcher)
    page = owner.get("/campaigns/board/leaderboard/")
    assert page.status_code == 200
    assert b'data-system="sysA"' in page.content and b'<svg id="score-chart"' in page.content
    assert b'id="alpha-pooled"' in page.content
    other = Client()
    other.force_login(other_researcher)
    assert other.get("/campaigns/board/leaderboard/").status_code == 404


@pytest.mark.skipif(not QA_PRESENCE.exists(), reason="shared QAPyramid raw judgments not present")
def test_released_raw_judgments_import_and_scores(capsys):
    call_command("import_qapyramid_raw", str(QA_PRESENCE), campaign="QAPyramid raw")
    capsys.readouterr()
    call_command("campaign_scores", campaign="qapyramid-raw", format="json", bootstrap=200)
    result = json.loads(capsys.readouterr().out)
    assert len(result["systems"]) == 10 and result["n_units"] == 8910
    assert 0.6 < result["alpha"]["pooled"] < 0.7
    lo, hi = result["alpha"]["ci95"]
    assert lo < result["alpha"]["pooled"] < hi
    assert all(0.3 < s["qapyramid"] < 0.8 and s["n_summaries"] == 50 for s in result["systems"].values())
    assert SummaryScore.objects.filter(summary__system__campaign__slug="qapyramid-raw").count() == 500
