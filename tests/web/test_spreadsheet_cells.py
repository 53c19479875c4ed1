"""No CSV the platform writes holds a cell a spreadsheet would run (issue 27, L4).

The payout CSV wrote user names such as ``@A1``, ``+1+1`` and ``-2+3`` raw, and the export's
neutralising missed ``x;=2+2`` and the full-width ``＝4+4``.  Every CSV now goes through
``annotation.services.spreadsheets.csv_writer``; numbers the platform computed stay numbers."""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from annotation.models import ContentUnit, Example, System, Verification
from annotation.services.export import export_campaign
from annotation.services.spreadsheets import csv_writer, spreadsheet_safe
from hits.models import Worker
from tests.web.conftest import settle_with_kept_pairs
from tests.web.test_agreement_review import _judge

HOSTILE = ["@A1", "+1+1", "-2+3", "=1+1", "\tx", "\rx", "x;=2+2", "a,=b", "\uff1d4+4", "\uff0b1", "\uff0d1", "\uff20A1"]


@pytest.mark.parametrize("text", HOSTILE)
def test_formula_text_is_quoted(text):
    assert spreadsheet_safe(text) == "'" + text


#: Issue 40: every separator followed by a formula character is treated as ``;=`` always was (quoted);
#: a formula character that does not directly follow a separator is plain text.
SEPARATOR_CASES = [
    ("x;=2+2", True), ("x;@A1", True), ("x;+1+1", True), ("x;-2+3", True),
    ("a,=b", True), ("a,@b", True), ("a,+b", True), ("a,-b", True),
    ("x\t=1+1", True), ("x\t@A1", True), ("x\t+1", True), ("x\t-1", True),
    ("x\r=1+1", True), ("x\r@A1", True), ("x\r+1", True), ("x\r-1", True),
    ("x;\uff1d1", True), ("x,\uff20A1", True), ("x\t\uff0b1", True), ("x\r\uff0d1", True),
    ("x; =1", False), ("a, -b", False), ("x;y=1", False), ("e-mail", False), ("a = b", False), ("x;", False),
    ("x\ty", False), ("name@example.org", False), ("3+4", False), ("a\n=b", False),
]


@pytest.mark.parametrize("text,quoted", SEPARATOR_CASES)
def test_separator_then_formula_is_quoted_like_semicolon_equals(text, quoted):
    assert spreadsheet_safe(text) == ("'" + text if quoted else text)


@pytest.mark.parametrize("text,quoted", SEPARATOR_CASES + [(t, True) for t in HOSTILE])
def test_the_writer_quotes_the_same_cells_on_every_row(text, quoted):
    buffer = io.StringIO()
    writer = csv_writer(buffer)
    writer.writerow([text, 1])
    writer.writerows([[text, -0.5], [text, Decimal("-1.25")]])
    expected = "'" + text if quoted else text
    assert list(csv.reader(io.StringIO(buffer.getvalue()))) == [[expected, "1"], [expected, "-0.5"], [expected, "-1.25"]]


def test_numbers_and_plain_text_are_kept():
    assert [spreadsheet_safe(v) for v in (-0.5, Decimal("-1.25"), 3, None, True, "plain", "a = b", "e-mail")] == [
        -0.5, Decimal("-1.25"), 3, "", 1, "plain", "a = b", "e-mail",
    ]


@pytest.mark.django_db
def test_payout_csv_quotes_worker_names(draft, client_rita, rita):
    from annotation.services.pipeline import launch_campaign
    from hits import payments
    from hits.models import HIT
    from tests.web.test_payouts import _submitted

    launch_campaign(draft)
    draft.refresh_from_db()
    hit = HIT.objects.filter(batch_id=draft.batch_id).first()
    names = ["@A1", "+1+1", "-2+3", "\uff1d4+4"]
    for name in names:
        payments.approve_assignment(_submitted(hit, Worker.objects.create(external_id=name)), by=rita)
    response = client_rita.get(f"/campaigns/{draft.slug}/payouts/?format=csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert sorted(row["worker"] for row in rows) == sorted(["'" + name for name in names] + ["TOTAL"])
    assert all(Decimal(row["owed"]) == hit.reward for row in rows if row["worker"] != "TOTAL")


@pytest.mark.django_db
def test_export_quotes_semicolon_and_full_width_formulas(draft, tmp_path):
    settle_with_kept_pairs(draft)
    System.objects.filter(campaign=draft, name="s1").update(name="x;=2+2")
    Example.objects.filter(campaign=draft, external_id="a").update(external_id="\uff1d4+4")
    workers, _ = _judge(draft, lambda i, u, s: i != 1)
    Worker.objects.filter(pk=workers[0].pk).update(external_id="-2+3")
    unit = ContentUnit.objects.filter(example__campaign=draft, state="kept", example__external_id="\uff1d4+4").first()
    Verification.objects.create(unit=unit, worker=Worker.objects.create(external_id="a,=b"), valid=True, answers=unit.answers)
    export_campaign(draft, tmp_path / "out")
    out = tmp_path / "out"
    systems = [row["system"] for row in csv.DictReader((out / "systems.csv").open(encoding="utf-8"))]
    assert sorted(systems) == ["'x;=2+2", "s2"]
    judgments = list(csv.DictReader((out / "judgments.csv").open(encoding="utf-8")))
    assert {row["system"] for row in judgments} == {"'x;=2+2", "s2"}
    assert "'\uff1d4+4" in {row["example"] for row in judgments} and "'-2+3" in {row["worker"] for row in judgments}
    verdicts = list(csv.DictReader((out / "verifications.csv").open(encoding="utf-8")))
    assert [(row["example"], row["worker"]) for row in verdicts] == [("'\uff1d4+4", "'a,=b")]
    # No unquoted formula cell anywhere in the three files.
    for name in ("systems.csv", "judgments.csv", "verifications.csv"):
        for row in csv.reader((out / name).open(encoding="utf-8")):
            for cell in row:
                numeric = re.fullmatch(r"-?[\d.]+(e-?\d+)?", cell)
                assert cell.startswith("'") or numeric or spreadsheet_safe(cell) == cell, (name, cell)


def test_every_csv_is_written_through_the_one_function():
    """A new CSV download must use ``csv_writer``: no other module makes a csv writer."""
    root = Path(__file__).resolve().parents[2]
    offenders = []
    for package in ("annotation", "hits", "config"):
        for path in (root / package).rglob("*.py"):
            if path.name == "spreadsheets.py":
                continue
            text = path.read_text(encoding="utf-8")
            if re.search(r"\bcsv\.(writer|DictWriter)\b|\bfrom csv import\b", text):
                offenders.append(str(path.relative_to(root)))
    assert offenders == []
