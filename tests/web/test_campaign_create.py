"""Creating a campaign in the browser: upload, preview (or every problem), confirm, import job."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Job
from annotation.models import Campaign, Predicate, SystemSummary
from annotation.services import uploads
from tests.web.conftest import REFERENCES, SUMMARIES, upload

pytestmark = pytest.mark.django_db


def _post_files(client, references=REFERENCES, summaries=SUMMARIES, **fields):
    data = {"name": "Web study", "slug": "", "description": "made in the browser", "predicates": "auto", **fields}
    if references is not None:
        data["references"] = upload("refs.jsonl", references)
    if summaries is not None:
        data["summaries"] = upload("sums.jsonl", summaries)
    return client.post(reverse("campaign-new"), data)


def test_preview_counts_then_confirm_imports_and_cleans_the_upload(client_rita, rita, django_capture_on_commit_callbacks):
    response = _post_files(client_rita)
    assert response.status_code == 200
    preview = response.context["preview"]
    assert (preview.n_examples, len(preview.systems), preview.n_summaries) == (2, 2, 4)
    assert preview.n_predicates >= 3
    page = response.content.decode()
    assert 'data-count="summaries">4<' in page and "Import the campaign" in page
    assert not Campaign.objects.exists()  # nothing saved by the preview
    token = response.context["upload"]
    assert set(uploads.staged_files(token)) == {"references", "summaries"}

    with django_capture_on_commit_callbacks(execute=True):
        response = client_rita.post(reverse("campaign-new-confirm"), {"upload": token})
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("job-detail", args=[job.pk])
    assert job.state == "done" and (job.done, job.total) == (5, 5)  # files, two references, writing
    campaign = Campaign.objects.get(slug="web-study")
    assert job.campaign == campaign and campaign.owner == rita and campaign.description == "made in the browser"
    # The preview counted what the import wrote.
    assert Predicate.objects.filter(example__campaign=campaign).count() == preview.n_predicates
    assert SystemSummary.objects.filter(system__campaign=campaign).count() == 4
    assert not (uploads.uploads_dir() / token).exists()
    status = client_rita.get(reverse("job-status", args=[job.pk])).json()
    assert status["state"] == "done" and status["percent"] == 100
    assert status["result_url"] == reverse("campaign-settings", args=["web-study"])
    # Confirming twice imports nothing more: the second click shows the first import.
    again = client_rita.post(reverse("campaign-new-confirm"), {"upload": token})
    assert again["Location"] == reverse("job-detail", args=[job.pk])
    assert Campaign.objects.count() == 1 and Job.objects.count() == 1


def test_bad_file_lists_every_problem_keeps_input_and_the_good_file(client_rita):
    bad = REFERENCES.replace(b'{"id": "b"', b'{"id" "b"') + b'{"id": "c", "reference": ""}\n'
    response = _post_files(client_rita, references=bad, name="Kept name", description="kept words")
    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing was imported" in page
    assert "refs.jsonl, line 2: bad JSON" in page
    assert "refs.jsonl, line 3, field &#x27;reference&#x27;: is empty" in page
    assert 'value="Kept name"' in page and "kept words" in page
    assert "Kept from your upload: <strong>sums.jsonl</strong>" in page
    assert not Campaign.objects.exists()
    token = response.context["upload"]
    # Only the corrected references go up again; the summaries were kept.
    response = client_rita.post(
        reverse("campaign-new"),
        {"upload": token, "name": "Kept name", "predicates": "auto", "references": upload("refs-fixed.jsonl", REFERENCES)},
    )
    assert response.status_code == 200 and response.context["preview"].n_summaries == 4


def test_summary_of_unknown_example_and_missing_files(client_rita):
    response = _post_files(client_rita, summaries=SUMMARIES + b'{"id": "zz", "system": "s1", "summary": "x"}\n')
    assert response.status_code == 400
    assert "sums.jsonl, line 5, field &#x27;id&#x27;: summary for unknown example &#x27;zz&#x27;" in response.content.decode()
    response = _post_files(client_rita, summaries=None)
    assert response.status_code == 400 and "Upload a summaries file." in response.content.decode()


def test_predicates_from_a_file_and_a_bad_predicate_line(client_rita):
    preds = b'{"id": "a", "start": 10, "end": 16}\n{"id": "b", "start": 7, "end": 13}\n'
    data = {"name": "Own predicates", "predicates": "file", "references": upload("r.jsonl", REFERENCES),
            "summaries": upload("s.jsonl", SUMMARIES), "predicates_file": upload("p.jsonl", preds)}
    response = client_rita.post(reverse("campaign-new"), data)
    assert response.status_code == 200 and response.context["preview"].n_predicates == 2
    data["predicates_file"] = upload("p.jsonl", b'{"id": "a", "start": 10, "end": 999}\n')
    data["references"] = upload("r.jsonl", REFERENCES)
    data["summaries"] = upload("s.jsonl", SUMMARIES)
    response = client_rita.post(reverse("campaign-new"), data)
    assert response.status_code == 400 and "p.jsonl, line 1, field &#x27;end&#x27;" in response.content.decode()


def test_taken_or_reserved_slug_is_refused_before_upload(client_rita, draft):
    response = _post_files(client_rita, name="Draft study")
    assert response.status_code == 400 and "already exists" in response.content.decode()
    response = _post_files(client_rita, name="New")
    assert response.status_code == 400 and "reserved" in response.content.decode()


def test_slug_taken_between_preview_and_confirm_fails_the_job_visibly(client_rita, rita, tmp_path, django_capture_on_commit_callbacks):
    from annotation.services.campaign_import import import_campaign

    response = _post_files(client_rita, name="Race")
    token = response.context["upload"]
    refs, sums = tmp_path / "r.jsonl", tmp_path / "s.jsonl"
    refs.write_bytes(REFERENCES)
    sums.write_bytes(SUMMARIES)
    import_campaign(name="Race", references=refs, summaries=sums)
    with django_capture_on_commit_callbacks(execute=True):
        client_rita.post(reverse("campaign-new-confirm"), {"upload": token})
    job = Job.objects.get()
    assert job.state == "failed" and "Nothing was imported" in job.message
    assert any("already exists" in p for p in job.problems)
    page = client_rita.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "already exists" in page and "Upload the files again" in page
    # Back to the form with the same files and the name typed, to change the name and try again.
    back = client_rita.get(reverse("campaign-new") + f"?upload={token}").content.decode()
    assert 'value="Race"' in back and "Kept from your upload: <strong>refs.jsonl</strong>" in back


def test_only_researchers_create_and_tokens_are_per_session(client_rita, django_user_model):
    worker = django_user_model.objects.create_user(username="wendy", password="a-long-test-password")
    client = Client()
    client.force_login(worker)
    assert client.get(reverse("campaign-new")).status_code == 403
    assert _post_files(client).status_code == 403
    anonymous = Client().get(reverse("campaign-new"))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    # Someone else's upload token is never trusted.
    token = _post_files(client_rita).context["upload"]
    other = django_user_model.objects.create_user(username="otto", password="a-long-test-password", is_staff=True)
    thief = Client()
    thief.force_login(other)
    response = thief.post(reverse("campaign-new-confirm"), {"upload": token})
    assert response.status_code == 302 and not Job.objects.exists()


def test_upload_needs_csrf(rita):
    client = Client(enforce_csrf_checks=True)
    client.force_login(rita)
    assert _post_files(client).status_code == 403
    assert not uploads.uploads_dir().exists() or not any(uploads.uploads_dir().iterdir())


def test_home_offers_new_campaign_to_researchers_only(client_rita, django_user_model):
    assert 'id="new-campaign"' in client_rita.get("/").content.decode()
    plain = django_user_model.objects.create_user(username="pat", password="a-long-test-password")
    client = Client()
    client.force_login(plain)
    assert 'id="new-campaign"' not in client.get("/").content.decode()


def test_oversized_and_badly_encoded_uploads_are_named_and_capped_on_disk(client_rita, settings):
    settings.IMPORT_MAX_BYTES = 300
    big = REFERENCES + b'{"id": "c", "reference": "' + b"word " * 200 + b'"}\n'
    response = _post_files(client_rita, references=big)
    assert response.status_code == 400
    assert "refs.jsonl: file is 301 bytes; the limit is 300" in response.content.decode()
    staged = uploads.staged_files(response.context["upload"])["references"]
    assert (uploads.uploads_dir() / staged.key).stat().st_size == 301  # never more than the limit + 1 on disk
    response = _post_files(client_rita, references=REFERENCES, summaries=SUMMARIES.replace(b"Storms hit.", b"Storms \xff hit."))
    assert response.status_code == 400
    assert "sums.jsonl, line 4: not valid UTF-8 (byte 0xff at column" in response.content.decode()
    assert not Campaign.objects.exists()


def test_a_large_upload_previews_from_its_first_references_and_says_so(client_rita, settings, monkeypatch):
    """Past IMPORT_PREVIEW_ANALYSE_CHARS of references, the preview finds predicates in the first references only
    (the request must stay inside the server's timeout) and shows scaled counts marked "about"."""
    import json

    from annotation.text import predicates as predicate_module

    sentence = "The council approved the budget and the mayor praised the vote."
    references = "".join(json.dumps({"id": f"e{i}", "reference": sentence}) + "\n" for i in range(40))
    summaries = "".join(json.dumps({"id": f"e{i}", "system": "s1", "summary": "A vote."}) + "\n" for i in range(40))
    analysed = []
    real = predicate_module.analyse_references
    monkeypatch.setattr(predicate_module, "analyse_references", lambda refs, *a, **k: analysed.append(len(refs)) or real(refs, *a, **k))
    settings.IMPORT_PREVIEW_ANALYSE_CHARS = 10 * len(sentence)
    response = _post_files(client_rita, references=references.encode(), summaries=summaries.encode())
    assert response.status_code == 200
    preview = response.context["preview"]
    assert analysed == [10] and preview.estimated and preview.analysed_examples == 10
    per_reference = preview.n_predicates / 40
    assert preview.n_predicates >= 40 and per_reference == int(per_reference)  # every reference is the same sentence
    page = response.content.decode()
    assert f'data-count="predicates">about {preview.n_predicates}' in page
    assert "first 10 of 40 references" in page

    settings.IMPORT_PREVIEW_ANALYSE_CHARS = 10 ** 6  # small enough: every reference, exact counts
    analysed.clear()
    exact = _post_files(client_rita, references=references.encode(), summaries=summaries.encode())
    assert analysed == [40] and not exact.context["preview"].estimated
    assert exact.context["preview"].n_predicates == preview.n_predicates
    assert "about" not in exact.content.decode().split('data-count="predicates">')[1][:10]
