"""Quality control that one campaign cannot break for another (issue 18).

Two researchers (rita, oscar), each with campaigns and workers, and an admin: every reproduction of the
issue, as the people involved would meet it.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from annotation.models import Campaign
from annotation.services import qualification_tests
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from hits import qualifications
from hits.models import HIT, Assignment, Batch, BatchBlock, Qualification, QualificationEvent, TaskType, Worker
from hits.services import accept_next, available_hits, expire_assignments, record_choice, return_assignment, submit_assignment, worker_for_user
from tests.conftest import DEMO_DIR, write_jsonl

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-test-password"


def _definition(n_generation: int | None = None):
    definition = json.loads((DEMO_DIR / "qualifications.json").read_text())
    if n_generation is not None:
        definition["generation"] = definition["generation"][:n_generation]
    return definition


def _campaign(tmp_path, name, owner, *, tests=None, launch=True, unit_type=None):
    folder = tmp_path / name
    folder.mkdir()
    refs = write_jsonl(folder / "r.jsonl", [{"id": f"{name}-{i}", "reference": f"Police in town {i} blamed the driver for the crash."} for i in range(3)])
    sums = write_jsonl(folder / "s.jsonl", [{"id": f"{name}-{i}", "system": "s", "summary": "Police blamed the driver."} for i in range(3)])
    campaign = import_campaign(name=name, references=refs, summaries=sums, owner=owner).campaign
    if tests is not None:
        qualification_tests.define_qualifications(campaign, tests)
    if launch:
        launch_campaign(campaign)
    return Campaign.objects.get(pk=campaign.pk)


@pytest.fixture
def people(django_user_model):
    rita = django_user_model.objects.create_user("rita", password=PASSWORD)
    oscar = django_user_model.objects.create_user("oscar", password=PASSWORD)
    for user in (rita, oscar):
        make_researcher(user)
    admin = django_user_model.objects.create_superuser("ada", password=PASSWORD)
    return {"rita": rita, "oscar": oscar, "admin": admin}


def _worker(django_user_model, name):
    user = django_user_model.objects.create_user(name, password=PASSWORD)
    return worker_for_user(user)


def _generation():
    return TaskType.objects.get(slug="generation")


def _answer_generation(assignment, right=True):
    inline = assignment.hit.payload["inline"]
    predicate = inline["sentence"][inline["start"] : inline["end"]]
    data = {}
    for i, answers in enumerate(assignment.hit.answer_key["arguments"], start=1):
        data[f"q{i}"] = f"{['Who', 'What', 'When', 'Where'][i - 1]} did someone {predicate}?"
        data[f"q{i}_a1"] = answers[0] if right else "zzz"
    if not right:
        # A question the page accepts (question word, the verb) whose answer covers no argument of the key.
        data = {"q1": f"What did someone {predicate}?", "q1_a1": predicate}
    return data


def _take_test(worker, campaign, right=True):
    """Take, one by one, every generation test item of ``campaign`` the worker can be handed; returns how many."""
    generation = _generation()
    # The worker starts from the campaign (the home page's button): its test is offered to them from then on.
    record_choice(worker, Batch.objects.get(pk=campaign.batch_id), "start")
    taken = 0
    for hit in HIT.objects.filter(batch_id=campaign.batch_id, task_type=generation, kind=HIT.Kind.QUALIFICATION).order_by("pk"):
        assignment = accept_next(worker, generation, hit_id=hit.pk)
        if assignment is None:
            continue
        submit_assignment(worker, assignment.pk, _answer_generation(assignment, right))
        taken += 1
    return taken


def _state(worker, campaign, task_type=None):
    q = Qualification.objects.filter(worker=worker, batch_id=campaign.batch_id, task_type=task_type or _generation()).first()
    return q.state if q else None


# --- 1. qualification belongs to a campaign ---------------------------------------------------


def test_a_campaign_without_tests_serves_new_workers_while_another_campaign_has_tests(tmp_path, people, django_user_model):
    tested = _campaign(tmp_path, "rita-tested", people["rita"], tests=_definition())
    open_campaign = _campaign(tmp_path, "oscar-open", people["oscar"])
    worker = _worker(django_user_model, "newbie")
    offered = available_hits(worker, _generation())
    assert offered.filter(batch_id=open_campaign.batch_id, kind="regular").count() == 3
    # The tested campaign offers nothing to a worker who has not chosen it, then its test items only.
    assert not offered.filter(batch_id=tested.batch_id).exists()
    record_choice(worker, Batch.objects.get(pk=tested.batch_id), "start")
    offered = available_hits(worker, _generation())
    assert set(offered.filter(batch_id=tested.batch_id).values_list("kind", flat=True)) == {"qualification"}
    client = Client()
    client.force_login(worker.user)
    home = client.get("/work/").content.decode()
    assert "0 available" not in home or home.count("0 available") < 3


def test_a_test_on_a_finished_campaign_or_on_mturk_does_not_stop_grading(tmp_path, people, django_user_model):
    finished = _campaign(tmp_path, "rita-old", people["rita"], tests=_definition(n_generation=1))
    Campaign.objects.filter(pk=finished.pk).update(state=Campaign.State.FINISHED)
    Batch.objects.filter(pk=finished.batch_id).update(state=Batch.State.FINISHED)
    on_mturk = _campaign(tmp_path, "oscar-mturk", people["oscar"], tests=_definition(n_generation=2))
    Batch.objects.filter(pk=on_mturk.batch_id).update(backend=Batch.Backend.MTURK_SANDBOX)
    current = _campaign(tmp_path, "rita-new", people["rita"], tests=_definition())
    worker = _worker(django_user_model, "onboarding")
    assert _take_test(worker, current) == 4
    assert _state(worker, current) == "qualified"
    assert _state(worker, finished) is None and _state(worker, on_mturk) is None
    assert accept_next(worker, _generation()).hit.batch_id == current.batch_id


def test_grading_counts_only_items_the_worker_can_be_handed(tmp_path, people, django_user_model):
    from hits.models import HITExclusion

    campaign = _campaign(tmp_path, "rita-excl", people["rita"], tests=_definition())
    worker = _worker(django_user_model, "excluded-from-one")
    items = list(HIT.objects.filter(batch_id=campaign.batch_id, kind="qualification", task_type=_generation()).order_by("pk"))
    HITExclusion.objects.create(hit=items[-1], worker=worker)
    assert _take_test(worker, campaign) == 3
    assert _state(worker, campaign) == "qualified"


@pytest.mark.parametrize("how", ["returned", "expired"])
def test_a_returned_or_expired_test_item_can_be_taken_again(tmp_path, people, django_user_model, how):
    campaign = _campaign(tmp_path, f"rita-{how}", people["rita"], tests=_definition(n_generation=1))
    worker = _worker(django_user_model, f"w-{how}")
    record_choice(worker, Batch.objects.get(pk=campaign.batch_id), "invitation")
    first = accept_next(worker, _generation())
    assert first.hit.kind == "qualification"
    if how == "returned":
        return_assignment(worker, first.pk)
    else:
        Assignment.objects.filter(pk=first.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
        assert expire_assignments() == 1
    again = accept_next(worker, _generation())
    assert again is not None and again.hit_id == first.hit_id and again.attempt == first.attempt
    submit_assignment(worker, again.pk, _answer_generation(again))
    assert _state(worker, campaign) == "qualified"


def test_each_campaign_keeps_its_own_retake_rules(tmp_path, people, django_user_model):
    strict = _campaign(tmp_path, "rita-strict", people["rita"], launch=False)
    Campaign.objects.filter(pk=strict.pk).update(qualification_max_attempts=1, qualification_cooldown_hours=0)
    strict = Campaign.objects.get(pk=strict.pk)
    qualification_tests.define_qualifications(strict, _definition(n_generation=1))
    launch_campaign(strict)
    lenient = _campaign(tmp_path, "oscar-lenient", people["oscar"], launch=False)
    Campaign.objects.filter(pk=lenient.pk).update(qualification_max_attempts=5, qualification_cooldown_hours=0)
    lenient = Campaign.objects.get(pk=lenient.pk)
    qualification_tests.define_qualifications(lenient, _definition(n_generation=1))  # defined last: must not loosen rita's
    launch_campaign(lenient)
    worker = _worker(django_user_model, "fails-once")
    assert _take_test(worker, strict, right=False) == 1
    assert _state(worker, strict) == "failed"
    kinds = set(available_hits(worker, _generation()).filter(batch_id=strict.batch_id).values_list("kind", flat=True))
    assert kinds == set()  # one attempt in rita's campaign, whatever oscar's allows
    assert _take_test(worker, lenient, right=False) == 1
    assert set(available_hits(worker, _generation()).filter(batch_id=lenient.batch_id).values_list("kind", flat=True)) == {"qualification"}


def test_revocation_and_reinstatement_stay_in_their_campaign(tmp_path, people, django_user_model):
    rita_campaign = _campaign(tmp_path, "rita-a", people["rita"], tests=_definition())
    oscar_campaign = _campaign(tmp_path, "oscar-b", people["oscar"])
    worker = _worker(django_user_model, "shared-worker")
    _take_test(worker, rita_campaign)
    assert _state(worker, rita_campaign) == "qualified"
    qualifications.revoke(worker, _generation(), oscar_campaign.batch, "careless in oscar's campaign", by=people["oscar"])
    batches = set(available_hits(worker, _generation()).values_list("batch_id", flat=True))
    assert batches == {rita_campaign.batch_id}
    assert _state(worker, rita_campaign) == "qualified"
    qualifications.reinstate(worker, _generation(), oscar_campaign.batch, by=people["oscar"])
    batches = set(available_hits(worker, _generation()).values_list("batch_id", flat=True))
    assert batches == {rita_campaign.batch_id, oscar_campaign.batch_id}


def test_a_campaign_may_accept_qualifications_from_its_owners_other_campaigns(tmp_path, people, django_user_model):
    first = _campaign(tmp_path, "rita-first", people["rita"], tests=_definition())
    second = _campaign(tmp_path, "rita-second", people["rita"], tests=_definition())
    oscars = _campaign(tmp_path, "oscar-third", people["oscar"], tests=_definition())
    worker = _worker(django_user_model, "veteran")
    _take_test(worker, first)
    assert _state(worker, first) == "qualified"
    for campaign in (second, oscars):  # the worker starts from these campaigns too
        record_choice(worker, Batch.objects.get(pk=campaign.batch_id), "start")

    def kinds_in(campaign):
        return set(available_hits(worker, _generation()).filter(batch_id=campaign.batch_id).values_list("kind", flat=True))

    assert kinds_in(second) == {"qualification"}  # by default each campaign tests for itself
    qualification_tests.accept_sibling_qualifications(second, True)
    qualification_tests.accept_sibling_qualifications(oscars, True)
    assert kinds_in(second) == {"regular"}
    assert kinds_in(oscars) == {"qualification"}  # another researcher's campaign: never
    assert qualifications.status_label(worker, _generation(), Batch.objects.get(pk=second.batch_id)) == "qualified"
    # A revocation in the campaign that accepted stays there.
    qualifications.revoke(worker, _generation(), second.batch, "not good enough here")
    assert kinds_in(second) == set() and kinds_in(first) == {"regular"}


def test_the_opt_in_is_visible_and_changed_on_the_qualifications_page(tmp_path, people):
    campaign = _campaign(tmp_path, "rita-page", people["rita"], tests=_definition())
    client = Client()
    client.force_login(people["rita"])
    page = client.get(f"/campaigns/{campaign.slug}/qualifications/").content.decode()
    assert "Accept workers qualified in your other" in page and 'name="accept_siblings"' in page
    response = client.post(f"/campaigns/{campaign.slug}/qualifications/", {"action": "accept_siblings", "accept_siblings": "on"})
    assert response.status_code == 302
    assert Batch.objects.get(pk=campaign.batch_id).accepts_group_qualifications is True
    other = Client()
    other.force_login(people["oscar"])
    assert other.post(f"/campaigns/{campaign.slug}/qualifications/", {"action": "accept_siblings"}).status_code == 404
    assert Batch.objects.get(pk=campaign.batch_id).accepts_group_qualifications is True


# --- 2. researchers act on their own campaigns' workers only -----------------------------------


def _worked_on(worker, campaign):
    assignment = accept_next(worker, _generation())
    assert assignment.hit.batch_id == campaign.batch_id
    return assignment


def test_a_researcher_cannot_act_on_a_worker_of_another_researchers_campaign(tmp_path, people, django_user_model):
    rita_campaign = _campaign(tmp_path, "rita-only", people["rita"])
    oscar_campaign = _campaign(tmp_path, "oscar-only", people["oscar"])
    Batch.objects.filter(pk=oscar_campaign.batch_id).update(state=Batch.State.PAUSED)
    ritas_worker = _worker(django_user_model, "ritas-worker")
    _worked_on(ritas_worker, rita_campaign)
    oscar = Client()
    oscar.force_login(people["oscar"])
    for action in ("block", "revoke", "unblock", "reinstate"):
        response = oscar.post(
            f"/campaigns/{oscar_campaign.slug}/workers/action/",
            {"worker": ritas_worker.external_id, "action": action, "task_type": "generation", "reason": "I say so"},
        )
        assert response.status_code == 404
    ritas_worker.refresh_from_db()
    assert not ritas_worker.blocked and not QualificationEvent.objects.filter(worker=ritas_worker).exists()
    assert not Qualification.objects.filter(worker=ritas_worker).exists()


def test_a_researchers_block_keeps_the_worker_out_of_that_campaign_only(tmp_path, people, django_user_model):
    rita_campaign = _campaign(tmp_path, "rita-blk", people["rita"])
    oscar_campaign = _campaign(tmp_path, "oscar-blk", people["oscar"])
    worker = _worker(django_user_model, "both-campaigns")
    first = accept_next(worker, _generation())
    return_assignment(worker, first.pk)
    for campaign in (rita_campaign, oscar_campaign):
        if not Assignment.objects.filter(worker=worker, hit__batch_id=campaign.batch_id).exists():
            hit = HIT.objects.filter(batch_id=campaign.batch_id).first()
            accept_next(worker, _generation(), hit_id=hit.pk)
    oscar = Client()
    oscar.force_login(people["oscar"])
    response = oscar.post(
        f"/campaigns/{oscar_campaign.slug}/workers/action/",
        {"worker": worker.external_id, "action": "block", "reason": "rude feedback"},
    )
    assert response.status_code == 302
    worker.refresh_from_db()
    assert not worker.blocked and BatchBlock.objects.filter(worker=worker, batch_id=oscar_campaign.batch_id).exists()
    assert set(available_hits(worker, _generation()).values_list("batch_id", flat=True)) == {rita_campaign.batch_id}
    # Rita's workers page knows nothing of oscar's decision (nor its reason).
    rita = Client()
    rita.force_login(people["rita"])
    page = rita.get(f"/campaigns/{rita_campaign.slug}/workers/").content.decode()
    assert "rude feedback" not in page and "blocked" not in page.split("<tbody>")[1].split("</tbody>")[0].split("<select")[0]
    # The worker's standing page shows the block under oscar's campaign only.
    client = Client()
    client.force_login(worker.user)
    standing = client.get("/work/quality/").content.decode()
    assert standing.count("status-blocked") == 3  # the three task types of oscar's campaign
    assert standing.count("rude feedback") == 1 and standing.index("rude feedback") > standing.index(oscar_campaign.name)


def test_sharing_a_campaign_never_turns_a_worker_into_a_researcher(tmp_path, people, django_user_model):
    campaign = _campaign(tmp_path, "rita-share", people["rita"])
    worker = _worker(django_user_model, "wants-to-see-keys")
    rita = Client()
    rita.force_login(people["rita"])
    response = rita.post(f"/api/campaigns/{campaign.slug}/share/", {"username": "wants-to-see-keys"}, content_type="application/json")
    assert response.status_code == 400 and "not a researcher" in response.content.decode()
    client = Client()
    client.force_login(worker.user)
    assert client.get(f"/campaigns/{campaign.slug}/qualifications/").status_code in (302, 403, 404)


# --- 3. gold checks are indistinguishable and unavoidable --------------------------------------


def test_gold_items_pay_like_presence_hits_and_wait_for_the_launch(tmp_path, people, django_user_model):
    campaign = _campaign(tmp_path, "rita-gold", people["rita"], tests=_definition(), launch=False)
    gold = HIT.objects.filter(batch_id=campaign.batch_id, kind="gold")
    assert gold.count() == 4 and {h.reward for h in gold} == {campaign.reward_presence}
    worker = _worker(django_user_model, "early-bird")
    presence = TaskType.objects.get(slug="presence")
    assert available_hits(worker, presence).count() == 0
    assert accept_next(worker, presence) is None


def test_the_server_chooses_the_hit_of_a_type_with_gold(tmp_path, people, django_user_model):
    from tests.conftest import launched_scu_campaign

    rows = [(f"d{i}", f"Reference {i} says a thing .", f"System summary {i} .", [f"fact a of {i}", f"fact b of {i}"]) for i in range(4)]
    campaign = launched_scu_campaign(tmp_path / "scu", "Gold mix", rows)
    HIT.objects.filter(batch_id=campaign.batch_id).update(kind="regular")
    Batch.objects.filter(pk=campaign.batch_id).update(gold_share=1.0)
    chosen_gold = HIT.objects.filter(batch_id=campaign.batch_id).order_by("pk").last()
    HIT.objects.filter(pk=chosen_gold.pk).update(kind="gold")
    worker = _worker(django_user_model, "picky")
    regular = HIT.objects.filter(batch_id=campaign.batch_id, kind="regular").order_by("pk").last()
    client = Client()
    client.force_login(worker.user)
    # Posting a regular HIT's id does not step around the gold check: the server hands out the gold HIT.
    response = client.post("/work/presence/start/", {"hit": regular.pk})
    assignment = Assignment.objects.get(worker=worker)
    assert response["Location"] == f"/work/assignments/{assignment.pk}/" and assignment.hit_id == chosen_gold.pk
    # The preview shows what the server hands out, and accepting from it gives that HIT.
    return_assignment(worker, assignment.pk)
    other = _worker(django_user_model, "previewer")
    client.force_login(other.user)
    preview = client.get("/work/presence/preview/")
    assert preview.status_code == 200
    previewed = preview.context["hit"].pk
    client.post("/work/presence/start/", {"hit": previewed})
    assert Assignment.objects.get(worker=other).hit_id == previewed


# --- 4. the hand-out is fair across campaigns (issue 27) -------------------------------------------


def _join(invitation, name):
    """Sign up through an invitation link, as a new worker does."""
    client = Client()
    response = client.post(f"/join/{invitation.token}/", {"username": name, "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302, response.content[:500]
    return client, worker_for_user(User.objects.get(username=name))


def _held(worker):
    return Assignment.objects.filter(worker=worker, state="assigned").select_related("hit").get().hit


def test_another_researchers_test_never_hides_the_campaign_a_worker_joined(tmp_path, people, django_user_model):
    from hits.invitations import create_invitation

    # Rita's tested campaign comes first in the queue; her other campaign has no test; Oscar invites workers.
    ritas_test = _campaign(tmp_path, "rita-tested", people["rita"], tests=_definition())
    ritas_open = _campaign(tmp_path, "rita-open", people["rita"])
    oscars = _campaign(tmp_path, "oscar-invites", people["oscar"], tests=_definition())
    invitation = create_invitation(batch=Batch.objects.get(pk=oscars.batch_id), max_uses=20)
    for name in ("invitee-1", "invitee-2", "invitee-3"):
        client, worker = _join(invitation, name)
        page = client.post("/work/generation/start/")["Location"]
        seen = [_held(worker)]
        for _ in range(5):  # Skip moves on: across items and campaigns, never back to the one just skipped
            page = client.post(page, {"action": "skip"})["Location"]
            seen.append(_held(worker))
        batches = {h.batch_id for h in seen}
        assert ritas_test.batch_id not in batches, "handed another researcher's test"
        assert any(h.batch_id == oscars.batch_id and h.kind == "qualification" for h in seen)  # the test of the campaign joined
        assert all(a.pk != b.pk for a, b in zip(seen, seen[1:])), [h.pk for h in seen]
        # The campaign joined comes first (issue 39): its test while the worker has not passed it; the other
        # campaign's work is there with "Start here".
        assert batches == {oscars.batch_id}
        Assignment.objects.filter(worker=worker, state="assigned").update(state="returned")
        client.post("/work/generation/start/", {"campaign": ritas_open.batch_id})
        assert _held(worker).batch_id == ritas_open.batch_id
        Assignment.objects.filter(worker=worker, state="assigned").update(state="returned")
        HIT.objects.update(n_taken=0)


def test_the_home_page_starts_work_in_a_chosen_campaign_and_offers_tests_only_there(tmp_path, people, django_user_model):
    ritas_test = _campaign(tmp_path, "rita-tested", people["rita"], tests=_definition())
    oscars_open = _campaign(tmp_path, "oscar-open", people["oscar"])
    worker = _worker(django_user_model, "browser")
    client = Client()
    client.force_login(worker.user)
    home = client.get("/work/").content.decode()
    # Oscar's work has a start button; Rita's campaign offers its test, taken only if the worker asks.
    assert f'class="inline campaign-start" data-campaign="{oscars_open.batch_id}"' in home
    assert f'class="inline campaign-test" data-campaign="{ritas_test.batch_id}"' in home
    client.post("/work/generation/start/")
    assert _held(worker).batch_id == oscars_open.batch_id
    Assignment.objects.filter(worker=worker).update(state="returned")
    HIT.objects.update(n_taken=0)
    client.post("/work/generation/start/", {"campaign": ritas_test.batch_id})
    held = _held(worker)
    assert held.batch_id == ritas_test.batch_id and held.kind == "qualification"
    assert worker.batch_choices.filter(batch_id=ritas_test.batch_id, how="start").exists()
    # A campaign id that is not a running campaign of the type is refused with a message, nothing taken.
    Assignment.objects.filter(worker=worker).update(state="returned")
    response = client.post("/work/generation/start/", {"campaign": "999999"}, follow=True)
    assert b"That campaign has no" in response.content and not Assignment.objects.filter(worker=worker, state="assigned").exists()


def test_a_test_is_not_offered_by_a_campaign_with_no_work_left_for_the_worker(tmp_path, people, django_user_model):
    campaign = _campaign(tmp_path, "rita-done", people["rita"], tests=_definition())
    worker = _worker(django_user_model, "too-late")
    record_choice(worker, Batch.objects.get(pk=campaign.batch_id), "start")
    assert set(available_hits(worker, _generation()).values_list("kind", flat=True)) == {"qualification"}
    HIT.objects.filter(batch_id=campaign.batch_id, kind="regular").update(state=HIT.State.COMPLETED)
    assert not available_hits(worker, _generation()).exists()
    assert accept_next(worker, _generation()) is None


def test_a_worker_with_an_account_joins_another_campaign_through_its_link(tmp_path, people, django_user_model):
    from hits.invitations import create_invitation

    campaign = _campaign(tmp_path, "oscar-second", people["oscar"], tests=_definition())
    worker = _worker(django_user_model, "regular-worker")
    assert not available_hits(worker, _generation()).filter(batch_id=campaign.batch_id).exists()
    invitation = create_invitation(batch=Batch.objects.get(pk=campaign.batch_id), max_uses=1)
    client = Client()
    client.force_login(worker.user)
    response = client.get(f"/join/{invitation.token}/", follow=True)
    assert b"You joined oscar-second" in response.content
    assert set(available_hits(worker, _generation()).filter(batch_id=campaign.batch_id).values_list("kind", flat=True)) == {"qualification"}
    invitation.refresh_from_db()
    assert invitation.uses == 0 and User.objects.count() == 4  # no account made, no use taken
