"""Property-based run of the whole API against its own OpenAPI schema (schemathesis, in-process WSGI).

Every operation of ``/api/schema/`` gets a bounded number of generated
requests, authenticated as a researcher.  Path parameters are steered to real
campaigns (a draft and a running one) and real row ids most of the time, so
the requests reach the code behind the 404s.  Each request runs in a
rolled-back savepoint: every example meets the same data.  The property:
no response is a server error, and every response matches the schema.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.db import transaction
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from annotation.models import (
    Campaign,
    ContentUnit,
    Example,
    GoldPresence,
    Predicate,
    PresenceJudgment,
    System,
    SystemSummary,
    Verification,
)
from annotation.services.pipeline import launch_campaign
from annotation.services.campaign_import import import_campaign
from config.wsgi import application
from tests.api.conftest import client_for
from tests.api.test_permissions import _with_data
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db

MAX_EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "12"))
ROW_MODELS = {
    "examples": Example,
    "systems": System,
    "summaries": SystemSummary,
    "predicates": Predicate,
    "units": ContentUnit,
    "verifications": Verification,
    "judgments": PresenceJudgment,
    "gold": GoldPresence,
}


@pytest.fixture
def keep_test_connection():
    """Serve requests on the test's own database connection, as Django's test client does.

    The WSGI handler closes "old" connections around every request; on
    PostgreSQL that would close the connection holding the test transaction.
    """
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_world(api_world, tmp_path, keep_test_connection):
    _with_data(api_world)
    owner = api_world["users"]["owner"]
    refs = write_jsonl(tmp_path / "r3.jsonl", [{"id": "r", "reference": "The team won the final on Sunday."}])
    sums = write_jsonl(tmp_path / "s3.jsonl", [{"id": "r", "system": "delta", "summary": "The team won."}])
    running = import_campaign(name="Running", owner=owner, references=refs, summaries=sums).campaign
    launch_campaign(running)
    token = client_for(api_world, "owner")._credentials["HTTP_AUTHORIZATION"]
    return {"slugs": [api_world["campaign"].slug, running.slug], "auth": token}


def test_api_has_no_server_errors_and_matches_its_schema(fuzz_world):
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 38
    slugs = fuzz_world["slugs"]
    headers = {"Authorization": fuzz_world["auth"]}
    failures: list[str] = []
    calls = {"n": 0}

    for operation in operations:
        path = operation.path
        model = next((m for segment, m in ROW_MODELS.items() if f"/{segment}/{{id}}" in path), None)
        real_ids = sorted(model.objects.values_list("pk", flat=True)) if model else []

        @given(case=operation.as_strategy(), slug=st.sampled_from([*slugs, None]), row=st.sampled_from([*real_ids, None]))
        @hypothesis_settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def run(case, slug, row):
            for name in ("slug", "campaign_slug"):
                if slug is not None and name in (case.path_parameters or {}):
                    case.path_parameters[name] = slug
            if row is not None and "id" in (case.path_parameters or {}):
                case.path_parameters["id"] = row
            with transaction.atomic():
                response = case.call(headers=headers)
                transaction.set_rollback(True)
            calls["n"] += 1
            for check in (not_a_server_error, response_schema_conformance):
                try:
                    case.validate_response(response, checks=[check])
                except Exception as exc:  # noqa: BLE001 - collect every failing operation, report them together
                    failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {str(exc)[:300]}")
                    raise

        try:
            run()
        except BaseException as exc:  # noqa: BLE001 - hypothesis re-raises the shrunk failure (an exception group)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            if not failures:
                failures.append(f"{operation.label}: {str(exc)[:500]}")

    assert calls["n"] >= len(operations) * 3
    assert not failures, "\n".join(sorted(set(failures))[:20])
    # The steering worked: the fuzzing did not leave the campaigns in an unexpected state.
    assert Campaign.objects.get(slug=slugs[0]).state == "draft"
