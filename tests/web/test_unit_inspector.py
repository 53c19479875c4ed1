"""The unit inspector (issue 40): its filters, search, sort and pages (page and API alike), who may see it, the
gold override with a note (logged, scores recomputed) and a bounded number of queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotation.models import (
    AutoPresence, AutoscoreRun, Campaign, ContentUnit, Example, GoldOverride, GoldPresence, PresenceJudgment,
    PresenceRound, SummaryScore, System, SystemSummary,
)
from annotation.services.gold import refresh_gold
from annotation.services.roles import make_researcher
from hits.models import Worker

pytestmark = pytest.mark.django_db

# (example, unit text) and, per (unit index, system): crowd votes, the judge's probability (None: not labelled),
# an imported label.  Unit 7 in beta (index 3) gets a researcher's override in ``world``.
UNITS = [("ex-a", "The harbour reopened"), ("ex-a", "Boats returned"), ("ex-b", "The council met"), ("ex-b", "Roads were closed")]
PAIRS = {
    (0, "alpha"): ([True, True, False], 0.2, None),   # split, majority present; the judge disagrees
    (0, "beta"): ([True, True], 0.9, None),            # unanimous present; the judge agrees
    (1, "alpha"): ([True, False], 0.6, None),          # tie (tie rule: absent); the judge disagrees
    (1, "beta"): ([], 0.4, None),                      # only the judge
    (2, "alpha"): ([], 0.7, True),                     # imported label, but the judge labels it (budgeted campaign)
    (2, "beta"): ([], None, False),                    # imported label only
    (3, "alpha"): ([], None, None),                    # nothing yet
    (3, "beta"): ([False, False, False], 0.1, None),   # unanimous absent, then overridden to present
}


def build_world(owner, n_copies: int = 1, slug: str = "harbour"):
    """A budgeted SCU campaign with the pairs of ``PAIRS`` (``n_copies`` times over, for query counts)."""
    campaign = Campaign.objects.create(name="Harbour", slug=slug, owner=owner, unit_type="scu", human_presence_share=0.5)
    systems = {name: System.objects.create(campaign=campaign, name=name) for name in ("alpha", "beta")}
    workers = [Worker.objects.get_or_create(external_id=f"w{i}")[0] for i in range(3)]
    run = AutoscoreRun.objects.create(campaign=campaign, judge_name="features", judge_version="features-1", state="finished")
    PresenceRound.objects.create(campaign=campaign, number=1, state="done", labelling_run=run)
    keys = {}
    for copy in range(n_copies):
        examples = {}
        for index, (external, text) in enumerate(UNITS):
            name = f"{external}{'' if copy == 0 else f'-{copy}'}"
            if name not in examples:
                examples[name] = Example.objects.create(campaign=campaign, external_id=name, position=copy * 10 + len(examples))
            example = examples[name]
            unit = ContentUnit.objects.create(example=example, kind="scu", index=index, text=text, state="kept")
            for system_name, system in systems.items():
                summary, _ = SystemSummary.objects.get_or_create(system=system, example=example, defaults={"text": "A summary."})
                votes, probability, imported = PAIRS[(index, system_name)]
                for worker, vote in zip(workers, votes):
                    PresenceJudgment.objects.create(unit=unit, summary=summary, worker=worker, present=vote)
                if probability is not None:
                    AutoPresence.objects.create(run=run, summary=summary, unit=unit, probability=probability,
                                                present=probability >= 0.5)
                if imported is not None:
                    GoldPresence.objects.create(unit=unit, summary=summary, origin="imported", present=imported)
                if copy == 0:
                    keys[(index, system_name)] = (unit.pk, summary.pk)
    refresh_gold(campaign, set(PresenceJudgment.objects.filter(summary__system__campaign=campaign).values_list("unit_id", "summary_id")))
    unit_id, summary_id = keys[(3, "beta")]
    GoldPresence.objects.create(unit_id=unit_id, summary_id=summary_id, origin="override", present=True)
    return campaign, keys


@pytest.fixture
def rita(django_user_model):
    user = django_user_model.objects.create_user("rita", password="a-long-test-password")
    make_researcher(user)
    return user


@pytest.fixture
def world(rita):
    return build_world(rita)


def api(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def listed(rita, campaign, **params) -> list[tuple[int, int]]:
    response = api(rita).get(f"/api/campaigns/{campaign.slug}/unit-inspector/", params)
    assert response.status_code == 200, response.content
    return [(r["unit"], r["summary"]) for r in response.json()["results"]]


def names(keys, rows) -> set:
    back = {v: k for k, v in keys.items()}
    return {back[row] for row in rows}


def test_every_unit_in_every_summary_with_votes_majority_judge_and_who_decided(rita, world):
    campaign, keys = world
    body = api(rita).get(f"/api/campaigns/{campaign.slug}/unit-inspector/").json()
    assert body["count"] == 8 and body["judge_version"] == "features-1"
    rows = {(r["unit"], r["summary"]): r for r in body["results"]}
    split = rows[keys[(0, "alpha")]]
    assert split["votes"] == {"present": 2, "not_present": 1, "total": 3, "excluded": 0}
    assert split["agreement"] == "split" and split["majority"] is True and split["decided_by"] == "people"
    assert split["judge"]["probability"] == pytest.approx(0.2) and split["judge_disagrees"] is True
    assert rows[keys[(1, "beta")]]["decided_by"] == "judge" and rows[keys[(1, "beta")]]["gold"] is False
    assert rows[keys[(2, "alpha")]]["decided_by"] == "judge"  # the budgeted campaign's judge, not the imported label
    assert rows[keys[(2, "beta")]]["decided_by"] == "imported" and rows[keys[(2, "beta")]]["imported"] is False
    assert rows[keys[(3, "alpha")]]["decided_by"] == "none"
    overridden = rows[keys[(3, "beta")]]
    assert overridden["overridden"] and overridden["decided_by"] == "researcher"
    assert overridden["gold"] is True and overridden["majority"] is False


@pytest.mark.parametrize("params, expected", [
    ({"system": "alpha"}, {(0, "alpha"), (1, "alpha"), (2, "alpha"), (3, "alpha")}),
    ({"example": "ex-b"}, {(2, "alpha"), (2, "beta"), (3, "alpha"), (3, "beta")}),
    ({"agreement": "split"}, {(0, "alpha")}),
    ({"agreement": "tie"}, {(1, "alpha")}),
    ({"agreement": "unanimous"}, {(0, "beta"), (3, "beta")}),
    ({"agreement": "none"}, {(1, "beta"), (2, "alpha"), (2, "beta"), (3, "alpha")}),
    ({"disagreement": "1"}, {(0, "alpha"), (1, "alpha")}),  # the tie was ruled absent; the judge says present
    ({"gold": "yes"}, {(2, "alpha"), (2, "beta")}),
    ({"gold": "no"}, {(0, "alpha"), (0, "beta"), (1, "alpha"), (1, "beta"), (3, "alpha"), (3, "beta")}),
    ({"decided": "people"}, {(0, "alpha"), (0, "beta"), (1, "alpha")}),
    ({"decided": "judge"}, {(1, "beta"), (2, "alpha")}),
    ({"decided": "researcher"}, {(3, "beta")}),
    ({"decided": "imported"}, {(2, "beta")}),
    ({"decided": "none"}, {(3, "alpha")}),
    ({"q": "HARBOUR"}, {(0, "alpha"), (0, "beta")}),
    ({"q": "bet"}, {(0, "beta"), (1, "beta"), (2, "beta"), (3, "beta")}),
    ({"q": "ex-b", "system": "beta", "decided": "researcher"}, {(3, "beta")}),
])
def test_filters_and_search(rita, world, params, expected):
    campaign, keys = world
    assert names(keys, listed(rita, campaign, **params)) == expected


def test_the_page_filters_as_the_api_does_and_links_each_unit_to_its_review(rita, world):
    campaign, keys = world
    client = Client()
    client.force_login(rita)
    page = client.get(f"/campaigns/{campaign.slug}/units/", {"agreement": "split"}).content.decode()
    unit, summary = keys[(0, "alpha")]
    assert f'data-unit="{unit}" data-summary="{summary}"' in page and page.count("data-unit=") == 1
    example = ContentUnit.objects.get(pk=unit).example_id
    assert f"/campaigns/{campaign.slug}/review/{example}/#summary-{summary}" in page
    assert "disagrees" in page and "(p = 0.20)" in page
    everything = client.get(f"/campaigns/{campaign.slug}/units/").content.decode()
    assert everything.count("data-unit=") == 8 and "overridden" in everything


def test_sorts(rita, world):
    campaign, keys = world
    by_probability = names_in_order(keys, listed(rita, campaign, sort="probability"))
    assert by_probability == [(3, "beta"), (0, "alpha"), (1, "beta"), (1, "alpha"), (2, "alpha"), (0, "beta")]
    assert names_in_order(keys, listed(rita, campaign, sort="-probability")) == by_probability[::-1]
    assert names_in_order(keys, listed(rita, campaign, sort="agreement"))[:2] == [(1, "alpha"), (0, "alpha")]
    assert names_in_order(keys, listed(rita, campaign, sort="votes"))[:1] in ([(0, "alpha")], [(3, "beta")])
    assert names_in_order(keys, listed(rita, campaign, sort="system"))[:4] == [(0, "alpha"), (1, "alpha"), (2, "alpha"), (3, "alpha")]
    assert names_in_order(keys, listed(rita, campaign))[:2] == [(0, "alpha"), (0, "beta")]


def names_in_order(keys, rows) -> list:
    back = {v: k for k, v in keys.items()}
    return [back[row] for row in rows]


def test_pages(rita, world):
    campaign, keys = world
    client = api(rita)
    url = f"/api/campaigns/{campaign.slug}/unit-inspector/"
    first, third = client.get(url, {"page_size": 3}).json(), client.get(url, {"page_size": 3, "page": 3}).json()
    assert (first["count"], first["pages"], len(first["results"])) == (8, 3, 3)
    assert len(third["results"]) == 2
    seen = [(r["unit"], r["summary"]) for p in (1, 2, 3) for r in client.get(url, {"page_size": 3, "page": p}).json()["results"]]
    assert sorted(seen) == sorted(keys.values())  # every row once
    assert client.get(url, {"page_size": 3, "page": 99}).json()["page"] == 3  # past the end: the last page


@pytest.mark.parametrize("params, field", [
    ({"agreement": "most"}, "agreement"), ({"sort": "random"}, "sort"), ({"page": "abc"}, "page"),
    ({"page_size": "0"}, "page_size"), ({"page_size": "501"}, "page_size"), ({"decided": "crowd"}, "decided"),
    ({"disagreement": "maybe"}, "disagreement"), ({"q": "x" * 201}, "q"),
])
def test_bad_filters_are_a_clear_400_in_the_api_and_a_message_on_the_page(rita, world, params, field):
    campaign, _ = world
    response = api(rita).get(f"/api/campaigns/{campaign.slug}/unit-inspector/", params)
    assert response.status_code == 400 and field in response.json()
    client = Client()
    client.force_login(rita)
    page = client.get(f"/campaigns/{campaign.slug}/units/", params)
    assert page.status_code == 200 and f"{field}: " in page.content.decode()


def test_who_may_see_it(rita, world, django_user_model):
    campaign, _ = world
    url, page = f"/api/campaigns/{campaign.slug}/unit-inspector/", f"/campaigns/{campaign.slug}/units/"
    assert api(None).get(url).status_code == 401
    worker_user = django_user_model.objects.create_user("crowd9")
    Worker.objects.create(external_id="crowd9", user=worker_user)
    assert api(worker_user).get(url).status_code == 403
    other = django_user_model.objects.create_user("olga")
    make_researcher(other)
    assert api(other).get(url).status_code == 404
    client = Client()
    assert client.get(page).status_code == 302  # to the login page
    client.force_login(other)
    assert client.get(page).status_code == 404
    response = api(other).post(url + "override/", {"unit": 1, "summary": 1, "present": True, "note": "n"}, format="json")
    assert response.status_code == 404


def test_the_override_needs_a_note_is_logged_and_recomputes_the_scores(rita, world):
    campaign, keys = world
    client = Client()
    client.force_login(rita)
    unit, summary = keys[(0, "alpha")]
    example = ContentUnit.objects.get(pk=unit).example_id
    back = f"/campaigns/{campaign.slug}/review/{example}/"
    post = {"unit": unit, "summary": summary, "label": "absent", "note": "", "next": back}
    response = client.post(f"/campaigns/{campaign.slug}/review/gold/", post, follow=True)
    assert "Say why in the note" in response.content.decode()
    assert not GoldPresence.objects.filter(origin="override", unit_id=unit).exists() and not GoldOverride.objects.exists()
    SummaryScore.objects.all().delete()
    post["note"] = "The summary says the harbour stayed shut."
    response = client.post(f"/campaigns/{campaign.slug}/review/gold/", post, follow=True)
    text = response.content.decode()
    assert response.redirect_chain[-1][0].startswith(back)
    assert "set to not present (logged)" in text and "The summary says the harbour stayed shut." in text
    entry = GoldOverride.objects.get()
    assert (entry.old_present, entry.old_origin, entry.new_present, entry.by) == (True, "majority", False, rita)
    # The summary's scores count the override: of alpha's ex-a units, (0) is now absent and (1) a tie ruled absent.
    score = SummaryScore.objects.get(summary_id=summary)
    assert (score.n_units, score.n_present) == (2, 0)
    row = next(r for r in api(rita).get(f"/api/campaigns/{campaign.slug}/unit-inspector/", {"decided": "researcher"}).json()["results"]
               if (r["unit"], r["summary"]) == (unit, summary))
    assert row["overridden"] and row["gold"] is False
    # Withdrawn: the crowd's majority counts again, and that is logged too.
    post.update(label="withdraw", note="Misread the summary.")
    client.post(f"/campaigns/{campaign.slug}/review/gold/", post)
    assert not GoldPresence.objects.filter(origin="override", unit_id=unit, summary_id=summary).exists()
    assert GoldOverride.objects.count() == 2 and GoldOverride.objects.first().new_present is None
    assert SummaryScore.objects.get(summary_id=summary).n_present == 1


def test_the_override_refuses_a_unit_of_another_example_and_the_api_sets_it(rita, world):
    campaign, keys = world
    unit = keys[(0, "alpha")][0]
    other_summary = keys[(2, "alpha")][1]
    client = api(rita)
    url = f"/api/campaigns/{campaign.slug}/unit-inspector/override/"
    refused = client.post(url, {"unit": unit, "summary": other_summary, "present": False, "note": "x"}, format="json")
    assert refused.status_code == 400 and "different examples" in str(refused.json())
    assert client.post(url, {"unit": unit, "summary": keys[(0, "alpha")][1], "present": False}, format="json").status_code == 400
    done = client.post(url, {"unit": unit, "summary": keys[(0, "alpha")][1], "present": False, "note": "checked"}, format="json")
    assert done.status_code == 201 and done.json()["old_origin"] == "majority"
    again = client.post(url, {"unit": unit, "summary": keys[(0, "alpha")][1], "present": False, "note": "again"}, format="json")
    assert again.status_code == 400 and GoldOverride.objects.count() == 1


def test_the_review_page_shows_the_override_and_its_log(rita, world):
    campaign, keys = world
    unit, summary = keys[(3, "beta")]
    from annotation.services.gold_overrides import override_gold

    GoldPresence.objects.filter(origin="override").delete()
    override_gold(campaign, unit, summary, True, "Roads are closed in the summary.", by=rita)
    client = Client()
    client.force_login(rita)
    page = client.get(f"/campaigns/{campaign.slug}/review/{ContentUnit.objects.get(pk=unit).example_id}/").content.decode()
    assert "overridden" in page and "Roads are closed in the summary." in page and "not present (majority)" in page


def test_the_page_runs_in_the_same_number_of_queries_at_ten_times_the_size(rita):
    small, _ = build_world(rita, 1, slug="small")
    large, _ = build_world(rita, 10, slug="large")
    client = Client()
    client.force_login(rita)
    counts = []
    for campaign in (small, large):
        for params in ({}, {"decided": "people", "sort": "agreement"}, {"disagreement": "1", "sort": "-probability"}):
            with CaptureQueriesContext(connection) as queries:
                assert client.get(f"/campaigns/{campaign.slug}/units/", params).status_code == 200
            counts.append(len(queries))
    assert counts[:3] == counts[3:]
