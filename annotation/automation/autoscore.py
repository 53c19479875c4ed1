"""Automated scoring: SemiAutoQAPyramid (human units, automatic presence judge) and
AutoQAPyramid (units generated from the reference too), run by Celery in chunks.

A run's summaries are cut into chunks of ``settings.AUTOSCORE_CHUNK_SIZE``.
Each chunk is one Celery task (acks late): it asks the judge (through the
cache) about every (unit, summary) pair of its summaries, then, in one
transaction, replaces the chunk's results, marks the chunk done and counts
it on the run.  A chunk delivered twice (a worker killed after the judge
answered but before the acknowledgement) finds itself done, or rewrites the
same rows, so results are never duplicated.  The worker that completes the
last chunk computes the run's comparison with the gold labels.

Scores: for summary i with units U_i, the automatic score is
    AutoScore_i = |{u in U_i : p(u, i) >= threshold}| / |U_i|
and a system's score is the mean over its summaries (as for the gold QAPyramid).
"""

from __future__ import annotations

import logging
import time
from typing import Iterable

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from annotation.automation.judges.base import JudgeError, PresencePair
from annotation.models import (
    AutoPresence,
    AutoscoreChunk,
    AutoscoreRun,
    AutoSummaryScore,
    Campaign,
    ContentUnit,
    Example,
    GeneratedUnit,
    System,
    SystemSummary,
)

log = logging.getLogger(__name__)


CHUNK_TASK = "annotation.autoscore_chunk"


def chunk_size() -> int:
    return max(1, int(getattr(settings, "AUTOSCORE_CHUNK_SIZE", 10)))


def _resolve_systems(campaign: Campaign, systems) -> list[int]:
    """System ids from System objects, ids or names, all of this campaign (clear error otherwise)."""
    if not systems:
        return []
    ids, names, labels = [], [], {}
    for item in systems:
        if isinstance(item, System):
            ids.append(item.pk)
            labels[item.pk] = item.name
        elif isinstance(item, int) or (isinstance(item, str) and item.isdigit()):
            ids.append(int(item))
        else:
            names.append(str(item))
    found = dict(
        System.objects.filter(campaign=campaign)
        .filter(Q(pk__in=ids) | Q(name__in=names))
        .values_list("pk", "name")
    )
    missing = [labels.get(i, str(i)) for i in ids if i not in found] + [n for n in names if n not in found.values()]
    if missing:
        raise ValueError(f"not systems of campaign {campaign.slug!r}: {', '.join(missing)}")
    return sorted(found)


def check_judge_name(judge: str) -> None:
    """Refuse an unknown backend or a trained model that does not exist, before any work is queued."""
    from annotation.automation.judges.registry import backends, parse_name

    backend, argument = parse_name(judge)
    if backend not in backends():
        raise JudgeError(f"unknown judge {judge!r}; known backends: {', '.join(backends())}")
    from annotation.automation.judges.extras import require_extras

    require_extras(backend)
    if backend == "trained":
        from annotation.automation.judges.trained import model_directory, model_exists

        directory = model_directory(argument)
        if not model_exists(argument):
            raise JudgeError(
                f"no trained presence judge at {directory}; train one with "
                f"`python manage.py train_presence_judge --campaign SLUG --out {directory.name}`"
            )
    if backend == "nli" and not argument:
        raise JudgeError("the nli judge needs a model: nli:/path/to/model or nli:hub-id")


def start_autoscore_run(campaign, judge: str, systems=None, generate_qas=False, user=None) -> AutoscoreRun:
    """Create a run scoring ``campaign``'s summaries (of ``systems``: System objects, ids or names; all by
    default) with the judge named ``judge`` and queue its chunks on Celery.

    ``generate_qas`` makes it AutoQAPyramid: the QA pairs are generated from
    the reference sentences instead of taken from the campaign.  Raises
    ``ValueError``/``JudgeError`` (nothing created) for an unknown judge,
    foreign systems, or a campaign without summaries or units.
    """
    check_judge_name(judge)
    system_ids = _resolve_systems(campaign, systems)
    summaries = SystemSummary.objects.filter(system__campaign=campaign)
    if system_ids:
        summaries = summaries.filter(system_id__in=system_ids)
    summary_ids = list(summaries.order_by("system_id", "example__position").values_list("pk", flat=True))
    if not summary_ids:
        raise ValueError(f"campaign {campaign.slug!r} has no system summaries to score")
    if generate_qas:
        if not Example.objects.filter(campaign=campaign).exclude(reference="").exists():
            raise ValueError("AutoQAPyramid needs reference texts to generate QA pairs from, and this campaign has none")
    elif not scored_units(campaign).exists():
        raise ValueError(f"campaign {campaign.slug!r} has no kept QA pairs or units to judge")
    size = chunk_size()
    with transaction.atomic():
        run = AutoscoreRun.objects.create(
            campaign=campaign,
            judge_name=judge,
            systems=system_ids,
            generate_qas=bool(generate_qas),
            created_by=user if getattr(user, "is_authenticated", False) else None,
            n_chunks=(len(summary_ids) + size - 1) // size,
        )
        AutoscoreChunk.objects.bulk_create(
            AutoscoreChunk(run=run, index=i, summary_ids=summary_ids[start : start + size])
            for i, start in enumerate(range(0, len(summary_ids), size))
        )
        transaction.on_commit(lambda: dispatch_chunks(run))
    return run


def dispatch_chunks(run: AutoscoreRun, chunk_ids: Iterable[int] | None = None) -> int:
    """Queue one Celery task per chunk not done yet; returns how many were queued."""
    # By name: the Celery entry points (annotation.tasks) sit above this module.
    chunk_task = current_app.tasks[CHUNK_TASK]
    queryset = run.chunks.filter(done=False)
    if chunk_ids is not None:
        queryset = queryset.filter(pk__in=list(chunk_ids))
    pending = list(queryset.values_list("pk", flat=True))
    for chunk_id in pending:
        chunk_task.delay(chunk_id)
    return len(pending)


def resume_autoscore_run(run: AutoscoreRun) -> int:
    """Queue again the chunks of an interrupted run (done chunks are skipped); returns the number queued."""
    if run.state == AutoscoreRun.State.FINISHED:
        return 0
    AutoscoreRun.objects.filter(pk=run.pk).update(state=AutoscoreRun.State.RUNNING, error="")
    queued = dispatch_chunks(run)
    if not queued:
        finish_run(run.pk)
    return queued


def scored_units(campaign: Campaign):
    """The human units a campaign's presence is judged on: kept QA pairs, or the imported SCUs."""
    return ContentUnit.objects.filter(example__campaign=campaign).filter(
        Q(kind=ContentUnit.Kind.SCU) | Q(state=ContentUnit.State.KEPT)
    )


def ensure_generated_units(run: AutoscoreRun, examples: list[Example]) -> None:
    """Generate the AutoQAPyramid QA pairs of these examples once per run.

    Generation is deterministic, so two workers generating the same example
    insert the same (run, example, index) rows and the conflict is ignored.
    """
    from annotation.automation.qa_generation import default_generator

    have = set(GeneratedUnit.objects.filter(run=run, example__in=examples).values_list("example_id", flat=True).distinct())
    todo = [e for e in examples if e.pk not in have and e.reference.strip()]
    if not todo:
        return
    generator = default_generator()
    rows = []
    for example in todo:
        for index, qa in enumerate(generator.generate_for_text(example.reference)):
            rows.append(
                GeneratedUnit(
                    run=run, example=example, index=index, predicate=qa.predicate[:200], question=qa.question[:300],
                    answer=qa.answer, text=qa.text,
                )
            )
    GeneratedUnit.objects.bulk_create(rows, ignore_conflicts=True)


def _chunk_pairs(run: AutoscoreRun, summaries: list[SystemSummary]):
    """(summary, unit id or None, generated id or None, PresencePair) for every pair of the chunk."""
    example_ids = {s.example_id for s in summaries}
    references = dict(Example.objects.filter(pk__in=example_ids).values_list("pk", "reference"))
    units: dict[int, list[tuple[int | None, int | None, str]]] = {e: [] for e in example_ids}
    if run.generate_qas:
        ensure_generated_units(run, list(Example.objects.filter(pk__in=example_ids)))
        for pk, example_id, text in GeneratedUnit.objects.filter(run=run, example_id__in=example_ids).values_list(
            "pk", "example_id", "text"
        ).order_by("example_id", "index"):
            units[example_id].append((None, pk, text))
    else:
        for pk, example_id, text in scored_units(run.campaign).filter(example_id__in=example_ids).values_list(
            "pk", "example_id", "text"
        ).order_by("example_id", "index"):
            units[example_id].append((pk, None, text))
    rows = []
    for summary in summaries:
        for unit_id, generated_id, text in units[summary.example_id]:
            # The reference is the pair's context: the LLM judge takes no in-context example from it.
            pair = PresencePair(summary=summary.text, unit=text, context=references.get(summary.example_id, ""))
            rows.append((summary, unit_id, generated_id, pair))
    return rows


def run_chunk(chunk_id: int) -> dict:
    """Score one chunk (idempotent: a chunk already done returns at once and writes nothing)."""
    from annotation.automation.judges.cache import cached_predict
    from annotation.automation.judges.registry import get_judge

    chunk = AutoscoreChunk.objects.select_related("run", "run__campaign").get(pk=chunk_id)
    if chunk.done:
        return {"chunk": chunk.index, "skipped": True}
    run = chunk.run
    started = time.perf_counter()
    AutoscoreChunk.objects.filter(pk=chunk.pk).update(attempts=F("attempts") + 1)
    if run.state == AutoscoreRun.State.PENDING:
        AutoscoreRun.objects.filter(pk=run.pk, state=AutoscoreRun.State.PENDING).update(
            state=AutoscoreRun.State.RUNNING, started_at=timezone.now()
        )
    try:
        judge = get_judge(run.judge_name)
    except Exception as exc:  # a judge that cannot load fails the whole run, with the reason shown
        AutoscoreRun.objects.filter(pk=run.pk).update(state=AutoscoreRun.State.FAILED, error=str(exc)[:2000])
        raise
    if hasattr(judge, "prepare"):
        judge.prepare(run.campaign)  # e.g. the LLM judge's in-context examples from this campaign's gold
    if not run.judge_version:
        # The first chunk records how the judge was set up (e.g. how many shots the LLM judge really got).
        AutoscoreRun.objects.filter(pk=run.pk, judge_version="").update(
            judge_version=judge.version, results={"judge": judge.describe()}
        )
    summaries = list(SystemSummary.objects.filter(pk__in=chunk.summary_ids).order_by("pk"))
    rows = _chunk_pairs(run, summaries)
    probabilities, n_cached = cached_predict(judge, [r[3] for r in rows])
    present = judge.decide(probabilities)
    per_summary: dict[int, list] = {s.pk: [0, 0, 0.0] for s in summaries}
    presences = []
    for (summary, unit_id, generated_id, _), p, y in zip(rows, probabilities, present):
        presences.append(
            AutoPresence(run=run, summary=summary, unit_id=unit_id, generated_id=generated_id, probability=float(p), present=bool(y))
        )
        entry = per_summary[summary.pk]
        entry[0] += 1
        entry[1] += int(y)
        entry[2] += float(p)
    seconds = time.perf_counter() - started
    with transaction.atomic():
        locked = AutoscoreChunk.objects.select_for_update().get(pk=chunk.pk)
        if locked.done:  # another delivery finished it while we were judging
            return {"chunk": chunk.index, "skipped": True}
        AutoPresence.objects.filter(run=run, summary_id__in=chunk.summary_ids).delete()
        AutoSummaryScore.objects.filter(run=run, summary_id__in=chunk.summary_ids).delete()
        AutoPresence.objects.bulk_create(presences, batch_size=1000)
        AutoSummaryScore.objects.bulk_create(
            AutoSummaryScore(
                run=run, summary_id=pk, n_units=n, n_present=k,
                score=(k / n if n else None), mean_probability=(total / n if n else None),
            )
            for pk, (n, k, total) in per_summary.items()
        )
        AutoscoreChunk.objects.filter(pk=chunk.pk).update(
            done=True, seconds=seconds, n_pairs=len(rows), n_cached=n_cached, done_at=timezone.now()
        )
        # Counted, not incremented, under the run's row lock (chunks finishing at once queue here):
        # a chunk done twice, however it happened, is never counted twice.
        AutoscoreRun.objects.select_for_update().filter(pk=run.pk).first()
        AutoscoreRun.objects.filter(pk=run.pk).update(n_done=AutoscoreChunk.objects.filter(run=run, done=True).count())
    # Checked after our commit: of two chunks finishing together, the later committer sees both done.
    if not AutoscoreChunk.objects.filter(run=run, done=False).exists():
        finish_run(run.pk)
    return {"chunk": chunk.index, "pairs": len(rows), "cached": n_cached, "seconds": round(seconds, 3)}


def finish_run(run_id: int) -> AutoscoreRun:
    """Mark a run whose chunks are all done as finished, with its timings and comparison with gold."""
    from annotation.automation.judges.comparison import compare_run_with_gold

    run = AutoscoreRun.objects.get(pk=run_id)
    if run.chunks.filter(done=False).exists():
        return run
    chunks = list(run.chunks.values_list("seconds", "n_pairs", "n_cached"))
    busy = sum(s or 0.0 for s, _, _ in chunks)
    pairs = sum(n for _, n, _ in chunks)
    now = timezone.now()
    timings = {
        "chunk_seconds": round(busy, 3),
        "pairs": pairs,
        "cached_pairs": sum(c for _, _, c in chunks),
        "pairs_per_second": round(pairs / busy, 1) if busy else None,
        "wall_seconds": round((now - (run.started_at or run.created_at)).total_seconds(), 3),
    }
    try:
        results = compare_run_with_gold(run)
    except Exception as exc:  # the scores stand even when the comparison cannot be computed
        log.exception("comparison of autoscore run %s failed", run.pk)
        results = {"error": str(exc)}
    results["judge"] = (run.results or {}).get("judge") or {}
    AutoscoreRun.objects.filter(pk=run.pk).exclude(state=AutoscoreRun.State.FINISHED).update(
        state=AutoscoreRun.State.FINISHED, finished_at=now, timings=timings, results=results, n_done=len(chunks)
    )
    run.refresh_from_db()
    return run


def latest_runs(campaign: Campaign) -> list[AutoscoreRun]:
    """The most recent finished run of each (judge, SemiAuto/Auto) on the campaign, newest first."""
    seen, runs = set(), []
    for run in AutoscoreRun.objects.filter(campaign=campaign, state=AutoscoreRun.State.FINISHED).order_by("-finished_at", "-id"):
        key = (run.judge_name, run.generate_qas)
        if key not in seen:
            seen.add(key)
            runs.append(run)
    return runs


def _stale_figures(results: dict) -> bool:
    # Runs stored before the summary-level tau counted undefined examples as 0 (and before the
    # present-class F1 had its own name) are recomputed rather than shown under the old rules.
    tau = ((results.get("correlation") or {}).get("all") or {}).get("kendall")
    return bool(tau and "n_undefined" not in tau) or "f1" in (results.get("presence") or {})


def compare_judges(campaign: Campaign, subgroups: dict | None = None) -> dict:
    """Judge-vs-gold comparison of the campaign's latest runs (see ``annotation.automation.judges.comparison``).

    ``subgroups`` ({name: [system names]}) adds correlations over those systems only; it recomputes
    the comparison, otherwise the figures stored when each run finished are used.
    """
    from annotation.automation.judges.comparison import compare_run_with_gold

    if subgroups:
        known = set(System.objects.filter(campaign=campaign).values_list("name", flat=True))
        unknown = sorted({m for members in subgroups.values() for m in members} - known)
        if unknown:
            raise ValueError(f"not systems of campaign {campaign.slug!r}: {', '.join(unknown)}")
    entries = []
    rouge = None
    for run in latest_runs(campaign):
        results = run.results
        if subgroups or _stale_figures(results):
            results = {**compare_run_with_gold(run, subgroups), "judge": results.get("judge") or {}}
        rouge = rouge or results.get("rouge")
        entries.append(
            {
                "run": run.pk,
                "judge": run.judge_name,
                "version": run.judge_version,
                "mode": "AutoQAPyramid" if run.generate_qas else "SemiAutoQAPyramid",
                "judge_setup": results.get("judge") or {},
                "finished_at": run.finished_at.isoformat() if run.finished_at else None,
                "presence": results.get("presence"),
                "correlation": results.get("correlation"),
                "system_scores": results.get("system_scores"),
                "timings": run.timings,
            }
        )
    return {"campaign": campaign.slug, "runs": entries, "rouge": rouge}
