"""The one JSON parser for text that comes from outside (uploads, command-line files, API bodies).

Python's ``json.loads`` has four ways to fail on hostile text that are not a
``JSONDecodeError``: an integer of more than ``sys.get_int_max_str_digits()``
digits (a ``ValueError`` with Python's own wording), nesting deep enough to
exhaust the stack (``RecursionError``), and the literals ``NaN``, ``Infinity``
and ``-Infinity`` or a float such as ``1e999`` that it quietly accepts as
values no database column or JSON response can hold.  ``load_json`` refuses
all of them with one ``JSONProblem`` that names the line, column and field
(the path of keys and list positions down to the value).
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass

# The most digits an integer may have: Python's own conversion limit (4,300 by default).  No field of
# any file the platform reads needs more than a few dozen; this only keeps the decoder from failing.
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300


class JSONProblem(ValueError):
    """Text that is not JSON the platform can use; ``message`` says why, ``line``/``column``/``field`` where."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None, field: str | None = None):
        self.message, self.line, self.column, self.field = message, line, column, field
        super().__init__(self.describe())

    def with_column(self) -> str:
        """The message and column, for a problem list that gives the line and field in their own columns."""
        return self.message + (f" at column {self.column}" if self.column is not None else "")

    def describe(self) -> str:
        """One line: the problem and where it is (without the file name, which the caller adds)."""
        where = []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.column is not None:
            where.append(f"column {self.column}")
        if self.field:
            where.append(f"field {self.field}")
        return self.message + (f" ({', '.join(where)})" if where else "")


@dataclass(frozen=True)
class _Refused:
    """Stands in for a value the decoder met but the platform cannot hold, until its place is known."""

    text: str
    reason: str


def _refusing_hooks(refused: list):
    """Decoder hooks that put a ``_Refused`` in place of a value the platform cannot hold (and note it)."""

    def refuse(text: str, reason: str):
        refused.append(_Refused(text, reason))
        return refused[-1]

    def parse_int(text: str):
        digits = len(text.lstrip("-"))
        if digits > MAX_INT_DIGITS:
            return refuse(text, f"an integer of {digits:,} digits (the limit is {MAX_INT_DIGITS:,})")
        return int(text)

    def parse_float(text: str):
        value = float(text)
        if not math.isfinite(value):
            return refuse(text, f"the number {text[:20]}{'...' if len(text) > 20 else ''} is too large to store")
        return value

    def parse_constant(text: str):
        return refuse(text, f"{text} is not a number JSON allows")

    return {"parse_int": parse_int, "parse_float": parse_float, "parse_constant": parse_constant}


def _first_refused(value, path: str = ""):
    """(path, refused) of the first refused value in document order, or None."""
    if isinstance(value, _Refused):
        return path, value
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, _Refused):  # cannot happen: keys are strings
                continue
            found = _first_refused(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_refused(item, f"{path}[{index}]")
            if found:
                return found
    return None


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored in a text column (PostgreSQL refuses NUL in text and JSON, and UTF-8 has
    no lone surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which the database cannot store"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (e.g. \\ud800), which is not a character"
    return None


def first_unstorable(value, path: str = ""):
    """(path, reason) of the first text of ``value`` (keys included) that ``unstorable`` refuses, or None."""
    try:  # one pass in C for the usual case, where nothing is refused (json.dumps writes a NUL as \\u0000)
        if "\\u0000" not in json.dumps(value, ensure_ascii=False).encode("utf-8").decode("utf-8"):
            return None
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        pass  # a lone surrogate, or a value JSON cannot write: the walk below says where
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            reason = unstorable(item)
            if reason:
                return where, reason
        elif isinstance(item, dict):
            for key in item:
                reason = unstorable(key) if isinstance(key, str) else None
                if reason:
                    return (f"{where}.{key!r}" if where else repr(key)), f"a key {reason}"
            stack.extend(reversed([(f"{where}.{key}" if where else str(key), v) for key, v in item.items()]))
        elif isinstance(item, list):
            stack.extend(reversed([(f"{where}[{i}]", v) for i, v in enumerate(item)]))
    return None


# Tokens of text already known to be JSON: a string (skipped), or a number or literal outside strings.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|NaN|-?Infinity)')


def _position(text: str, refused: _Refused) -> tuple[int, int] | tuple[None, None]:
    for match in _TOKENS.finditer(text):
        if match.group(1) is not None and match.group(1) == refused.text:
            start = match.start(1)
            line = text.count("\n", 0, start) + 1
            return line, start - (text.rfind("\n", 0, start) + 1) + 1
    return None, None


def load_json(text: str | bytes, *, first_line: int = 1, storable: bool = True):
    """``json.loads(text)`` for text from outside; every refusal is a ``JSONProblem``.

    ``first_line`` is the line number of the text's first line (a JSONL reader passes the line it parses).
    With ``storable`` a text the database cannot store (``unstorable``: NUL, lone surrogate) is refused too,
    naming its field; a caller that names the item in its own words (qualification definitions) checks later.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONProblem(f"not valid UTF-8 (byte 0x{text[exc.start]:02x} at offset {exc.start})") from None
    refused: list[_Refused] = []
    try:
        data = json.loads(text, **_refusing_hooks(refused))
    except json.JSONDecodeError as exc:
        raise JSONProblem(f"bad JSON: {exc.msg}", exc.lineno + first_line - 1, exc.colno) from None
    except RecursionError:  # the decoder recurses once per level: thousands of brackets exhaust the stack
        raise JSONProblem("bad JSON: nested too deeply", first_line) from None
    if storable and ("\\u" in text or "\x00" in text):
        try:
            found = first_unstorable(data)
        except RecursionError:
            found = None
        if found:
            raise JSONProblem(found[1], field=found[0] or None)
    if refused:
        try:
            field, first = _first_refused(data) or ("", refused[0])
        except RecursionError:
            field, first = "", refused[0]
        line, column = _position(text, first)
        raise JSONProblem(
            f"bad JSON: {first.reason}",
            None if line is None else line + first_line - 1,
            column,
            field or None,
        )
    return data
