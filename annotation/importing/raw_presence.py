"""Reader of a raw presence file in the released QAPyramid format, as presence HITs in the file's order.

The format (``QA_presence.json``, see ``annotation.services.raw_import``)::

    {system: {example_id: {predicate_id: {"<question> <answer>": [[worker_id, 0 or 1], ...]}}}}

One HIT per (system, predicate): its pairs are the predicate's QA pairs, their
judgments in the listed order.  The first problem found stops the reading with a
``RawPresenceError`` naming the line and column (a JSON syntax error) or the key
path (``["bart"]["0281..."]["0281..._7"]["Who gave something? Police"][2][1]``).
"""

from __future__ import annotations

import json
from pathlib import Path

from annotation.importing.safe_json import JSONProblem, load_json
from annotation.scoring.replay import PresenceHIT


class RawPresenceError(ValueError):
    """The file is not a raw presence file; the message names the place and the problem."""


def key_path(*parts) -> str:
    """``["bart"]["ex"][2]``: object keys quoted (they hold spaces and dots), list positions bare."""
    return "".join(f"[{p}]" if isinstance(p, int) else f"[{json.dumps(p, ensure_ascii=False)}]" for p in parts)


def _kind(value) -> str:
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}.get(type(value), "a value")


def read_raw_presence(path: Path | str) -> list[PresenceHIT]:
    """The file's presence HITs in order; a ``RawPresenceError`` on the first problem."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RawPresenceError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise RawPresenceError(f"{path}: is a folder, not a file") from None
    except OSError as exc:
        raise RawPresenceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not raw.strip():
        raise RawPresenceError(f"{path.name}: the file is empty")
    try:
        data = load_json(raw)
    except JSONProblem as exc:
        raise RawPresenceError(f"{path.name}: {exc.describe()}") from None
    return parse_raw_presence(data, path.name)


def parse_raw_presence(data, file_name: str = "the file") -> list[PresenceHIT]:
    """Check the decoded JSON value against the format and return its HITs in order."""

    def refuse(parts, problem):
        where = f" at {key_path(*parts)}" if parts else ""
        raise RawPresenceError(f"{file_name}{where}: {problem}")

    if not isinstance(data, dict):
        refuse([], f"expected a JSON object of systems ({{system: {{example: {{predicate: {{QA pair: judgments}}}}}}}}), found {_kind(data)}")
    if not data:
        refuse([], "the object of systems is empty: nothing to replay")
    hits: list[PresenceHIT] = []
    for system, examples in data.items():
        if not isinstance(examples, dict):
            refuse([system], f"expected an object of examples, found {_kind(examples)}")
        for example, predicates in examples.items():
            if not isinstance(predicates, dict):
                refuse([system, example], f"expected an object of predicates, found {_kind(predicates)}")
            for predicate, pairs in predicates.items():
                if not isinstance(pairs, dict) or not pairs:
                    found = "an empty object" if isinstance(pairs, dict) else _kind(pairs)
                    refuse([system, example, predicate], f"expected an object of QA pairs, found {found}")
                labels_of_pairs = []
                for pair, judgments in pairs.items():
                    if not isinstance(judgments, list) or not judgments:
                        found = "an empty list" if isinstance(judgments, list) else _kind(judgments)
                        refuse([system, example, predicate, pair], f"expected a list of [worker id, label] judgments, found {found}")
                    labels = []
                    for i, judgment in enumerate(judgments):
                        if not isinstance(judgment, list) or len(judgment) != 2:
                            refuse([system, example, predicate, pair, i], f"expected [worker id, label], found {json.dumps(judgment)[:80]}")
                        worker, label = judgment
                        if not isinstance(worker, str) or not worker.strip():
                            refuse([system, example, predicate, pair, i, 0], f"the worker id must be a non-empty string, found {json.dumps(worker)[:80]}")
                        if isinstance(label, bool) or label not in (0, 1):
                            refuse([system, example, predicate, pair, i, 1], f"the label must be 0 (not present) or 1 (present), found {json.dumps(label)[:80]}")
                        labels.append(int(label))
                    labels_of_pairs.append(tuple(labels))
                hits.append(PresenceHIT(system, example, predicate, tuple(labels_of_pairs)))
    return hits
