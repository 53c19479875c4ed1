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
