"""Celery queues by latency (issue 50): which queue each of the platform's tasks goes on.

- ``interactive``: what the crowd and the researcher wait for within seconds: the gathered follow-ups of
  completed HITs (gold labels, third judges, the campaign's end), score updates, cross-checks, routing rounds
  of budgeted presence, expiry of assignments, messages to workers;
- ``batch``: long runs nobody watches second by second: autoscore chunks, researchers' jobs (imports,
  recomputations, exports), predicate re-detection;
- ``markets``: calls to MTurk and Prolific (publishing, settling, syncs, qualification and block mirrors),
  whose time is the market's, not ours.

A plain ``celery -A config worker`` consumes all three (they are the worker's default list), so a small
install runs one worker as before; a larger one runs a worker per queue (``-Q interactive`` ...), so a long
autoscore run or a slow market never holds the follow-ups back.  Every task is routed by name here
(tests/test_celery.py fails on a task left out or a name that is no task).
"""

from __future__ import annotations

from kombu import Queue

INTERACTIVE, BATCH, MARKETS = "interactive", "batch", "markets"

QUEUES: dict[str, tuple[str, ...]] = {
    INTERACTIVE: (
        "annotation.drain_followups",
        "annotation.after_presence_hits",
        "annotation.after_presence_judgments",
        "annotation.update_worker_quality",
        "annotation.recompute_scores",
        "annotation.route_presence",
        "hits.expire_assignments",
        "hits.flush_followups",
        "hits.deliver_message",
    ),
    BATCH: (
        "annotation.autoscore_chunk",
        "annotation.run_job",
        "annotation.redetect_predicates",
        "annotation.clean_stored_files",
    ),
    MARKETS: (
        "hits.mturk.publish_batch",
        "hits.mturk.settle_batch",
        "hits.mturk.sync_all",
        "hits.mturk.mirror_qualification",
        "hits.mturk.mirror_block",
        "hits.mturk.mirror_batch_block",
        "hits.prolific.settle_batch",
        "hits.prolific.push_groups",
        "hits.prolific.sync_all",
    ),
}


def task_queues() -> list[Queue]:
    return [Queue(name) for name in QUEUES]


def task_routes() -> dict[str, dict[str, str]]:
    """``{task name: {"queue": name}}``, Celery's ``task_routes``."""
    return {task: {"queue": queue} for queue, tasks in QUEUES.items() for task in tasks}
