"""The export carries the verifiers' verdicts and the system-level score table."""

from __future__ import annotations

import csv

import pytest

from annotation.models import ContentUnit, System, Verification
from annotation.services.export import export_campaign
from annotation.services.scores import recompute_summary_scores
from hits.models import Worker
from tests.web.conftest import settle_with_kept_pairs
from tests.web.test_agreement_review import _judge

pytestmark = pytest.mark.django_db


def test_export_has_verdicts_and_system_scores(draft, tmp_path):
    settle_with_kept_pairs(draft)
    unit = ContentUnit.objects.filter(example__campaign=draft, state="kept").first()
    for name, valid in (("v1", True), ("=v2", False)):
        Verification.objects.create(unit=unit, worker=Worker.objects.create(external_id=name), valid=valid, answers=unit.answers if valid else [])
    _judge(draft, lambda i, u, s: s.system.name == "s2" or i == 0)
    recompute_summary_scores(draft)
    export_campaign(draft, tmp_path / "out")
    verdicts = list(csv.DictReader((tmp_path / "out" / "verifications.csv").open()))
    assert [(r["worker"], r["valid"], r["question"]) for r in verdicts] == [("v1", "1", unit.question), ("'=v2", "0", unit.question)]
    assert verdicts[0]["answers"] == " / ".join(unit.answers)
    systems = {r["system"]: r for r in csv.DictReader((tmp_path / "out" / "systems.csv").open())}
    assert set(systems) == {"s1", "s2"}
    for system in System.objects.filter(campaign=draft).select_related("score"):
        assert float(systems[system.name]["qapyramid"]) == pytest.approx(system.score.qapyramid)
        assert int(systems[system.name]["summaries"]) == system.score.n_summaries
    export_campaign(draft, tmp_path / "pseudo", pseudonymise=True, salt="k")
    assert all(r["worker"].startswith("w-") for r in csv.DictReader((tmp_path / "pseudo" / "verifications.csv").open()))
