"""Campaign import: formats, every kind of bad input, all-or-nothing, the command line."""

from __future__ import annotations

import os

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.importing.readers import CampaignImportError
from annotation.models import Campaign, ContentUnit, Example, GoldPresence, Predicate, ReferenceSentence, SystemSummary
from annotation.services.campaign_import import import_campaign
from tests.conftest import SHARED_DATA, write_jsonl

pytestmark = pytest.mark.django_db


def _nothing_written():
    return (
        Campaign.objects.count() == 0
        and Example.objects.count() == 0
        and SystemSummary.objects.count() == 0
        and Predicate.objects.count() == 0
    )


def test_jsonl_import_creates_examples_sentences_predicates_and_summaries(small_files, researcher):
    refs, sums = small_files
    report = import_campaign(name="Small Study", owner=researcher, references=refs, summaries=sums)
    campaign = Campaign.objects.get()
    assert campaign.slug == "small-study" and campaign.owner == researcher
    assert campaign.unit_type == "qa" and campaign.state == "draft"
    assert report.n_examples == 2 and report.n_systems == 2 and report.n_summaries == 4
    example = Example.objects.get(external_id="a")
    assert example.source == "Long text."
    sentences = list(example.sentences.order_by("index"))
    assert [s.text for s in sentences] == ["The mayor opened a new park.", "Children played there all day."]
    for s in sentences:
        assert example.reference[s.start : s.end] == s.text
    lemmas = set(Predicate.objects.filter(sentence__example=example).values_list("lemma", flat=True))
    assert lemmas == {"open", "play"}
    for p in Predicate.objects.all():
        assert p.sentence.text[p.start : p.end] == p.text
    # Paper's values are the defaults.
    assert (campaign.assignments_generation, campaign.assignments_verification, campaign.assignments_presence) == (1, 2, 3)
    assert str(campaign.reward_generation) == "0.32" and campaign.length_penalty_alpha == 6.0


def test_csv_references_and_summary_directory(tmp_path):
    (tmp_path / "refs.csv").write_text(
        'id,reference,source\nx1,"Rain fell, and rivers rose.",\nx2,Bees make honey.,Some source\n', encoding="utf-8"
    )
    sums = tmp_path / "sums"
    sums.mkdir()
    (sums / "ids.txt").write_text("x1\nx2\n")
    (sums / "lead.summary").write_text("Rain fell.\nBees make honey.\n")
    (sums / "bart.summary").write_text("Rivers rose.\nHoney is made by bees.\n")
    report = import_campaign(name="CSV", references=tmp_path / "refs.csv", summaries=sums)
    assert report.n_examples == 2 and report.n_summaries == 4
    assert set(Campaign.objects.get().systems.values_list("name", flat=True)) == {"lead", "bart"}
    assert SystemSummary.objects.get(system__name="bart", example__external_id="x2").text == "Honey is made by bees."
    assert Example.objects.get(external_id="x1").reference == "Rain fell, and rivers rose."


def test_predicates_from_file_replace_automatic_detection(small_files, tmp_path):
    refs, sums = small_files
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [{"id": "a", "start": 10, "end": 16, "lemma": "open"}, {"id": "b", "start": 7, "end": 13}],
    )
    import_campaign(name="P", references=refs, summaries=sums, predicates=preds)
    rows = {(p.sentence.example.external_id, p.text, p.lemma, p.origin) for p in Predicate.objects.select_related("sentence__example")}
    assert rows == {("a", "opened", "open", "file"), ("b", "closed", "closed", "file")}


@pytest.mark.parametrize(
    "lines, expected",
    [
        (['{"id": "a", "reference": "Fine."}', '{"id": "b", "reference": '], "refs.jsonl, line 2: bad JSON"),
        (['{"reference": "No id here."}'], "refs.jsonl, line 1, field 'id': missing"),
        (['{"id": "a", "reference": "One."}', '{"id": "a", "reference": "Two."}'], "refs.jsonl, line 2, field 'id': duplicate id 'a' (first on line 1)"),
        (['{"id": "a", "reference": "   "}'], "refs.jsonl, line 1, field 'reference': is empty"),
        (['{"id": "a", "reference": 42}'], "refs.jsonl, line 1, field 'reference': must be a string"),
        (['["a", "b"]'], "refs.jsonl, line 1: expected a JSON object"),
    ],
)
def test_bad_reference_lines_are_named_and_nothing_is_written(tmp_path, small_files, lines, expected):
    _, sums = small_files
    refs = write_jsonl(tmp_path / "refs.jsonl", lines)
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Bad", references=refs, summaries=sums)
    assert str(info.value.problems[0]).startswith(expected), str(info.value)
    assert _nothing_written()


def test_wrong_encoding_names_the_line(tmp_path, small_files):
    _, sums = small_files
    refs = tmp_path / "refs.jsonl"
    refs.write_bytes(b'{"id": "a", "reference": "Fine."}\n{"id": "b", "reference": "caf\xe9"}\n')
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Enc", references=refs, summaries=sums)
    assert str(info.value.problems[0]) == "refs.jsonl, line 2: not valid UTF-8 (byte 0xe9 at column 30)"
    assert _nothing_written()


def test_summary_for_unknown_example_and_system_with_missing_summaries(tmp_path, small_files):
    refs, _ = small_files
    sums = write_jsonl(
        tmp_path / "sums.jsonl",
        [
            {"id": "a", "system": "s1", "summary": "x"},
            {"id": "b", "system": "s1", "summary": "y"},
            {"id": "a", "system": "s2", "summary": "z"},
            {"id": "zzz", "system": "s2", "summary": "w"},
        ],
    )
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Gaps", references=refs, summaries=sums)
    messages = [str(p) for p in info.value.problems]
    assert "sums.jsonl, line 4, field 'id': summary for unknown example 'zzz'" in messages
    assert "sums.jsonl, field 'system': system 's2' has no summary for 'b'" in messages
    assert _nothing_written()


def test_duplicate_and_empty_summaries(tmp_path, small_files):
    refs, _ = small_files
    sums = write_jsonl(
        tmp_path / "sums.jsonl",
        [
            {"id": "a", "system": "s1", "summary": "x"},
            {"id": "a", "system": "s1", "summary": "again"},
            {"id": "b", "system": "s1", "summary": ""},
        ],
    )
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Dup", references=refs, summaries=sums)
    messages = [str(p) for p in info.value.problems]
    assert "sums.jsonl, line 2, field 'id': second summary of system 's1' for id 'a' (first on line 1)" in messages
    assert "sums.jsonl, line 3, field 'summary': is empty" in messages


def test_summary_directory_with_wrong_line_count(tmp_path, small_files):
    refs, _ = small_files
    d = tmp_path / "sums"
    d.mkdir()
    (d / "ids.txt").write_text("a\nb\n")
    (d / "s1.summary").write_text("only one line\n")
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Lines", references=refs, summaries=d)
    assert str(info.value.problems[0]) == "s1.summary: has 1 lines but ids.txt has 2: one summary per id"


def test_predicate_file_errors(tmp_path, small_files):
    refs, sums = small_files
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [
            {"id": "a", "start": 25, "end": 34},  # crosses the sentence boundary
            {"id": "q", "start": 0, "end": 3},
            {"id": "b", "start": 5, "end": 2},
            {"id": "b", "start": "0", "end": 2},
        ],
    )
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Preds", references=refs, summaries=sums, predicates=preds)
    messages = [str(p) for p in info.value.problems]
    assert "preds.jsonl, line 3, field 'end': must be greater than start" in messages
    assert "preds.jsonl, line 4, field 'start': must be an integer character offset" in messages
    # Span and id problems are found once sentences are known.
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Preds", references=refs, summaries=sums, predicates=write_jsonl(tmp_path / "p2.jsonl", [{"id": "a", "start": 25, "end": 34}, {"id": "q", "start": 0, "end": 3}]))
    messages = [str(p) for p in info.value.problems]
    assert "p2.jsonl, line 1, field 'start': the span is not inside one sentence of the reference" in messages
    assert "p2.jsonl, line 2, field 'id': predicate for unknown example 'q'" in messages
    assert _nothing_written()


def test_second_import_with_same_name_fails_cleanly(small_files):
    refs, sums = small_files
    import_campaign(name="Twice", references=refs, summaries=sums)
    with pytest.raises(CampaignImportError, match="a campaign with slug 'twice' already exists"):
        import_campaign(name="Twice", references=refs, summaries=sums)
    assert Campaign.objects.count() == 1 and Example.objects.count() == 2


def test_command_line_success_and_single_line_failure(small_files, tmp_path, capsys):
    refs, sums = small_files
    call_command("import_campaign", name="CLI study", references=str(refs), summaries=str(sums))
    out = capsys.readouterr().out
    assert "Imported campaign 'CLI study' (slug cli-study): 2 examples" in out
    bad = write_jsonl(tmp_path / "bad.jsonl", ['{"id": "a", "reference": "x"}', "not json"])
    with pytest.raises(CommandError) as info:
        call_command("import_campaign", name="Other", references=str(bad), summaries=str(sums))
    message = str(info.value)
    assert "\n" not in message and message.startswith("nothing imported: bad.jsonl, line 2: bad JSON")
    assert not Campaign.objects.filter(slug="other").exists()


def test_command_line_asks_whose_campaign_it_is_once_the_platform_has_researchers(small_files, django_user_model, capsys):
    from annotation.services.roles import make_researcher

    refs, sums = small_files
    call_command("import_campaign", name="Nobodys", references=str(refs), summaries=str(sums))
    assert "No owner: only admins see this campaign" in capsys.readouterr().out
    make_researcher(django_user_model.objects.create_user("rita", password="a-long-test-password"))
    with pytest.raises(CommandError) as info:
        call_command("import_campaign", name="Orphan", references=str(refs), summaries=str(sums))
    assert str(info.value).startswith("--owner is required") and "rita" in str(info.value)
    assert not Campaign.objects.filter(slug="orphan").exists()
    call_command("import_campaign", name="Ritas", references=str(refs), summaries=str(sums), owner="rita")
    assert "Owner: rita" in capsys.readouterr().out
    assert Campaign.objects.get(slug="ritas").owner.username == "rita"


def test_command_line_exit_code_is_non_zero(small_files, tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO

    _, sums = small_files
    bad = write_jsonl(tmp_path / "bad.jsonl", ["{", "[1]"])
    # A private SQLite database, so the child process does not touch the test database.
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"DATA_DIR": str(tmp_path / "data")}

    def manage(*args):
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )

    assert manage("migrate", "-v0").returncode == 0
    result = manage("import_campaign", "--name", "X", "--references", str(bad), "--summaries", str(sums))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("CommandError: nothing imported: bad.jsonl, line 1: bad JSON")


def _write_folder(root, *, labels=True, bad_label=False):
    (root / "summaries").mkdir(parents=True)
    (root / "ids.txt").write_text("e1\ne2\n")
    (root / "references.txt").write_text("<t> The dog barked loudly . </t> <t> A cat ran   away . </t>\n<t> Prices rose . </t>\n")
    (root / "documents.txt").write_text("doc one\ndoc two\n")
    (root / "summaries" / "sysA.summary").write_text("<t> The dog barked . </t>\n<t> Prices went up . </t>\n")
    (root / "summaries" / "sysB.summary").write_text("A cat ran .\nNothing .\n")
    (root / "SCUs.txt").write_text("The dog barked.\tA cat ran away.\nPrices rose.\n")
    if labels:
        (root / "labels").mkdir()
        (root / "labels" / "sysA.label").write_text("1\t0\n" + ("2" if bad_label else "1") + "\n")
        (root / "labels" / "sysB.label").write_text("0\t1\n0\n")


def test_folder_layout_with_units_and_labels(tmp_path):
    _write_folder(tmp_path / "ds")
    report = import_campaign(name="Folder", folder=tmp_path / "ds")
    campaign = Campaign.objects.get()
    assert campaign.unit_type == "scu"
    assert report.n_units == 3 and report.n_gold == 6
    e1 = Example.objects.get(external_id="e1")
    assert e1.reference == "The dog barked loudly . A cat ran away ."
    assert list(e1.sentences.values_list("text", flat=True)) == ["The dog barked loudly .", "A cat ran away ."]
    assert e1.source == "doc one"
    assert SystemSummary.objects.get(system__name="sysA", example=e1).text == "The dog barked ."
    gold = {
        (g.summary.system.name, g.summary.example.external_id, g.unit.text): g.present
        for g in GoldPresence.objects.select_related("summary__system", "summary__example", "unit")
    }
    assert gold[("sysA", "e1", "The dog barked.")] is True
    assert gold[("sysB", "e1", "A cat ran away.")] is True
    assert gold[("sysB", "e2", "Prices rose.")] is False
    assert all(u.kind == "scu" and u.predicate_id is None for u in ContentUnit.objects.all())


def test_folder_with_a_bad_label_writes_nothing(tmp_path):
    _write_folder(tmp_path / "ds", bad_label=True)
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Folder", folder=tmp_path / "ds")
    assert str(info.value.problems[0]) == "sysA.label, line 2, field 'label': labels must be 0 or 1"
    assert _nothing_written() and ContentUnit.objects.count() == 0


@pytest.mark.skipif(not (SHARED_DATA / "realsumm").exists(), reason="shared REALSumm data not present")
def test_realsumm_folder_import_and_second_import_fails():
    report = import_campaign(name="REALSumm", folder=SHARED_DATA / "realsumm")
    assert (report.n_examples, report.n_systems, report.n_summaries) == (100, 25, 2500)
    assert report.n_gold == 26_400
    assert ContentUnit.objects.count() == report.n_units > 1000
    # About 7.6 predicates per CNN/DM reference in the paper.
    assert 6.0 < report.predicates_per_reference < 9.0
    share_present = GoldPresence.objects.filter(present=True).count() / report.n_gold
    assert abs(share_present - 0.457) < 0.01
    with pytest.raises(CampaignImportError, match="already exists"):
        import_campaign(name="REALSumm", folder=SHARED_DATA / "realsumm")
    assert Campaign.objects.count() == 1


def test_a_folder_checks_system_file_names_and_documents_like_jsonl_fields(tmp_path):
    """A system's name comes from its file's name and a source from documents.txt: both are held to the same
    limits as a JSONL field (a 230-character name was a database error on PostgreSQL)."""
    from annotation.importing.readers import CampaignImportError
    from annotation.models import Campaign

    folder = tmp_path / "folder"
    (folder / "summaries").mkdir(parents=True)
    (folder / "ids.txt").write_text("e1\n")
    (folder / "references.txt").write_text("<t> Police blamed the driver . </t>\n")
    (folder / "documents.txt").write_text("w" * 200_001 + "\n")
    (folder / "summaries" / ("s" * 230 + ".summary")).write_text("<t> The driver was blamed . </t>\n")
    with pytest.raises(CampaignImportError) as info:
        import_campaign(name="Folder", folder=folder)
    text = "\n".join(str(p) for p in info.value.problems)
    assert "documents.txt, line 1, field 'source': is 200,001 characters long" in text
    assert "field 'system (the file's name)': is 230 characters long; the limit is 200" in text
    assert not Campaign.objects.exists()
