"""Every API endpoint for every role: anonymous (401), crowd worker (403), researcher of another
campaign (404: the campaign is not confirmed to exist), owner, shared-with researcher and admin (allowed)."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import resolve

from annotation.models import AutoscoreRun, Campaign, ContentUnit, GoldPresence, Predicate, PresenceJudgment, SystemSummary, Verification
from annotation.services.pipeline import launch_campaign, pause_campaign
from hits.models import Worker
from tests.api.conftest import ROLES, client_for, submitted_assignment

pytestmark = pytest.mark.django_db

ALLOWED = ("owner", "shared", "admin")
DENIED = {"anonymous": 401, "worker": 403, "other_researcher": 404}


def _with_data(world):
    """Give the owner's campaign one of everything, so detail endpoints have something to show."""
    campaign = world["campaign"]
    predicate = Predicate.objects.filter(example__campaign=campaign).order_by("pk").first()
    unit = ContentUnit.objects.create(
        example=predicate.example, predicate=predicate, index=0, question="Who opened something?",
        answers=["The mayor"], text="Who opened something? The mayor", state=ContentUnit.State.KEPT,
    )
    crowd = Worker.objects.get(external_id="crowd1")
    summary = SystemSummary.objects.filter(system__campaign=campaign, example=predicate.example).first()
    Verification.objects.create(unit=unit, worker=crowd, valid=True, answers=["The mayor"])
    PresenceJudgment.objects.create(unit=unit, summary=summary, worker=crowd, present=True)
    GoldPresence.objects.create(unit=unit, summary=summary, present=True, n_judgments=1, n_present=1)
    run = AutoscoreRun.objects.create(campaign=campaign, judge_name="lexical", state=AutoscoreRun.State.FINISHED)
    return {"predicate": predicate, "unit": unit, "summary": summary, "run": run}


def _ids(world):
    campaign = world["campaign"]
    data = _with_data(world)
    return {
        "slug": campaign.slug,
        "example": campaign.examples.first().pk,
        "system": campaign.systems.first().pk,
        "summary": data["summary"].pk,
        "predicate": data["predicate"].pk,
        "sentence": data["predicate"].sentence_id,
        "unit": data["unit"].pk,
        "verification": Verification.objects.get(unit=data["unit"]).pk,
        "judgment": PresenceJudgment.objects.get(unit=data["unit"]).pk,
        "gold": GoldPresence.objects.get(unit=data["unit"]).pk,
        "run": data["run"].pk,
        "worker": Worker.objects.get(external_id="crowd1").pk,
    }


def _launched(world):
    launch_campaign(world["campaign"])


def _paused(world):
    launch_campaign(world["campaign"])
    pause_campaign(world["campaign"])


def _budgeted_launched(world):
    """A running campaign with a human presence share below 100% (its routing can be retried)."""
    Campaign.objects.filter(pk=world["campaign"].pk).update(human_presence_share=0.5)
    world["campaign"].refresh_from_db()
    launch_campaign(world["campaign"])


def _submitted(world):
    """A submitted assignment to review (its id fills ``{assignment}``)."""
    return {"assignment": submitted_assignment(world).pk}


def _corrected(world):
    """A logged correction of the QA pair, so the log has a row."""
    from annotation.services.corrections import correct_qa_pair

    unit = ContentUnit.objects.get(example__campaign=world["campaign"], question="Who opened something?")
    correct_qa_pair(unit, "Who opened the park?", ["The mayor"], by=world["users"]["owner"])


# name -> (method, url template, body, setup, expected status for allowed roles)
ENDPOINTS = {
    "campaign-detail": ("get", "/api/campaigns/{slug}/", None, None, 200),
    "campaign-update": ("patch", "/api/campaigns/{slug}/", {"assignments_presence": 5}, None, 200),
    "campaign-launch": ("post", "/api/campaigns/{slug}/launch/", None, None, 200),
    "campaign-pause": ("post", "/api/campaigns/{slug}/pause/", None, _launched, 200),
    "campaign-resume": ("post", "/api/campaigns/{slug}/resume/", None, _paused, 200),
    "campaign-cancel": ("post", "/api/campaigns/{slug}/cancel/", None, None, 200),
    "campaign-retry-routing": ("post", "/api/campaigns/{slug}/retry-routing/", {"presence_judge": "lexical"}, _budgeted_launched, 200),
    "campaign-share": ("post", "/api/campaigns/{slug}/share/", {"username": "newbie"}, None, 200),
    "campaign-unshare": ("post", "/api/campaigns/{slug}/unshare/", {"username": "shared1"}, None, 200),
    "campaign-progress": ("get", "/api/campaigns/{slug}/progress/", None, None, 200),
    "campaign-worker-status": ("get", "/api/campaigns/{slug}/worker-status/", None, _submitted, 200),
    "campaign-mark-paid": ("post", "/api/campaigns/{slug}/mark-paid/", {"note": "bank transfer"}, _submitted, 200),
    "campaign-cost": ("get", "/api/campaigns/{slug}/cost/", None, None, 200),
    "campaign-scores": ("get", "/api/campaigns/{slug}/scores/?n_boot=20", None, None, 200),
    "campaign-leaderboard": ("get", "/api/campaigns/{slug}/leaderboard/", None, None, 200),
    "campaign-recompute": ("post", "/api/campaigns/{slug}/recompute/", None, None, 202),
    "campaign-export": ("post", "/api/campaigns/{slug}/export/", None, None, 202),
    "example-list": ("get", "/api/campaigns/{slug}/examples/", None, None, 200),
    "example-detail": ("get", "/api/campaigns/{slug}/examples/{example}/", None, None, 200),
    "system-list": ("get", "/api/campaigns/{slug}/systems/", None, None, 200),
    "system-detail": ("get", "/api/campaigns/{slug}/systems/{system}/", None, None, 200),
    "summary-list": ("get", "/api/campaigns/{slug}/summaries/", None, None, 200),
    "summary-detail": ("get", "/api/campaigns/{slug}/summaries/{summary}/", None, None, 200),
    "predicate-list": ("get", "/api/campaigns/{slug}/predicates/", None, None, 200),
    "predicate-detail": ("get", "/api/campaigns/{slug}/predicates/{predicate}/", None, None, 200),
    "predicate-create": (
        "post", "/api/campaigns/{slug}/predicates/", {"sentence": "{sentence}", "start": 4, "end": 9}, None, 201,
    ),
    "predicate-delete": ("delete", "/api/campaigns/{slug}/predicates/{predicate}/", None, None, 204),
    "unit-list": ("get", "/api/campaigns/{slug}/units/", None, None, 200),
    "unit-detail": ("get", "/api/campaigns/{slug}/units/{unit}/", None, None, 200),
    "verification-list": ("get", "/api/campaigns/{slug}/verifications/", None, None, 200),
    "verification-detail": ("get", "/api/campaigns/{slug}/verifications/{verification}/", None, None, 200),
    "judgment-list": ("get", "/api/campaigns/{slug}/judgments/", None, None, 200),
    "judgment-detail": ("get", "/api/campaigns/{slug}/judgments/{judgment}/", None, None, 200),
    "gold-list": ("get", "/api/campaigns/{slug}/gold/", None, None, 200),
    "gold-detail": ("get", "/api/campaigns/{slug}/gold/{gold}/", None, None, 200),
    "worker-list": ("get", "/api/campaigns/{slug}/workers/", None, None, 200),
    "worker-detail": ("get", "/api/campaigns/{slug}/workers/{worker}/", None, _submitted, 200),
    "worker-hits": ("get", "/api/campaigns/{slug}/workers/{worker}/hits/", None, _submitted, 200),
    "worker-block": ("post", "/api/campaigns/{slug}/workers/{worker}/block/", {"reason": "spam"}, _submitted, 200),
    "worker-unblock": ("post", "/api/campaigns/{slug}/workers/{worker}/unblock/", None, _submitted, 200),
    # crowd1 has worked in the campaign (a worker of another campaign is a 404: tests/api/test_worker_scope.py).
    "worker-exclude": ("post", "/api/campaigns/{slug}/workers/exclude/", {"worker": "crowd1"}, _submitted, 200),
    "worker-include": ("post", "/api/campaigns/{slug}/workers/include/", {"worker": "crowd1"}, _submitted, 200),
    "autoscore-list": ("get", "/api/campaigns/{slug}/autoscore/", None, None, 200),
    "autoscore-detail": ("get", "/api/campaigns/{slug}/autoscore/{run}/", None, None, 200),
    "autoscore-start": ("post", "/api/campaigns/{slug}/autoscore/", {"judge": "lexical"}, None, 201),
    "autoscore-resume": ("post", "/api/campaigns/{slug}/autoscore/{run}/resume/", None, None, 200),
    "autoscore-scores": ("get", "/api/campaigns/{slug}/autoscore/{run}/scores/", None, None, 200),
    "autoscore-compare": ("get", "/api/campaigns/{slug}/autoscore/compare/", None, None, 200),
    # Review (tests/api/test_review_actions.py has the behaviour; the system upload is multipart, tested there).
    "assignment-list": ("get", "/api/campaigns/{slug}/assignments/?state=submitted", None, _submitted, 200),
    "assignment-detail": ("get", "/api/campaigns/{slug}/assignments/{assignment}/", None, _submitted, 200),
    "assignment-approve": ("post", "/api/campaigns/{slug}/assignments/{assignment}/approve/", {"message": "Thanks"}, _submitted, 200),
    "assignment-reject": ("post", "/api/campaigns/{slug}/assignments/{assignment}/reject/", {"message": "Off topic"}, _submitted, 200),
    "assignment-bonus": (
        "post", "/api/campaigns/{slug}/assignments/{assignment}/bonus/", {"amount": "0.50", "reason": "Careful work"}, _submitted, 201,
    ),
    "unit-correct": (
        "post", "/api/campaigns/{slug}/units/{unit}/correct/", {"question": "Who opened the park?", "answers": ["The mayor"]}, None, 200,
    ),
    "unit-corrections": ("get", "/api/campaigns/{slug}/units/corrections/", None, _corrected, 200),
    # Messages to workers, the unit inspector and its gold override (issue 40); an override naming no unit is refused.
    "message-list": ("get", "/api/campaigns/{slug}/messages/", None, None, 200),
    "unit-inspector-list": ("get", "/api/campaigns/{slug}/unit-inspector/", None, None, 200),
    "unit-inspector-override": ("post", "/api/campaigns/{slug}/unit-inspector/override/", {"note": "checked"}, None, 400),
}


def _fill(value, ids):
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: (int(_fill(v, ids)) if v == "{sentence}" else _fill(v, ids)) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name", sorted(ENDPOINTS))
def test_endpoint_for_every_role(api_world, django_user_model, name):
    """Each role's request runs inside a savepoint that is rolled back, so every role meets the same state."""
    django_user_model.objects.create_user("newbie")
    method, template, body, setup, ok = ENDPOINTS[name]
    ids = _ids(api_world)
    if setup:
        ids.update(setup(api_world) or {})
    wrong = []
    for role in ROLES:
        client = client_for(api_world, role)
        with transaction.atomic():
            response = getattr(client, method)(_fill(template, ids), _fill(body, ids), format="json")
            transaction.set_rollback(True)
        want = ok if role in ALLOWED else DENIED[role]
        if response.status_code != want:
            wrong.append((role, response.status_code, want, getattr(response, "data", None)))
        elif role == "anonymous" and not response["WWW-Authenticate"].startswith("Token"):
            wrong.append((role, "no WWW-Authenticate: Token header"))
    assert not wrong, wrong


@pytest.mark.parametrize("role", ROLES)
def test_campaign_list_shows_only_own_and_shared(api_world, role):
    response = client_for(api_world, role).get("/api/campaigns/")
    if role in DENIED and role != "other_researcher":
        assert response.status_code == DENIED[role]
        return
    slugs = sorted(c["slug"] for c in response.json()["results"])
    expected = {
        "owner": ["parks"], "shared": ["parks"], "other_researcher": ["rain"], "admin": ["parks", "rain"],
    }[role]
    assert slugs == expected


@pytest.mark.parametrize("role", ROLES)
def test_campaign_create_is_for_researchers_only(api_world, role, small_files):
    refs, sums = small_files
    with refs.open("rb") as r, sums.open("rb") as s:
        response = client_for(api_world, role).post(
            "/api/campaigns/", {"name": f"New {role}", "references": r, "summaries": s, "detect_predicates": "false"},
            format="multipart",
        )
    # The shared-with researcher is a researcher too (group membership came with the share).
    want = {"anonymous": 401, "worker": 403}.get(role, 201)
    assert response.status_code == want, response.content


def test_ids_of_another_campaign_are_not_found_through_mine(api_world):
    """An owner cannot reach the other campaign's rows by putting their ids under their own campaign's URL."""
    other = api_world["other"]
    example = other.examples.get()
    predicate = Predicate.objects.filter(example__campaign=other).first()
    client = client_for(api_world, "owner")
    assert client.get(f"/api/campaigns/parks/examples/{example.pk}/").status_code == 404
    assert client.get(f"/api/campaigns/parks/predicates/{predicate.pk}/").status_code == 404
    assert client.delete(f"/api/campaigns/parks/predicates/{predicate.pk}/").status_code == 404
    assert Predicate.objects.filter(pk=predicate.pk).exists()
    # Adding a predicate to the other campaign's sentence through my campaign is refused as "does not exist".
    response = client.post("/api/campaigns/parks/predicates/", {"sentence": predicate.sentence_id, "start": 0, "end": 4}, format="json")
    assert response.status_code == 400 and "sentence" in response.json()


def test_every_api_route_is_in_this_matrix():
    """A new API route must be added to ENDPOINTS (and so tested for every role)."""
    from annotation.web.api.urls import router

    routes = set()
    for pattern in router.urls:
        name = pattern.name or ""
        if name.startswith("api-") and not name.endswith(("-root",)) and "format" not in str(pattern.pattern):
            routes.add(name)
    tested_names = set()
    for _method, template, *_ in ENDPOINTS.values():
        path = template.split("?")[0].format(
            slug="parks", example=1, system=1, summary=1, predicate=1, unit=1, verification=1, judgment=1, gold=1, run=1,
            assignment=1, worker=1,
        )
        tested_names.add(resolve(path).url_name)
    missing = routes - tested_names - {"api-campaign-list"}  # the list/create route has its own tests above
    assert not missing, f"add these API routes to ENDPOINTS: {sorted(missing)}"
