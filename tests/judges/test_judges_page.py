"""The judges page: the comparison beside the leaderboard, for the campaign's researchers only."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import AutoscoreRun

pytestmark = pytest.mark.django_db


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def test_owner_starts_a_run_and_reads_agreement_and_tau(gold_campaign, researcher, django_capture_on_commit_callbacks):
    client = _client(researcher)
    url = f"/campaigns/{gold_campaign.slug}/judges/"
    page = client.get(url)
    assert page.status_code == 200 and b'id="no-runs"' in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"judge": "lexical"})
    assert response.status_code == 302
    run = AutoscoreRun.objects.get()
    assert run.state == "finished" and run.created_by == researcher
    html = client.get(url).content.decode()
    assert 'data-judge="lexical"' in html and "SemiAutoQAPyramid" in html
    assert f'{run.results["presence"]["accuracy"]:.3f}' in html
    # Accuracy and the present-class F1 under their own names: no "micro-F1" column.
    assert "F1 (present)" in html and "Micro-F1" not in html
    assert f'data-figure="f1-present">{run.results["presence"]["f1_present"]:.3f}' in html
    tau = run.results["correlation"]["all"]["kendall"]
    assert f'data-figure="tau-undefined">{tau["n_undefined"]} of {tau["n_examples"]}<' in html
    assert "counting as 0" in html
    assert 'data-judge="rouge1 recall"' in html
    assert f'data-run="{run.pk}"' in html and "1/1" in html


def test_bad_choices_are_refused_with_a_message(gold_campaign, researcher):
    client = _client(researcher)
    url = f"/campaigns/{gold_campaign.slug}/judges/"
    page = client.post(url, {"judge": "oracle"}, follow=True)
    assert "Choose one of the judges offered" in page.content.decode()
    page = client.post(url, {"judge": "trained"}, follow=True)  # never trained in this test's MODELS_DIR
    assert "train_presence_judge" in page.content.decode()
    assert not AutoscoreRun.objects.exists()


def test_other_researchers_cannot_see_or_start_runs(gold_campaign, other_researcher):
    client = _client(other_researcher)
    url = f"/campaigns/{gold_campaign.slug}/judges/"
    assert client.get(url).status_code == 404
    assert client.post(url, {"judge": "lexical"}).status_code == 404
    assert not AutoscoreRun.objects.exists()


def test_without_the_neural_extras_the_page_says_how_to_install_them(gold_campaign, researcher, monkeypatch):
    """`make demo` installs no torch/transformers: the page names `make judges`, a neural run is refused with
    it, and the other judges still run."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("torch", "transformers") else real(name, *a))
    client = _client(researcher)
    url = f"/campaigns/{gold_campaign.slug}/judges/"
    html = client.get(url).content.decode()
    assert 'id="judges-extras"' in html and "make judges" in html and "requirements-judges.txt" in html
    page = client.post(url, {"judge": "trained"}, follow=True).content.decode()
    assert "needs torch and transformers" in page and "make judges" in page
    assert not AutoscoreRun.objects.exists()
    client.post(url, {"judge": "lexical"})
    assert AutoscoreRun.objects.filter(judge_name="lexical").exists()


def test_with_the_extras_installed_the_page_asks_for_nothing(gold_campaign, researcher):
    pytest.importorskip("torch")
    html = _client(researcher).get(f"/campaigns/{gold_campaign.slug}/judges/").content.decode()
    assert 'id="judges-extras"' not in html
