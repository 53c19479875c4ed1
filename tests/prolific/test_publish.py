"""Publishing a campaign on Prolific: the dry run's exact bodies, the hourly minimum, studies with their group
filters, a lost reply that never makes a second study, places that grow, and pause / resume / cancel."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Campaign
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import cancel_campaign, launch_campaign, pause_campaign, resume_campaign, task_type
from hits.models import HIT
from hits.prolific import publishing
from hits.prolific.models import ProlificParticipantGroup, ProlificStudy
from hits.prolific.publishing import ensure_places, publish_batch

pytestmark = pytest.mark.django_db

BASE = "https://studio.example.org"


@pytest.fixture(autouse=True)
def prolific_settings(settings):
    settings.PUBLIC_BASE_URL = BASE
    settings.PROLIFIC_API_TOKEN = ""
    settings.PROLIFIC_MAX_RETRIES = 0


@pytest.fixture
def campaign(small_files):
    """Three predicates (opened, played, closed); a presence reward that meets Prolific's $8.00/h at 2 minutes."""
    refs, sums = small_files
    campaign = import_campaign(name="Pro", slug="pro", references=refs, summaries=sums,
                               campaign_settings={"backend": "prolific"}).campaign
    Campaign.objects.filter(pk=campaign.pk).update(reward_presence=Decimal("0.27"))
    campaign.refresh_from_db()
    return campaign


class Market:
    """The module's Prolific stand-in (``prolific_standin``), read the way these tests need it."""

    def __init__(self, standin):
        self.standin = standin

    @property
    def studies(self) -> dict:
        return {s["id"]: s for s in self.standin.state()["studies"]}

    @property
    def groups(self) -> list:
        return self.standin.state()["groups"]

    def fault(self, method: str, path: str, kind: str = "lost_reply", times: int = 1) -> None:
        self.standin.control("POST", "/__control/faults/", {"method": method, "path": path, "kind": kind, "times": times})


@pytest.fixture
def market(prolific_standin, settings):
    settings.PROLIFIC_MAX_RETRIES = 0
    return Market(prolific_standin)


def expected_study(batch, slug: str, kind: str, code: str, places: int, filters: list, **overrides) -> dict:
    body = {
        "name": task_type(slug).name,
        "internal_name": f"qapyramid-{batch.key}-{slug}-{kind}",
        "external_study_url": f"{BASE}/prolific/start/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}&SESSION_ID={{{{%SESSION_ID%}}}}",
        "prolific_id_option": "url_parameters",
        "completion_codes": [{"code": code, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
        "total_available_places": places,
        "device_compatibility": ["desktop"],
        "filters": filters,
    }
    body.update(overrides)
    return body


def test_dry_run_prints_the_exact_bodies_and_sends_nothing(campaign, capsys):
    call_command("prolific_publish", campaign="pro", dry_run=True, format="json")
    out = json.loads(capsys.readouterr().out)
    campaign.refresh_from_db()
    batch = campaign.batch
    assert campaign.state == Campaign.State.DRAFT and not HIT.objects.filter(batch=batch).exists()  # the launch rolled back
    assert not ProlificStudy.objects.exists() and not ProlificParticipantGroup.objects.exists()
    blocked = f"qapyramid-{batch.key}-blocked"
    group, study, publish = out["requests"]
    assert group == {"method": "POST", "path": "/api/v1/participant-groups/",
                     "body": {"name": blocked, "workspace_id": "<the token's workspace (GET /api/v1/users/me/)>"}}
    # Three generation HITs of one writer each, six HITs per session (12 minutes at 2 minutes a HIT): one place.
    body = study["body"]
    assert study["method"] == "POST" and study["path"] == "/api/v1/studies/"
    assert {k: v for k, v in body.items() if k != "description"} == {
        **expected_study(batch, "generation", "main", publishing.completion_code(batch, task_type("generation"), "main"), 1,
                         [{"filter_id": "participant_group_blocklist", "selected_values": [f"<id of group {blocked}>"]}]),
        # The whole session: 6 HITs x $0.32 for 6 x 2 minutes.
        "estimated_completion_time": 12, "maximum_allowed_time": 120, "reward": 192,
    }
    assert "$1.92" in body["description"] and "6 tasks" in body["description"]
    assert publish == {"method": "POST", "path": f"/api/v1/studies/<id of study {body['internal_name']}>/transition/",
                       "body": {"action": "PUBLISH"}}
    assert out["cost_preview"]["backend"] == "prolific" and Decimal(out["cost_preview"]["fees"]) > 0
    assert [rate["task_type"] for rate in out["hourly"]] == ["generation", "verification", "presence"]


def test_pay_under_prolifics_hourly_minimum_is_refused_with_the_numbers(campaign, market):
    Campaign.objects.filter(pk=campaign.pk).update(reward_presence=Decimal("0.20"))  # the paper's reward
    for dry_run in (True, False):
        with pytest.raises(CommandError) as refused:
            call_command("prolific_publish", campaign="pro", dry_run=dry_run)
        message = str(refused.value)
        assert ("presence: a session of 6 HIT(s) at $0.20 pays $1.20 for 12 min, $6.00/h, below Prolific's minimum of "
                "$8.00/h") in message
        assert "at least $0.27 per HIT would pass" in message and "generation" not in message
    assert market.studies == {} and market.groups == [] and Campaign.objects.get(pk=campaign.pk).state == Campaign.State.DRAFT
    # The web launch refuses it too.
    from annotation.services.pipeline import LaunchError

    with pytest.raises(LaunchError, match=r"\$6.00/h"):
        launch_campaign(campaign)


def test_commands_refuse_the_wrong_market_and_a_missing_token(campaign, small_files):
    with pytest.raises(CommandError, match="PROLIFIC_API_TOKEN is not set"):
        call_command("prolific_publish", campaign="pro")
    with pytest.raises(CommandError, match="runs on Prolific, not MTurk: publish it with 'manage.py prolific_publish --campaign pro'"):
        call_command("mturk_publish", campaign="pro", sandbox=True, dry_run=True)
    refs, sums = small_files
    import_campaign(name="Local", slug="local", references=refs, summaries=sums)
    with pytest.raises(CommandError, match="campaign 'local' runs on Local workers, not Prolific"):
        call_command("prolific_publish", campaign="local", dry_run=True)
    with pytest.raises(CommandError, match="no campaign 'nope'"):
        call_command("prolific_publish", campaign="nope", dry_run=True)


def test_publish_creates_groups_filtered_studies_and_publishes_them(campaign, market, capsys):
    # A qualification test of the writers: a screening study, and the main study limited to those who pass it.
    from annotation.services.pipeline import ensure_batch

    batch = ensure_batch(campaign)
    HIT.objects.create(batch=batch, task_type=task_type("generation"), kind=HIT.Kind.QUALIFICATION, max_assignments=32767,
                       reward=0, payload={"inline": {}})
    call_command("prolific_publish", campaign="pro", format="json")
    out = json.loads(capsys.readouterr().out)
    batch.refresh_from_db()
    assert out["studies"] == 2 and len(out["published"]) == 2 and out["errors"] == []
    groups = {g.kind: g for g in ProlificParticipantGroup.objects.filter(batch=batch)}
    assert set(groups) == {"blocked", "qualified"} and groups["qualified"].task_type.slug == "generation"
    workspace = market.standin.state()["workspace_id"]
    assert sorted((g["name"], g["workspace_id"]) for g in market.groups) == sorted(
        [(groups["blocked"].name, workspace), (groups["qualified"].name, workspace)])
    main = ProlificStudy.objects.get(batch=batch, kind="main")
    screening = ProlificStudy.objects.get(batch=batch, kind="screening")
    on_market = market.studies
    blocklist = {"filter_id": "participant_group_blocklist", "selected_values": [groups["blocked"].prolific_id]}
    allowlist = {"filter_id": "participant_group_allowlist", "selected_values": [groups["qualified"].prolific_id]}
    assert on_market[main.prolific_id]["filters"] == [allowlist, blocklist]
    assert on_market[screening.prolific_id]["filters"] == [blocklist]
    assert {s["status"] for s in on_market.values()} == {"ACTIVE"} and main.status == screening.status == "ACTIVE"
    # The screening session is the whole test (one item), paid as one HIT of the type; twice the main study's places.
    assert on_market[screening.prolific_id]["reward"] == 32 and on_market[screening.prolific_id]["total_available_places"] == 2
    assert on_market[main.prolific_id]["completion_codes"][0]["code"] == main.completion_code != screening.completion_code
    # Running it again creates nothing more.
    call_command("prolific_publish", campaign="pro", format="json")
    assert len(market.studies) == 2 and len(market.groups) == 2


def test_a_lost_reply_on_study_create_never_makes_a_second_study(campaign, market):
    launch_campaign(campaign)
    campaign.refresh_from_db()
    batch = campaign.batch
    # The reply is lost, and Prolific's list cannot be read right after: the study waits, nothing is re-sent.
    market.fault("POST", "^/api/v1/studies/$")
    market.fault("GET", "^/api/v1/studies/$", kind="error")
    report = publish_batch(batch)
    study = ProlificStudy.objects.get(batch=batch)
    assert len(market.studies) == 1 and study.prolific_id is None and report.created == []
    assert "reply lost" in report.errors[0]["error"] and "reply lost" in study.last_error
    # The next publish reads the list first and finds it: recorded, published, never created twice.
    report = publish_batch(batch)
    study.refresh_from_db()
    (only,) = market.studies.values()
    assert study.prolific_id == only["id"] and only["status"] == "ACTIVE" and report.recovered == 1
    # A lost reply whose list is readable is settled in the same run.
    HIT.objects.filter(batch=batch).delete()
    HIT.objects.create(batch=batch, task_type=task_type("verification"), max_assignments=2, reward=Decimal("0.17"), payload={})
    market.fault("POST", "^/api/v1/studies/$")
    report = publish_batch(batch)
    assert report.recovered == 1 and len(market.studies) == 2
    assert ProlificStudy.objects.get(batch=batch, task_type__slug="verification").status == "ACTIVE"


def test_ensure_places_grows_the_study_within_the_budget_cap(campaign, market):
    launch_campaign(campaign)
    campaign.refresh_from_db()
    batch = campaign.batch
    publish_batch(batch)
    study = ProlificStudy.objects.get(batch=batch)
    assert study.places == 1 and study.hits_per_submission == 6
    # Later HITs (a redo round, say): nine open places, two sessions of six.
    for _ in range(6):
        HIT.objects.create(batch=batch, task_type=task_type("generation"), max_assignments=1, reward=Decimal("0.32"), payload={})
    report = ensure_places(batch)
    study.refresh_from_db()
    assert report.grown == [{"study": study.internal_name, "from": 1, "to": 2}]
    assert study.places == 2 and market.studies[study.prolific_id]["total_available_places"] == 2
    # Under a cap that one more session would pass: no PATCH, the reason given.
    for _ in range(6):
        HIT.objects.create(batch=batch, task_type=task_type("generation"), max_assignments=1, reward=Decimal("0.32"), payload={})
    batch.budget_cap = publishing.committed(batch) + Decimal("1.00")
    batch.save(update_fields=["budget_cap"])
    report = ensure_places(batch)
    assert "budget cap of $" in report.stopped and report.grown == []
    assert market.studies[study.prolific_id]["total_available_places"] == 2
    # One session commits its reward, 6 x $0.32 = $1.92, + Prolific's 33.33% of it, $0.64: $2.56.
    assert publishing.committed(batch) == Decimal("5.12")


def test_pause_resume_cancel_are_study_transitions_and_one_failure_stops_no_other(campaign, market):
    from annotation.services.pipeline import ensure_batch

    batch = ensure_batch(campaign)
    HIT.objects.create(batch=batch, task_type=task_type("generation"), kind=HIT.Kind.QUALIFICATION, max_assignments=32767,
                       reward=0, payload={"inline": {}})
    launch_campaign(campaign)
    publish_batch(batch)
    main = ProlificStudy.objects.get(batch=batch, kind="main")
    screening = ProlificStudy.objects.get(batch=batch, kind="screening")
    assert pause_campaign(campaign) == []
    assert {s["status"] for s in market.studies.values()} == {"PAUSED"}
    # START of the main study fails: the screening study still starts; the error names the study, for the researcher.
    market.fault("POST", f"/api/v1/studies/{main.prolific_id}/transition/", kind="error")
    errors = resume_campaign(campaign)
    assert len(errors) == 1 and main.prolific_id in errors[0] and "START failed" in errors[0]
    assert market.studies[screening.prolific_id]["status"] == "ACTIVE" and market.studies[main.prolific_id]["status"] == "PAUSED"
    assert Campaign.objects.get(pk=campaign.pk).state == Campaign.State.RUNNING
    # Cancel stops both (the paused one too): nothing awaits review, so they are COMPLETED.
    assert cancel_campaign(campaign) == []
    assert {s["status"] for s in market.studies.values()} == {"COMPLETED"}
    assert set(ProlificStudy.objects.values_list("status", flat=True)) == {"COMPLETED"}


def test_the_control_page_shows_what_prolific_refused(campaign, market, client):
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from annotation.services.roles import make_researcher

    user = get_user_model().objects.create_user(username="ria", password="a-long-test-password")
    make_researcher(user)
    Campaign.objects.filter(pk=campaign.pk).update(owner=user)
    launch_campaign(campaign)
    campaign.refresh_from_db()
    publish_batch(campaign.batch)
    study = ProlificStudy.objects.get()
    market.fault("POST", f"/api/v1/studies/{study.prolific_id}/transition/", kind="error")
    client.force_login(user)
    page = client.post(reverse("campaign-control", args=["pro"]), {"action": "pause"}, follow=True)
    html = page.content.decode()
    assert "Campaign paused" in html and f"Prolific did not follow: study {study.prolific_id}" in html


def test_a_study_the_balance_cannot_cover_waits_as_a_draft_and_is_published_after_a_top_up(campaign, market, capsys):
    market.standin.control("POST", "/__control/balance/", {"balance": "0.10"})
    call_command("prolific_publish", campaign="pro")
    out = capsys.readouterr().out
    study = ProlificStudy.objects.get()
    assert "Insufficient funds" in out and "Insufficient funds" in study.last_error
    assert market.studies[study.prolific_id]["status"] == "UNPUBLISHED" and study.published_at is None
    market.standin.control("POST", "/__control/balance/", {"balance": "100.00"})
    call_command("prolific_publish", campaign="pro")
    study.refresh_from_db()
    assert len(market.studies) == 1 and market.studies[study.prolific_id]["status"] == "ACTIVE"
    assert study.status == "ACTIVE" and study.last_error == ""


def test_the_dry_runs_bodies_are_the_ones_the_publish_sends(campaign, market, settings, capsys):
    settings.PROLIFIC_API_TOKEN = "test-token"
    call_command("prolific_publish", campaign="pro", dry_run=True, format="json")
    planned = json.loads(capsys.readouterr().out)["requests"]
    call_command("prolific_publish", campaign="pro")
    groups = {g["name"]: g for g in market.groups}
    studies = {s["internal_name"]: s for s in market.studies.values()}
    names = {f"<id of group {name}>": g["id"] for name, g in groups.items()}
    creates = [r["body"] for r in planned if r["path"] == "/api/v1/studies/"]
    assert creates and len(creates) == len(studies)
    for body in creates:
        stored = studies[body["internal_name"]]
        for f in body["filters"]:
            f["selected_values"] = [names.get(v, v) for v in f["selected_values"]]
        assert {k: stored[k] for k in body} == body  # the completion code and the filters included
        assert ProlificStudy.objects.get(prolific_id=stored["id"]).completion_code == body["completion_codes"][0]["code"]
    for body in (r["body"] for r in planned if r["path"] == "/api/v1/participant-groups/"):
        scope = {k: v for k, v in body.items() if k != "name"}
        assert not any(str(v).startswith("<") for v in scope.values())  # the token's workspace, as the publish
        assert {k: groups[body["name"]].get(k) for k in scope} == scope
