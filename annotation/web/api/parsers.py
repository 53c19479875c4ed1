"""The API's JSON parser: hostile JSON is a 400 naming the problem, never a server error."""

from __future__ import annotations

import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from annotation.importing.safe_json import JSONProblem, load_json


def check_storable(data) -> None:
    """Raise ValueError when ``data`` holds text that cannot be stored as UTF-8 (a lone surrogate such as ``\\ud800``)."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text holds a lone surrogate (e.g. \\ud800), which is not a character") from exc


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, reading through ``load_json``: every refusal is a 400 that says where.

    Python's decoder recurses once per nesting level (a body of a hundred
    thousand brackets exhausts the stack), refuses integers of more than 4,300
    digits in its own words, and accepts ``NaN``, ``Infinity`` and ``1e999``;
    ``load_json`` turns each into one message with line, column and field.
    JSON may also spell a lone surrogate (``"\\ud800"``) that no database
    column can store.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            text = stream.read().decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - the body is not valid {encoding}") from exc
        try:
            data = load_json(text)
            check_storable(data)
        except JSONProblem as exc:
            raise ParseError(f"JSON parse error - {exc.describe().removeprefix('bad JSON: ')}") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        return data
