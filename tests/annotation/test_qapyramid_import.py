"""Import of the released QAPyramid data set's JSONL shape, with its texts, QA pairs and gold labels;
per-summary scores (tokens, p_r, p_l) of the imported campaign."""

from __future__ import annotations

import json
import math

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import scoring
from annotation.importing.readers import CampaignImportError
from annotation.models import Campaign, ContentUnit, GoldPresence, Predicate, SummaryScore, SystemSummary
from annotation.selectors.scores import campaign_scores
from annotation.services.campaign_import import import_campaign

pytestmark = pytest.mark.django_db

EX1 = {
    "example_id": "ex1",
    "reference": "Police blamed the storm for the crash. The mayor said roads will reopen on Monday.",
    "source": "A long article about the storm.",
    "QAs": [
        "Who blamed something for something? Police",
        "What did someone blame for something? the storm",
        "What did someone blame something for? the crash",
        "Who said something? The mayor",
        "What will reopen? roads",
        "When will something reopen? on Monday",
        "What happened? a storm",
    ],
    "QA_labels": {"sysA": [1, 1, 0, 1, 0, 0, 1], "sysB": [1, 0, 0, 0, 0, 0, 0]},
    "system_outputs": {
        "sysA": "Police blamed the storm. The mayor's office didn't say more.",
        "sysB": "Roads.",
        "sysC": "The storm hit the town's roads, police said, and the mayor said they'd reopen on Monday after the crash.",
    },
    "model_scores": {"ignored": True},
}
EX2 = {
    "example_id": "ex2",
    "reference": "The team won the cup.",
    "QAs": ["Who won something? The team", "What did someone win? the cup"],
    "QA_labels": {"sysA": [1, 1], "sysB": [0, 1]},
    "system_outputs": {"sysA": "The team won the cup.", "sysB": "A cup was won.", "sysC": "Someone won."},
}


def _write(tmp_path, lines, name="data.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_the_released_shape_becomes_a_qa_campaign_with_texts_units_and_gold(tmp_path):
    report = import_campaign(name="Released", qapyramid=_write(tmp_path, [EX1, EX2]))
    campaign = Campaign.objects.get()
    assert (campaign.unit_type, campaign.state) == ("qa", "finished")
    assert report.n_examples == 2 and report.n_systems == 3 and report.n_units == 9 and report.n_gold == 18
    example = campaign.examples.get(external_id="ex1")
    assert example.reference == EX1["reference"] and example.source == EX1["source"]
    assert SystemSummary.objects.get(system__name="sysC", example=example).text == EX1["system_outputs"]["sysC"]
    units = {u.text: u for u in ContentUnit.objects.select_related("predicate")}
    assert all(u.state == "kept" and u.kind == "qa" for u in units.values())
    first = units["Who blamed something for something? Police"]
    assert (first.question, first.answers) == ("Who blamed something for something?", ["Police"])
    # Each pair sits under the predicate whose verb its question contains.
    assert first.predicate.text == "blamed"
    assert units["Who said something? The mayor"].predicate.text == "said"
    assert units["When will something reopen? on Monday"].predicate.text == "reopen"
    assert units["Who won something? The team"].predicate.text == "won"
    # "happened" is no verb of the reference: the pair is kept under the example's "unplaced" predicate.
    assert units["What happened? a storm"].predicate.external_id == "unplaced" and report.n_unplaced == 1
    gold = {(g.summary.system.name, g.unit.text): g.present for g in GoldPresence.objects.select_related("summary__system", "unit")}
    assert gold[("sysA", "What did someone blame something for? the crash")] is False
    assert gold[("sysB", "What did someone win? the cup")] is True
    assert not GoldPresence.objects.filter(summary__system__name="sysC").exists()
    scores = {(s.summary.system.name, s.summary.example.external_id): s for s in SummaryScore.objects.select_related("summary__system", "summary__example")}
    assert scores[("sysA", "ex1")].qapyramid == pytest.approx(4 / 7)
    assert scores[("sysB", "ex2")].qapyramid == pytest.approx(1 / 2)
    # The predicate-level variant needs the pairs grouped by predicate: blamed 2/3, said 1, reopen 0, unplaced 1.
    assert scores[("sysA", "ex1")].predicate_level == pytest.approx((2 / 3 + 1 + 0 + 1) / 4)


def test_per_summary_scores_in_tokens_even_without_gold(tmp_path, capsys):
    import_campaign(name="Per summary", qapyramid=_write(tmp_path, [EX1, EX2]))
    call_command("campaign_scores", campaign="per-summary", format="json", per_summary=True, bootstrap=20)
    result = json.loads(capsys.readouterr().out)
    rows = {(s["example"], s["system"]): s for s in result["summaries"]}
    assert len(rows) == 6 and set(rows[("ex1", "sysA")]) >= {"example", "system", "qapyramid", "p_r", "p_l", "nqapyramid", "length"}
    # sysC has no gold label: no QAPyramid, but its length and penalties are there.
    long_one = rows[("ex1", "sysC")]
    assert long_one["qapyramid"] is None and long_one["nqapyramid"] is None
    text, reference = EX1["system_outputs"]["sysC"], EX1["reference"]
    assert long_one["length"] == scoring.token_length(text) == 24  # 19 whitespace words
    assert scoring.token_length(reference) == 17  # 15 whitespace words
    assert long_one["p_r"] == 1.0
    assert long_one["p_l"] == pytest.approx(math.exp((1 - 24 / 17) / 6), abs=1e-9)
    short = rows[("ex1", "sysA")]
    assert short["length"] == 14 and short["p_l"] == 1.0
    assert short["nqapyramid"] == pytest.approx(short["qapyramid"]) == pytest.approx(4 / 7)
    call_command("campaign_scores", campaign="per-summary", format="table", per_summary=True, bootstrap=20)
    table = capsys.readouterr().out
    assert "p_l" in table and "length" in table and "sysC" in table


def test_calibration_uses_token_lengths(tmp_path, capsys):
    import_campaign(name="Calibrate", qapyramid=_write(tmp_path, [EX1, EX2]))
    call_command("calibrate_length_alpha", campaign="calibrate")
    printed = capsys.readouterr().out
    rows = [(s.qapyramid, s.summary.text, s.summary.example.reference)
            for s in SummaryScore.objects.filter(qapyramid__isnull=False).select_related("summary__example")]
    tokens = [scoring.word_tokens(text) for _, text, _ in rows]
    _, expected = scoring.calibrate_length_alpha(
        [q for q, _, _ in rows], [len(t) for t in tokens], [scoring.token_length(r) for *_, r in rows],
        scoring.repetition_penalty([scoring.repetition_rate(t) for t in tokens]),
    )
    for alpha, r in expected.items():
        assert f"alpha={alpha:<3} pearson_r={r:+.3f}" in printed


def test_the_command_imports_and_reports(tmp_path, capsys):
    call_command("import_campaign", "--name", "Cmd", "--qapyramid", str(_write(tmp_path, [EX1, EX2])))
    out = capsys.readouterr().out
    assert "9 content units" in out and "18 gold labels" in out and "1 QA pairs whose verb matched no predicate" in out
    with pytest.raises(CommandError, match="give --qapyramid alone"):
        call_command("import_campaign", "--name", "Both", "--qapyramid", str(tmp_path / "data.jsonl"), "--folder", str(tmp_path))


def _with(base, **changes):
    line = json.loads(json.dumps(base))
    for key, value in changes.items():
        if value is None:
            line.pop(key, None)
        else:
            line[key] = value
    return line


@pytest.mark.parametrize(
    "second, expected",
    [
        (_with(EX2, QA_labels={"sysA": [1], "sysB": [0, 1]}), "data.jsonl, line 2, field 'QA_labels.sysA': has 1 labels but QAs has 2"),
        (_with(EX2, QA_labels={"sysA": [1, 2], "sysB": [0, 1]}), "line 2, field 'QA_labels.sysA': must be a list of 0/1 labels"),
        (_with(EX2, QAs=["Who won something The team", "What did someone win? the cup"]), "line 2, field 'QAs[0]'"),
        (_with(EX2, QAs=["Who won something?", "What did someone win? the cup"]), "followed by its answer"),
        (_with(EX2, reference=None), "line 2, field 'reference': missing"),
        (_with(EX2, reference="  "), "line 2, field 'reference': is empty"),
        (_with(EX2, QAs=None), "line 2, field 'QAs': missing"),
        (_with(EX2, system_outputs=["not", "an", "object"]), "line 2, field 'system_outputs': must be an object"),
        (_with(EX2, system_outputs={"sysA": "x", "sysB": ""}), "line 2, field 'system_outputs.sysB': must be a non-empty string"),
        (_with(EX2, system_outputs={"sysA": "x", "sysB": "y"}), "system 'sysC' has no summary for 'ex2'"),
        (_with(EX2, QA_labels={"sysA": [1, 1], "sysZ": [0, 1]}), "field 'QA_labels.sysZ': labels for system 'sysZ' which has no summary"),
        (_with(EX2, example_id="ex1"), "line 2, field 'example_id': duplicate id 'ex1' (first on line 1)"),
        # The limits and characters every reader checks (readers.check_text).
        (_with(EX2, system_outputs={"sysA": "x" * 20_001, "sysB": "y", "sysC": "z"}),
         "line 2, field 'system_outputs.sysA': is 20,001 characters long; the limit is 20,000"),
        (_with(EX2, system_outputs={"sysA": "bad \ud800", "sysB": "y", "sysC": "z"}), "field 'system_outputs.sysA': contains a lone surrogate"),
        (_with(EX2, system_outputs={"s" * 201: "x", "sysA": "x", "sysB": "y", "sysC": "z"}), "characters long; the limit is 200"),
        (_with(EX2, example_id="e" * 201), "line 2, field 'example_id': is 201 characters long; the limit is 200"),
        ('{"example_id": "ex2", "reference": ', "data.jsonl, line 2: bad JSON"),
        ("[1, 2]", "line 2: expected a JSON object"),
    ],
)
def test_a_bad_line_refuses_the_whole_file_naming_line_and_field(tmp_path, second, expected):
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Bad", qapyramid=_write(tmp_path, [EX1, second]))
    assert expected in "\n".join(str(p) for p in info.value.problems)
    assert not Campaign.objects.exists() and not Predicate.objects.exists() and not ContentUnit.objects.exists()


def test_invalid_utf8_and_a_missing_file(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(EX1).encode() + b"\n" + b'{"example_id": "\xff"}\n')
    with pytest.raises(CampaignImportError, match="bad.jsonl, line 2: not valid UTF-8"):
        import_campaign(name="Bytes", qapyramid=path)
    with pytest.raises(CampaignImportError, match="file not found"):
        import_campaign(name="Missing", qapyramid=tmp_path / "nope.jsonl")
    assert not Campaign.objects.exists()


def test_the_leaderboard_per_summary_view_shows_the_same_figures(tmp_path, researcher, other_researcher):
    from django.test import Client

    from annotation.selectors.scores import summary_scores

    import_campaign(name="Board", qapyramid=_write(tmp_path, [EX1, EX2]), owner=researcher)
    client = Client()
    client.force_login(researcher)
    board = client.get("/campaigns/board/leaderboard/").content.decode()
    assert 'href="/campaigns/board/leaderboard/summaries/"' in board
    html = client.get("/campaigns/board/leaderboard/summaries/").content.decode()
    for row in summary_scores(Campaign.objects.get()):
        cells = html.split(f'data-example="{row["example"]}" data-system="{row["system"]}"')[1].split("</tr>")[0]
        assert f'data-figure="length">{row["length"]}<' in cells
        assert f'data-figure="p_l">{row["p_l"]:.3f}<' in cells
        expected = "—" if row["qapyramid"] is None else f'{row["qapyramid"]:.3f}'
        assert f'data-figure="qapyramid">{expected}<' in cells
    only_c = client.get("/campaigns/board/leaderboard/summaries/?system=sysC").content.decode()
    assert only_c.count('data-system="sysC"') == 2 and 'data-system="sysA"' not in only_c
    other = Client()
    other.force_login(other_researcher)
    assert other.get("/campaigns/board/leaderboard/summaries/").status_code == 404


def test_scores_stored_before_token_lengths_are_recomputed_for_the_per_summary_view(tmp_path, capsys):
    import_campaign(name="Stale", qapyramid=_write(tmp_path, [EX1, EX2]))
    SummaryScore.objects.update(length=None, length_penalty=None)
    call_command("campaign_scores", campaign="stale", format="json", per_summary=True, bootstrap=20)
    rows = json.loads(capsys.readouterr().out)["summaries"]
    assert all(r["length"] and r["p_l"] is not None for r in rows)


def test_the_per_summary_view_is_paged_and_the_system_filter_follows_the_pages(tmp_path, researcher, monkeypatch):
    from django.test import Client

    monkeypatch.setattr("annotation.web.views.campaigns.SUMMARIES_PER_PAGE", 2)
    import_campaign(name="Paged", qapyramid=_write(tmp_path, [EX1, EX2]), owner=researcher)
    client = Client()
    client.force_login(researcher)
    shown = []
    pages = [client.get(f"/campaigns/paged/leaderboard/summaries/?page={n}").content.decode() for n in (1, 2, 3)]
    for html in pages:
        shown += [tuple(cells.split('"')[i] for i in (0, 2)) for cells in html.split('data-example="')[1:]]
    assert len(shown) == len(set(shown)) == SystemSummary.objects.count() == 6  # every summary once
    assert "page 1 of 3" in pages[0] and 'href="?page=2"' in pages[0]
    only_c = client.get("/campaigns/paged/leaderboard/summaries/?system=sysC").content.decode()
    assert only_c.count('data-system="sysC"') == 2 and "page 1 of" not in only_c
    monkeypatch.setattr("annotation.web.views.campaigns.SUMMARIES_PER_PAGE", 1)
    only_c = client.get("/campaigns/paged/leaderboard/summaries/?system=sysC").content.decode()
    assert only_c.count('data-system="sysC"') == 1 and 'href="?system=sysC&amp;page=2"' in only_c
