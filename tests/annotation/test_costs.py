import pytest
from decimal import Decimal
from annotation.services.costs import campaign_cost_preview, mturk_fee
from annotation.services.campaign_import import import_campaign
from annotation.models import Predicate

def test_fee_is_20_percent_and_40_for_ten_or_more_assignments():
    assert mturk_fee(Decimal("0.20"), 3) == Decimal("0.04")
    assert mturk_fee(Decimal("0.20"), 10) == Decimal("0.08")

@pytest.mark.django_db
def test_preview_counts_hits_per_stage(small_files):
    refs, sums = small_files
    c = import_campaign(name="Costs", references=refs, summaries=sums).campaign
    n = Predicate.objects.filter(example__campaign=c).count()
    local = campaign_cost_preview(c, redo_share=0)
    assert [s.hits for s in local.stages] == [n, n, 2 * n]
    assert local.fees == 0
    assert local.rewards == Decimal("0.32") * n + Decimal("0.17") * 2 * n + Decimal("0.20") * 3 * 2 * n
    mturk = campaign_cost_preview(c, backend="mturk-sandbox", redo_share=0)
    assert mturk.fees == (Decimal("0.06") * n + Decimal("0.03") * 2 * n + Decimal("0.04") * 3 * 2 * n)
    assert mturk.as_dict()["total"] == str(mturk.total)


@pytest.mark.django_db
def test_preview_pays_gold_checks_to_every_judge_who_meets_them(small_files):
    """Issue 28: $6.24 spent against an estimate of $5.04, the gap being the gold items' pay."""
    import json

    from annotation.services.qualification_tests import define_qualifications
    from tests.conftest import DEMO_DIR

    refs, sums = small_files
    c = import_campaign(name="Gold costs", references=refs, summaries=sums).campaign
    before = campaign_cost_preview(c, redo_share=0)
    define_qualifications(c, json.loads((DEMO_DIR / "qualifications.json").read_text()))
    c.refresh_from_db()
    after = campaign_cost_preview(c, redo_share=0)
    gold = [s for s in after.stages if s.task_type == "gold"]
    assert len(gold) == 1 and gold[0].hits == 4 and gold[0].assignments_per_hit == 3
    # 4 gold items x 3 judges x $0.20; the unpaid qualification tests add nothing.
    assert after.total - before.total == Decimal("2.40")
    assert after.gold_per_judge == Decimal("0.80")


@pytest.mark.django_db
def test_scu_preview_moves_its_gold_share_out_of_the_regular_presence_hits(tmp_path):
    from tests.judges.test_hybrid_campaign import budgeted_campaign

    c = budgeted_campaign(tmp_path, human_presence_share=1.0, gold_share=0.25)
    preview = campaign_cost_preview(c)
    stages = {s.task_type: s for s in preview.stages}
    assert stages["presence"].hits == 48 and stages["gold"].hits == 16  # 64 HITs, a quarter gold checks
    assert preview.presence_hits_human == 64
