"""Readable charts: sizes, whole-number ticks for counts, zero-width intervals marked, skew explained."""

from __future__ import annotations

import re

import pytest

from annotation.web.charts import count_step, histogram_chart, interval_chart
from annotation.web.views.agreement import skew_note


def _ticks(svg: str) -> list[int]:
    return [int(t) for t in re.findall(r'class="y-tick">(\d+)<', svg)]


@pytest.mark.parametrize(("highest", "ticks"), [(3, [0, 1, 2, 3]), (1, [0, 1]), (0, [0, 1]), (7, [0, 2, 4, 6, 8]), (40, [0, 10, 20, 30, 40])])
def test_histogram_counts_have_evenly_spaced_whole_ticks(highest, ticks):
    svg = str(histogram_chart([highest, 0], [0.0, 0.5, 1.0]))
    assert _ticks(svg) == ticks  # it used to read 0, 1, 3


def test_count_step_is_a_round_number():
    assert [count_step(n) for n in (2, 9, 23, 180, 999)] == [1, 5, 10, 50, 500]


def test_charts_are_wide_with_readable_labels_and_scale_down():
    svg = str(interval_chart([{"label": "batch 1", "value": 0.5, "lo": 0.4, "hi": 0.6}]))
    width = int(re.search(r'width="(\d+)"', svg).group(1))
    sizes = {int(s) for s in re.findall(r'font-size="(\d+)"', svg)}
    assert width >= 800 and min(sizes) >= 13 and 'viewBox="0 0 ' in svg


def test_a_zero_width_interval_is_drawn_so_it_can_be_seen():
    svg = str(interval_chart([{"label": "batch 3", "value": 0.681, "lo": 0.681, "hi": 0.681}]))
    assert 'class="zero-width"' in svg and "interval of zero width [0.681, 0.681]" in svg


def test_low_alpha_beside_high_agreement_is_explained():
    line = skew_note({"alpha": -0.011, "percent": 0.958, "positive_share": 0.97}, "Verification", "valid")
    assert "-0.011" in line and "95.8%" in line and "97.0%" in line and "valid" in line and "chance" in line
    assert skew_note({"alpha": 0.7, "percent": 0.95, "positive_share": 0.6}, "Presence", "present") == ""


def test_every_chart_names_its_axes():
    """Issue 40: the reliability plot had no y-axis label."""
    from annotation.web.charts import line_chart

    line = str(line_chart([{"name": "judge", "points": [(0.1, 0.2)], "color": "#000"}], x_label="predicted probability",
                          y_label="share present"))
    hist = str(histogram_chart([1, 2], [0.0, 0.5, 1.0], x_label="accuracy", y_label="judges"))
    alpha = str(interval_chart([{"label": "s", "value": 0.5, "lo": 0.4, "hi": 0.6}], y_label="Krippendorff's alpha"))
    assert re.search(r'class="y-label" transform="rotate\(-90 [\d.]+ [\d.]+\)">share present<', line)
    assert 'class="x-label">predicted probability<' in line
    assert 'class="y-label"' in hist and 'class="x-label">accuracy<' in hist
    assert "Krippendorff&#x27;s alpha</text>" in alpha
