"""``simulate_crowd --campaign X`` works on X only: never another researcher's HITs, tests or gold checks."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotation.models import Campaign
from annotation.services import qualification_tests
from annotation.services.campaign_import import import_campaign
from annotation.management.simulation import ensure_simulated_workers
from annotation.services.pipeline import launch_campaign
from hits.models import HIT, Assignment, BatchChoice, Qualification, TaskType, Worker
from hits.services import accept_next, record_choice
from tests.conftest import DEMO_DIR

pytestmark = pytest.mark.django_db(transaction=True)


def scu_campaign(folder, name, owner, n_examples=4, n_units=4, gold_share=0.0):
    (folder / "summaries").mkdir(parents=True)
    (folder / "labels").mkdir()
    ids = [f"{name[0]}{i}" for i in range(n_examples)]
    (folder / "ids.txt").write_text("".join(f"{i}\n" for i in ids))
    (folder / "references.txt").write_text("".join(f"Reference {i} says things .\n" for i in ids))
    (folder / "SCUs.txt").write_text("".join("\t".join(f"fact {u} of {i}" for u in range(n_units)) + "\n" for i in ids))
    for s in range(2):
        (folder / "summaries" / f"sys{s}.summary").write_text("".join(f"Summary {s} of {i} with fact 0 of {i} .\n" for i in ids))
        (folder / "labels" / f"sys{s}.label").write_text("".join("\t".join(["1"] + ["0"] * (n_units - 1)) + "\n" for _ in ids))
    campaign = import_campaign(name=name, folder=folder, owner=owner).campaign
    Campaign.objects.filter(pk=campaign.pk).update(gold_share=gold_share)
    campaign.refresh_from_db()
    return campaign


def test_the_simulated_crowd_never_works_in_another_campaign(tmp_path, researcher, other_researcher, eager_celery):
    theirs = scu_campaign(tmp_path / "theirs", "Theirs", other_researcher, n_examples=10, gold_share=0.4)
    qualification_tests.define_qualifications(theirs, json.loads((DEMO_DIR / "qualifications.json").read_text()))
    launch_campaign(theirs)
    theirs.refresh_from_db()
    open_before = set(HIT.objects.filter(batch_id=theirs.batch_id, state=HIT.State.OPEN).values_list("pk", flat=True))
    assert HIT.objects.filter(batch_id=theirs.batch_id, kind=HIT.Kind.GOLD).exists()
    assert HIT.objects.filter(batch_id=theirs.batch_id, kind=HIT.Kind.QUALIFICATION).exists()
    ours = scu_campaign(tmp_path / "ours", "Ours", researcher)
    # A simulated worker of an earlier run (before workers were kept to their campaign) holds one of their HITs.
    ensure_simulated_workers(1, 0, "an-earlier-run-password")
    earlier = Worker.objects.get(external_id="sim-1")
    record_choice(earlier, theirs.batch, BatchChoice.How.START)  # that run had chosen their campaign
    held = accept_next(earlier, TaskType.objects.get(slug="presence"))
    assert held is not None and held.hit.batch_id == theirs.batch_id

    out = call_command_output("simulate_crowd", "--campaign", ours.slug, "--workers", "3", "--accuracy", "1.0", "--max-seconds", "120")
    assert "campaign finished" in out
    ours.refresh_from_db()
    simulated = Worker.objects.filter(external_id__startswith="sim-")
    assert Assignment.objects.filter(worker__in=simulated, hit__batch_id=ours.batch_id).exists()
    # Nothing of theirs: no HIT, no test item, no gold check worked on; no qualification recorded there; the
    # place held from before given back untouched.
    assert not Assignment.objects.filter(hit__batch_id=theirs.batch_id).exclude(pk=held.pk).exists()
    assert not Qualification.objects.filter(batch_id=theirs.batch_id).exists()
    assert set(HIT.objects.filter(batch_id=theirs.batch_id, state=HIT.State.OPEN).values_list("pk", flat=True)) == open_before
    held.refresh_from_db()
    assert held.state == Assignment.State.RETURNED and held.submitted_at is None


def call_command_output(*args) -> str:
    import io

    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()
