"""The leaderboard's matrix of every pair of systems on a 390 px phone: ten systems (45 pairs), the matrix scrolls
inside its box, the page does not, and the method and the separated marks are readable."""

from __future__ import annotations

import pytest

from annotation.services.raw_import import import_qapyramid_raw
from tests.browser.conftest import log_in
from tests.scoring.test_pairs_campaign import _raw

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-test-password"


@pytest.mark.parametrize("width", [390, 1280])
def test_the_pair_matrix_fits_a_phone_and_a_screen(page, tmp_path, researcher, width):
    quality = {f"summarizer-with-a-long-name-{i:02d}": 0.1 + 0.08 * i for i in range(10)}
    import_qapyramid_raw(_raw(tmp_path, quality=quality, n_examples=8), name="Ten systems", owner=researcher)
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "rita", PASSWORD)
    page.goto("/campaigns/ten-systems/leaderboard/")
    section = page.locator("#pairs-section")
    assert section.get_attribute("data-pairs-method") == "paired-t+holm"
    method = page.locator("#pairs-method")
    assert "Holm" in method.inner_text() and method.bounding_box()["width"] <= width
    matrix = page.locator("#pair-matrix")
    assert matrix.locator("tbody tr").count() == 9 and matrix.locator("thead th[scope=col]").count() == 9
    assert matrix.locator("td[data-separated]").count() == 45
    # The matrix's box stays on the screen (the matrix scrolls inside it); the section does not widen the page.
    box = page.locator("#pairs-section .table-scroll").first.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5
    assert page.evaluate("document.querySelector('#pairs-section').scrollWidth") <= width
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # the ranking's wide tables scroll in boxes too
    # The best against the worst is separated, and its mark is readable once scrolled to.
    cell = matrix.locator("tr[data-system='summarizer-with-a-long-name-09'] td[data-against='summarizer-with-a-long-name-00']")
    assert cell.get_attribute("data-separated") == "yes"
    cell.scroll_into_view_if_needed()
    assert cell.is_visible() and "●" in cell.inner_text()
    # The row's name stays in view beside it (a sticky first column).
    name = matrix.locator("tr[data-system='summarizer-with-a-long-name-09'] th[scope=row]").bounding_box()
    assert 0 <= name["x"] and name["x"] + name["width"] <= cell.bounding_box()["x"] + 0.5
    # Every pair's figures one click away.
    page.click("#pairs-details summary")
    assert page.locator("#pairs tbody tr").count() == 45
