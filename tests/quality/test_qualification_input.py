"""Issue 40 (item 9): a qualification file's checks take time linear in the file, and a text the database cannot
store (NUL) is a clear error naming the item and field on every path, never a 500 or a traceback."""

from __future__ import annotations

import json
import random
import re
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Campaign
from annotation.services.campaign_import import import_campaign
from annotation.services.qualification_tests import QualificationDefinitionError, build_qualification_hits
from annotation.text import search
from annotation.text.search import TextIndex
from hits.models import HIT
from tests.api.conftest import api_world, client_for, submitted_assignment  # noqa: F401 - fixture
from tests.conftest import write_jsonl


def answers_file(n_answers: int, sentence_chars: int, seed: int = 0) -> dict:
    """A generation item whose sentence is ``sentence_chars`` long, with ``n_answers`` answers of one to four of
    its words taken from all over it, each about as frequent whatever the size (bench/qualification_checks.py
    times the issue's 250,000 / 500 KB one)."""
    rng = random.Random(seed)
    words, length = [], 0
    while length < sentence_chars:
        words.append(f"w{rng.randrange(sentence_chars // 100)}")  # a vocabulary growing with the sentence
        length += len(words[-1]) + 1
    words[len(words) // 2] = "opened"
    arguments = []
    for _ in range(n_answers):
        at = rng.randrange(len(words) - 4)
        arguments.append([" ".join(words[at : at + rng.randint(1, 4)])])
    return {"generation": [{"sentence": " ".join(words), "predicate": "opened", "arguments": arguments}]}


def predicate_file(sentence_chars: int, predicate_words: int) -> dict:
    """A long predicate at the end of a long sentence of one word repeated: a search that compares the predicate at
    every word boundary compares nearly all of it every time (the issue's 1.2 MB file)."""
    predicate = "alpha " * predicate_words + "omega"
    sentence = "alpha " * ((sentence_chars - len(predicate)) // 6) + predicate + "."
    return {"generation": [{"sentence": sentence, "predicate": predicate, "arguments": [["omega"]]}]}


def _best_time(definition) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        build_qualification_hits(Campaign(name="x"), definition)
        best = min(best, time.perf_counter() - started)
    return best


def test_the_index_finds_what_a_plain_search_finds(monkeypatch):
    # The hashed windows on every length, however short the text (the plain search is the reference).
    monkeypatch.setattr(search, "_SHORT", 0)
    monkeypatch.setattr(search, "_FEW", 0)
    rng = random.Random(4)
    for _ in range(200):
        alphabet = rng.choice(["ab ", "abc d", "xy_ ,é"])
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200)))
        needles = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7))) for _ in range(40)]
        index = TextIndex(text)
        assert index.absent(needles) == {n for n in needles if n not in text}
        for word in needles[:8]:
            match = re.search(r"\b" + re.escape(word) + r"\b", text) if word else None
            assert index.find_word(word) == (match.span() if match else None), (text, word)


def test_many_answers_are_looked_up_once_per_length_not_once_each():
    definition = answers_file(20_000, 100_000)
    index = TextIndex(definition["generation"][0]["sentence"])
    answers = [a for argument in definition["generation"][0]["arguments"] for a in argument]
    assert index.absent(answers) == set()
    lengths = {len(a) for a in answers}
    assert index.scans <= len(lengths) + 5, (index.scans, len(lengths))
    assert index.absent(answers + ["w1 w1 w1 w1 nowhere"]) == {"w1 w1 w1 w1 nowhere"}


@pytest.mark.django_db
def test_answer_checks_take_time_linear_in_the_file():
    """Ten times the answers and the sentence: ten times the time (checking each answer by reading the whole
    sentence again took a hundred times)."""
    small, large = _best_time(answers_file(2_500, 50_000)), _best_time(answers_file(25_000, 500_000))
    assert large / small < 50, (small, large)


@pytest.mark.django_db
def test_predicate_lookup_takes_time_linear_in_the_file():
    """Ten times the sentence and the predicate: about ten times the time, not a hundred."""
    small, large = _best_time(predicate_file(120_000, 200)), _best_time(predicate_file(1_200_000, 2_000))
    assert large / small < 50, (small, large)


@pytest.mark.django_db
def test_the_issues_two_oversized_files_are_read_and_a_wrong_answer_in_them_named():
    """bench/qualification_checks.py times them (well under a second each); here their results."""
    definition = predicate_file(1_200_000, 2_000)
    assert len(json.dumps(definition)) > 1_200_000
    (hit,) = build_qualification_hits(Campaign(name="x"), definition)
    sentence = definition["generation"][0]["sentence"]
    assert sentence[hit.payload["inline"]["start"] : hit.payload["inline"]["end"]] == definition["generation"][0]["predicate"]
    assert hit.payload["inline"]["end"] == len(sentence) - 1
    many = answers_file(250_000, 500_000)
    (hit,) = build_qualification_hits(Campaign(name="x"), many)
    assert len(hit.answer_key["arguments"]) == 250_000
    many["generation"][0]["arguments"][200_000] = ["w1 w2 w3 nowhere"]
    with pytest.raises(QualificationDefinitionError, match="generation item 1, argument 200001: answer 'w1 w2 w3 nowhere' is not"):
        build_qualification_hits(Campaign(name="x"), many)


# --- NUL on every path --------------------------------------------------------------------------------------

NUL_DEFINITION = {"generation": [{"sentence": "The mayor opened the library.", "predicate": "opened", "arguments": [["The mayor"]]}],
                  "verification": [{"sentence": "The mayor opened the library.", "predicate": "opened",
                                    "questions": [{"question": "Who opened something?", "answers": ["The mayor"], "valid": True},
                                                  {"question": "What did someone open?", "answers": ["the lib\u0000rary"], "valid": True}]}]}
NUL_MESSAGE = "verification item 1, question 2: &#x27;answers&#x27; contains a NUL character"


@pytest.fixture
def owned_campaign(tmp_path, researcher):
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    campaign = import_campaign(name="Nul", references=refs, summaries=sums).campaign
    campaign.owner = researcher
    campaign.save()
    client = Client()
    client.force_login(researcher)
    return campaign, client


@pytest.mark.django_db
def test_a_nul_in_a_qualification_file_is_a_command_error_naming_item_and_field(tmp_path, owned_campaign):
    campaign, _ = owned_campaign
    path = tmp_path / "tests.json"
    path.write_text(json.dumps(NUL_DEFINITION))  # the NUL as JSON writes it: \u0000
    with pytest.raises(CommandError, match=r"verification item 1, question 2: 'answers' contains a NUL character.*nothing was changed"):
        call_command("import_qualifications", str(path), "--campaign", campaign.slug)
    assert not HIT.objects.filter(kind__in=["qualification", "gold"]).exists()


@pytest.mark.django_db
def test_a_nul_in_an_uploaded_or_pasted_definition_is_a_400_naming_item_and_field(owned_campaign):
    campaign, client = owned_campaign
    url = f"/campaigns/{campaign.slug}/qualifications/"
    text = json.dumps(NUL_DEFINITION)
    pasted = client.post(url, {"definition": text})
    uploaded = client.post(url, {"file": SimpleUploadedFile("tests.json", text.encode())})
    for response in (pasted, uploaded):
        assert response.status_code == 400
        assert NUL_MESSAGE.lower() in response.content.decode().lower()
    # Typed into an item's form: a 400 naming the NUL, the item not saved.
    form = client.post(f"/campaigns/{campaign.slug}/qualifications/items/new/?kind=generation",
                       {"sentence": "The mayor opened\x00 it.", "predicate": "opened", "arguments": "The mayor"})
    assert form.status_code == 400 and b"NUL character" in form.content
    assert not HIT.objects.filter(kind__in=["qualification", "gold"]).exists()


@pytest.mark.django_db
def test_a_nul_in_an_api_body_is_a_400_naming_the_field(api_world):  # noqa: F811 - fixture
    assignment = submitted_assignment(api_world, "crowd2")
    client = client_for(api_world, "owner")
    response = client.post(f"/api/campaigns/{api_world['campaign'].slug}/assignments/{assignment.pk}/bonus/",
                           {"amount": "0.10", "reason": "Thanks\u0000"}, format="json")
    assert response.status_code == 400
    assert "contains a NUL character" in response.json()["detail"] and "field reason" in response.json()["detail"]
