"""Every CSV file the platform writes goes through ``csv_writer``: no cell a spreadsheet would run as a formula.

A cell of text that starts with ``=``, ``+``, ``-`` or ``@`` (or their
full-width forms ``＝ ＋ － ＠``, which spreadsheets fold to the ASCII ones),
a tab or a carriage return, or that holds ``;=`` or ``,=`` (a separator a
spreadsheet may split on, then a formula), is written with a leading single
quote: the spreadsheet shows it as text, and a reader sees the quote.  Text
comes from workers, researchers and uploaded files (user names such as
``@A1`` or ``-2+3``, ids, questions, system names).

Numbers are data, not formulas: an ``int``, ``float`` or ``Decimal`` the
platform computed (a score of ``-0.5``, an amount owed) is written as the
number, so the column stays numeric.  Only text is quoted.
"""

from __future__ import annotations

import csv
from decimal import Decimal

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
FORMULA_INSIDE = (";=", ",=")


def spreadsheet_safe(value) -> str | int | float | Decimal:
    """The cell to write for ``value``: numbers as they are, text quoted when a spreadsheet would run it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, Decimal)):
        return value
    text = str(value)
    if text.startswith(FORMULA_START) or any(mark in text for mark in FORMULA_INSIDE):
        return "'" + text
    return text


class SafeWriter:
    """``csv.writer`` whose every cell passes through ``spreadsheet_safe``."""

    def __init__(self, target, **options):
        self._writer = csv.writer(target, **options)

    def writerow(self, row):
        return self._writer.writerow([spreadsheet_safe(cell) for cell in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def csv_writer(target, **options) -> SafeWriter:
    """The one way to write a CSV file or response (``target``: an open text file or an ``HttpResponse``)."""
    return SafeWriter(target, **options)
