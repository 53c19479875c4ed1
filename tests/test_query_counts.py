"""Every researcher page and API route runs in a number of queries that does not grow with the campaign.

The routes are read from the URL conf (``tests/researcher_routes.py``, shared with ``bench/bench_scale.py``):
a route added later is checked without touching this file, unless it takes an object id, which it gets from
``RESOLVERS`` there (an unknown one fails with "add a resolver").
Each route is requested on campaigns of two sizes, ten times apart (examples, summaries, units, HITs,
judgments, workers): the larger one may not take more queries than the smaller one.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Campaign, Example, PresenceJudgment
from annotation.selectors.agreement import agreement_dashboard
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.raw_import import import_qapyramid_raw
from annotation.services.roles import make_researcher
from hits.models import TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests import researcher_routes

pytestmark = pytest.mark.django_db

SMALL, LARGE = 2, 20


def url_for(route: str, name: str, parameters: tuple[str, ...], world: dict) -> str:
    try:
        return researcher_routes.url_for(route, name, parameters, world)
    except researcher_routes.MissingResolver as exc:
        pytest.fail(str(exc))


# --- the campaigns -----------------------------------------------------------------------------------------


def _scu_campaign(folder, owner, n: int) -> Campaign:
    """A launched SCU campaign of ``n`` examples x 2 systems x 10 units (one HIT per summary), every presence
    HIT judged by 3 of n + 3 workers (labels that disagree now and then): HITs, assignments, judgments, gold
    labels, scores; 40 judged units already at n = 2, so the agreement page has its batches at both sizes."""
    (folder / "summaries").mkdir(parents=True)
    (folder / "ids.txt").write_text("".join(f"e{i}\n" for i in range(n)))
    (folder / "references.txt").write_text("".join(f"A cat sat on mat {i} . It was happy .\n" for i in range(n)))
    for system in ("s1", "s2"):
        (folder / "summaries" / f"{system}.summary").write_text("".join(f"A cat sat {i} .\n" for i in range(n)))
    (folder / "SCUs.txt").write_text("".join("\t".join(f"unit {k} of {i}" for k in range(10)) + "\n" for i in range(n)))
    campaign = import_campaign(name=f"Pyramid {n}", folder=folder, owner=owner, predicates="none").campaign
    launch_campaign(campaign)
    presence = TaskType.objects.get(slug="presence")
    workers = [Worker.objects.get_or_create(external_id=f"judge-{n}-{i}")[0] for i in range(n + 3)]
    busy = True
    while busy:
        busy = False
        for index, worker in enumerate(workers):
            assignment = accept_next(worker, presence)
            if assignment is None:
                continue
            busy = True
            units = assignment.hit.payload["units"]
            data = {f"p_{k}": "1" if (index + k + assignment.pk) % 4 else "0" for k in range(1, len(units) + 1)}
            submit_assignment(worker, assignment.pk, data)
    campaign.refresh_from_db()
    return campaign


def _released_campaign(folder, owner, n: int) -> Campaign:
    """A finished campaign imported from the released raw judgments' shape: ``n`` examples x 3 systems x 8 QA
    pairs (two of them alike), each judged by 3 of n + 3 workers; gold labels and scores (48 judged units at
    n = 2: the agreement page has its batches at both sizes)."""
    folder.mkdir(parents=True)
    workers = [f"rater-{n}-{i}" for i in range(n + 3)]
    pairs = ["Who blamed something? Police", "Who has blamed something? Police", "What did someone blame? the storm",
             "Why did someone blame something? the crash", "Who said something? The mayor", "What did someone say? roads",
             "When did someone say something? Monday", "Where did someone say something? at city hall"]
    raw = {
        system: {
            f"x{i}": {
                f"x{i}_{p}": {
                    pair: [[workers[(i + k + j) % len(workers)], int((i + k + j + s) % 3 > 0)] for j in range(3)]
                    for k, pair in enumerate(pairs[4 * p : 4 * p + 4])
                }
                for p in range(2)
            }
            for i in range(n)
        }
        for s, system in enumerate(("a", "b", "c"))
    }
    (folder / "raw.json").write_text(json.dumps(raw))
    return import_qapyramid_raw(folder / "raw.json", name=f"Released {n}", owner=owner).campaign


def _world(tmp_path, owner, kind: str, n: int, monkeypatch) -> dict:
    monkeypatch.setattr("annotation.services.pipeline.SCU_UNITS_PER_HIT", 10)
    build = _scu_campaign if kind == "scu" else _released_campaign
    campaign = build(tmp_path / f"{kind}{n}", owner, n)
    return {**researcher_routes.world(campaign, owner), "n": n}


def _count(client: Client, url: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    return len(queries.captured_queries), response.status_code


@pytest.mark.parametrize("kind", ["scu", "released"])
def test_every_researcher_route_takes_as_many_queries_on_a_campaign_ten_times_larger(
    tmp_path, django_user_model, kind, monkeypatch
):
    owner = django_user_model.objects.create_user(username="rita", password="a-long-test-password")
    make_researcher(owner)
    small, large = (_world(tmp_path, owner, kind, n, monkeypatch) for n in (SMALL, LARGE))
    assert Example.objects.filter(campaign=large["campaign"]).count() == 10 * small["campaign"].examples.count()
    judgments = [PresenceJudgment.objects.filter(summary__system__campaign=w["campaign"]).count() for w in (small, large)]
    assert judgments[1] >= 10 * judgments[0]
    # The agreement page shows its batches of units at both sizes.
    assert all(agreement_dashboard(w["campaign"], n_boot=0)["batches"] for w in (small, large))
    client = Client()
    client.force_login(owner)
    routes = researcher_routes.researcher_routes()
    assert len(routes) > 40 and any(name == "campaign-progress" for _, name, _ in routes)
    grown, failed = [], []
    for route, name, parameters in routes:
        counts = []
        for world in (small, large):
            url = url_for(route, name, parameters, world)
            count, status = _count(client, url)
            if status >= 500:
                failed.append(f"{url}: {status}")
            counts.append(count)
        if counts[1] > counts[0]:
            grown.append(f"{name} ({route}): {counts[0]} queries at {SMALL} examples, {counts[1]} at {LARGE}")
    assert not failed, failed
    assert not grown, "queries grow with the campaign:\n" + "\n".join(grown)


def test_a_route_without_a_resolver_is_named(monkeypatch):
    """A parametrised route the table does not know fails the check with the route to add."""
    with pytest.raises(pytest.fail.Exception, match=r"add a resolver for campaigns/<slug:slug>/things/<int:pk>/"):
        url_for("campaigns/<slug:slug>/things/<int:pk>/", "campaign-thing", ("slug", "pk"), {"campaign": Campaign(slug="c")})
