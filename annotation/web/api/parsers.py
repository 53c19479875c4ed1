"""The API's JSON parser: hostile JSON is a 400 naming the problem, never a server error."""

from __future__ import annotations

import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def check_storable(data) -> None:
    """Raise ValueError when ``data`` holds text that cannot be stored as UTF-8 (a lone surrogate such as ``\\ud800``)."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text holds a lone surrogate (e.g. \\ud800), which is not a character") from exc


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, with two more refusals as a 400.

    Python's decoder recurses once per nesting level: a body of a hundred
    thousand brackets exhausts the stack (RecursionError, a 500).  And JSON may
    spell a lone surrogate (``"\\ud800"``) that no database column can store.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        try:
            check_storable(data)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        return data
