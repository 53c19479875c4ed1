"""Who may open what: every URL of the platform for anonymous users, workers, researchers and staff."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from hits.models import HIT, Assignment, Invitation, TaskType, Worker
from hits.services import accept_next
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db

# Every named route must appear here; a new page without a row fails test_every_url_is_in_the_matrix.
# Expected status per role: anonymous, worker (owner of the assignment), other worker, other researcher, owner, staff.
LOGIN = "login"  # a redirect to the login page
MATRIX = {
    "home": ("GET", {}, [200, 302, 302, 200, 200, 200]),
    "healthz": ("GET", {}, [200, 200, 200, 200, 200, 200]),
    "readyz": ("GET", {}, [200, 200, 200, 200, 200, 200]),
    "login": ("GET", {}, [200, 200, 200, 200, 200, 200]),
    "logout": ("POST", {}, [302, 302, 302, 302, 302, 302]),
    "join": ("GET", {"token": "TOKEN"}, [200, 200, 200, 200, 200, 200]),
    "campaign-detail": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-progress": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-control": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),
    "campaign-routing-retry": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),  # not budgeted: refused, back to progress
    "campaign-mturk-retry": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),  # local campaign: refused, back to progress
    "campaign-workers": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-worker-action": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 404, 404]),
    # The worker view of "mw", who took a HIT of the campaign (the worker themself sees nothing of it).
    "campaign-worker": ("GET", {"slug": "matrix", "pk": "WORKER"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-leaderboard": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-leaderboard-summaries": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-duplicates": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-handwritten": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-handwritten-add": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 404, 404]),  # no sentence given
    "campaign-judges": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-qualifications": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-invitations": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    # Messages to workers (issue 40): the log and the form's target are the campaign's managers'; no such message.
    # Preview as a worker and the pilot (issue 40): the campaign's managers only; an empty pilot action is refused.
    "campaign-pilot": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-pilot-action": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),
    "campaign-preview-as-worker": ("GET", {"slug": "matrix", "task": "generation"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-messages": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-message-resend": ("POST", {"slug": "matrix", "pk": 999999}, [LOGIN, 404, 404, 404, 404, 404]),
    "api-message-list": ("GET", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 200, 200]),
    # A worker marks a message of their own read; another's (or none) changes nothing: back to the work page.
    "worker-message-read": ("POST", {"pk": 999999}, [LOGIN, 302, 302, 302, 302, 302]),
    "worker-home": ("GET", {}, [LOGIN, 200, 200, 200, 200, 200]),
    "worker-history": ("GET", {}, [LOGIN, 200, 200, 200, 200, 200]),
    "worker-quality": ("GET", {}, [LOGIN, 200, 200, 200, 200, 200]),
    "worker-settings": ("POST", {}, [LOGIN, 302, 302, 302, 302, 302]),
    "assignment": ("GET", {"pk": "ASSIGNMENT"}, [LOGIN, 200, 404, 404, 404, 404]),
    # An open HIT page's status (paused, cancelled, time left): the assignment's own worker only.
    "assignment-status": ("GET", {"pk": "ASSIGNMENT"}, [LOGIN, 200, 404, 404, 404, 404]),
    "start-working": ("POST", {"slug": "generation"}, [LOGIN, 302, 302, 302, 302, 302]),
    "preview": ("GET", {"slug": "generation"}, [LOGIN, 302, 302, 302, 302, 302]),  # the only HIT is taken
    # MTurk's framed HIT page: no login; without MTurk's hitId/assignmentId/workerId it refuses everyone.
    # (CSRF-exempt by design: the assignment's secret token in the form plays that role; see hits/mturk/views.py.)
    "mturk-hit": ("GET", {}, [400, 400, 400, 400, 400, 400]),
    # A Prolific study's URL: no login (it signs the participant in); without Prolific's PROLIFIC_PID, STUDY_ID and
    # SESSION_ID it refuses everyone.  The session's page: only a browser holding a Prolific session.
    "prolific:start": ("GET", {}, [400, 400, 400, 400, 400, 400]),
    "prolific:session": ("GET", {}, [403, 403, 403, 403, 403, 403]),
    # Researcher pages (issue 8). Creating a campaign needs the researcher role; the worker "mw" has none.
    "campaign-new": ("GET", {}, [LOGIN, 403, 403, 200, 200, 200]),
    "campaign-new-confirm": ("POST", {}, [LOGIN, 403, 403, 302, 302, 302]),  # no upload: back to the form
    "job-detail": ("GET", {"pk": "JOB"}, [LOGIN, 404, 404, 404, 200, 200]),
    "job-status": ("GET", {"pk": "JOB"}, [LOGIN, 404, 404, 404, 200, 200]),
    "job-download": ("GET", {"pk": "JOB"}, [LOGIN, 404, 404, 404, 200, 200]),
    "job-retry": ("POST", {"pk": "JOB"}, [LOGIN, 404, 404, 404, 302, 302]),  # a done export: refused, back to the job
    "campaign-settings": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-predicates": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-predicate-add": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 404, 404]),  # no sentence given
    "campaign-predicate-remove": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 404, 404]),  # no predicate given
    "campaign-predicates-redetect": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),  # launched: refused
    "campaign-add-system": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-progress-status": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-recompute": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),
    "campaign-export": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),
    "campaign-agreement": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-review": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-review-example": ("GET", {"slug": "matrix", "pk": "EXAMPLE"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-review-assignment": ("POST", {"slug": "matrix", "pk": "ASSIGNMENT"}, [LOGIN, 404, 404, 404, 302, 302]),
    # Re-including a rejection's excluded data: the campaign's managers only; the matrix's work is not rejected (refused, back).
    "campaign-review-reinclude": ("POST", {"slug": "matrix", "pk": "ASSIGNMENT"}, [LOGIN, 404, 404, 404, 302, 302]),
    "campaign-review-bulk": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),  # no action chosen: back
    "campaign-payouts": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-qualification-item-new": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-qualification-item-edit": ("GET", {"slug": "matrix", "pk": "GOLD_ITEM"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-payouts-mark-paid": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),  # nobody ticked: back
    "campaign-worker-status": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-worker-status-data": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-correct-pair": ("POST", {"slug": "matrix", "pk": "UNIT"}, [LOGIN, 404, 404, 404, 302, 302]),
    "campaign-units": ("GET", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 200, 200]),
    "campaign-gold-override": ("POST", {"slug": "matrix"}, [LOGIN, 404, 404, 404, 302, 302]),  # no label chosen: back
    # REST API (issue 8). Anonymous callers get 401 (they can authenticate with a token), crowd workers 403,
    # a researcher of another campaign 404. Roles run in order on one launched campaign: the owner's
    # pause or cancel succeeds, so the staff user's then meets a 409. Every endpoint x role with real rows
    # and request bodies: tests/api/test_permissions.py.
    "api-token": ("GET", {}, [405, 405, 405, 405, 405, 405]),  # POST only (username/password)
    "api-job": ("GET", {"pk": "JOB"}, [401, 403, 403, 404, 200, 200]),  # the campaign's job: its researchers
    "api-job-download": ("GET", {"pk": "JOB"}, [401, 403, 403, 404, 200, 200]),  # the finished export's zip
    "api-job-retry": ("POST", {"pk": "JOB"}, [401, 403, 403, 404, 409, 409]),  # a done export: nothing to retry
    # The admin's login (under the login limits): staff already signed in go on to the admin.
    "admin-login": ("GET", {}, [200, 200, 200, 200, 200, 302]),
    "api-schema": ("GET", {}, [200, 200, 200, 200, 200, 200]),  # the API's description is public
    "api-docs": ("GET", {}, [200, 200, 200, 200, 200, 200]),
    "api-redoc": ("GET", {}, [200, 200, 200, 200, 200, 200]),
    "api-campaign-list": ("GET", {}, [401, 403, 403, 200, 200, 200]),
    **{
        f"api-campaign-{view}": ("GET", {"slug": "matrix"}, [401, 403, 403, 404, 200, 200])
        for view in ("detail", "progress", "cost", "scores", "leaderboard")
    },
    "api-campaign-export": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 202, 202]),  # a job to poll
    "api-campaign-launch": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 409, 409]),  # already running
    "api-campaign-pause": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 200, 409]),
    "api-campaign-resume": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 409, 409]),  # not paused
    "api-campaign-cancel": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 200, 409]),
    "api-campaign-retry-routing": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 409, 409]),  # not budgeted: 409
    "api-campaign-worker-status": ("GET", {"slug": "matrix"}, [401, 403, 403, 404, 200, 200]),
    "api-campaign-mark-paid": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 200, 200]),  # nothing owed: 0 marked
    "api-campaign-recompute": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 202, 202]),
    "api-campaign-share": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 400, 400]),  # no username given
    "api-campaign-unshare": ("POST", {"slug": "matrix"}, [401, 403, 403, 404, 400, 400]),
    **{
        f"api-{kind}-list": ("GET", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 200, 200])
        for kind in ("example", "system", "summary", "predicate", "unit", "verification", "judgment", "gold", "worker")
    },
    **{
        f"api-{kind}-detail": ("GET", {"campaign_slug": "matrix", "pk": kind.upper()}, [401, 403, 403, 404, 200, 200])
        for kind in ("example", "system", "summary", "predicate", "unit")
    },
    # No verification, judgment or gold label exists yet: 404 for everyone allowed to look.
    **{
        f"api-{kind}-detail": ("GET", {"campaign_slug": "matrix", "pk": 999999}, [401, 403, 403, 404, 404, 404])
        for kind in ("verification", "judgment", "gold")
    },
    "api-worker-detail": ("GET", {"campaign_slug": "matrix", "pk": "WORKER"}, [401, 403, 403, 404, 200, 200]),
    "api-worker-hits": ("GET", {"campaign_slug": "matrix", "pk": "WORKER"}, [401, 403, 403, 404, 200, 200]),
    # Blocking twice (owner, then staff) is no error: the second changes nothing.
    "api-worker-block": ("POST", {"campaign_slug": "matrix", "pk": "WORKER"}, [401, 403, 403, 404, 200, 200]),
    "api-worker-unblock": ("POST", {"campaign_slug": "matrix", "pk": "WORKER"}, [401, 403, 403, 404, 200, 200]),
    "api-worker-exclude": ("POST", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 400, 400]),  # no worker given
    "api-worker-include": ("POST", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 400, 400]),
    "api-autoscore-list": ("POST", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 400, 400]),  # no judge given
    "api-autoscore-compare": ("GET", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 200, 200]),
    # No autoscore run exists in this world: 404 for everyone allowed to look.
    **{
        f"api-autoscore-{view}": (method, {"campaign_slug": "matrix", "pk": 999999}, [401, 403, 403, 404, 404, 404])
        for view, method in (("detail", "GET"), ("resume", "POST"), ("scores", "GET"))
    },
    # Review through the API: the only assignment is still being worked on (assigned), so approving it is a
    # 409; rejecting or a bonus without a message/amount is a 400; a correction without a question a 400.
    "api-assignment-list": ("GET", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 200, 200]),
    "api-assignment-detail": ("GET", {"campaign_slug": "matrix", "pk": "ASSIGNMENT"}, [401, 403, 403, 404, 200, 200]),
    "api-assignment-approve": ("POST", {"campaign_slug": "matrix", "pk": "ASSIGNMENT"}, [401, 403, 403, 404, 409, 409]),
    "api-assignment-reject": ("POST", {"campaign_slug": "matrix", "pk": "ASSIGNMENT"}, [401, 403, 403, 404, 400, 400]),
    "api-assignment-bonus": ("POST", {"campaign_slug": "matrix", "pk": "ASSIGNMENT"}, [401, 403, 403, 404, 400, 400]),
    "api-unit-correct": ("POST", {"campaign_slug": "matrix", "pk": "UNIT"}, [401, 403, 403, 404, 400, 400]),
    "api-unit-corrections": ("GET", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 200, 200]),
    "api-unit-inspector-list": ("GET", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 200, 200]),
    "api-unit-inspector-override": ("POST", {"campaign_slug": "matrix"}, [401, 403, 403, 404, 400, 400]),  # no note
}


def _researcher_object(value):
    """Placeholders of the researcher pages' routes: the objects the ``world`` fixture made for them."""
    from annotation.models import Job
    from annotation.models import ContentUnit, Example, Predicate, System, SystemSummary

    lookups = {
        "JOB": lambda: Job.objects.get(campaign__slug="matrix").pk,
        "EXAMPLE": lambda: Example.objects.get(campaign__slug="matrix").pk,
        "UNIT": lambda: ContentUnit.objects.get(example__campaign__slug="matrix").pk,
        "SYSTEM": lambda: System.objects.get(campaign__slug="matrix").pk,
        "SUMMARY": lambda: SystemSummary.objects.get(system__campaign__slug="matrix").pk,
        "PREDICATE": lambda: Predicate.objects.filter(example__campaign__slug="matrix").first().pk,
        "GOLD_ITEM": lambda: HIT.objects.get(batch__campaign__slug="matrix", kind="gold").pk,
        "WORKER": lambda: Worker.objects.get(external_id="mw").pk,
    }
    return lookups[value]() if value in lookups else value
ROLES = ["anonymous", "worker", "other_worker", "other_researcher", "owner", "staff"]


def _named_routes(resolver=None, prefix=""):
    """Every named route outside the admin, as ``reverse`` names it (``namespace:name`` inside a namespace)."""
    resolver = resolver or get_resolver()
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                continue
            yield from _named_routes(pattern, f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield prefix + pattern.name


def test_every_url_is_in_the_matrix():
    unknown = set(_named_routes()) - set(MATRIX)
    assert not unknown, f"add these routes to the authorization matrix: {sorted(unknown)}"


@pytest.fixture
def world(tmp_path, django_user_model, settings):
    users = {
        "worker": django_user_model.objects.create_user("mw", password="pw-matrix-123"),
        "other_worker": django_user_model.objects.create_user("mo", password="pw-matrix-123"),
        "other_researcher": django_user_model.objects.create_user("mr", password="pw-matrix-123"),
        "owner": django_user_model.objects.create_user("mown", password="pw-matrix-123"),
        "staff": django_user_model.objects.create_user("mstaff", password="pw-matrix-123", is_staff=True),
    }
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e", "reference": "Police blamed the driver."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e", "system": "s", "summary": "Police blamed him."}])
    campaign = import_campaign(name="Matrix", owner=users["owner"], references=refs, summaries=sums).campaign
    launch_campaign(campaign)
    worker = Worker.objects.create(external_id="mw", user=users["worker"])
    Worker.objects.create(external_id="mo", user=users["other_worker"])
    from annotation.services.campaign_import import import_campaign as again

    refs2 = write_jsonl(tmp_path / "r2.jsonl", [{"id": "x", "reference": "Rain fell."}])
    sums2 = write_jsonl(tmp_path / "s2.jsonl", [{"id": "x", "system": "s", "summary": "It rained."}])
    again(name="Other", owner=users["other_researcher"], references=refs2, summaries=sums2)
    assignment = accept_next(worker, TaskType.objects.get(slug="generation"))
    _researcher_page_objects(campaign, users["owner"], tmp_path, settings)
    return users, assignment, Invitation.objects.create()


def _researcher_page_objects(campaign, owner, tmp_path, settings):
    """A finished export job (its file downloadable) and a QA pair, for the researcher pages' routes."""
    from annotation.models import Job
    from annotation.models import ContentUnit, Predicate
    from annotation.services.jobs import run_job

    settings.EXPORTS_DIR = tmp_path / "exports"
    run_job(Job.objects.create(kind=Job.Kind.EXPORT, campaign=campaign, created_by=owner).pk)
    predicate = Predicate.objects.filter(example__campaign=campaign).first()
    ContentUnit.objects.create(
        example=predicate.example, predicate=predicate, kind="qa", index=0, question="Who blamed someone?",
        answers=["Police"], text="Who blamed someone? Police",
    )
    from annotation.services.qualification_tests import save_qualification_item

    # A gold item (it asks no worker for a test): the qualification item form's route edits it.
    campaign.refresh_from_db()
    save_qualification_item(campaign, "presence_gold", {
        "candidate": "Police blamed him.", "pairs": [{"question": "Who blamed someone?", "answer": "Police", "present": True}],
    })


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_authorization_matrix(world, name):
    from django.urls import reverse

    users, assignment, invitation = world
    method, kwargs, expected = MATRIX[name]
    kwargs = {k: (assignment.pk if v == "ASSIGNMENT" else invitation.token if v == "TOKEN" else v) for k, v in kwargs.items()}
    kwargs = {k: _researcher_object(v) for k, v in kwargs.items()}
    url = reverse(name, kwargs=kwargs)
    for role, want in zip(ROLES, expected):
        client = Client()
        if role != "anonymous":
            client.force_login(users[role])
        response = client.post(url, {}) if method == "POST" else client.get(url)
        if want == LOGIN:
            assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), (name, role, response.status_code)
        else:
            assert response.status_code == want, (name, role, response.status_code)
    assert Assignment.objects.get(pk=assignment.pk).state == "assigned"


def test_admin_is_for_staff_only(world):
    users, _, _ = world
    for role in ("worker", "owner"):
        client = Client()
        client.force_login(users[role])
        assert client.get("/admin/").status_code == 302
    staff = Client()
    users["staff"].is_superuser = True
    users["staff"].save()
    staff.force_login(users["staff"])
    assert staff.get("/admin/").status_code == 200
    assert staff.get("/admin/annotation/campaign/").status_code == 200


def test_every_state_changing_view_requires_csrf(world):
    from django.urls import reverse

    users, assignment, invitation = world
    for name, (method, kwargs, _) in MATRIX.items():
        if method != "POST" or name == "logout":
            continue
        kwargs = {k: _researcher_object(assignment.pk if v == "ASSIGNMENT" else v) for k, v in kwargs.items()}
        client = Client(enforce_csrf_checks=True)
        client.force_login(users["owner"])
        assert client.post(reverse(name, kwargs=kwargs), {}).status_code == 403, name
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["worker"])
    assert client.post(reverse("assignment", kwargs={"pk": assignment.pk}), {"action": "return"}).status_code == 403
    assert Assignment.objects.get(pk=assignment.pk).state == "assigned"
