"""Importing a campaign: all or nothing.

``import_campaign`` reads and checks every input first (collecting every
problem with its file, line and field), finds sentences and predicates with
spaCy, and only then writes everything in one transaction.

A released QAPyramid data set (``qapyramid``: JSONL with ``QAs``,
``QA_labels`` and ``system_outputs``) becomes a finished "qa" campaign: its
QA pairs are kept units with their imported gold labels, each attached to
the reference predicate whose verb its question contains (preferring a
predicate whose sentence holds the answer, and a content verb over "be",
"have" or "do"); a pair whose question names no found predicate goes under
its example's "unplaced" predicate, so no pair is lost.  The command
line (``manage.py import_campaign``) and the web upload both call it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
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
    read_qapyramid_dataset,
    split_qa,
    read_references,
    read_summaries,
)
from annotation.importing.safe_json import unstorable
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
from annotation.text.questions import mentions_verb
from annotation.text.spans import is_substring

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
    n_unplaced: int = 0
    #: On Prolific: the reward of each stage the campaign publishes, and why (``annotation.services.prolific``).
    prolific_rewards: list = field(default_factory=list)

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
        if self.n_unplaced:
            parts.append(f"{self.n_unplaced:,} QA pairs whose verb matched no predicate (kept under 'unplaced')")
        return f"Imported campaign '{self.campaign.name}' (slug {self.campaign.slug}): " + ", ".join(parts) + (
            f" in {self.seconds:.1f} s"
        )


from annotation.models.campaign import DESCRIPTION_MAX_CHARS, RESERVED_SLUGS  # noqa: E402,F401 - the model's rules

NAME_MAX_CHARS = 200


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
    qapyramid: Path | str | None = None,
    progress=None,
    campaign_settings: dict | None = None,
) -> ImportReport:
    """Import a campaign from files; raise ``CampaignImportError`` and write nothing on any problem.

    Either ``folder`` (REALSumm/PyrXSum layout), ``qapyramid`` (the released
    QAPyramid JSONL, see the module docstring) or ``references`` and
    ``summaries`` must be given.  ``predicates`` is ``"auto"`` (spaCy),
    ``"none"`` (sentences only) or the path of a predicates JSONL file.
    ``campaign_settings``: campaign settings to create it with (``IMPORT_SETTINGS``; the command line's
    options); a ``--folder`` may hold them too, in ``settings.json`` (the options win).  A value outside its bounds or
    choices is a problem naming the setting and the bound.
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

    contents = read_inputs(references, summaries, folder, problems, qapyramid=qapyramid)
    predicate_records: list[PredicateRecord] | None = None
    if predicates not in (None, PREDICATES_AUTO, PREDICATES_NONE):
        predicate_records = read_predicates(Path(predicates), problems)
    check_cross_references(contents, problems)
    chosen, sources = {}, {}
    if folder is not None and (Path(folder) / "settings.json").is_file():
        chosen.update(read_settings_file(Path(folder) / "settings.json", problems))
        sources.update(dict.fromkeys(chosen, "settings.json"))
    given = check_import_settings(campaign_settings or {}, problems)
    chosen.update(given)
    sources.update({name: IMPORT_SETTINGS[name] for name in given})
    prolific_rewards = []
    if chosen.get("backend") == Campaign.Backend.PROLIFIC:
        # Rewards that pass Prolific's hourly minimum, checked as the publish checks them, so the import is
        # publishable as it stands; a given reward that would be refused at publish is refused here.
        from annotation.services.prolific import import_rewards

        unit_type = Campaign.UnitType.SCU if contents.units is not None and qapyramid is None else Campaign.UnitType.QA
        updates, prolific_rewards, refused = import_rewards(chosen, unit_type, sources,
                                                            chosen.get("prolific_hits_per_submission"))
        chosen.update(updates)
        for source, field_name, message in refused:
            problems.add(source, None, field_name, message)
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
    unit_type = Campaign.UnitType.SCU if contents.units is not None and qapyramid is None else Campaign.UnitType.QA
    progress(n_refs + 2, n_refs + 3, "writing the campaign")
    try:
        with transaction.atomic():
            report = _write(name, final_slug, owner, description, unit_type, contents, analysed, origin,
                            qa_units=qapyramid is not None, settings=chosen)
            report.prolific_rewards = prolific_rewards
            if report.n_gold:
                from annotation.services.scores import recompute_summary_scores

                recompute_summary_scores(report.campaign)
    except IntegrityError as exc:
        # Another import with the same slug won the race, or a constraint caught what the checks missed.
        raise CampaignImportError([_problem_from_integrity_error(exc, final_slug)]) from exc
    report.seconds = time.perf_counter() - started
    progress(n_refs + 3, n_refs + 3, "imported")
    return report


#: Settings an import may set, by the command-line option that sets them (its problems name the option; a folder's
#: settings.json may give them too); each is checked by its model field's validators and choices, as the settings
#: page and the API check it (bounds named).
IMPORT_SETTINGS = {
    "backend": "--market",
    "prolific_hits_per_submission": "--prolific-hits-per-submission",
    "prolific_fee_rate": "--prolific-fee-rate",
    "reward_generation": "--reward-generation",
    "reward_verification": "--reward-verification",
    "reward_presence": "--reward-presence",
    "presence_judges": "--presence-judges",
    "third_judge_rate": "--third-judge-rate",
    "human_presence_share": "--human-share",
    "judge_scoring": "--judge-scoring",
    "routing_rule": "--routing-rule",
    "mturk_assignment_duration": "--mturk-assignment-duration",
    "mturk_hit_lifetime": "--mturk-hit-lifetime",
    "mturk_auto_approval_delay": "--mturk-auto-approval-delay",
}


#: ``--market`` (and a settings.json's "backend"): where the campaign runs.  "mturk" is the MTurk sandbox, as
#: ``mturk_publish`` uses by default; the backends' own names are accepted too.
MARKETS = {"local": Campaign.Backend.LOCAL, "mturk": Campaign.Backend.MTURK_SANDBOX, "prolific": Campaign.Backend.PROLIFIC}


def check_import_settings(values: dict, problems: ProblemList, source: str | None = None) -> dict:
    """The settings given to an import, checked as the settings form checks them: a problem per bad value, named
    by its option (``--mturk-hit-lifetime``) or ``source`` (a settings file) and its bound; returns the cleaned
    values."""
    import math

    from django.core.exceptions import ValidationError

    checked = {}
    for field_name, value in values.items():
        option = IMPORT_SETTINGS.get(field_name)
        where = source or option or "import"
        if option is None:
            problems.add(where, None, field_name,
                         f"is not a setting an import can set (one of: {', '.join(IMPORT_SETTINGS)})")
            continue
        if value is None:
            continue
        if isinstance(value, str) and unstorable(value):
            problems.add(where, None, field_name, unstorable(value))
            continue
        if field_name == "backend" and isinstance(value, str) and value not in Campaign.Backend.values:
            if value not in MARKETS:
                problems.add(where, None, field_name, f"{value!r} is not a market: one of {', '.join(MARKETS)}")
                continue
            value = MARKETS[value]
        try:
            cleaned = Campaign._meta.get_field(field_name).clean(value, None)
        except ValidationError as exc:
            problems.add(where, None, field_name, f"{value!r}: " + " ".join(exc.messages))
            continue
        if isinstance(cleaned, float) and not math.isfinite(cleaned):
            problems.add(where, None, field_name, f"must be a finite number, not {value}")
            continue
        checked[field_name] = cleaned
    return checked


def _problem_from_integrity_error(exc: IntegrityError, slug: str) -> Problem:
    if "slug" in str(exc).lower():
        return Problem("--name", None, "slug", f"a campaign with slug '{slug}' already exists")
    return Problem("import", None, None, f"the database refused the data: {exc}")


def read_inputs(references, summaries, folder, problems: ProblemList, qapyramid=None) -> FolderContents:
    """Read an import's files (a folder, a QAPyramid JSONL, or a references file and summaries), every problem into ``problems``."""
    if qapyramid is not None:
        if references is not None or summaries is not None or folder is not None:
            problems.add("--qapyramid", None, None, "give --qapyramid alone, without --folder, --references or --summaries")
        return read_qapyramid_dataset(Path(qapyramid), problems)
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


def read_settings_file(path: Path, problems: ProblemList) -> dict:
    """A folder's ``settings.json``: a JSON object of ``IMPORT_SETTINGS``."""
    import json

    try:
        # Numbers as exact decimals: a reward of 0.27 is 27 cents, not the float nearest to it.
        data = json.loads(path.read_text(encoding="utf-8"), parse_float=Decimal)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.add(path.name, getattr(exc, "lineno", None), None, f"is not a JSON object of settings: {exc}")
        return {}
    if not isinstance(data, dict):
        problems.add(path.name, None, None, "must be a JSON object of settings")
        return {}
    return check_import_settings(data, problems, source=path.name)


def _write(name, slug, owner, description, unit_type, contents: FolderContents, analysed, origin, qa_units=False,
           settings: dict | None = None) -> ImportReport:
    campaign = Campaign.objects.create(
        **(settings or {}),
        name=name, slug=slug, owner=owner, unit_type=unit_type,
        # A released data set is a finished study: launching it would ask the crowd to write its QA pairs again.
        state=Campaign.State.FINISHED if qa_units else Campaign.State.DRAFT,
        description=description or ("Imported from a released QAPyramid data set (QA pairs and gold labels)." if qa_units else ""),
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
    predicate_rows = Predicate.objects.bulk_create(predicate_rows, batch_size=BATCH)
    if qa_units:
        Predicate.objects.filter(pk__in=[p.pk for p in predicate_rows]).update(settled=True)
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
        written = _write_qa_units(contents.units, example_by_id, sentence_rows, predicate_rows, report) if qa_units else None
        _write_units(contents.units, example_by_id, systems, summary_rows, report, written=written)
    return report


def _write_qa_units(units: UnitLabels, example_by_id, sentence_rows, predicate_rows, report: ImportReport) -> list[ContentUnit]:
    """Kept QA units of a released data set, each under the predicate its question is about."""
    sentence_text = {row.pk: row.text for row in sentence_rows}
    predicates_of: dict[int, list[Predicate]] = defaultdict(list)
    for predicate in predicate_rows:
        predicates_of[predicate.example_id].append(predicate)
    unit_rows, unplaced = [], {}
    for ex_id, texts in units.units.items():
        example = example_by_id[ex_id]
        for index, text in enumerate(texts):
            question, answer = split_qa(text)
            predicate = _predicate_of_question(question, answer, predicates_of[example.pk], sentence_text)
            if predicate is None:
                if example.pk not in unplaced:
                    unplaced[example.pk] = Predicate.objects.create(
                        example=example, sentence=None, start=0, end=0, text="", external_id="unplaced",
                        origin=Predicate.Origin.FILE, settled=True,
                    )
                predicate = unplaced[example.pk]
                report.n_unplaced += 1
            unit_rows.append(
                ContentUnit(
                    example=example, predicate=predicate, kind=ContentUnit.Kind.QA, index=index, question=question,
                    answers=[answer], text=text, state=ContentUnit.State.KEPT, external_id=text[:500],
                )
            )
    report.n_predicates += len(unplaced)
    return ContentUnit.objects.bulk_create(unit_rows, batch_size=BATCH)


_LIGHT_VERBS = {"be", "have", "do"}


def _predicate_of_question(question: str, answer: str, predicates: list[Predicate], sentence_text: dict) -> Predicate | None:
    # Among the predicates whose verb the question contains, one whose sentence holds the answer wins,
    # then a content verb over be/have/do (their forms are also auxiliaries of other verbs), then the first.
    candidates = [p for p in predicates if mentions_verb(question, p.text, p.lemma)]
    if not candidates:
        return None
    return max(
        candidates,
        key=lambda p: (
            is_substring(answer, sentence_text.get(p.sentence_id, "")),
            ((p.lemma or p.text).lower().split() or [""])[0] not in _LIGHT_VERBS,
            -predicates.index(p),
        ),
    )


def _write_units(units: UnitLabels, example_by_id, systems, summary_rows, report: ImportReport, written=None) -> None:
    """The units (SCUs, unless the QA units were ``written`` already) and their imported gold labels."""
    if written is not None:
        unit_rows = written
    else:
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
