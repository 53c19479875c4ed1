"""The simulated crowd on the platform's own pages, and the rounds every simulation runs."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Q, Sum

from annotation.management.simulation.answers import Answerer
from annotation.management.simulation.browser import HttpWorker, serve_in_background
from annotation.management.simulation.money import review_and_reconcile
from annotation.management.simulation.report import TASK_ORDER, SimulationReport
from annotation.management.simulation.service_driver import ServiceWorker
from annotation.models import Campaign
from hits.models import HIT, Assignment, BatchChoice, Worker
from hits.services import record_choice, seed_hand_out

def ensure_simulated_workers(n: int, careless: int, password: str | None, batch_id: int | None = None) -> list[tuple[str, bool]]:
    """Accounts sim-1.. and sim-careless-1.. with a known password; returns (username, careless).  ``password``
    None (the fast mode, which logs no one in): no password at all, and none of the hashing's cost.

    With ``batch_id`` (the simulated campaign's batch) the workers are kept to it: the hand-out gives them that
    batch's HITs, tests and gold checks only (``Worker.only_batch``), and a HIT of another batch one of them still
    holds from an earlier run is given back, never worked on.
    """
    from hits.services import return_assignment

    User = get_user_model()
    names = [(f"sim-careless-{i}", True) for i in range(1, careless + 1)]
    names += [(f"sim-{i}", False) for i in range(1, n - careless + 1)]
    for username, _ in names:
        user, _ = User.objects.get_or_create(username=username)
        if password is None:
            user.set_unusable_password()
        else:
            user.set_password(password)
        user.save()
        worker, _ = Worker.objects.get_or_create(user=user, defaults={"external_id": username})
        if worker.auto_accept_next or worker.only_batch_id != batch_id:
            worker.auto_accept_next = False
            worker.only_batch_id = batch_id
            worker.save(update_fields=["auto_accept_next", "only_batch"])
        if batch_id is not None:
            held = Assignment.objects.filter(worker=worker, state=Assignment.State.ASSIGNED).exclude(hit__batch_id=batch_id)
            for pk in held.values_list("pk", flat=True):
                return_assignment(worker, pk)
    return names


def simulate_crowd(
    campaign: Campaign,
    n_workers: int,
    *,
    accuracy: float = 0.95,
    seed: int = 0,
    careless: int = 0,
    base_url: str | None = None,
    max_seconds: float = 3600,
    max_rounds_idle: int = 1,
    progress=None,
    accuracies: dict[str, float] | None = None,
    same_answers: bool = False,
    mode: str = "html",
    approve: bool = False,
    threads: int = 1,
) -> SimulationReport:
    """Work through ``campaign`` with simulated workers until it is done or stuck (``same_answers``: see the
    package's docstring).

    ``mode``: "html" drives the real pages over HTTP (``browser.HttpWorker``); "fast" calls the services behind
    them in-process (``service_driver.ServiceWorker``): the same hand-out, validation, quality control and
    money, without rendering a page.  ``approve``: afterwards the simulated researcher approves all submitted
    work (as the bulk review does).  Either way the report ends with the money, reconciled.

    ``threads`` (fast mode, PostgreSQL): each round's workers are shared out among that many threads, each with its
    own database connection, so the crowd works concurrently as a real one does (the hand-out's locks, the
    follow-ups' races) and the platform's Python and PostgreSQL use both cores of a small machine.  With more than
    one thread a run no longer follows its seed exactly (which worker gets which HIT depends on timing)."""
    if n_workers < 1 or careless > n_workers:
        raise ValueError("need at least one worker, and no more careless workers than workers")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if threads < 1:
        raise ValueError("threads must be at least 1")
    if threads > 1 and mode != "fast":
        raise ValueError("threads are for the fast mode (the HTML mode's pages are served by one in-process server)")
    if threads > 1 and connection.vendor != "postgresql":
        raise ValueError(f"threads need PostgreSQL: {connection.vendor} lets one connection write at a time")
    rng = random.Random(seed)
    answerer = Answerer(rng, accuracy, accuracies, same_answers_seed=seed if same_answers else None)
    password = f"sim-{rng.getrandbits(64):x}"
    if campaign.batch_id is None:
        campaign.refresh_from_db(fields=["batch"])  # launched since the caller loaded it
    if campaign.batch_id is None:
        raise ValueError(f"campaign '{campaign.slug}' has no HITs yet: launch it first")
    names = ensure_simulated_workers(n_workers, careless, password if mode == "html" else None, campaign.batch_id)
    for username, _ in names:
        # The simulated crowd was invited to this campaign: its tests are offered to them.
        record_choice(Worker.objects.get(user__username=username), campaign.batch, BatchChoice.How.INVITATION)
    report = SimulationReport(mode=mode, threads=threads)
    people = []
    pool = ThreadPoolExecutor(threads, thread_name_prefix="simulated-crowd") if threads > 1 else None
    counting = threading.Lock() if pool is not None else nullcontext()

    def work_through(chunk) -> bool:
        did_work = False
        for person, is_careless in chunk:
            for slug in TASK_ORDER:
                if _work_once(person, slug, is_careless, answerer, report, counting):
                    did_work = True
        return did_work

    def one_round(url: str | None) -> bool:
        if not people:
            for username, is_careless in names:
                person = HttpWorker(url, username, password) if mode == "html" else ServiceWorker(username)
                person.log_in()
                people.append((person, is_careless))
        order = list(people)
        rng.shuffle(order)
        if pool is None:
            return work_through(order)
        return any(list(pool.map(work_through, [order[i::threads] for i in range(threads)])))

    try:
        report = run_rounds(
            campaign, rng, report, base_url, one_round, max_seconds=max_seconds, max_rounds_idle=max_rounds_idle,
            progress=progress, when_idle=lambda deadline: _follow_ups_may_change(campaign, deadline), serve=mode == "html",
        )
    finally:
        if pool is not None:
            _close_connections(pool, threads)
    review_and_reconcile(campaign, report, approve=approve)
    return report


def _close_connections(pool: ThreadPoolExecutor, threads: int) -> None:
    """Close each pool thread's database connection (one task per thread: each waits for the others), then the pool."""
    from django.db import connections

    everyone = threading.Barrier(threads)

    def close(_):
        connections.close_all()
        everyone.wait(timeout=60)

    try:
        list(pool.map(close, range(threads)))
    finally:
        pool.shutdown(wait=True)


#: How ``simulate_crowd`` drives the platform: its pages over HTTP, or the services behind them.
MODES = ("html", "fast")


def run_rounds(
    campaign, rng, report, base_url, one_round, *, max_seconds, max_rounds_idle, progress=None, when_idle=None, serve=True
):
    """Serve the platform in-process (unless ``base_url``, or not ``serve``: the fast mode needs no server) and
    call ``one_round(base_url)`` until the campaign ends, ``max_seconds`` pass, or ``max_rounds_idle`` rounds in a
    row did nothing and ``when_idle(deadline)`` does not expect a change; fills and returns ``report``."""
    server = None
    in_process = base_url is None
    if in_process:
        # The platform's hand-out draws gold HITs into a worker's stream at random; run in-process, the
        # whole run (not only the simulated answers) then follows the seed.
        seed_hand_out(rng.getrandbits(64))
        if serve:
            server, base_url = serve_in_background()
    started = time.perf_counter()
    try:
        idle_rounds = 0
        while time.perf_counter() - started < max_seconds:
            did_work = one_round(base_url)
            campaign.refresh_from_db()
            if progress:
                progress(report)
            if campaign.state in (Campaign.State.FINISHED, Campaign.State.CANCELLED):
                break
            idle_rounds = 0 if did_work else idle_rounds + 1
            if idle_rounds >= max_rounds_idle:
                if _release_held_examples(campaign, report):
                    idle_rounds = 0  # the researcher's duplicate review let presence HITs out
                    continue
                if when_idle is not None and when_idle(started + max_seconds):
                    idle_rounds = 0  # e.g. a Celery worker ran follow-ups meanwhile: HITs may have opened
                    continue
                report.stuck = campaign.state == Campaign.State.RUNNING
                if report.stuck:
                    report.left = why_left(campaign, report)
                break
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        if in_process:
            seed_hand_out(None)
    campaign.refresh_from_db()
    report.campaign_state = campaign.state
    report.seconds = time.perf_counter() - started
    return report


def _release_held_examples(campaign: Campaign, report) -> bool:
    """Play the researcher of the duplicate review once the crowd has nothing left: keep every pair."""
    from annotation.services.duplicates import held_examples, release_example

    held = held_examples(campaign)
    for example, _ in held:
        release_example(campaign, example)
    report.released_for_review += len(held)
    return bool(held)


#: How long beyond three coalescing windows an idle run waits, once no follow-up is at work, for the last
#: drain's changes to show (a Celery worker picks the task up, commits).
SETTLE_SECONDS = 5.0
#: The longest an idle run waits for a drain at work before it looks again (a drain killed mid-way leaves its
#: ids "at work" until Celery redelivers it).
AT_WORK_SECONDS = 600.0


def _follow_ups_may_change(campaign: Campaign, deadline: float) -> bool:
    """With a Redis broker, a completed HIT's follow-ups (gold labels, a third judge's places, the campaign's end)
    run in a Celery worker a few seconds after the submission: before calling an idle run stuck, wait for them.
    The wait lasts while a drain of the batch's completed HITs is at work (``coalesce.at_work``, up to
    ``AT_WORK_SECONDS``), then a few coalescing windows more.  True when the campaign's state or its HITs' places
    changed meanwhile (the loop then looks again): an idle round may only mean that the work it waits for is not
    open yet."""
    from annotation.services import coalesce

    if not coalesce.enabled() or campaign.state != Campaign.State.RUNNING:
        return False
    before = _open_work(campaign)
    settle = 3 * coalesce.window_seconds() + SETTLE_SECONDS
    started = time.perf_counter()
    quiet_until = started + settle
    while time.perf_counter() < min(deadline, quiet_until):
        time.sleep(0.5)
        campaign.refresh_from_db()
        if campaign.state != Campaign.State.RUNNING or _open_work(campaign) != before:
            return True
        now = time.perf_counter()
        if now - started < AT_WORK_SECONDS and coalesce.at_work("completed", campaign.batch_id):
            quiet_until = now + settle
    return False


def _open_work(campaign: Campaign) -> tuple:
    """The batch's HITs, their places and how many are open: what a follow-up changes when it opens work."""
    figures = HIT.objects.filter(batch_id=campaign.batch_id).aggregate(
        n=Count("pk"), places=Sum("max_assignments"), open=Count("pk", filter=Q(state=HIT.State.OPEN))
    )
    return figures["n"], figures["places"], figures["open"]


def _work_once(person, slug: str, careless: bool, answerer: Answerer, report: SimulationReport, counting=None) -> bool:
    """One HIT of a task type: start, answer, submit (or give it back when validation refuses the answers).
    ``person``: a ``HttpWorker`` (pages) or a ``ServiceWorker`` (services): the same buttons.  ``counting``: a lock
    held while the report's figures move (several threads)."""
    counting = counting or nullcontext()
    assignment = person.start_task(slug)
    if assignment is None:
        return False
    figures = report.stages[slug]
    with counting:
        figures.accepted += 1
    data = getattr(answerer, slug)(assignment.hit, person.username, careless)
    if person.submit_answers(assignment, data):
        with counting:
            figures.submitted += 1
        return True
    with counting:
        figures.refused += 1
        refusal = report.refusals.setdefault(assignment.hit_id, [0, ""])
        refusal[0] += 1
        refusal[1] = refusal[1] or getattr(person, "last_refusal", "") or "refused by the page"
    person.give_back(assignment)
    return False


def why_left(campaign: Campaign, report: SimulationReport, shown: int = 5) -> list[str]:
    """Why a stuck run's remaining HITs found no one: per task type, the open regular HITs, how many the simulated
    crowd's answers were refused on (with the first reason of a few), and how many of the crowd may still take them."""
    from hits.models import BatchBlock, HITExclusion, Qualification

    # Regular HITs only: the campaign waits for them (tests and gold checks stay open for the next workers).
    open_hits = HIT.objects.filter(batch_id=campaign.batch_id, state=HIT.State.OPEN, kind=HIT.Kind.REGULAR)
    lines = []
    crowd = Worker.objects.filter(only_batch_id=campaign.batch_id)
    out = crowd.filter(Q(blocked=True) | Q(batch_blocks__batch_id=campaign.batch_id)).distinct().count()
    for slug, kind, n in (
        open_hits.values_list("task_type__slug", "kind").annotate(n=Count("pk")).order_by("task_type__slug", "kind")
    ):
        hits = open_hits.filter(task_type__slug=slug, kind=kind)
        refused = [pk for pk in hits.values_list("pk", flat=True) if pk in report.refusals]
        tested = Qualification.objects.filter(batch_id=campaign.batch_id, task_type__slug=slug)
        qualified = tested.filter(state=Qualification.State.QUALIFIED, worker__in=crowd).count()
        held = Assignment.objects.filter(hit__in=hits, state=Assignment.State.ASSIGNED).count()
        lines.append(
            f"left: {n} open {kind} {slug} HITs, {len(refused)} of them refused the simulated answers; of the crowd of "
            f"{crowd.count()}, {out} blocked" + (f", {qualified} qualified for {slug}" if tested.exists() else "")
            + f"; {held} places held"
        )
        for pk in refused[:shown]:
            times, reason = report.refusals[pk]
            lines.append(f"left: HIT {pk} ({slug}) refused {times} times: {reason}"[:400])
        if not refused:
            done = Assignment.objects.filter(hit__in=hits, state__in=Assignment.DONE_STATES).values("worker").distinct().count()
            excluded = HITExclusion.objects.filter(hit__in=hits).values("worker").distinct().count()
            lines.append(
                f"left: no {slug} answers were refused: {done} workers already worked on these HITs, {excluded} are "
                "excluded from some (e.g. their writers); too few eligible workers for the places left"
            )
    return lines or ["left: no open HIT (the campaign waits for a follow-up or a researcher)"]


