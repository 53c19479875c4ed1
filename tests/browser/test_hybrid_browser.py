"""Budgeted presence (issue 22) as a researcher sees it in Chromium: the share typed in the settings form and
the saving it buys, the routing rounds on the progress page, and the saved curve drawn on the judges page."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from annotation.models import Campaign
from annotation.services.pipeline import launch_campaign
from tests.browser.conftest import log_in
from tests.judges.test_hybrid_campaign import budgeted_campaign, write_folder

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-test-password"  # the researcher fixture's


def _owned(campaign, researcher):
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    campaign.refresh_from_db()
    return campaign


def _watch_console(page):
    """Console errors (a script or style refused by the Content-Security-Policy is one) and uncaught page errors;
    not the HTTP statuses Chromium logs too (the form's 400, the missing favicon): the tests check those pages."""
    problems = []
    page.on("console", lambda message: problems.append(message.text) if (
        message.type == "error" and not message.text.startswith("Failed to load resource")
        or "Content Security Policy" in message.text) else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems


def test_the_share_typed_in_the_settings_form_shows_its_saving(page, tmp_path, researcher):
    campaign = _owned(budgeted_campaign(tmp_path, human_presence_share=1.0), researcher)
    problems = _watch_console(page)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/settings/")
    share = page.locator("#id_human_presence_share")
    assert share.input_value() == "1.0"
    assert page.locator("#cost-saving").count() == 0  # the paper's protocol saves nothing
    presence_hits = page.locator("#cost-preview tr[data-stage=presence] td").nth(1)
    assert presence_hits.inner_text() == "64"

    share.fill("0.25")
    with page.expect_navigation():
        page.click("#save-settings")
    assert "Settings saved." in page.inner_text("body")
    saving = page.locator("#cost-saving")
    assert saving.is_visible()
    text = saving.inner_text()
    assert "Human presence share 25%" in text and "people judge 16 of 64 presence HITs" in text
    assert saving.locator("strong").inner_text() == "$28.80"  # 48 HITs x 3 judges x $0.20 not paid to people
    assert presence_hits.inner_text() == "16"
    assert page.locator("#id_human_presence_share").input_value() == "0.25"
    campaign.refresh_from_db()
    assert campaign.human_presence_share == 0.25

    # Above 1: Chromium refuses to send the form (the field carries the model's bounds), says why, keeps the value.
    share = page.locator("#id_human_presence_share")
    share.fill("1.5")
    page.click("#save-settings")
    page.wait_for_timeout(300)
    assert page.url.endswith(f"/campaigns/{campaign.slug}/settings/")
    assert share.evaluate("field => field.validity.rangeOverflow") is True
    assert "1" in share.evaluate("field => field.validationMessage")
    assert share.input_value() == "1.5"
    campaign.refresh_from_db()
    assert campaign.human_presence_share == 0.25

    # A value only the server can refuse (an unknown judge): the page marks it, nothing is saved, what was typed
    # stays in the form, and the saving shown is still that of the saved values.
    share.fill("0.5")
    page.fill("#id_presence_judge", "oracle")
    with page.expect_navigation():
        page.click("#save-settings")
    assert page.locator(".errors-summary").is_visible()
    assert "unknown judge" in page.locator("#id_presence_judge").locator("xpath=..").inner_text()
    assert page.locator("#id_human_presence_share").input_value() == "0.5"
    assert page.locator("#id_presence_judge").input_value() == "oracle"
    assert "people judge 16 of 64 presence HITs" in page.inner_text("#cost-saving")
    campaign.refresh_from_db()
    assert campaign.human_presence_share == 0.25 and campaign.presence_judge == "lexical"
    assert problems == []


def test_the_progress_page_shows_the_routing_rounds(page, tmp_path, researcher, eager_celery):
    campaign = _owned(budgeted_campaign(tmp_path), researcher)  # share 0.5 in 2 rounds
    launch_campaign(campaign)  # the routing pass runs after the commit and opens round 1
    problems = _watch_console(page)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/progress/")
    page.wait_for_load_state("networkidle")
    assert page.locator("h2", has_text="Budgeted presence: rounds").is_visible()
    budget = page.locator("#routing-budget")
    assert budget.is_visible()
    text = " ".join(budget.inner_text().split())
    assert "Human presence share 50%: 16 of a budget of 32 presence HITs routed to people (0 done)" in text
    assert "out of 64 the paper's protocol would post" in text and "Round 1 of 2." in text
    rows = page.locator("#routing-rounds tbody tr")
    assert rows.count() == 1
    round_one = page.locator("#routing-rounds tr[data-round='1']")
    assert round_one.is_visible()
    cells = [c.strip() for c in round_one.locator("td").all_inner_texts()]
    assert cells[:5] == ["1", "open", "16", "0", "0"]
    assert cells[5].startswith("lexical")
    headers = [h.strip() for h in page.locator("#routing-rounds th").all_inner_texts()]
    assert headers[:4] == ["Round", "State", "HITs routed", "Done"]
    assert problems == []


def test_the_leaderboard_ranks_a_budgeted_campaign_on_the_hybrid_scores(page, tmp_path, researcher, eager_celery):
    """Human-only and hybrid rankings differ: the main table and the chart follow the hybrid scores; the human-only
    figures sit below under their own heading, with the summaries and units each rests on."""
    from contextlib import nullcontext

    from annotation.selectors.hybrid import hybrid_scores
    from tests.judges.test_hybrid_pages import _rankings_differ

    campaign = _rankings_differ(tmp_path, researcher, lambda execute: nullcontext())
    hybrid = hybrid_scores(campaign, fresh=True)["systems"]
    expected = sorted(hybrid, key=lambda name: -hybrid[name]["qapyramid"])
    problems = _watch_console(page)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/leaderboard/")
    main = page.locator("#leaderboard tbody tr")
    assert [main.nth(i).get_attribute("data-system") for i in range(main.count())] == expected
    headers = [h.strip() for h in page.locator("#leaderboard th").all_inner_texts()]
    assert headers[2] == "QAPyramid (human + judge)"
    assert expected[0] == "good" and expected[-1] == "poor"  # on human labels alone poor leads (1.000, one summary)
    chart_labels = [t.strip() for t in page.locator("#score-chart text[text-anchor=end]").all_text_contents()]
    assert chart_labels == expected
    heading = page.locator("h2", has_text="Human labels only (not a ranking)")
    assert heading.is_visible()
    # The secondary table comes after the ranking, and says what each figure rests on.
    assert page.locator("#leaderboard").bounding_box()["y"] < page.locator("#human-only-scores").bounding_box()["y"]
    poor = [c.strip() for c in page.locator("#human-only-scores tr[data-system=poor] td").all_inner_texts()]
    assert poor[0] == "poor" and poor[1] == "1.000" and poor[-2:] == ["1", "4"]
    assert problems == []


def test_the_judges_page_draws_the_saved_curve_beside_random(page, tmp_path, researcher, settings, capsys):
    settings.MODELS_DIR = tmp_path / "models"
    folder = write_folder(tmp_path / "curve-data", n_examples=10)
    call_command("evaluate_hybrid", folder=str(folder), folds=5, judge="lexical", curve=True, save="demo curve",
                 format="json")
    result = json.loads(capsys.readouterr().out)
    campaign = _owned(budgeted_campaign(tmp_path), researcher)
    problems = _watch_console(page)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/judges/")
    page.wait_for_load_state("networkidle")
    assert page.locator("#no-curves").count() == 0
    figures = page.locator("#hybrid-curves figure[data-curve='demo-curve']")
    assert figures.count() == 2
    routed_name = f"least sure first ({result['measure']})"
    for key in ("summary_pearson", "accuracy"):
        figure = page.locator(f"#hybrid-curves figure[data-figure='{key}']")
        svg = figure.locator("svg")
        assert svg.is_visible()
        chart = svg.bounding_box()
        assert chart["width"] >= 400 and chart["height"] >= 200
        assert "demo-curve" in figure.locator("figcaption").inner_text()
        lines = {}
        for name in (routed_name, "random HITs"):
            line = svg.locator(f"polyline[data-series='{name}']")
            assert line.count() == 1, name
            box = line.bounding_box()
            # Drawn: it has a width across the plot and lies inside the chart.
            assert box["width"] > chart["width"] / 2, name
            assert chart["x"] <= box["x"] and box["x"] + box["width"] <= chart["x"] + chart["width"], name
            assert chart["y"] <= box["y"] and box["y"] + box["height"] <= chart["y"] + chart["height"], name
            lines[name] = line.evaluate("l => ({stroke: getComputedStyle(l).stroke, dash: getComputedStyle(l).strokeDasharray,"
                                        " points: l.points.numberOfItems})")
            assert lines[name]["points"] == len(result["curve"]), name
        # Told apart on the screen: colour, and the random line dashed.
        assert lines[routed_name]["stroke"] != lines["random HITs"]["stroke"]
        assert lines["random HITs"]["dash"] not in ("none", "") and lines[routed_name]["dash"] == "none"
        # Each point says its value, and the values are the saved curve's.
        titles = svg.locator("circle title").all_text_contents()
        for point in result["curve"]:
            for side, name in (("routed", routed_name), ("random", "random HITs")):
                figures_ = point[side]
                assert f"{name}: {figures_['human_share']:.1f} → {figures_[key]:.3f}" in titles
        # The legend names both lines, readable: its labels do not run into each other.
        legend = [t for t in svg.locator("text").all() if t.text_content() in (routed_name, "random HITs")]
        assert sorted(t.text_content() for t in legend) == sorted([routed_name, "random HITs"])
        a, b = (t.bounding_box() for t in legend)
        apart = (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                 or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])
        assert apart, (a, b)
        for box in (a, b):
            assert chart["x"] <= box["x"] and box["x"] + box["width"] <= chart["x"] + chart["width"]
            assert chart["y"] <= box["y"] and box["y"] + box["height"] <= chart["y"] + chart["height"]
    assert problems == []
