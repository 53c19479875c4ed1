"""Importing a campaign: all or nothing.

``import_campaign`` reads and checks every input first (collecting every
problem with its file, line and field), finds sentences and predicates with
spaCy, and only then writes everything in one transaction.  The command
line (``manage.py import_campaign``) and the web upload both call it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from annotation.importing.readers import (
    CampaignImportError,
    Problem,
    FolderContents,
    PredicateRecord,
    ProblemList,
    ReferenceRecord,
    UnitLabels,
    read_folder,
    read_predicates,
    read_references,
    read_summaries,
)
from annotation.models import (
    Campaign,
    ContentUnit,
    Example,
    GoldPresence,
    Predicate,
    ReferenceSentence,
    System,
    SystemSummary,
)
from annotation.text.predicates import FoundPredicate, FoundSentence, analyse_references

BATCH = 2000
PREDICATES_AUTO = "auto"
PREDICATES_NONE = "none"


@dataclass
class ImportReport:
    """What an import wrote, for the command line and the web page."""

    campaign: Campaign
    n_examples: int = 0
    n_sentences: int = 0
    n_predicates: int = 0
    n_systems: int = 0
    n_summaries: int = 0
    n_units: int = 0
    n_gold: int = 0
    seconds: float = 0.0
    systems_without_labels: list[str] = field(default_factory=list)

    @property
    def predicates_per_reference(self) -> float:
        return self.n_predicates / self.n_examples if self.n_examples else 0.0

    def summary_line(self) -> str:
        parts = [
            f"{self.n_examples:,} examples",
            f"{self.n_sentences:,} sentences",
            f"{self.n_predicates:,} predicates ({self.predicates_per_reference:.2f} per reference)",
            f"{self.n_systems:,} systems",
            f"{self.n_summaries:,} summaries",
        ]
        if self.n_units:
            parts.append(f"{self.n_units:,} content units")
        if self.n_gold:
            parts.append(f"{self.n_gold:,} gold labels")
        return f"Imported campaign '{self.campaign.name}' (slug {self.campaign.slug}): " + ", ".join(parts) + (
            f" in {self.seconds:.1f} s"
        )


# Paths under /campaigns/ that are pages, not campaigns: refused as slugs by every way of creating one.
RESERVED_SLUGS = frozenset({"new", "jobs"})
NAME_MAX_CHARS = 200
DESCRIPTION_MAX_CHARS = 5000


def campaign_slug(name: str, slug: str | None = None) -> str:
    """The campaign's slug: the given one, or the slugified name."""
    return slugify(slug if slug else name)


def import_campaign(
    *,
    name: str,
    slug: str | None = None,
    owner=None,
    description: str = "",
    references: Path | str | None = None,
    summaries: Path | str | None = None,
    predicates: Path | str | None = PREDICATES_AUTO,
    folder: Path | str | None = None,
    progress=None,
) -> ImportReport:
    """Import a campaign from files; raise ``CampaignImportError`` and write nothing on any problem.

    Either ``folder`` (REALSumm/PyrXSum layout) or ``references`` and
    ``summaries`` must be given.  ``predicates`` is ``"auto"`` (spaCy),
    ``"none"`` (sentences only) or the path of a predicates JSONL file.
    ``progress(done, total, message)``, when given, hears of the steps:
    checking the files, finding predicates (one step per reference), writing.
    """
    started = time.perf_counter()
    progress = progress or (lambda done, total, message="": None)
    progress(0, 3, "checking the files")
    problems = ProblemList()
    name = (name or "").strip()
    final_slug = campaign_slug(name, slug)
    if not name:
        problems.add("--name", None, "name", "a campaign needs a name")
    elif len(name) > NAME_MAX_CHARS:
        problems.add("--name", None, "name", f"is longer than {NAME_MAX_CHARS} characters")
    if len(description or "") > DESCRIPTION_MAX_CHARS:
        problems.add("--description", None, "description", f"is longer than {DESCRIPTION_MAX_CHARS:,} characters")
    if name and not final_slug:
        problems.add("--slug", None, "slug", f"cannot make a slug from '{slug or name}': give --slug with letters or digits")
    elif final_slug in RESERVED_SLUGS:
        problems.add("--slug", None, "slug", f"'{final_slug}' is reserved: choose another slug")
    elif len(final_slug) > 200:
        problems.add("--slug", None, "slug", "is longer than 200 characters")
    elif final_slug and Campaign.objects.filter(slug=final_slug).exists():
        problems.add("--name", None, "slug", f"a campaign with slug '{final_slug}' already exists")

    contents = read_inputs(references, summaries, folder, problems)
    predicate_records: list[PredicateRecord] | None = None
    if predicates not in (None, PREDICATES_AUTO, PREDICATES_NONE):
        predicate_records = read_predicates(Path(predicates), problems)
    check_cross_references(contents, problems)
    problems.raise_if_any()

    n_refs = len(contents.references)
    analysed = analyse_references(
        [r.reference for r in contents.references],
        [r.sentence_bounds for r in contents.references],
        progress=lambda done, total: progress(1 + done, n_refs + 3, "finding sentences and predicates"),
    )
    if predicate_records is not None:
        analysed = place_predicates(contents.references, analysed, predicate_records, Path(predicates).name, problems)
    elif predicates in (None, PREDICATES_NONE):
        analysed = [[FoundSentence(s.start, s.end, s.text, ()) for s in sentences] for sentences in analysed]
    problems.raise_if_any()

    origin = Predicate.Origin.FILE if predicate_records is not None else Predicate.Origin.AUTO
    unit_type = Campaign.UnitType.SCU if contents.units is not None else Campaign.UnitType.QA
    progress(n_refs + 2, n_refs + 3, "writing the campaign")
    try:
        with transaction.atomic():
            report = _write(name, final_slug, owner, description, unit_type, contents, analysed, origin)
            if report.n_gold:
                from annotation.services.scores import recompute_summary_scores

                recompute_summary_scores(report.campaign)
    except IntegrityError as exc:
        # Another import with the same slug won the race, or a constraint caught what the checks missed.
        raise CampaignImportError([_problem_from_integrity_error(exc, final_slug)]) from exc
    report.seconds = time.perf_counter() - started
    progress(n_refs + 3, n_refs + 3, "imported")
    return report


def _problem_from_integrity_error(exc: IntegrityError, slug: str) -> Problem:
    if "slug" in str(exc).lower():
        return Problem("--name", None, "slug", f"a campaign with slug '{slug}' already exists")
    return Problem("import", None, None, f"the database refused the data: {exc}")


def read_inputs(references, summaries, folder, problems: ProblemList) -> FolderContents:
    """Read an import's files (a folder, or a references file and summaries), every problem into ``problems``."""
    if folder is not None:
        if references is not None or summaries is not None:
            problems.add("--folder", None, None, "give either --folder or --references/--summaries, not both")
        return read_folder(Path(folder), problems)
    if references is None:
        problems.add("--references", None, None, "a references file is required (or --folder)")
    if summaries is None:
        problems.add("--summaries", None, None, "a summaries file or directory is required (or --folder)")
    refs = read_references(Path(references), problems) if references is not None else []
    sums = read_summaries(Path(summaries), problems) if summaries is not None else []
    return FolderContents(refs, sums, None)


def check_cross_references(contents: FolderContents, problems: ProblemList) -> None:
    """Check that summaries and labels name known examples and that every system covers the same examples."""
    known = {r.id for r in contents.references}
    by_system: dict[str, set[str]] = defaultdict(set)
    first_file: dict[str, str] = {}
    for summary in contents.summaries:
        if summary.id not in known:
            problems.add(summary.file, summary.line, "id", f"summary for unknown example '{summary.id}'")
            continue
        by_system[summary.system].add(summary.id)
        first_file.setdefault(summary.system, summary.file)
    if not contents.summaries and not problems:
        problems.add("summaries", None, None, "no system summaries to import")
    # Systems are compared on the same examples: each must cover every example any system covers.
    covered = set().union(*by_system.values()) if by_system else set()
    order = {r.id: r.line for r in contents.references}
    for system, ids in sorted(by_system.items()):
        missing = sorted(covered - ids, key=order.get)
        if missing:
            shown = ", ".join(f"'{m}'" for m in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            problems.add(first_file[system], None, "system", f"system '{system}' has no summary for {shown}{more}")
    units = contents.units
    if units is not None:
        for system in sorted(units.labels):
            if system not in by_system:
                problems.add(f"labels/{system}.label", None, None, f"labels for system '{system}' which has no summaries")


def place_predicates(
    references: list[ReferenceRecord],
    analysed: list[list[FoundSentence]],
    records: list[PredicateRecord],
    file_name: str,
    problems: ProblemList,
) -> list[list[FoundSentence]]:
    """Attach predicates from a file to the sentences that contain them."""
    index = {r.id: i for i, r in enumerate(references)}
    placed: list[list[list[FoundPredicate]]] = [[[] for _ in sentences] for sentences in analysed]
    for record in records:
        if record.id not in index:
            problems.add(file_name, record.line, "id", f"predicate for unknown example '{record.id}'")
            continue
        i = index[record.id]
        reference = references[i].reference
        if record.end > len(reference):
            problems.add(file_name, record.line, "end", f"is past the end of the reference ({len(reference)} characters)")
            continue
        for s, sentence in enumerate(analysed[i]):
            if sentence.start <= record.start and record.end <= sentence.end:
                start, end = record.start - sentence.start, record.end - sentence.start
                text = sentence.text[start:end]
                placed[i][s].append(FoundPredicate(start, end, text, record.lemma or text.lower()))
                break
        else:
            problems.add(file_name, record.line, "start", "the span is not inside one sentence of the reference")
    return [
        [FoundSentence(s.start, s.end, s.text, tuple(sorted(set(p), key=lambda x: (x.start, x.end)))) for s, p in zip(sentences, preds)]
        for sentences, preds in zip(analysed, placed)
    ]


def _write(name, slug, owner, description, unit_type, contents: FolderContents, analysed, origin) -> ImportReport:
    campaign = Campaign.objects.create(
        name=name, slug=slug, owner=owner, description=description, unit_type=unit_type
    )
    report = ImportReport(campaign=campaign)
    examples = Example.objects.bulk_create(
        [
            Example(campaign=campaign, external_id=r.id, position=i, reference=r.reference, source=r.source)
            for i, r in enumerate(contents.references)
        ],
        batch_size=BATCH,
    )
    report.n_examples = len(examples)

    sentence_rows, sentence_found = [], []
    for example, sentences in zip(examples, analysed):
        for index, found in enumerate(sentences):
            sentence_rows.append(
                ReferenceSentence(example=example, index=index, text=found.text, start=found.start, end=found.end)
            )
            sentence_found.append(found)
    sentence_rows = ReferenceSentence.objects.bulk_create(sentence_rows, batch_size=BATCH)
    report.n_sentences = len(sentence_rows)
    predicate_rows = [
        Predicate(
            sentence=row, example_id=row.example_id, start=p.start, end=p.end, text=p.text[:200], lemma=p.lemma[:200], origin=origin
        )
        for row, found in zip(sentence_rows, sentence_found)
        for p in found.predicates
    ]
    Predicate.objects.bulk_create(predicate_rows, batch_size=BATCH)
    report.n_predicates = len(predicate_rows)

    system_names = sorted({s.system for s in contents.summaries})
    systems = {
        s.name: s for s in System.objects.bulk_create([System(campaign=campaign, name=n) for n in system_names])
    }
    report.n_systems = len(systems)
    example_by_id = {e.external_id: e for e in examples}
    summary_rows = SystemSummary.objects.bulk_create(
        [
            SystemSummary(system=systems[s.system], example=example_by_id[s.id], text=s.summary)
            for s in contents.summaries
        ],
        batch_size=BATCH,
    )
    report.n_summaries = len(summary_rows)
    if contents.units is not None:
        _write_units(contents.units, example_by_id, systems, summary_rows, report)
    return report


def _write_units(units: UnitLabels, example_by_id, systems, summary_rows, report: ImportReport) -> None:
    unit_rows = []
    for ex_id, texts in units.units.items():
        example = example_by_id[ex_id]
        for index, text in enumerate(texts):
            unit_rows.append(ContentUnit(example=example, kind=ContentUnit.Kind.SCU, index=index, text=text))
    unit_rows = ContentUnit.objects.bulk_create(unit_rows, batch_size=BATCH)
    report.n_units = len(unit_rows)
    units_of: dict[int, list[ContentUnit]] = defaultdict(list)
    for row in unit_rows:
        units_of[row.example_id].append(row)
    summary_of = {(row.system_id, row.example_id): row for row in summary_rows}
    gold_rows = []
    for system_name, per_example in units.labels.items():
        system = systems[system_name]
        for ex_id, labels in per_example.items():
            example = example_by_id[ex_id]
            summary = summary_of.get((system.pk, example.pk))
            if summary is None:
                continue
            for unit, label in zip(units_of[example.pk], labels):
                gold_rows.append(
                    GoldPresence(
                        unit=unit,
                        summary=summary,
                        present=bool(label),
                        n_judgments=0,
                        n_present=0,
                        origin=GoldPresence.Origin.IMPORTED,
                    )
                )
    GoldPresence.objects.bulk_create(gold_rows, batch_size=BATCH)
    report.n_gold = len(gold_rows)
    report.systems_without_labels = sorted(set(systems) - set(units.labels))
