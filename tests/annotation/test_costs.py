import pytest
from decimal import Decimal
from annotation.services.costs import campaign_cost_preview, mturk_fee
from annotation.services.campaign_import import import_campaign
from annotation.models import Campaign, Predicate

def test_fee_is_20_percent_and_40_for_ten_or_more_assignments():
    assert mturk_fee(Decimal("0.20"), 3) == Decimal("0.04")
    assert mturk_fee(Decimal("0.20"), 10) == Decimal("0.08")

@pytest.mark.django_db
def test_preview_counts_hits_per_stage(small_files):
    refs, sums = small_files
    c = import_campaign(name="Costs", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=c.pk).update(presence_judges="fixed")
    c.refresh_from_db()
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
    Campaign.objects.filter(pk=c.pk).update(presence_judges="fixed")
    c.refresh_from_db()
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


def _small(small_files, **fields):
    refs, sums = small_files
    c = import_campaign(name="Hand count", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=c.pk).update(**fields)
    c.refresh_from_db()
    return c


@pytest.mark.django_db
def test_preview_on_mturk_matches_a_hand_count_under_each_presence_rule(small_files, settings):
    """3 predicates, 2 systems: 6 presence HITs.  On MTurk every place costs the reward + 20% (at least $0.01)."""
    import json

    from annotation.services.qualification_tests import define_qualifications
    from tests.conftest import DEMO_DIR

    settings.MTURK_OPEN_HIT_ASSIGNMENTS = 9
    c = _small(small_files, presence_judges="fixed", backend="mturk-sandbox")
    assert Predicate.objects.filter(example__campaign=c).count() == 3
    define_qualifications(c, json.loads((DEMO_DIR / "qualifications.json").read_text()))
    c.refresh_from_db()

    fixed = campaign_cost_preview(c, redo_share=0)
    lines = {s.task_type: (s.hits, s.assignments_per_hit, s.total) for s in fixed.stages}
    assert lines == {
        # 12 test items (generation, verification, presence), each 9 places at $0.01 + $0.01 fee
        "qualification": (12, 9, Decimal("2.16")),
        "generation": (3, 1, Decimal("1.14")),  # 3 x ($0.32 + $0.06)
        "verification": (3, 2, Decimal("1.20")),  # 3 x 2 x ($0.17 + $0.03)
        "presence": (6, 3, Decimal("4.32")),  # 6 x 3 x ($0.20 + $0.04)
        "gold": (4, 3, Decimal("2.88")),  # 4 gold checks met by 3 judges each
    }
    assert fixed.total == Decimal("11.70") and fixed.saving == 0

    Campaign.objects.filter(pk=c.pk).update(presence_judges="adaptive", third_judge_rate=0.5)
    c.refresh_from_db()
    adaptive = campaign_cost_preview(c, redo_share=0)
    lines = {s.task_type: (s.hits, s.assignments_per_hit, s.total) for s in adaptive.stages}
    # Posted for 2 judges; half the HITs (3) grow to a third.
    assert lines["presence"] == (6, 2, Decimal("2.88")) and lines["third judge"] == (3, 1, Decimal("0.72"))
    assert adaptive.total == Decimal("11.70") - Decimal("0.72")
    assert adaptive.saving == Decimal("0.72")  # against 3 judges on every HIT
    assert adaptive.as_dict()["presence_judges"] == "adaptive" and adaptive.as_dict()["third_judge_rate"] == 0.5


@pytest.mark.django_db
def test_routed_share_follows_the_presence_rule_and_local_tests_cost_nothing(small_files):
    c = _small(small_files, presence_judges="adaptive", third_judge_rate=0.278, human_presence_share=0.5)
    local = campaign_cost_preview(c, redo_share=0)
    lines = {s.task_type: (s.hits, s.assignments_per_hit, s.total) for s in local.stages}
    # 3 of the 6 presence HITs go to people, posted for 2; round(3 x 0.278) = 1 grows to 3.
    assert lines["presence"] == (3, 2, Decimal("1.20")) and lines["third judge"] == (1, 1, Decimal("0.20"))
    assert "qualification" not in lines and local.fees == 0
    # The paper's protocol: 6 HITs x 3 judges x $0.20 = $3.60.
    assert local.saving == Decimal("3.60") - Decimal("1.40")
    mturk = campaign_cost_preview(c, backend="mturk-live", redo_share=0)
    assert {s.task_type: s.fees for s in mturk.stages}["third judge"] == Decimal("0.04")


@pytest.mark.django_db
def test_gold_checks_are_met_at_the_gold_share_of_a_judges_stream(small_files):
    import json

    from annotation.services.qualification_tests import define_qualifications
    from tests.conftest import DEMO_DIR

    c = _small(small_files, presence_judges="fixed", gold_share=0.6)
    define_qualifications(c, json.loads((DEMO_DIR / "qualifications.json").read_text()))
    c.refresh_from_db()
    # 18 regular presence judgments; at 60% gold a stream holds 18 x 0.6 / 0.4 = 27 gold judgments: ~7 per item.
    gold = {s.task_type: s for s in campaign_cost_preview(c, redo_share=0).stages}["gold"]
    assert (gold.hits, gold.assignments_per_hit, gold.total) == (4, 7, Decimal("5.60"))
    # A known crowd: every one of 8 judges meets each of the 4 gold checks once.
    gold = {s.task_type: s for s in campaign_cost_preview(c, redo_share=0, judges=8).stages}["gold"]
    assert (gold.hits, gold.assignments_per_hit) == (4, 8)


@pytest.mark.django_db
def test_settings_page_and_api_show_the_third_judge_line_and_the_rule(small_files, django_user_model):
    from django.test import Client
    from rest_framework.test import APIClient

    c = _small(small_files, presence_judges="adaptive", third_judge_rate=0.5, backend="mturk-sandbox")
    owner = django_user_model.objects.create_superuser("costs-owner", password="a-long-test-password")
    Campaign.objects.filter(pk=c.pk).update(owner=owner)
    web = Client()
    web.force_login(owner)
    page = web.get(f"/campaigns/{c.slug}/settings/").content.decode()
    assert 'data-stage="third judge"' in page and 'id="cost-rule"' in page and "expected on 50% of the HITs" in page
    api = APIClient()
    api.force_authenticate(owner)
    data = api.get(f"/api/campaigns/{c.slug}/cost/").json()
    assert data["presence_judges"] == "adaptive" and data["third_judge_rate"] == 0.5
    assert data["judges_statement"] == "2 judges on every presence HIT, one more at a time where they disagree (at most 3)"
    third = next(s for s in data["stages"] if s["task_type"] == "third judge")
    # 10% redo of 3 predicates rounds to none; 6 presence HITs, 3 of them with a third judge at $0.20 + $0.04.
    assert third["hits"] == 3 and third["total"] == "0.72"
