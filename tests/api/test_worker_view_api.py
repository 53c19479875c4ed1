"""The worker view through the API (issue 40): ``workers/ID/``, ``workers/ID/hits/``, ``block/`` and ``unblock/``."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits import payments
from hits.models import BatchBlock, QualificationEvent, Worker
from tests.api.conftest import client_for, submitted_assignment

pytestmark = pytest.mark.django_db


def test_the_worker_view_and_their_hits(api_world):
    assignment = submitted_assignment(api_world)
    payments.approve_assignment(assignment, message="fine")
    payments.pay_bonus(assignment, Decimal("0.30"), "thorough", by=api_world["users"]["owner"])
    worker = assignment.worker
    client = client_for(api_world, "owner")
    listed = client.get("/api/campaigns/parks/workers/").json()["results"]
    assert [row["id"] for row in listed if row["worker"] == "crowd1"] == [worker.pk]  # the list leads to the view

    view = client.get(f"/api/campaigns/parks/workers/{worker.pk}/").json()
    assert view["worker"] == "crowd1" and view["hits"] == 1 and view["blocked_here"] is False
    assert view["money"]["approved"] == 1
    assert Decimal(view["money"]["owed"]) == assignment.hit.reward + Decimal("0.30")
    assert Decimal(view["money"]["bonuses"]) == Decimal("0.30")
    assert view["time"]["done"] == 1
    assert set(view["status"]) == {"generation", "verification", "presence"}

    hits = client.get(f"/api/campaigns/parks/workers/{worker.pk}/hits/").json()
    assert hits["count"] == 1
    row = hits["results"][0]
    assert row["id"] == assignment.pk and row["state"] == "approved" and row["task_type"] == "generation"
    assert Decimal(row["bonus"]) == Decimal("0.30") and row["kind"] == "regular"


def test_block_and_unblock_are_logged_and_scoped(api_world):
    worker = submitted_assignment(api_world).worker
    owner = client_for(api_world, "owner")
    url = f"/api/campaigns/parks/workers/{worker.pk}/"
    response = owner.post(url + "block/", {"reason": "bots"}, format="json")
    assert response.status_code == 200 and response.json() == {"blocked_here": True, "changed": True}
    assert owner.post(url + "block/", {}, format="json").json()["changed"] is False  # a repeat changes nothing
    assert BatchBlock.objects.get(worker=worker).reason == "bots"
    event = QualificationEvent.objects.get(worker=worker, action="block")
    assert event.decided_by == api_world["users"]["owner"]
    assert owner.get(url).json()["blocked_here"] is True
    assert owner.post(url + "unblock/", {}, format="json").json() == {"blocked_here": False, "changed": True}
    assert not BatchBlock.objects.filter(worker=worker).exists()
    # Too long a reason is a 400 and blocks nobody.
    assert owner.post(url + "block/", {"reason": "x" * 401}, format="json").status_code == 400
    assert not BatchBlock.objects.filter(worker=worker).exists()


def test_workers_outside_the_campaign_are_404(api_world):
    submitted_assignment(api_world)
    stranger = Worker.objects.create(external_id="stranger")
    owner = client_for(api_world, "owner")
    for path in ("", "hits/"):
        assert owner.get(f"/api/campaigns/parks/workers/{stranger.pk}/{path}").status_code == 404
        assert owner.get(f"/api/campaigns/parks/workers/999999999/{path}").status_code == 404
    assert owner.post(f"/api/campaigns/parks/workers/{stranger.pk}/block/", {}, format="json").status_code == 404
    assert not BatchBlock.objects.exists()
