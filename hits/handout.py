"""The hand-out: which HIT a worker gets next, and taking its place.

Handing out a HIT locks candidate rows with ``SELECT ... FOR UPDATE SKIP LOCKED``
so that concurrent workers never take the same last place of a HIT; the CHECK
constraint on ``HIT.n_taken`` and the unique (HIT, worker) constraint make an
over-filled HIT or a double assignment impossible even if that logic were wrong.
The worker's draw (``Draw``) keeps the HIT previewed for them; gold HITs are mixed
in at random; a hand-out the database stopped (deadlock) is tried again.
``hits.services`` re-exports the public names.
"""

from __future__ import annotations

import logging
import time
import random
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from hits.handlers import Eligibility, eligibility
from hits import sql
from hits.models import HIT, Assignment, Batch, BatchChoice, Draw, HITExclusion, LastServed, TaskType, Worker

log = logging.getLogger(__name__)


class NotEligible(Exception):
    """The worker may not do HITs of this type."""


#: The batches whose HITs are taken through MTurk's frame (``via_mturk``).
MTURK_BACKENDS = (Batch.Backend.MTURK_SANDBOX, Batch.Backend.MTURK_LIVE)


def _markets(via_mturk: bool, backend: str) -> tuple[str, ...]:
    return MTURK_BACKENDS if via_mturk else (backend,)



def available_hits(
    worker: Worker, task_type: TaskType, allowed: Eligibility | None = None, via_mturk: bool = False, *,
    backend: str = Batch.Backend.LOCAL,
):
    """HITs of a type that this worker could accept now (unlocked query).

    HITs of an MTurk batch are taken only through MTurk (``via_mturk``, the
    framed HIT page), those of a Prolific batch only in a Prolific session
    (``backend="prolific"``), those of a local batch only on the platform's pages.
    """
    allowed = eligibility(worker, task_type) if allowed is None else allowed
    market = Q(batch__backend__in=_markets(via_mturk, backend))
    eligible = Q(pk__in=[])
    named = list(allowed.batches)
    # Through MTurk, a HIT published there is taken only by confirmed work (see ``_eligibility_sql``).
    mine = Assignment.objects.filter(hit=OuterRef("pk"), worker=worker)
    if via_mturk:
        mine = mine.filter(Q(hit__overbook=False) | Q(state__in=Assignment.DONE_STATES))
    if allowed.default:
        eligible |= Q(kind__in=allowed.default) & ~Q(batch_id__in=named) & ~Exists(mine)
    for kinds, attempt, batch_ids in allowed.groups():
        # A test item counts as taken at this attempt only while a place is held (returned or expired: again).
        taken = mine.filter(~Q(hit__kind=HIT.Kind.QUALIFICATION) | Q(attempt=attempt, state__in=Assignment.TAKING_STATES))
        eligible |= Q(batch_id__in=batch_ids, kind__in=kinds) & ~Exists(taken)
    return (
        HIT.objects.filter(
            market,
            eligible,
            task_type=task_type,
            state=HIT.State.OPEN,
            batch__state=Batch.State.ACTIVE,
            n_taken__lt=F("max_assignments"),
        )
        .exclude(exclusions__worker=worker)
    )


def current_assignment(worker: Worker, task_type: TaskType) -> Assignment | None:
    """The worker's live (assigned, not expired) assignment of this type, if any (its HIT loaded)."""
    row = sql.fetchone(
        _current_sql(),
        [worker.pk, task_type.pk, Assignment.State.ASSIGNED, sql.param(Assignment._meta.get_field("expires_at"), timezone.now())],
    )
    if row is None:
        return None
    assignment, hit = sql.instances(row, Assignment, HIT)
    sql.attach(assignment, hit=hit, worker=worker)
    sql.attach(hit, task_type=task_type)
    return assignment


def _current_sql() -> str:
    return sql.statement(
        "current",
        lambda: (
            f"SELECT {sql.columns(Assignment, 'a')}, {sql.columns(HIT, 'h')} FROM {sql.table(Assignment)} a "
            f"JOIN {sql.table(HIT)} h ON h.id = a.hit_id "
            "WHERE a.worker_id = %s AND h.task_type_id = %s AND a.state = %s AND a.expires_at > %s "
            "ORDER BY a.accepted_at DESC LIMIT 1"
        ),
    )


def _eligibility_sql(allowed: Eligibility, worker_id: int, via_mturk: bool = False) -> tuple[tuple, str, list]:
    """The hand-out's condition for what ``allowed`` lets the worker take: (shape, SQL, parameters).

    ``via_mturk``: on a HIT published on MTurk (``overbook``) only work that counts (confirmed) keeps the worker
    from another assignment of it: each MTurk assignment id gets its own (``Assignment.overbook``), so a made-up
    id opened first in the worker's name never locks their real assignment out."""
    confirmed = ""
    if via_mturk:
        confirmed = f" AND (NOT h.overbook OR a.state IN ({', '.join(['%s'] * len(Assignment.DONE_STATES))}))"
    # OFFSET 0 (PostgreSQL) keeps the look-up per HIT (one probe of the HIT's few assignments for each HIT the
    # window reads): otherwise the planner may turn it into an anti-join that reads the worker's whole history
    # first (1,000 assignments: 1 ms on every hand-out), depending on its estimate of the campaign's open HITs.
    fence = " OFFSET 0" if connection.vendor == "postgresql" else ""
    taken = (
        f"NOT EXISTS (SELECT 1 FROM {sql.table(Assignment)} a WHERE a.hit_id = h.id AND a.worker_id = %s "
        f"AND (h.kind <> %s OR (a.attempt = %s AND a.state IN ({', '.join(['%s'] * len(Assignment.TAKING_STATES))})))"
        f"{confirmed}{fence})"
    )
    parts, params, shape = [], [], []
    named = sorted(allowed.batches)

    def taken_params(attempt):
        return [worker_id, HIT.Kind.QUALIFICATION, attempt, *Assignment.TAKING_STATES, *(Assignment.DONE_STATES if via_mturk else ())]

    if allowed.default:
        kinds = sorted(allowed.default)
        part = f"(h.kind IN ({', '.join(['%s'] * len(kinds))})"
        if named:
            part += f" AND h.batch_id NOT IN ({', '.join(['%s'] * len(named))})"
        parts.append(part + " AND " + taken + ")")
        params += [*kinds, *named, *taken_params(1)]
        shape.append(("default", len(kinds), len(named)))
    for kinds, attempt, batch_ids in allowed.groups():
        parts.append(
            f"(h.batch_id IN ({', '.join(['%s'] * len(batch_ids))}) AND h.kind IN ({', '.join(['%s'] * len(kinds))}) AND {taken})"
        )
        params += [*batch_ids, *kinds, *taken_params(attempt)]
        shape.append((len(batch_ids), len(kinds)))
    return tuple(shape), "(" + " OR ".join(parts) + ")", params


#: Gold HITs of a batch are tried in an order drawn afresh for each gold draw: ((id mod P) x a + b) mod P.
_SHUFFLE_PRIME = 2147483647

#: A hand-out draws at random among this many of the HITs first in a campaign's queue (stage, then id).
HANDOUT_WINDOW = 20

#: The hand-out's randomness (the gold draw, the order of gold HITs): unpredictable.  Tests put a seeded
#: ``random.Random`` here.
rng = random.SystemRandom()


def seed_hand_out(seed: int | None) -> None:
    """Make the hand-out's draws follow ``seed`` (a simulated crowd served in-process); None: unpredictable again."""
    global rng
    rng = random.Random(seed) if seed is not None else random.SystemRandom()


def _next_hit_sql(
    eligible_shape: tuple, eligible_sql: str, via_mturk: bool, one_hit: bool, gold: str | None, same_batch: bool,
    avoid: bool = False, wait: bool = False, look: bool = False,
) -> str:
    """The hand-out's query; ``gold`` is None (any kind), "without" or "only" (in a shuffled order).

    ``wait``: wait for a HIT another worker's hand-out has locked rather than skip it (one named HIT, or a
    second look when every HIT left was locked: a gold or test item with many places is locked by each
    hand-out in turn, and skipping it would tell workers nothing is left while places are).
    ``look``: whether any HIT is open to the worker under the same rules, locked or not (the id of one, no
    lock taken, no order; with ``gold="only"``: gold HITs left but locked for a moment).
    """

    def build():
        where = [
            "h.task_type_id = %s",
            "h.state = %s",
            # A HIT published on MTurk (``overbook``) never refuses an MTurk arrival for want of a place: MTurk
            # hands out its places, and made-up ids could otherwise fill them here (see ``HIT.overbook``).
            "(h.n_taken < h.max_assignments OR h.overbook)" if via_mturk else "h.n_taken < h.max_assignments",
            "b.state = %s",
            "b.backend IN (%s, %s)" if via_mturk else "b.backend = %s",
            eligible_sql,
            f"NOT EXISTS (SELECT 1 FROM {sql.table(HITExclusion)} x WHERE x.hit_id = h.id AND x.worker_id = %s)",
        ]
        if one_hit:
            where.append("h.id = %s")
        if gold == "without":
            where.append("h.kind <> %s")
        elif gold == "only":
            where.append("h.kind = %s")
        if same_batch:
            where.append("h.batch_id = %s")
        if avoid:
            where.append("h.id <> %s")
        shuffled = f"((h.id %% {_SHUFFLE_PRIME}) * %s + %s) %% {_SHUFFLE_PRIME}"
        source = f"FROM {sql.table(HIT)} h JOIN {sql.table(Batch)} b ON b.id = h.batch_id WHERE "
        if look:
            return "SELECT h.id " + source + " AND ".join(where) + " LIMIT 1"
        lock = sql.lock_clause("h", skip_locked=not wait)
        if gold == "only" or one_hit:
            order = f"{shuffled}, h.id" if gold == "only" else "h.id"
            return f"SELECT {sql.columns(HIT, 'h')}, {sql.columns(Batch, 'b')} " + source + " AND ".join(where) + f" ORDER BY {order} LIMIT 1" + lock
        # Inside a campaign: its stages (priority: a redo round first) and test items in their order; the rest,
        # regular and gold alike, in a random order drawn afresh for each hand-out (nothing stands out).  The
        # draw is among the first ``HANDOUT_WINDOW`` HITs open to the worker in queue order (the queue index
        # finds them without reading the whole campaign); the lock's re-check looks at the places again.
        window = f"SELECT h.id " + source + " AND ".join(where) + f" ORDER BY h.priority, h.id LIMIT {HANDOUT_WINDOW}"
        places = "(h.n_taken < h.max_assignments OR h.overbook)" if via_mturk else "h.n_taken < h.max_assignments"
        return (
            f"SELECT {sql.columns(HIT, 'h')}, {sql.columns(Batch, 'b')} " + source
            + f"h.id IN ({window}) AND h.state = %s AND {places} "
            + f"ORDER BY h.priority, CASE WHEN h.kind = %s THEN 0 ELSE {shuffled} END, h.id LIMIT 1" + lock
        )

    return sql.statement(("next", eligible_shape, via_mturk, one_hit, gold, same_batch, avoid, wait, look), build)


def _draw_sql(n_markets: int | None = None) -> str:
    """The worker's draw row of a type: (HIT drawn, HIT given back, expiry, not expired yet, the drawn HIT's batch
    and kind, the given-back HIT's kind).  ``n_markets``: with, in the same statement (one round trip), the
    worker's first campaign in the fair order (``_first_campaign_sql``) and whether a draw row exists: then one
    row always comes back, (draw columns..., worker id or NULL, first campaign id or NULL)."""
    draw = (
        "d.hit_id, d.passed_hit_id, d.expires_at, d.expires_at > %s, h.batch_id, h.kind, p.kind"
    )
    joins = f"LEFT JOIN {sql.table(HIT)} h ON h.id = d.hit_id LEFT JOIN {sql.table(HIT)} p ON p.id = d.passed_hit_id"
    if n_markets is None:
        return sql.statement(
            "draw", lambda: f"SELECT {draw} FROM {sql.table(Draw)} d {joins} WHERE d.worker_id = %s AND d.task_type_id = %s"
        )
    return sql.statement(
        ("draw-first", n_markets),
        lambda: (
            f"SELECT {draw}, d.worker_id, ({_first_campaign_sql(n_markets)}) FROM (SELECT 1 AS one) o "
            f"LEFT JOIN {sql.table(Draw)} d ON d.worker_id = %s AND d.task_type_id = %s {joins}"
        ),
    )


def _keep_draw(worker_id: int, task_type_id: int, hit_id: int | None, passed_hit_id: int | None, expires_at) -> None:
    """Store the worker's draw of a type (one row per worker and type, written in one statement)."""
    text = sql.statement(
        "draw-keep",
        lambda: (
            f"INSERT INTO {sql.table(Draw)} (worker_id, task_type_id, hit_id, passed_hit_id, expires_at) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (worker_id, task_type_id) DO UPDATE SET hit_id = excluded.hit_id, "
            "passed_hit_id = excluded.passed_hit_id, expires_at = excluded.expires_at"
        ),
    )
    sql.execute(text, [worker_id, task_type_id, hit_id, passed_hit_id, sql.param(Draw._meta.get_field("expires_at"), expires_at)])


def _served_sql() -> str:
    return sql.statement(
        "served",
        lambda: (
            f"INSERT INTO {sql.table(LastServed)} (worker_id, batch_id, task_type_id, served_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (worker_id, batch_id, task_type_id) DO UPDATE SET served_at = excluded.served_at"
        ),
    )


def _take_sql() -> str:
    return sql.statement("take", lambda: f"UPDATE {sql.table(HIT)} SET n_taken = n_taken + 1 WHERE id = %s")


def _take_place(hit_id: int, worker_id: int, batch_id: int, task_type_id: int, at) -> None:
    """One more place of the HIT taken, and its batch served the worker a HIT of the type at ``at``
    (``LastServed``): on PostgreSQL one statement (the upsert in a WITH clause of the update), elsewhere two."""
    served_params = [worker_id, batch_id, task_type_id, sql.param(LastServed._meta.get_field("served_at"), at)]
    if connection.vendor == "postgresql":
        sql.execute(sql.statement("take-place", lambda: f"WITH served AS ({_served_sql()}) {_take_sql()}"), [*served_params, hit_id])
    else:
        sql.execute(_take_sql(), [hit_id])
        sql.execute(_served_sql(), served_params)


def pass_hit(worker_id: int, task_type_id: int, hit_id: int) -> None:
    """The worker gave ``hit_id`` back: their next new draw moves on from it (a HIT drawn before stays drawn)."""
    text = sql.statement(
        "draw-pass",
        lambda: (
            f"INSERT INTO {sql.table(Draw)} (worker_id, task_type_id, passed_hit_id) VALUES (%s, %s, %s) "
            "ON CONFLICT (worker_id, task_type_id) DO UPDATE SET passed_hit_id = excluded.passed_hit_id"
        ),
    )
    sql.execute(text, [worker_id, task_type_id, hit_id])


@dataclass
class _Drawn:
    hit: HIT | None
    stored: tuple | None  # the worker's draw row as read: (hit id, passed HIT id, expires at)
    kept: bool  # ``hit`` is the HIT drawn before (preview or an earlier hand-out)


def _draw(
    worker, task_type, allowed: Eligibility, *, batch_id: int | None = None, moving_on: bool = False, backend: str = Batch.Backend.LOCAL,
) -> _Drawn:
    """The worker's drawn HIT of this type, locked: the one drawn before while it is still open to them
    (``batch_id``: only a HIT of that batch), else a new draw.  A new draw avoids the HIT last given back;
    it falls back to it when nothing else is left, unless ``moving_on`` (a skip).

    No lock is ever waited for while another is held (two workers' crossed draws would deadlock): the kept
    HIT is locked only when it can be used (its batch and, for gold, regular work beside it are checked
    first, unlocked), and a new draw after it was locked skips locked HITs without waiting."""
    expires_at = Draw._meta.get_field("expires_at")
    now = sql.param(expires_at, timezone.now())
    first = _UNKNOWN
    if batch_id is None:
        # The worker's first campaign in the fair order comes with the draw row (one round trip): a new draw starts
        # there.  None: no campaign has open HITs of the type.
        markets = _markets(False, backend)
        row = sql.fetchone(_draw_sql(len(markets)), [now, *_first_campaign_params(worker, task_type, markets), worker.pk, task_type.pk])
        stored, first = (row[:7] if row[7] is not None else None), row[8]
    else:
        stored = sql.fetchone(_draw_sql(), [now, worker.pk, task_type.pk])
    locked = False
    if stored is not None and stored[0] is not None and stored[3] and (batch_id is None or stored[4] == batch_id) and (
        # Gold only beside regular work: a gold draw kept while the batch's regular work ran out lapses.
        stored[5] != HIT.Kind.GOLD
        or available_hits(worker, task_type, allowed, backend=backend).filter(batch_id=stored[4], kind=HIT.Kind.REGULAR).exists()
    ):
        hit = _next_hit(worker, task_type, allowed, stored[0], False, backend=backend)
        if hit is not None:
            return _Drawn(hit, stored, True)
        locked = True  # its row may be locked even so (PostgreSQL can keep the lock of a row found no longer open)
    passed = stored[1] if stored is not None else None
    # A HIT given back is replaced by one of its kind: returning or skipping never re-rolls the gold draw.
    kind = stored[6] if passed is not None and stored[6] in (HIT.Kind.GOLD, HIT.Kind.REGULAR) else None
    hit = _next_hit(
        worker, task_type, allowed, None, False, batch_id=batch_id, avoid=passed, may_wait=not locked, backend=backend, kind=kind,
        first_campaign=first,
    )
    if hit is None and passed is not None and not moving_on:
        hit = _next_hit(
            worker, task_type, allowed, None, False, batch_id=batch_id, may_wait=not locked, backend=backend, kind=kind,
            first_campaign=first,
        )
    return _Drawn(hit, stored, False)


# A hand-out the database stopped to break a deadlock (40P01) or a serialization failure (40001) is tried again
# this many times.
_DEADLOCK_RETRIES = 5
_RETRYABLE_SQLSTATES = ("40P01", "40001")


def accept_next(
    worker: Worker, task_type: TaskType, hit_id: int | None = None, via_mturk: bool = False, *, unopened_hold: int | None = None,
    batch_id: int | None = None, moving_on: bool = False, backend: str = Batch.Backend.LOCAL, kinds: frozenset | None = None,
) -> Assignment | None:
    """Give the worker the next HIT of this type (or the HIT ``hit_id``); None when nothing is left.

    Without ``hit_id`` (the platform's own pages) the worker gets the HIT drawn for them (``preview_next``
    shows it), or a new draw: ``batch_id`` keeps it to one batch (a campaign the worker started from),
    ``moving_on`` (a skip) never hands again the HIT just given back.

    A worker who already holds a live assignment of this type gets it back
    rather than a second one.  With ``unopened_hold`` (seconds) the place is
    held only that long until the worker opens the HIT (``mark_opened`` then
    gives it the task type's full duration): a HIT reserved for a worker who
    has walked away goes back to the pool at the next expiry run.

    ``backend`` names the market whose batches are handed out (a Prolific session: ``"prolific"``, with
    ``batch_id`` its study's batch and ``kinds`` the study's kinds of HIT: test items, or regular and gold work).
    """
    allowed = eligibility(worker, task_type)
    if kinds is not None:
        allowed = allowed.within(batch_id, kinds)
    if not allowed:
        raise NotEligible(f"you may not do {task_type.name} HITs at the moment")
    existing = current_assignment(worker, task_type)
    if (
        existing is not None and (hit_id is None or existing.hit_id == hit_id) and not (via_mturk and existing.overbook)
        and (kinds is None or (existing.hit.batch_id == batch_id and existing.hit.kind in kinds))
    ):
        # (An MTurk arrival on a HIT published there gets an assignment of its own: one per MTurk assignment id;
        # a Prolific session's hand-out gives only a HIT of its own study.)
        return existing

    def hand_out() -> Assignment | None:
        now = timezone.now()
        drawn = None
        if hit_id is None and not via_mturk:
            drawn = _draw(worker, task_type, allowed, batch_id=batch_id, moving_on=moving_on, backend=backend)
            hit = drawn.hit
        else:
            hit = _next_hit(worker, task_type, allowed, hit_id, via_mturk)
        if hit is None:
            return None
        attempt = allowed.attempt(hit.batch_id, hit.kind)
        _take_place(hit.pk, worker.pk, hit.batch_id, task_type.pk, now)
        hit.n_taken += 1
        assignment = Assignment(
            hit=hit,
            worker=worker,
            attempt=attempt,
            accepted_at=now,
            expires_at=now + timedelta(seconds=min(task_type.assignment_duration, unopened_hold or task_type.assignment_duration)),
            overbook=via_mturk and hit.overbook,
        )
        sql.insert(assignment)
        stored = drawn.stored if drawn is not None else None
        if stored is not None and (stored[0] is not None or stored[1] is not None) and (drawn.kept or batch_id is None):
            # The draw is used up, and what was given back before no longer matters (a draw kept while the
            # worker started from another campaign stays for later).
            _keep_draw(worker.pk, task_type.pk, None, None, None)
        return assignment

    # PostgreSQL keeps the lock of a HIT row it found no longer open (re-checked after another hand-out's
    # update), so two hand-outs can each hold one such row and wait for the other's: it then stops one of them
    # with a deadlock error.  That hand-out is tried again from the start (its savepoint let go of its locks).
    for retry in range(_DEADLOCK_RETRIES + 1):
        try:
            with transaction.atomic():
                return hand_out()
        except OperationalError as exc:
            if retry == _DEADLOCK_RETRIES or getattr(exc.__cause__, "sqlstate", None) not in _RETRYABLE_SQLSTATES:
                raise
            log.info("hand-out to worker %s stopped by the database (%s); trying again", worker.pk, exc.__cause__.sqlstate)
            time.sleep(random.uniform(0.005, 0.05) * (retry + 1))
    return None  # not reached


def preview_next(worker: Worker, task_type: TaskType) -> HIT | None:
    """The HIT ``accept_next`` will hand the worker (gold mixed in the same way), without taking it: the draw
    is kept (``settings.HIT_DRAW_KEEP_SECONDS``), so previewing again shows the same HIT and "Start" takes it."""
    allowed = eligibility(worker, task_type)
    if not allowed:
        return None
    with transaction.atomic():
        drawn = _draw(worker, task_type, allowed)
        if drawn.hit is not None and not drawn.kept:
            passed = drawn.stored[1] if drawn.stored is not None else None
            _keep_draw(worker.pk, task_type.pk, drawn.hit.pk, passed, timezone.now() + timedelta(seconds=settings.HIT_DRAW_KEEP_SECONDS))
        return drawn.hit


#: Pauses (seconds) between new gold draws when every gold HIT open to the worker is locked by other hand-outs.
_GOLD_RETRY_PAUSES = (0.02, 0.05, 0.1, 0.15, 0.2)


#: ``_next_hit(first_campaign=...)`` not given: it looks the worker's first campaign up itself.
_UNKNOWN = object()


def _next_hit(
    worker, task_type, allowed: Eligibility, hit_id, via_mturk, *, batch_id: int | None = None, avoid: int | None = None,
    may_wait: bool = True, backend: str = Batch.Backend.LOCAL, kind: str | None = None, first_campaign=_UNKNOWN,
):
    """Lock and return the next HIT (its batch loaded); gold HITs are mixed in at their batch's ``gold_share``.

    Campaigns (batches) are tried in the worker's order (``campaign_order``: the ones they chose first, then
    round-robin); inside one, a redo round first (``priority``), test items in their order, and the rest at
    random.  ``batch_id``: HITs of that batch only; ``avoid``: not that HIT; ``may_wait``: False when this
    transaction already holds a HIT's lock (then it never waits for one); ``kind``: the kind the draw must
    have (``HIT.Kind.GOLD`` or ``REGULAR``: a HIT given back is replaced by one of its kind, so returning a
    HIT never re-rolls the gold draw), None: gold at the batch's rate; ``first_campaign``: the worker's first
    campaign in the fair order when the caller read it already (``_draw``; None: no campaign has open HITs).

    Gold comes only beside regular work: the gold HIT is one of the batch of the regular HIT the worker would
    get otherwise, chosen at random among those open to them (no HIT is everyone's gold check), and none
    when no regular work is left for them.

    When every gold HIT open to the worker is locked for a moment (other hand-outs hold them for a few
    milliseconds), the worker still meets gold at the batch's rate: the gold draw is made again a few times
    over about half a second (``_GOLD_RETRY_PAUSES``), skipping locked HITs, never waiting for a lock while the
    regular HIT's is held (no deadlock).  Savepoints would let go of that lock, but a row locked in a
    savepoint and then updated deadlocked fifty workers on PostgreSQL (tuple locks).
    """
    eligible_shape, eligible_sql, eligible_params = _eligibility_sql(allowed, worker.pk, via_mturk)
    kinds = allowed.kinds()

    def first(gold=None, in_batch=None, wait=False, look=False):
        """The next HIT, locked (or, ``look``: whether one is open to the worker, locked or not)."""
        params = [task_type.pk, HIT.State.OPEN, Batch.State.ACTIVE, *_markets(via_mturk, backend), *eligible_params, worker.pk]
        if hit_id is not None:
            params.append(hit_id)
        if gold is not None:
            params.append(HIT.Kind.GOLD)
        if in_batch is not None:
            params.append(in_batch)
        if avoid is not None and hit_id is None:
            params.append(avoid)
        if look:
            statement = _next_hit_sql(
                eligible_shape, eligible_sql, via_mturk, hit_id is not None, gold, in_batch is not None,
                avoid is not None and hit_id is None, look=True,
            )
            return sql.fetchone(statement, params, prepare=False) is not None
        if gold != "only" and hit_id is None:
            params += [HIT.State.OPEN, HIT.Kind.QUALIFICATION]
        if gold == "only" or hit_id is None:
            params += [rng.randrange(1, _SHUFFLE_PRIME), rng.randrange(_SHUFFLE_PRIME)]

        def run(wait):
            # Planned on every call, never prepared: its best plan depends on the worker and the queue.
            statement = _next_hit_sql(
                eligible_shape, eligible_sql, via_mturk, hit_id is not None, gold,
                in_batch is not None,
                avoid is not None and hit_id is None, wait,
            )
            return sql.fetchone(statement, params, prepare=False)

        # One named HIT: wait for its lock.  Otherwise skip locked HITs; a second look waits (``wait``, see below).
        row = run(wait=hit_id is not None or wait)
        if row is None:
            return None
        hit, batch = sql.instances(row, HIT, Batch)
        sql.attach(hit, batch=batch, task_type=task_type)
        return hit

    def gold_of(in_batch):
        gold_hit = first(gold="only", in_batch=in_batch)  # skips locked gold HITs: the next one in this draw
        if gold_hit is None and connection.features.has_select_for_update_skip_locked:
            # None free: every gold HIT open to them may be locked for a moment (unlocked look, the hand-out's own
            # rules: its "not taken by this worker" fence keeps a veteran's history out of the plan), then draw again.
            if first(gold="only", in_batch=in_batch, look=True):
                for pause in _GOLD_RETRY_PAUSES:
                    time.sleep(pause)
                    gold_hit = first(gold="only", in_batch=in_batch)
                    if gold_hit is not None:
                        break
        return gold_hit

    def in_campaign(in_batch, wait):
        if HIT.Kind.GOLD not in kinds:
            return first(in_batch=in_batch, wait=wait)
        hit = first(gold="without", in_batch=in_batch, wait=wait)
        if hit is None:
            return None  # no regular work left for this worker here: no gold either
        share = hit.batch.gold_share
        if kind == HIT.Kind.GOLD or (kind is None and share > 0 and rng.random() < share):
            gold_hit = gold_of(hit.batch_id)
            if gold_hit is not None:
                return gold_hit  # the regular HIT's lock is held until the commit, as a draw's always was
        return hit

    if not allowed or (hit_id is not None and not sql.is_storable_id(hit_id)):
        return None
    if hit_id is not None:
        return first()
    waiting = may_wait and connection.features.has_select_for_update_skip_locked
    campaigns = [batch_id] if batch_id is not None else None
    # Skip locked HITs in every campaign first; look again waiting only when every HIT left was locked
    # (PostgreSQL re-checks a HIT's places once its lock is released), never while holding another lock.
    tried = None
    for wait in (False, True) if waiting else (False,):
        if campaigns is None:
            # Most hand-outs end in the worker's first campaign: one prepared lookup finds it (planned once; the
            # hand-out's own query, planned on every call, stays a query of one campaign); only when it has
            # nothing for them are the campaigns listed and tried in turn.  None: no campaign has open HITs.
            if first_campaign is _UNKNOWN:
                markets = _markets(via_mturk, backend)
                row = sql.fetchone(_first_campaign_sql(len(markets)), _first_campaign_params(worker, task_type, markets), prepare=True)
                first_campaign = row[0] if row is not None else None
            if first_campaign is None:
                return None
            tried = first_campaign
            hit = in_campaign(tried, wait)
            if hit is not None:
                return hit
            campaigns = campaign_order(worker, task_type, via_mturk, backend)
        for campaign in campaigns:
            if campaign == tried and not wait:
                continue  # just looked there
            hit = in_campaign(campaign, wait)
            if hit is not None:
                return hit
    return None


def _campaign_order_sql(n_markets: int) -> str:
    choice = sql.table(BatchChoice)
    return sql.statement(
        ("campaign-order", n_markets),
        lambda: (
            f"SELECT b.id AS id, (SELECT MAX(c.created_at) FROM {choice} c WHERE c.worker_id = %s AND c.batch_id = b.id AND c.how IN (%s, %s)) AS chosen, "
            # When the campaign last served the worker, read by key (``LastServed``): a worker's history of
            # thousands of assignments costs nothing here.
            f"(SELECT s.served_at FROM {sql.table(LastServed)} s WHERE s.worker_id = %s AND s.batch_id = b.id "
            "AND s.task_type_id = %s) AS served "
            f"FROM {sql.table(Batch)} b WHERE b.state = %s AND b.backend IN ({', '.join(['%s'] * n_markets)}) "
            # "Has open HITs of the type", written as the first one in the campaign's queue (index
            # ``hit_campaign_queue``): one index probe (a bitmap scan, the planner's choice for a plain EXISTS,
            # re-reads every entry of the campaign's open HITs: 20 ms after a 50,000-HIT campaign was paused).
            f"AND (SELECT h.id FROM {sql.table(HIT)} h WHERE h.task_type_id = %s AND h.state = %s AND h.batch_id = b.id "
            "ORDER BY h.task_type_id, h.state, h.batch_id, h.priority, h.id LIMIT 1) IS NOT NULL"
        ),
    )


def _first_campaign_sql(n_markets: int) -> str:
    """The id of the worker's first campaign in ``campaign_order``'s order (no row: none has open HITs)."""
    return sql.statement(
        ("first-campaign", n_markets),
        lambda: (
            f"SELECT o.id FROM ({_campaign_order_sql(n_markets)}) o "
            "ORDER BY CASE WHEN o.chosen IS NULL THEN 1 ELSE 0 END, o.chosen DESC, "
            "CASE WHEN o.served IS NULL THEN 0 ELSE 1 END, o.served, "
            f"((o.id %% {_SHUFFLE_PRIME}) * %s + %s) %% {_SHUFFLE_PRIME} LIMIT 1"
        ),
    )


def _campaign_order_params(worker, task_type, markets) -> list:
    return [worker.pk, BatchChoice.How.INVITATION, BatchChoice.How.START, worker.pk, task_type.pk, Batch.State.ACTIVE, *markets,
            task_type.pk, HIT.State.OPEN]


def _first_campaign_params(worker, task_type, markets) -> list:
    return [*_campaign_order_params(worker, task_type, markets),
            rng.randrange(1, _SHUFFLE_PRIME), rng.randrange(_SHUFFLE_PRIME)]


def campaign_order(worker, task_type, via_mturk: bool = False, backend: str = Batch.Backend.LOCAL) -> list[int]:
    """The running campaigns (batches) with open HITs of this type, in the order the hand-out tries them for
    this worker.

    First the campaigns the worker chose (signed up through its invitation, or "Start here"), the latest
    choice first: a researcher's recruits do that researcher's work.  Then the others round-robin: the campaign
    that served the worker longest ago (or never) first, ties in a random order drawn for each hand-out, so no
    campaign waits for another's queue to empty and no campaign's redo round (its ``priority``) comes
    before another campaign's work.
    """
    markets = _markets(via_mturk, backend)
    rows = sql.fetchall(_campaign_order_sql(len(markets)), _campaign_order_params(worker, task_type, markets))
    ties = {batch_id: rng.random() for batch_id, _, _ in rows}
    chosen = sorted((r for r in rows if r[1] is not None), key=lambda r: (r[1], ties[r[0]]), reverse=True)
    others = sorted((r for r in rows if r[1] is None), key=lambda r: (r[2] is not None, r[2] if r[2] is not None else 0, ties[r[0]]))
    return [r[0] for r in chosen + others]
