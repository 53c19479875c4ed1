"""JSON that parses in Python's own way but that the platform cannot hold (issue 27, L1).

An integer of more than 4,300 digits made ``json.loads`` raise a ``ValueError`` of
its own wording (a 500 on every upload endpoint, a traceback from the command, the
raw message in a background job); ``NaN``, ``Infinity`` and ``1e999`` were taken as
values.  Every reader of outside JSON now goes through ``load_json``: a 400, one
command line or one job problem naming file, line and field.
"""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation.importing.safe_json import JSONProblem, load_json
from annotation.models import Campaign, System
from tests.api.conftest import api_world, client_for  # noqa: F401 - the fixture is used by name
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db

BIG = "9" * 5000
REFS = b'{"id": "a", "reference": "The mayor opened a new park."}\n{"id": "b", "reference": "Storms closed the airport."}\n'
SUMS_BIG = (
    b'{"id": "a", "system": "s1", "summary": "A park opened."}\n'
    + f'{{"id": "b", "system": "s1", "summary": "Storms.", "score": {BIG}}}\n'.encode()
)
NEW_SYSTEM_BIG = f'{{"id": "a", "system": "s9", "summary": "x", "rank": {BIG}}}\n'.encode()
EXPECTED = "line 2, field 'score': bad JSON: an integer of 5,000 digits (the limit is 4,300) at column 60"


@pytest.mark.parametrize(
    ("text", "message", "line", "field"),
    [
        ('{"a": [1, {"b": ' + BIG + "}]}", "an integer of 5,000 digits", 1, "a[1].b"),
        ('{"x": "NaN",\n "y": NaN}', "NaN is not a number JSON allows", 2, "y"),
        ('{"x": -Infinity}', "-Infinity is not a number JSON allows", 1, "x"),
        ('{"x": [0.5, 1e999]}', "1e999 is too large to store", 1, "x[1]"),
        ("[" * 100_000, "nested too deeply", 1, None),
    ],
)
def test_load_json_names_the_value_it_refuses(text, message, line, field):
    with pytest.raises(JSONProblem) as info:
        load_json(text)
    assert message in info.value.message and (info.value.line, info.value.field) == (line, field)
    assert load_json('{"n": -0.5, "k": 12}') == {"n": -0.5, "k": 12}


def test_web_campaign_upload_names_file_line_and_field(client):
    from tests.web.conftest import upload

    user = _researcher("rita")
    client.force_login(user)
    response = client.post(
        "/campaigns/new/",
        {"name": "Big", "predicates": "auto", "references": upload("refs.jsonl", REFS), "summaries": upload("sums.jsonl", SUMS_BIG)},
    )
    assert response.status_code == 400
    assert "sums.jsonl, " + EXPECTED.replace("'", "&#x27;") in response.content.decode()
    assert not Campaign.objects.exists()


def test_web_new_system_and_qualification_definition(client, tmp_path):
    from annotation.services.campaign_import import import_campaign
    from tests.web.conftest import upload

    user = _researcher("rita")
    client.force_login(user)
    (tmp_path / "r.jsonl").write_bytes(REFS)
    (tmp_path / "s.jsonl").write_bytes(SUMS_BIG.replace(f', "score": {BIG}'.encode(), b""))
    campaign = import_campaign(name="Draft", owner=user, references=tmp_path / "r.jsonl", summaries=tmp_path / "s.jsonl").campaign
    response = client.post(f"/campaigns/{campaign.slug}/systems/add/", {"summaries": upload("new.jsonl", NEW_SYSTEM_BIG)})
    assert response.status_code == 400
    assert "line 1, field &#x27;rank&#x27;: bad JSON: an integer of 5,000 digits" in response.content.decode()
    assert not System.objects.filter(name="s9").exists()
    for definition, expected in (
        ('{"presence": [{"candidate": "x", "weight": ' + BIG + "}]}", "an integer of 5,000 digits (the limit is 4,300) (line 1, column 44, field presence[0].weight)"),
        ('{"presence": [{"candidate": "x",\n "weight": NaN}]}', "NaN is not a number JSON allows (line 2, column 12, field presence[0].weight)"),
    ):
        response = client.post(f"/campaigns/{campaign.slug}/qualifications/", {"definition": definition})
        assert response.status_code == 400
        assert f"Not valid JSON: {expected}." in response.content.decode(), re.findall(r"Not valid[^<]*", response.content.decode())


def test_api_uploads_and_bodies_answer_400_with_the_place(api_world):
    api = client_for(api_world, "owner")
    api.raise_request_exception = False
    response = api.post(
        "/api/campaigns/",
        {"name": "Big", "references": SimpleUploadedFile("r.jsonl", REFS), "summaries": SimpleUploadedFile("s.jsonl", SUMS_BIG)},
        format="multipart",
    )
    assert response.status_code == 400
    problem = response.json()["problems"][0]
    assert (problem["file"], problem["line"], problem["field"]) == ("s.jsonl", 2, "score")
    assert problem["message"].startswith("bad JSON: an integer of 5,000 digits")
    slug = api_world["campaign"].slug
    response = api.post(f"/api/campaigns/{slug}/systems/", {"summaries": SimpleUploadedFile("n.jsonl", NEW_SYSTEM_BIG)}, format="multipart")
    assert response.status_code == 400 and response.json()["problems"][0]["field"] == "rank"
    response = api.patch(f"/api/campaigns/{slug}/", '{"name": "x", "settings": {"gold_share": ' + BIG + "}}", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "JSON parse error - an integer of 5,000 digits (the limit is 4,300) (line 1, column 42, field settings.gold_share)"
    )
    response = api.patch(f"/api/campaigns/{slug}/", '{"name": Infinity}', content_type="application/json")
    assert response.status_code == 400 and "Infinity is not a number JSON allows" in response.json()["detail"]
    assert Campaign.objects.get(slug=slug).name == "Parks"


def test_background_import_job_lists_the_problem_not_pythons_message(api_world, settings, tmp_path, django_capture_on_commit_callbacks):
    from config.celery import app

    settings.DATA_DIR = tmp_path / "data"
    settings.API_IMPORT_INLINE_MAX_BYTES = 50  # a "large" upload: imported by a job
    api = client_for(api_world, "owner")
    was, app.conf.task_always_eager = app.conf.task_always_eager, True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            queued = api.post(
                "/api/campaigns/",
                {"name": "Big job", "references": SimpleUploadedFile("r.jsonl", REFS), "summaries": SimpleUploadedFile("s.jsonl", SUMS_BIG)},
                format="multipart",
            )
    finally:
        app.conf.task_always_eager = was
    job = api.get(queued.json()["job"]["url"]).json()
    assert job["state"] == "failed" and job["problems"] == [f"s.jsonl, {EXPECTED}"], job
    assert "Exceeds the limit" not in json.dumps(job)
    assert not Campaign.objects.filter(name="Big job").exists()


def test_commands_end_in_one_clear_line(tmp_path):
    refs = tmp_path / "refs.jsonl"
    refs.write_bytes(REFS)
    sums = tmp_path / "sums.jsonl"
    sums.write_bytes(SUMS_BIG)
    with pytest.raises(CommandError) as info:
        call_command("import_campaign", name="Big", references=str(refs), summaries=str(sums))
    assert str(info.value) == f"nothing imported: sums.jsonl, {EXPECTED}"
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": "a", "system": "s1", "summary": "x"}, {"id": "b", "system": "s1", "summary": "y"}])
    call_command("import_campaign", name="Fine", references=str(refs), summaries=str(good))
    definition = tmp_path / "q.json"
    definition.write_text('{"presence": [{"candidate": "x", "weight": Infinity}]}')
    with pytest.raises(CommandError) as info:
        call_command("import_qualifications", str(definition), campaign="fine")
    assert str(info.value) == (
        "q.json: bad JSON: Infinity is not a number JSON allows (line 1, column 44, field presence[0].weight); nothing was changed"
    )


def test_raw_judgment_import_names_the_field(tmp_path):
    from annotation.importing.readers import CampaignImportError
    from annotation.services.raw_import import import_qapyramid_raw

    path = tmp_path / "raw.json"
    path.write_text('{"cnndm": {\n"sys": ' + BIG + "}}")
    with pytest.raises(CampaignImportError) as info:
        import_qapyramid_raw(path, name="Raw")
    problem = info.value.problems[0]
    assert (problem.file, problem.line, problem.field) == ("raw.json", 2, "cnndm.sys")
    assert not Campaign.objects.exists()


def _researcher(name):
    from django.contrib.auth import get_user_model

    from annotation.services.roles import make_researcher

    user = get_user_model().objects.create_user(name, password="a-long-test-password")
    make_researcher(user)
    return user
