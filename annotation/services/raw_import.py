"""Import of the raw QA-presence judgments released with the QAPyramid paper.

The file is one JSON object nested four levels deep:
``{system: {example_id: {predicate_id: {"<question> <answer>": [[worker, label], ...]}}}}``
with labels 1 (present) and 0 (not present).  Reference and system texts are
not in it, so examples, predicates and summaries are created by id only;
the QA pair's question is the key up to its first "?", the answer is the
rest.  The same QA pair appears once per system: it becomes one unit judged
in each system's summary.  The import is all or nothing, and every problem
names its place in the file as a path of keys.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.utils.text import slugify

from annotation.importing.readers import CampaignImportError, Problem
from annotation.importing.safe_json import JSONProblem, load_json
from annotation.models import Campaign, ContentUnit, Example, Predicate, PresenceJudgment, System, SystemSummary
from annotation.services.gold import refresh_gold
from hits.models import Worker

BATCH = 5000


@dataclass
class RawImportReport:
    campaign: Campaign
    n_systems: int
    n_examples: int
    n_predicates: int
    n_units: int
    n_judged_units: int
    n_judgments: int
    n_workers: int
    seconds: float

    def summary_line(self) -> str:
        return (
            f"Imported '{self.campaign.name}' (slug {self.campaign.slug}): {self.n_systems} systems, "
            f"{self.n_examples} examples, {self.n_predicates} predicates, {self.n_units} QA pairs, "
            f"{self.n_judged_units:,} judged units, {self.n_judgments:,} judgments by {self.n_workers} workers "
            f"in {self.seconds:.1f} s"
        )


def split_qa_key(key: str) -> tuple[str, str]:
    """'Who gave something? Police' -> ('Who gave something?', 'Police')."""
    question, mark, answer = key.partition("?")
    if not mark:
        return key.strip(), ""
    return (question + "?").strip(), answer.strip()


def _parse(data, file_name: str) -> tuple[list, list[Problem]]:
    """Flatten the nested object into (system, example, predicate, key, worker, label) rows."""
    problems: list[Problem] = []
    rows = []

    def problem(path, message):
        if len(problems) < 200:
            problems.append(Problem(file_name, None, None, message, path=" → ".join(str(p) for p in path)))

    if not isinstance(data, dict) or not data:
        problem([], "expected a JSON object of systems")
        return rows, problems
    for system, examples in data.items():
        if not isinstance(examples, dict):
            problem([system], "expected an object of examples")
            continue
        for example, predicates in examples.items():
            if not isinstance(predicates, dict):
                problem([system, example], "expected an object of predicates")
                continue
            for predicate, pairs in predicates.items():
                if not isinstance(pairs, dict):
                    problem([system, example, predicate], "expected an object of QA pairs")
                    continue
                for key, judgments in pairs.items():
                    path = [system, example, predicate, key]
                    question, answer = split_qa_key(key)
                    if not question or not answer:
                        problem(path, "a QA pair must be a question ending with '?' followed by its answer")
                        continue
                    if not isinstance(judgments, list) or not judgments:
                        problem(path, "expected a non-empty list of [worker, label] judgments")
                        continue
                    for judgment in judgments:
                        if (
                            not isinstance(judgment, list)
                            or len(judgment) != 2
                            or not isinstance(judgment[0], str)
                            or not judgment[0]
                            or judgment[1] not in (0, 1)
                            or isinstance(judgment[1], bool)
                        ):
                            problem(path, f"judgment {judgment!r} is not [worker id, 0 or 1]")
                            continue
                        rows.append((system, example, predicate, key, judgment[0], judgment[1]))
    return rows, problems


def import_qapyramid_raw(path: Path | str, *, name: str, slug: str | None = None, owner=None) -> RawImportReport:
    """Create a campaign from the released raw judgments; nothing is written if anything is wrong."""
    started = time.perf_counter()
    path = Path(path)
    final_slug = slugify(slug or name)
    problems: list[Problem] = []
    if not final_slug:
        problems.append(Problem("--campaign", None, "name", "cannot make a slug from this name"))
    elif Campaign.objects.filter(slug=final_slug).exists():
        problems.append(Problem("--campaign", None, "slug", f"a campaign with slug '{final_slug}' already exists"))
    try:
        data = load_json(path.read_bytes())
    except FileNotFoundError:
        raise CampaignImportError([Problem(str(path), None, None, "file not found")]) from None
    except JSONProblem as exc:
        raise CampaignImportError([Problem(path.name, exc.line, exc.field, exc.with_column())]) from None
    rows, parse_problems = _parse(data, path.name)
    problems += parse_problems
    if problems:
        raise CampaignImportError(problems)
    with transaction.atomic():
        report = _write(rows, name, final_slug, owner)
    report.seconds = time.perf_counter() - started
    return report


def _write(rows, name, slug, owner) -> RawImportReport:
    campaign = Campaign.objects.create(
        name=name, slug=slug, owner=owner, state=Campaign.State.FINISHED,
        description="Imported from the released QAPyramid raw QA-presence judgments (texts not included).",
        # The authors collected them under the paper's fixed rule: agreement is over all their judgments.
        presence_judges=Campaign.PresenceJudges.FIXED,
    )
    system_names = sorted({r[0] for r in rows})
    example_ids = list(dict.fromkeys(r[1] for r in rows))
    predicate_ids = list(dict.fromkeys((r[1], r[2]) for r in rows))
    unit_keys = list(dict.fromkeys((r[1], r[2], r[3]) for r in rows))
    worker_ids = sorted({r[4] for r in rows})

    systems = {s.name: s for s in System.objects.bulk_create([System(campaign=campaign, name=n) for n in system_names])}
    examples = {
        e.external_id: e
        for e in Example.objects.bulk_create(
            [Example(campaign=campaign, external_id=e, position=i) for i, e in enumerate(example_ids)], batch_size=BATCH
        )
    }
    predicates = {
        (p.example.external_id, p.external_id): p
        for p in Predicate.objects.bulk_create(
            [
                Predicate(example=examples[e], sentence=None, start=0, end=0, text="", external_id=p, origin=Predicate.Origin.FILE, settled=True)
                for e, p in predicate_ids
            ],
            batch_size=BATCH,
        )
    }
    next_index: dict[str, int] = {}
    unit_rows = []
    for e, p, key in unit_keys:
        question, answer = split_qa_key(key)
        index = next_index.get(e, 0)
        next_index[e] = index + 1
        unit_rows.append(
            ContentUnit(
                example=examples[e], predicate=predicates[(e, p)], kind=ContentUnit.Kind.QA, index=index,
                question=question[:300], answers=[answer], text=key, state=ContentUnit.State.KEPT, external_id=key[:500],
            )
        )
    units = dict(zip(unit_keys, ContentUnit.objects.bulk_create(unit_rows, batch_size=BATCH)))
    summary_keys = [(s, e) for s in system_names for e in example_ids]
    summaries = dict(
        zip(
            summary_keys,
            SystemSummary.objects.bulk_create(
                [SystemSummary(system=systems[s], example=examples[e]) for s, e in summary_keys], batch_size=BATCH
            ),
        )
    )
    existing = dict(Worker.objects.filter(external_id__in=worker_ids).values_list("external_id", "pk"))
    Worker.objects.bulk_create([Worker(external_id=w) for w in worker_ids if w not in existing], batch_size=BATCH)
    worker_pk = dict(Worker.objects.filter(external_id__in=worker_ids).values_list("external_id", "pk"))
    PresenceJudgment.objects.bulk_create(
        [
            PresenceJudgment(
                unit_id=units[(e, p, key)].pk, summary_id=summaries[(s, e)].pk, worker_id=worker_pk[w], present=bool(label)
            )
            for s, e, p, key, w, label in rows
        ],
        batch_size=BATCH,
    )
    judged = {(units[(e, p, key)].pk, summaries[(s, e)].pk) for s, e, p, key, _, _ in rows}
    refresh_gold(campaign, judged)
    from annotation.services.scores import recompute_summary_scores

    recompute_summary_scores(campaign)
    return RawImportReport(
        campaign=campaign,
        n_systems=len(systems),
        n_examples=len(examples),
        n_predicates=len(predicates),
        n_units=len(units),
        n_judged_units=len(judged),
        n_judgments=len(rows),
        n_workers=len(worker_ids),
        seconds=0.0,
    )
