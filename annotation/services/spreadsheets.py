"""Every CSV file the platform writes goes through ``csv_writer``: no cell a spreadsheet would run as a formula.

A formula character is ``=``, ``+``, ``-`` or ``@`` (or their full-width forms ``＝ ＋ － ＠``, which
spreadsheets fold to the ASCII ones).  A cell of text is written with a leading single quote when

- it starts with a formula character, a tab or a carriage return, or
- anywhere inside it, a separator a spreadsheet may split a pasted or re-imported cell on (``;``,
  ``,``, a tab or a carriage return) is directly followed by a formula character (``x;=2+2``,
  ``a;@A1``, ``b,-2+3``, ``c<tab>=1+1``): the piece after the separator would start with a formula.

The spreadsheet then shows the cell as text, and a reader sees the quote.  Text comes from workers,
researchers and uploaded files (user names such as ``@A1`` or ``-2+3``, ids, questions, system names).

Numbers are data, not formulas: an ``int``, ``float`` or ``Decimal`` the platform computed (a score
of ``-0.5``, an amount owed) is written as the number, so the column stays numeric.  Only text is
quoted.  The check is one compiled regular expression per distinct text (a CSV repeats the same ids,
names and questions on many rows: each is checked once per file).
"""

from __future__ import annotations

import csv
import re
from decimal import Decimal

FORMULA_CHARS = "=+-@\uff1d\uff0b\uff0d\uff20"
#: Characters a cell may not start with (a formula character, or a tab / CR a spreadsheet may strip first).
FORMULA_START = tuple(FORMULA_CHARS) + ("\t", "\r")
#: Separators a spreadsheet may split a cell on: one directly followed by a formula character is quoted.
SEPARATORS = ";,\t\r"
_CHARS = re.escape(FORMULA_CHARS)
RISKY = re.compile(rf"\A[{_CHARS}\t\r]|[{re.escape(SEPARATORS)}][{_CHARS}]")

#: How many distinct texts a writer remembers the verdict of (a bound on its memory).
_MEMO_SIZE = 100_000


def _is_risky(text: str) -> bool:
    return RISKY.search(text) is not None


def spreadsheet_safe(value) -> str | int | float | Decimal:
    """The cell to write for ``value``: numbers as they are, text quoted when a spreadsheet would run it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, Decimal)):
        return value
    text = str(value)
    return "'" + text if _is_risky(text) else text


class SafeWriter:
    """``csv.writer`` whose every cell passes through ``spreadsheet_safe`` (text checked once per distinct value)."""

    def __init__(self, target, **options):
        self._writer = csv.writer(target, **options)
        self._memo: dict[str, str] = {}

    def _text(self, text: str) -> str:
        safe = self._memo.get(text)
        if safe is None:
            safe = "'" + text if _is_risky(text) else text
            if len(self._memo) < _MEMO_SIZE:
                self._memo[text] = safe
        return safe

    def _cells(self, row) -> list:
        cells = []
        for cell in row:
            kind = type(cell)
            if kind is str:
                cells.append(self._text(cell))
            elif kind is int or kind is float or kind is Decimal:
                cells.append(cell)
            else:
                cells.append(spreadsheet_safe(cell))
        return cells

    def writerow(self, row):
        return self._writer.writerow(self._cells(row))

    def writerows(self, rows):
        self._writer.writerows(self._cells(row) for row in rows)


def csv_writer(target, **options) -> SafeWriter:
    """The one way to write a CSV file or response (``target``: an open text file or an ``HttpResponse``)."""
    return SafeWriter(target, **options)
