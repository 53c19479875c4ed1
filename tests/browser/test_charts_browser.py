"""The researcher's charts as Chromium draws them: the leaderboard's summary dots can be seen (not hidden
under the whiskers), labels are readable, the histogram counts in whole numbers, low alpha is explained."""

from __future__ import annotations

import pytest

from annotation.services.campaign_import import import_campaign
from annotation.services.roles import make_researcher
from tests.browser.conftest import log_in
from tests.web.conftest import REFERENCES, SUMMARIES, settle_with_kept_pairs
from tests.web.test_agreement_review import _judge

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-charts-password-1"


@pytest.fixture
def judged(tmp_path, django_user_model):
    rita = django_user_model.objects.create_user(username="rita", password=PASSWORD)
    make_researcher(rita)
    (tmp_path / "r.jsonl").write_bytes(REFERENCES)
    (tmp_path / "s.jsonl").write_bytes(SUMMARIES)
    campaign = import_campaign(name="Charts", owner=rita, references=tmp_path / "r.jsonl", summaries=tmp_path / "s.jsonl").campaign
    settle_with_kept_pairs(campaign, pairs_per_predicate=3)
    # Nearly every verdict "present": high raw agreement, alpha near zero.
    _judge(campaign, lambda i, u, s: not (i == 2 and u.index == 0 and s.system.name == "s1"))
    return campaign


def test_leaderboard_dots_are_visible_and_labels_readable(page, judged):
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{judged.slug}/leaderboard/")
    dots = page.locator("#score-chart circle.summary-dot")
    assert dots.count() == 4
    for i in range(dots.count()):
        box = dots.nth(i).bounding_box()
        on_top = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).getAttribute('class')", [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2]
        )
        assert on_top == "summary-dot"
    sizes = page.locator("#score-chart text").evaluate_all("ts => ts.map(t => parseFloat(getComputedStyle(t).fontSize))")
    assert min(sizes) >= 13
    # The same navigation as the other campaign pages, and the skewed agreement explained.
    assert page.locator(".campaign-nav a").count() >= 10
    assert "chance" in page.inner_text("[data-note=skew]")


def test_agreement_charts_are_wide_readable_and_count_in_whole_numbers(page, judged):
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{judged.slug}/agreement/")
    chart = page.locator("#alpha-per-system")
    assert chart.bounding_box()["width"] >= 800
    sizes = chart.locator("text").evaluate_all("ts => ts.map(t => parseFloat(getComputedStyle(t).fontSize))")
    assert min(sizes) >= 13
    ticks = page.locator("#worker-accuracy text.y-tick")
    values = [int(t) for t in ticks.all_text_contents()]
    assert values == list(range(0, values[-1] + 1, values[1] - values[0])) and values[-1] >= 2
    ys = [ticks.nth(i).bounding_box()["y"] for i in range(ticks.count())]
    gaps = {round(a - b) for a, b in zip(ys, ys[1:])}
    assert len(gaps) == 1  # evenly spaced on the screen
    assert "agree" in page.inner_text("[data-note=skew]")
