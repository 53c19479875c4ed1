"""Readers for the files a campaign is imported from.

Every reader checks the whole file and collects every problem it finds,
each naming the file, the line and the field, so that a researcher fixes a
file once rather than one error per attempt.  Readers never touch the
database; ``annotation.services.campaign_import`` writes what they return,
all or nothing.

Formats (see docs/reference/data-formats.md, "Importing a campaign"):

- references: JSONL lines ``{"id", "reference", "source"?}`` or CSV with
  the same column names;
- summaries: JSONL lines ``{"id", "system", "summary"}``, or a directory of
  ``<system>.summary`` files whose lines align with the directory's
  ``ids.txt``;
- predicates: JSONL lines ``{"id", "start", "end", "lemma"?}`` with character
  offsets into the reference text;
- a folder in the REALSumm/PyrXSum layout: ``ids.txt``, ``references.txt``,
  optional ``documents.txt``, ``summaries/*.summary``, and optionally
  ``SCUs.txt`` with ``labels/*.label`` (gold presence of each SCU);
- the released QAPyramid data set: JSONL lines ``{"example_id", "reference",
  "source"?, "QAs", "QA_labels", "system_outputs"}`` (other keys ignored).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from annotation.importing.safe_json import JSONProblem, load_json
from annotation.text.predicates import strip_sentence_tags


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file."""

    file: str
    line: int | None
    field: str | None
    message: str
    # For nested JSON without useful line numbers: the keys leading to the problem.
    path: str | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f", line {self.line}"
        if self.path:
            where += f", at {self.path}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"


class CampaignImportError(Exception):
    """Raised with every problem found; nothing has been written."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        first = str(self.problems[0]) if self.problems else "import failed"
        more = len(self.problems) - 1
        super().__init__(first + (f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""))


class ProblemList(list):
    """Collects problems; stops growing past a cap so a broken file cannot flood memory."""

    cap = 200

    def add(self, file, line, field_name, message):
        if len(self) < self.cap:
            self.append(Problem(str(file), line, field_name, message))

    def raise_if_any(self):
        if self:
            raise CampaignImportError(list(self))


@dataclass
class ReferenceRecord:
    id: str
    reference: str
    source: str
    line: int
    # Sentence spans given by the file itself (``<t>`` tags), else None.
    sentence_bounds: list[tuple[int, int]] | None = None


@dataclass
class SummaryRecord:
    id: str
    system: str
    summary: str
    file: str
    line: int


@dataclass
class PredicateRecord:
    id: str
    start: int
    end: int
    lemma: str
    line: int


@dataclass
class UnitLabels:
    """SCUs per example and the gold labels per (system, example)."""

    units: dict[str, list[str]] = field(default_factory=dict)
    labels: dict[str, dict[str, list[int]]] = field(default_factory=dict)


def _display(path: Path) -> str:
    return path.name if path.name else str(path)


def read_lines(path: Path, problems: ProblemList, *, required: bool = True) -> list[str] | None:
    """Read a text file as UTF-8 lines, reporting size, encoding and line-count problems."""
    name = _display(path)
    if not path.exists():
        if required:
            problems.add(name, None, None, f"file not found: {path}")
        return None
    if not path.is_file():
        problems.add(name, None, None, "is not a file")
        return None
    size = path.stat().st_size
    if size > settings.IMPORT_MAX_BYTES:
        problems.add(name, None, None, f"file is {size:,} bytes; the limit is {settings.IMPORT_MAX_BYTES:,}")
        return None
    return decode_lines(path.read_bytes(), name, problems)


def decode_lines(raw: bytes, name: str, problems: ProblemList) -> list[str] | None:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    raw_lines = raw.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    if len(raw_lines) > settings.IMPORT_MAX_LINES:
        problems.add(name, None, None, f"file has {len(raw_lines):,} lines; the limit is {settings.IMPORT_MAX_LINES:,}")
        return None
    lines, bad = [], False
    for number, chunk in enumerate(raw_lines, start=1):
        if chunk.endswith(b"\r"):
            chunk = chunk[:-1]
        try:
            lines.append(chunk.decode("utf-8"))
        except UnicodeDecodeError as exc:
            problems.add(
                name, number, None, f"not valid UTF-8 (byte 0x{chunk[exc.start]:02x} at column {exc.start + 1})"
            )
            bad = True
    return None if bad else lines


def _looks_like_csv(path: Path, lines: list[str]) -> bool:
    if path.suffix.lower() in {".csv", ".tsv"}:
        return True
    if path.suffix.lower() in {".jsonl", ".json", ".ndjson"}:
        return False
    first = next((line for line in lines if line.strip()), "")
    return not first.lstrip().startswith("{")


def _json_objects(name: str, lines: list[str], problems: ProblemList):
    """Yield (line number, object) for each non-blank JSONL line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = load_json(line)
        except JSONProblem as exc:
            problems.add(name, number, exc.field, exc.with_column())
            continue
        if not isinstance(obj, dict):
            problems.add(name, number, None, f"expected a JSON object, found {type(obj).__name__}")
            continue
        yield number, obj


def _text_field(obj, key, name, number, problems, *, required=True, allow_empty=False) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            problems.add(name, number, key, "missing")
        return None if required else ""
    if isinstance(value, (int,)) and not isinstance(value, bool) and key == "id":
        value = str(value)
    if not isinstance(value, str):
        problems.add(name, number, key, f"must be a string, found {type(value).__name__}")
        return None
    if not allow_empty and "\x00" not in value and not value.strip():
        problems.add(name, number, key, "is empty")
        return None
    return check_text(value, key, name, number, problems)


def check_text(value: str, kind: str, name, number, problems, *, field: str | None = None) -> str | None:
    """``value`` if it can be stored as a ``kind`` (``text_limit``): no NUL, no lone surrogate, not too long;
    else None with the problem under ``field`` (default: ``kind``).  Every reader checks its texts here."""
    field = field or kind
    if "\x00" in value:
        problems.add(name, number, field, "contains a NUL character")
        return None
    if _has_lone_surrogate(value):
        problems.add(name, number, field, "contains a lone surrogate (e.g. \\ud800), which is not a character")
        return None
    limit = text_limit(kind)
    if limit is not None and len(value) > limit:
        problems.add(name, number, field, f"is {len(value):,} characters long; the limit is {limit:,}")
        return None
    return value


def text_limit(key: str) -> int | None:
    """The most characters a field of an imported line may hold (ids and system names: their columns;
    texts: what a HIT page and predicate detection can carry, ``IMPORT_MAX_*_CHARS``)."""
    return {
        "id": 200,
        "example_id": 200,
        "system": 200,
        "reference": settings.IMPORT_MAX_REFERENCE_CHARS,
        "summary": settings.IMPORT_MAX_SUMMARY_CHARS,
        "source": settings.IMPORT_MAX_SOURCE_CHARS,
    }.get(key)


def _has_lone_surrogate(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def read_references(path: Path, problems: ProblemList) -> list[ReferenceRecord]:
    """References as JSONL ``{"id", "reference", "source"?}`` or CSV with those columns."""
    name = _display(path)
    lines = read_lines(path, problems)
    if lines is None:
        return []
    records: list[ReferenceRecord] = []
    rows = _csv_rows(name, lines, problems) if _looks_like_csv(path, lines) else _json_objects(name, lines, problems)
    for number, obj in rows:
        ex_id = _text_field(obj, "id", name, number, problems)
        reference = _text_field(obj, "reference", name, number, problems)
        source = _text_field(obj, "source", name, number, problems, required=False, allow_empty=True)
        if ex_id is None or reference is None or source is None:
            continue
        records.append(ReferenceRecord(ex_id.strip(), reference, source, number))
    if not records and not problems:
        problems.add(name, None, None, "contains no references")
    _check_unique_ids(name, records, problems)
    return records


def _csv_rows(name: str, lines: list[str], problems: ProblemList):
    reader = csv.DictReader(io.StringIO("\n".join(lines) + "\n"), strict=True)
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        problems.add(name, 1, None, f"bad CSV header: {exc}")
        return
    for required in ("id", "reference"):
        if required not in header:
            problems.add(name, 1, required, "column missing from the CSV header")
    if problems:
        return
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.add(name, reader.line_num, None, f"bad CSV: {exc}")
            return
        if None in row:
            problems.add(name, reader.line_num, None, "more values than columns in the header")
            continue
        if all(not (value or "").strip() for value in row.values()):
            continue
        yield reader.line_num, {k: v for k, v in row.items() if v is not None}


def _check_unique_ids(name: str, records: list[ReferenceRecord], problems: ProblemList) -> None:
    first_line: dict[str, int] = {}
    for record in records:
        if record.id in first_line:
            problems.add(name, record.line, "id", f"duplicate id '{record.id}' (first on line {first_line[record.id]})")
        else:
            first_line[record.id] = record.line


def read_summaries(path: Path, problems: ProblemList) -> list[SummaryRecord]:
    """Summaries from a JSONL file or a directory of ``<system>.summary`` files with ``ids.txt``."""
    if path.is_dir():
        return read_summary_directory(path, path / "ids.txt", problems)
    name = _display(path)
    lines = read_lines(path, problems)
    if lines is None:
        return []
    records = []
    seen: dict[tuple[str, str], int] = {}
    for number, obj in _json_objects(name, lines, problems):
        ex_id = _text_field(obj, "id", name, number, problems)
        system = _text_field(obj, "system", name, number, problems)
        summary = _text_field(obj, "summary", name, number, problems)
        if ex_id is None or system is None or summary is None:
            continue
        key = (system.strip(), ex_id.strip())
        if key in seen:
            problems.add(
                name, number, "id", f"second summary of system '{key[0]}' for id '{key[1]}' (first on line {seen[key]})"
            )
            continue
        seen[key] = number
        records.append(SummaryRecord(key[1], key[0], summary, name, number))
    if not records and not problems:
        problems.add(name, None, None, "contains no summaries")
    return records


def read_ids(path: Path, problems: ProblemList) -> list[str]:
    lines = read_lines(path, problems)
    if lines is None:
        return []
    ids, first = [], {}
    for number, line in enumerate(lines, start=1):
        ex_id = line.strip()
        if not ex_id:
            problems.add(_display(path), number, "id", "is empty")
        elif check_text(ex_id, "id", _display(path), number, problems) is None:
            pass
        elif ex_id in first:
            problems.add(_display(path), number, "id", f"duplicate id '{ex_id}' (first on line {first[ex_id]})")
        else:
            first[ex_id] = number
        ids.append(ex_id)
    if not ids:
        problems.add(_display(path), None, None, "contains no ids")
    return ids


def _aligned_lines(path: Path, ids: list[str], problems: ProblemList, what: str, *, required=True) -> list[str] | None:
    lines = read_lines(path, problems, required=required)
    if lines is None:
        return None
    if len(lines) != len(ids):
        problems.add(_display(path), None, None, f"has {len(lines)} lines but ids.txt has {len(ids)}: one {what} per id")
        return None
    return lines


def read_summary_directory(directory: Path, ids_path: Path, problems: ProblemList) -> list[SummaryRecord]:
    """One ``<system>.summary`` file per system, line-aligned with ``ids.txt``."""
    ids = read_ids(ids_path, problems)
    files = sorted(directory.glob("*.summary"))
    if not files:
        problems.add(_display(directory), None, None, "no <system>.summary files in this directory")
        return []
    records = []
    for file in files:
        lines = _aligned_lines(file, ids, problems, "summary")
        if lines is None:
            continue
        system = file.stem
        if check_text(system, "system", file.name, None, problems, field="system (the file's name)") is None:
            continue
        for number, (ex_id, line) in enumerate(zip(ids, lines), start=1):
            text, _ = strip_sentence_tags(line)
            if not text:
                problems.add(file.name, number, "summary", f"is empty (id '{ex_id}')")
                continue
            if check_text(text, "summary", file.name, number, problems) is None:
                continue
            records.append(SummaryRecord(ex_id, system, text, file.name, number))
    return records


def read_predicates(path: Path, problems: ProblemList) -> list[PredicateRecord]:
    """Predicates as JSONL ``{"id", "start", "end", "lemma"?}`` (offsets into the reference)."""
    name = _display(path)
    lines = read_lines(path, problems)
    if lines is None:
        return []
    records = []
    for number, obj in _json_objects(name, lines, problems):
        ex_id = _text_field(obj, "id", name, number, problems)
        offsets = []
        for key in ("start", "end"):
            value = obj.get(key)
            if isinstance(value, bool) or not isinstance(value, int):
                problems.add(name, number, key, "must be an integer character offset")
            elif value < 0:
                problems.add(name, number, key, "must not be negative")
            else:
                offsets.append(value)
        lemma = obj.get("lemma", "")
        if not isinstance(lemma, str):
            problems.add(name, number, "lemma", "must be a string")
            continue
        if ex_id is None or len(offsets) != 2:
            continue
        if offsets[1] <= offsets[0]:
            problems.add(name, number, "end", "must be greater than start")
            continue
        records.append(PredicateRecord(ex_id.strip(), offsets[0], offsets[1], lemma, number))
    return records


@dataclass
class FolderContents:
    references: list[ReferenceRecord]
    summaries: list[SummaryRecord]
    units: UnitLabels | None


def read_folder(folder: Path, problems: ProblemList) -> FolderContents:
    """A data set in the REALSumm/PyrXSum layout (see the module docstring)."""
    if not folder.is_dir():
        problems.add(str(folder), None, None, "is not a directory")
        return FolderContents([], [], None)
    ids = read_ids(folder / "ids.txt", problems)
    reference_lines = _aligned_lines(folder / "references.txt", ids, problems, "reference")
    document_lines = _aligned_lines(folder / "documents.txt", ids, problems, "document", required=False)
    references = []
    if reference_lines is not None:
        for number, (ex_id, line) in enumerate(zip(ids, reference_lines), start=1):
            text, bounds = strip_sentence_tags(line)
            if not text:
                problems.add("references.txt", number, "reference", f"is empty (id '{ex_id}')")
                continue
            if check_text(text, "reference", "references.txt", number, problems) is None:
                continue
            source = strip_sentence_tags(document_lines[number - 1])[0] if document_lines else ""
            if check_text(source, "source", "documents.txt", number, problems) is None:
                continue
            references.append(ReferenceRecord(ex_id, text, source, number, bounds))
    summary_dir = folder / "summaries"
    summaries = read_summary_directory(summary_dir, folder / "ids.txt", problems) if summary_dir.is_dir() else []
    if not summary_dir.is_dir():
        problems.add("summaries", None, None, f"directory not found in {folder}")
    units = None
    if (folder / "SCUs.txt").exists():
        units = _read_units_and_labels(folder, ids, problems)
    return FolderContents(references, summaries, units)


def _read_units_and_labels(folder: Path, ids: list[str], problems: ProblemList) -> UnitLabels:
    result = UnitLabels()
    unit_lines = _aligned_lines(folder / "SCUs.txt", ids, problems, "line of TAB-separated SCUs")
    if unit_lines is None:
        return result
    for number, (ex_id, line) in enumerate(zip(ids, unit_lines), start=1):
        units = [u.strip() for u in line.split("\t")]
        if any(not u for u in units):
            problems.add("SCUs.txt", number, "scu", f"an SCU is empty (id '{ex_id}')")
        result.units[ex_id] = units
    label_dir = folder / "labels"
    if not label_dir.is_dir():
        return result
    for file in sorted(label_dir.glob("*.label")):
        system = file.stem
        lines = _aligned_lines(file, ids, problems, "line of labels")
        if lines is None:
            continue
        per_example: dict[str, list[int]] = {}
        for number, (ex_id, line) in enumerate(zip(ids, lines), start=1):
            values = line.split("\t")
            expected = len(result.units.get(ex_id, []))
            if len(values) != expected:
                problems.add(file.name, number, "label", f"has {len(values)} labels but SCUs.txt has {expected} SCUs")
                continue
            if any(v.strip() not in {"0", "1"} for v in values):
                problems.add(file.name, number, "label", "labels must be 0 or 1")
                continue
            per_example[ex_id] = [int(v) for v in values]
        result.labels[system] = per_example
    return result


def split_qa(text: str) -> tuple[str, str]:
    """'Who gave something? Police' -> ('Who gave something?', 'Police'): the question ends at its first "?"."""
    question, mark, answer = text.partition("?")
    if not mark:
        return text.strip(), ""
    return (question + "?").strip(), answer.strip()


def read_qapyramid_dataset(path: Path, problems: ProblemList) -> FolderContents:
    """The released QAPyramid data set's JSONL shape, one example per line.

    ``example_id`` and ``reference`` are required, ``source`` optional; ``QAs`` is a list of
    "question answer" strings (the question ends at its "?"); ``QA_labels`` maps a system name to
    its 0/1 gold labels aligned with ``QAs``; ``system_outputs`` maps a system name to its summary.
    Other keys are ignored.  The QA pairs come back as the units of each example (their text as
    given) and the labels per system and example, as for an SCU folder.
    """
    name = _display(path)
    lines = read_lines(path, problems)
    if lines is None:
        return FolderContents([], [], None)
    references: list[ReferenceRecord] = []
    summaries: list[SummaryRecord] = []
    units = UnitLabels()
    for number, obj in _json_objects(name, lines, problems):
        before = len(problems)
        ex_id = obj.get("example_id")
        if isinstance(ex_id, int) and not isinstance(ex_id, bool):
            obj = {**obj, "example_id": str(ex_id)}
        ex_id = _text_field(obj, "example_id", name, number, problems)
        reference = _text_field(obj, "reference", name, number, problems)
        source = _text_field(obj, "source", name, number, problems, required=False, allow_empty=True)
        qas = obj.get("QAs")
        pairs: list[str] = []
        if qas is None:
            problems.add(name, number, "QAs", "missing (a list of \"question answer\" strings; [] for none)")
        elif not isinstance(qas, list):
            problems.add(name, number, "QAs", f"must be a list, found {type(qas).__name__}")
        else:
            for i, qa in enumerate(qas):
                if not isinstance(qa, str) or "\x00" in qa:
                    problems.add(name, number, f"QAs[{i}]", "must be a string")
                    continue
                question, answer = split_qa(qa)
                if not question or question == "?" or not answer:
                    problems.add(name, number, f"QAs[{i}]", f"{qa[:60]!r} is not a question ending with '?' followed by its answer")
                    continue
                if len(question) > 300:
                    problems.add(name, number, f"QAs[{i}]", "the question is longer than 300 characters")
                    continue
                pairs.append(" ".join(qa.split()))
        outputs = obj.get("system_outputs", {})
        if not isinstance(outputs, dict):
            problems.add(name, number, "system_outputs", f"must be an object of system name -> summary, found {type(outputs).__name__}")
            outputs = {}
        texts = {}
        for system, text in outputs.items():
            field_name = f"system_outputs.{system}"
            if not system.strip() or check_text(system, "system", name, number, problems, field=field_name) is None:
                if not system.strip():
                    problems.add(name, number, field_name, "a system name must not be empty")
            elif not isinstance(text, str) or not text.strip():
                problems.add(name, number, field_name, "must be a non-empty string (the system's summary)")
            elif check_text(text, "summary", name, number, problems, field=field_name) is not None:
                texts[system.strip()] = text
        labels = obj.get("QA_labels", {})
        if not isinstance(labels, dict):
            problems.add(name, number, "QA_labels", f"must be an object of system name -> list of 0/1, found {type(labels).__name__}")
            labels = {}
        checked: dict[str, list[int]] = {}
        for system, values in labels.items():
            field_name = f"QA_labels.{system}"
            if system.strip() not in texts and system not in outputs:
                problems.add(name, number, field_name, f"labels for system '{system}' which has no summary in system_outputs")
            elif not isinstance(values, list) or any(isinstance(v, bool) or v not in (0, 1) for v in values):
                problems.add(name, number, field_name, "must be a list of 0/1 labels")
            elif isinstance(qas, list) and len(values) != len(qas):
                problems.add(name, number, field_name, f"has {len(values)} labels but QAs has {len(qas)} QA pairs")
            else:
                checked[system.strip()] = [int(v) for v in values]
        if len(problems) > before or ex_id is None or reference is None:
            continue
        text, bounds = strip_sentence_tags(reference)
        references.append(ReferenceRecord(ex_id.strip(), text, source or "", number, bounds))
        units.units[ex_id.strip()] = pairs
        for system, summary in texts.items():
            summaries.append(SummaryRecord(ex_id.strip(), system, strip_sentence_tags(summary)[0], name, number))
        for system, values in checked.items():
            units.labels.setdefault(system, {})[ex_id.strip()] = values
    if not references and not problems:
        problems.add(name, None, None, "contains no examples")
    first_line: dict[str, int] = {}
    for record in references:
        if record.id in first_line:
            problems.add(name, record.line, "example_id", f"duplicate id '{record.id}' (first on line {first_line[record.id]})")
        first_line.setdefault(record.id, record.line)
    return FolderContents(references, summaries, units)
