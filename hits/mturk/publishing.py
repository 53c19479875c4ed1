"""Publishing a batch's HITs on MTurk: CreateHIT requests, idempotency, budget cap and balance check.

Each local HIT becomes one MTurk HIT whose question is an ExternalQuestion
pointing at the platform's own framed HIT page.  The CreateHIT call carries
``UniqueRequestToken = RequesterAnnotation = "<MTURK_TOKEN_PREFIX>-<batch key>-<HIT id>"``
(the batch key is random, so a token never collides across database resets
or installations).  The call is recorded before it is sent and never re-sent
blind (``hits.mturk.tokens``): after an ambiguous answer (a lost reply, a
refusal as a repeat), or before a resend once MTurk may have forgotten the
token (23 h), the account's HITs are read (ListHITs) for the HIT's
annotation; a HIT found is recorded, never created a second time.  MTurk's
documented ``HitAlreadyExists`` says the HIT was created: when ListHITs does
not show it yet (or fails), the HIT is tracked as published all the same
(``made_hits``: neither waiting nor refused, its money counted as
committed), never sent again, and every sync reads ListHITs until its HITId
is found and recorded (``settle_made``).  Each created HIT
is recorded in its own transaction right after its call, so an interruption
loses nothing already published.

Mapping of HIT kinds (see docs/guides/mturk.md):

- regular HITs: ``MaxAssignments`` = the HIT's own (1 / 2 / 3 per the protocol);
- qualification HITs are open-ended locally (32767 places): on MTurk they
  get ``MTURK_OPEN_HIT_ASSIGNMENTS`` (default 9, under the 10 that doubles
  MTurk's commission);
- gold HITs are open-ended locally too, but on MTurk they must not stand out
  among the regular HITs they sit among: they get the places of those HITs
  (the fewest any regular HIT of their batch and task type has, e.g. 3 for
  presence), wait until such HITs exist, and grow by that many places
  (CreateAdditionalAssignmentsForHIT) each time all their places hold work
  MTurk confirmed, as long as they stay under 10; then a copy of the gold HIT
  (same item and key, not open to the workers who judged it) is published
  as a HIT of its own, and grows the same way (``gold_places``); once the
  batch has no open regular HIT of their type, gold HITs are neither
  published, grown nor copied, and the sync expires them on MTurk
  (``idle_gold_types``);
- qualification HITs are shown only to workers *without* the batch's MTurk
  qualification type of their task type (one per campaign, ``DoesNotExist``);
  regular and gold HITs of a type that requires qualification only to workers
  who have it (``Exists``);
- MTurk's minimum reward is $0.01, so a $0.00 qualification HIT pays $0.01;
  an unpaid gold HIT pays what the regular HITs of its type pay, and waits
  until some exist (gold presence checks go up with the first presence HITs).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from xml.sax.saxutils import escape

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.urls import reverse

from config.baseurl import public_base_url
from hits import budget
from hits.models import HIT, Batch, BudgetReservation
from hits.mturk import fees
from hits.mturk import tokens
from hits.mturk.client import RETRYABLE_CODES, MTurk, MTurkError, for_batch
from hits.markets.publishing import PublishRefused, publishing_lock, regular_rewards  # noqa: F401 - also this module's names
from hits.mturk.fees import made_hit_ids, mturk_max_assignments, mturk_reward  # noqa: F401 - also this module's names
from hits.mturk.models import MTurkHIT, MTurkQualificationType
from hits.outbox import send_after_commit

log = logging.getLogger(__name__)

LOCALE_QUALIFICATION = "00000000000000000071"
APPROVAL_RATE_QUALIFICATION = "000000000000000000L0"
EXTERNAL_QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd">'
    "<ExternalURL>{url}</ExternalURL><FrameHeight>{height}</FrameHeight></ExternalQuestion>"
)


def request_token(hit: HIT) -> str:
    """The CreateHIT UniqueRequestToken (and RequesterAnnotation) of a local HIT: stable for the HIT, unique
    across database resets and installations (the batch's random key), at most 64 characters."""
    return f"{settings.MTURK_TOKEN_PREFIX}-{hit.batch.key}-{hit.pk}"[:64]


def gold_places(published: MTurkHIT) -> int:
    """The places a published gold HIT should have on MTurk now: one step (the regular HITs' places) more each time
    every place it has holds work MTurk confirmed, so that it never shows more places open than a regular HIT."""
    from hits.models import Assignment

    step = mturk_max_assignments(published.hit)
    done = published.assignments.filter(assignment__state__in=Assignment.DONE_STATES).count()
    return step * (1 + done // step)


def places_wanted(published: MTurkHIT) -> int:
    """The places a published HIT should have on MTurk now, before places lost to unknown submissions."""
    if published.hit.kind == HIT.Kind.GOLD:
        return gold_places(published)
    return mturk_max_assignments(published.hit)


def idle_gold_types(batch: Batch) -> set[int]:
    """Task types whose gold HITs the batch must not offer on MTurk now: gold HITs of the type exist, but no open
    regular HIT of it (no gold without regular work, issue 27).  Their gold is neither published, grown nor
    copied, and the sync expires what is on MTurk (``hits.mturk.sync``) until regular work of the type is back."""
    gold = HIT.objects.filter(batch=batch, kind=HIT.Kind.GOLD).values_list("task_type_id", flat=True).distinct()
    working = HIT.objects.filter(batch=batch, kind=HIT.Kind.REGULAR, state=HIT.State.OPEN).values_list("task_type_id", flat=True).distinct()
    return set(gold) - set(working)


def waits_for_regular_hits(hit: HIT, rewards: dict[int, Decimal]) -> bool:
    """A gold HIT is published only once regular HITs of its type exist in its batch: it must look like them (their
    reward when it has none, their places)."""
    return hit.kind == HIT.Kind.GOLD and hit.task_type_id not in rewards


def external_question(page_url: str | None = None) -> str:
    url = page_url or public_base_url() + reverse("mturk-hit")
    return EXTERNAL_QUESTION.format(url=escape(url), height=settings.MTURK_FRAME_HEIGHT)


def tested_task_types(batch: Batch) -> set[int]:
    """Task types this batch has a qualification test for: only their HITs require the batch's MTurk type.

    Per batch, as the local hand-out decides (``hits.qualifications``): another campaign's test of the same task
    type must not hide this batch's HITs behind a type nobody here can be granted."""
    return set(HIT.objects.filter(batch=batch, kind=HIT.Kind.QUALIFICATION).values_list("task_type_id", flat=True).distinct())


def qualification_requirements(hit: HIT, qualification_type_id: str | None) -> list[dict]:
    """MTurk requirements of a HIT: its batch's qualification type of its task type (``None`` when the batch does
    not test it), then the optional locale and approval rate."""
    guard = {"ActionsGuarded": "DiscoverPreviewAndAccept"}
    requirements = []
    if qualification_type_id is not None:  # None: the batch does not test this task type (open to every worker)
        comparator = "DoesNotExist" if hit.kind == HIT.Kind.QUALIFICATION else "Exists"
        requirements.append({"QualificationTypeId": qualification_type_id, "Comparator": comparator, **guard})
    if settings.MTURK_LOCALES:
        requirements.append(
            {
                "QualificationTypeId": LOCALE_QUALIFICATION,
                "Comparator": "In",
                "LocaleValues": [{"Country": country.upper()} for country in settings.MTURK_LOCALES],
                **guard,
            }
        )
    if settings.MTURK_MIN_APPROVAL_RATE:
        requirements.append(
            {
                "QualificationTypeId": APPROVAL_RATE_QUALIFICATION,
                "Comparator": "GreaterThanOrEqualTo",
                "IntegerValues": [settings.MTURK_MIN_APPROVAL_RATE],
                **guard,
            }
        )
    return requirements


def create_hit_request(hit: HIT, qualification_type_id: str | None = None, regular_reward: Decimal | None = None) -> dict:
    """The CreateHIT parameters (boto3 names) for a local HIT."""
    task_type = hit.task_type
    title = task_type.name if hit.kind != HIT.Kind.QUALIFICATION else f"Qualification test: {task_type.name}"
    params = {
        "Title": title[:128],
        "Description": (task_type.description or task_type.name)[:2000],
        "Keywords": task_type.keywords[:1000],
        "Reward": str(mturk_reward(hit, regular_reward)),
        "MaxAssignments": mturk_max_assignments(hit),
        "AssignmentDurationInSeconds": hit.batch.mturk_assignment_duration or task_type.assignment_duration,
        "LifetimeInSeconds": hit.batch.mturk_hit_lifetime or settings.MTURK_HIT_LIFETIME,
        "AutoApprovalDelayInSeconds": auto_approval_delay(hit.batch),
        "Question": external_question(),
        "RequesterAnnotation": request_token(hit),
        "UniqueRequestToken": request_token(hit),
    }
    requirements = qualification_requirements(hit, qualification_type_id)
    if requirements:
        params["QualificationRequirements"] = requirements
    return params


def auto_approval_delay(batch: Batch) -> int:
    """The AutoApprovalDelayInSeconds of the batch's HITs: the campaign's (copied at launch), else the setting."""
    return batch.mturk_auto_approval_delay if batch.mturk_auto_approval_delay is not None else settings.MTURK_AUTO_APPROVAL_DELAY


def auto_approval_too_soon(delay: int) -> str:
    """Why an automatic approval ``delay`` seconds after submission is too soon for the periodic sync ("" if not):
    MTurk would pay work the sync never saw (nor the researcher reviewed).  At least
    ``AUTO_APPROVAL_SYNC_MARGIN`` sync intervals (MTURK_SYNC_INTERVAL)."""
    from hits.mturk.limits import AUTO_APPROVAL_SYNC_MARGIN

    least = AUTO_APPROVAL_SYNC_MARGIN * settings.MTURK_SYNC_INTERVAL
    if delay >= least:
        return ""
    return (
        f"MTurk would approve and pay work {delay:,} seconds after its submission, sooner than "
        f"{AUTO_APPROVAL_SYNC_MARGIN} syncs ({AUTO_APPROVAL_SYNC_MARGIN} x MTURK_SYNC_INTERVAL {settings.MTURK_SYNC_INTERVAL:,} s "
        f"= {least:,} s): work would be paid before the platform saw it; set an automatic approval delay of at least {least:,} seconds"
    )


def unpublished_hits(batch: Batch):
    """Open HITs of the batch that are not on MTurk yet, oldest first (set-aside ones of a paused batch included);
    a HIT MTurk refused for a lasting reason waits for the researcher's retry (``retry_publish``)."""
    return (
        HIT.objects.filter(batch=batch, state__in=HIT.UNFINISHED_STATES, mturk__isnull=True, publish_error="")
        .exclude(pk__in=made_hit_ids(batch))
        .select_related("task_type", "batch")
        .order_by("pk")
    )


def made_hits(batch: Batch):
    """HITs live on MTurk whose HITId is not known here yet: MTurk answered their CreateHIT ``HitAlreadyExists``
    (it was created) and ListHITs has not shown them.  Tracked as published: not waiting, never refused, their
    money committed (``fees.committed``); each sync reads ListHITs for them (``settle_made``)."""
    return HIT.objects.filter(batch=batch, pk__in=made_hit_ids(batch), mturk__isnull=True).order_by("pk")


def settle_made(batch: Batch, mturk: MTurk) -> int:
    """Record the HITId of each of ``made_hits`` that MTurk's ListHITs shows (by its RequesterAnnotation, one
    listing for all); returns how many were recorded.  An error reading the listing is raised (the next sync
    reads it again); nothing is ever created here."""
    waiting = {request_token(hit): hit for hit in made_hits(batch).select_related("batch")}
    recorded = 0
    if not waiting:
        return 0
    for item in mturk.pages("ListHITs", "HITs", MaxResults=100):
        hit = waiting.pop(item.get("RequesterAnnotation"), None)
        if hit is None:
            continue
        params = {"UniqueRequestToken": request_token(hit), "MaxAssignments": int(item["MaxAssignments"]), "Reward": str(item["Reward"])}
        if record_published(hit, item, params, mturk.sandbox) is not None:
            recorded += 1
        tokens.settle_found(request_token(hit))
        if not waiting:
            break
    return recorded


def planned_requests(batch: Batch) -> list[dict]:
    """The CreateHIT requests a publish of ``batch`` would send now, without calling AWS.

    A task type whose MTurk qualification type does not exist yet in this batch shows a
    placeholder id: it is created (once) by the first real publish.
    """
    sandbox = batch.backend != Batch.Backend.MTURK_LIVE
    known = dict(
        MTurkQualificationType.objects.filter(batch=batch, sandbox=sandbox).values_list("task_type_id", "qualification_type_id")
    )
    rewards = regular_rewards(batch)
    tested = tested_task_types(batch)
    requests = []
    for hit in unpublished_hits(batch):
        if waits_for_regular_hits(hit, rewards):
            continue
        type_id = known.get(hit.task_type_id, f"<created on first publish: {hit.task_type.slug}>") if hit.task_type_id in tested else None
        requests.append(create_hit_request(hit, type_id, rewards.get(hit.task_type_id)))
    return requests


@dataclass
class PublishReport:
    published: int = 0
    recovered: int = 0
    grown: int = 0
    moved: int = 0
    remaining: int = 0
    committed: str = "0.00"
    stopped: str = ""
    hit_ids: list[str] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)  # {"hit": local id, "error"}: CreateHIT refused for good
    made: list[dict] = field(default_factory=list)  # {"hit", "error"}: HitAlreadyExists, its HITId not read yet
    unsettled: list[dict] = field(default_factory=list)  # {"hit", "error"}: an answer lost, MTurk's records unread

    def as_dict(self) -> dict:
        return asdict(self)


def check_balance(mturk: MTurk, needed: Decimal) -> Decimal:
    """Refuse (``PublishRefused``) when the account's available balance cannot cover ``needed``; returns the balance."""
    balance = Decimal(mturk.call("GetAccountBalance")["AvailableBalance"])
    if balance < needed:
        raise PublishRefused(f"the MTurk balance of ${balance} cannot cover ${needed.quantize(fees.CENT)}")
    return balance


def publish_batch(batch: Batch, limit: int | None = None, mturk: MTurk | None = None) -> PublishReport:
    """Publish the batch's unpublished open HITs (at most ``limit``); safe to run again at any point.

    Stops before the HIT that would take the money committed (``fees.committed``)
    over the batch's ``budget_cap``; refuses to start when the account balance
    cannot cover the HITs about to be published.
    """
    if not batch.on_mturk:
        raise PublishRefused(f"batch '{batch}' runs on local workers, not MTurk")
    if not settings.PUBLIC_BASE_URL.startswith("https://") and not settings.MTURK_ENDPOINT_URL:
        # (The local stand-in, MTURK_ENDPOINT_URL, opens plain-HTTP pages for a rehearsal.)
        raise PublishRefused("PUBLIC_BASE_URL must be an https:// address: MTurk only frames HTTPS pages")
    if batch.state != Batch.State.ACTIVE:
        # Paused, cancelled or finished: new HITs wait (a resumed batch publishes them on its next sync).
        return PublishReport(remaining=unpublished_hits(batch).count(), stopped=f"the batch is {batch.state}")
    mturk = mturk or for_batch(batch)
    with publishing_lock(batch) as acquired:
        if not acquired:
            # Another process is publishing this batch; what it misses, the next publish or sync takes.
            return PublishReport(stopped="another publish of this batch is running")
        return _publish(batch, limit, mturk)


def _grow(batch: Batch, mturk: MTurk, report: "PublishReport") -> None:
    """Published HITs given more places locally (replacements of excluded work, ``hits.services.add_places``),
    or which lost places on MTurk to submissions that never reached our page: CreateAdditionalAssignmentsForHIT
    for the difference, within the budget cap, never from under 10 assignments to 10 or more (MTurk refuses).
    Its request token names the new total, so a retried call cannot add the places twice."""
    from hits.places import new_hit_for_places

    idle = idle_gold_types(batch)
    for published in (
        MTurkHIT.objects.filter(hit__batch=batch, hit__state=HIT.State.OPEN).select_related("hit").order_by("pk")
    ):
        if published.hit.kind == HIT.Kind.GOLD and published.hit.task_type_id in idle:
            continue  # no open regular HIT of its type: no more gold places, nor a copy
        lost = published.lost_places
        wanted = places_wanted(published) + lost
        extra = wanted - published.max_assignments
        if extra <= 0:
            continue
        if published.deleted_at or published.gone_at or published.max_assignments < 10 <= wanted:
            # MTurk cannot give this HIT more places: the local places it lacks move to a HIT of their own.
            if published.hit.kind == HIT.Kind.GOLD:
                report.moved += _copy_gold(published.hit)
                continue
            movable = mturk_max_assignments(published.hit) - published.max_assignments
            if movable > 0 and published.hit.kind == HIT.Kind.REGULAR:
                with transaction.atomic():
                    hit = HIT.objects.select_for_update().get(pk=published.hit_id)
                    new_hit_for_places(hit, movable)
                    hit.max_assignments -= movable
                    if hit.n_submitted >= hit.max_assignments:
                        hit.state = HIT.State.COMPLETED
                    hit.save(update_fields=["max_assignments", "state"])
                report.moved += movable
            continue
        cost = (published.reward + fees.mturk_fee(published.reward, wanted)) * extra
        key = growth_key(published, wanted)
        # Held against the cap before the call, with every other commitment in flight (``hits.budget``).
        if not budget.reserve_for_publish(report, batch, cost, key, f"{extra} more place{'s' if extra != 1 else ''} of HIT {published.mturk_hit_id}"):
            continue
        try:
            check_balance(mturk, cost)
            tokens.call(
                "CreateAdditionalAssignmentsForHIT", mturk=mturk, key=f"{published.request_token}-{wanted}"[:64],
                params={"HITId": published.mturk_hit_id, "NumberOfAdditionalAssignments": extra},
                went_through=lambda: grown_on_mturk(mturk, published, wanted),
            )
        except MTurkError as exc:
            if refused_for_good(exc):
                budget.release(key)  # MTurk added nothing; an answer lost keeps the money held until its records tell
            # This HIT waits for the next publish; the others (and new HITs) go on.
            MTurkHIT.objects.filter(pk=published.pk).update(last_error=f"CreateAdditionalAssignmentsForHIT: {exc}"[:1000], failures=F("failures") + 1)
            report.stopped = report.stopped or f"HIT {published.mturk_hit_id} could not grow: {exc}"
            continue
        except PublishRefused as exc:
            budget.release(key)  # nothing was sent
            report.stopped = str(exc)
            continue
        with transaction.atomic():
            MTurkHIT.objects.filter(pk=published.pk).update(max_assignments=wanted)
            budget.settle(key)
        report.grown += 1


def _copy_gold(hit: HIT) -> int:
    """A gold HIT whose MTurk HIT cannot grow any more: a copy of it (same item and key, not open to the workers
    who judged it), published as a HIT of its own with a regular HIT's places.  Made once; returns 1 if made."""
    from hits.places import new_hit_for_places

    with transaction.atomic():
        hit = HIT.objects.select_for_update().get(pk=hit.pk)
        if HIT.objects.filter(batch_id=hit.batch_id, payload__gold_copy_of=hit.pk).exists():
            return 0
        new_hit_for_places(hit, hit.max_assignments, link="gold_copy_of")
    return 1


def _publish(batch: Batch, limit: int | None, mturk: MTurk) -> PublishReport:
    report = PublishReport()
    _grow(batch, mturk, report)
    rewards = regular_rewards(batch)
    idle = idle_gold_types(batch)
    pending = [
        hit for hit in unpublished_hits(batch)
        if not waits_for_regular_hits(hit, rewards) and not (hit.kind == HIT.Kind.GOLD and hit.task_type_id in idle)
    ]
    # A first look, without the lock, for the balance check: each HIT's money is reserved (``hits.budget``), with
    # every other commitment in flight, only just before its CreateHIT.
    held = held_keys(batch)
    selected, before = [], budget.committed(batch)
    committed = before
    for hit in pending:
        if limit is not None and len(selected) >= limit:
            break
        cost = Decimal("0") if creation_key(hit) in held else hit_cost(hit, rewards)
        if batch.budget_cap is not None and committed + cost > batch.budget_cap:
            report.stopped = f"budget cap of ${batch.budget_cap} reached (${committed} committed or reserved)"
            break
        committed += cost
        selected.append(hit)
    report.remaining = len(pending) - len(selected)
    report.committed = str(committed)
    if not selected:
        return report
    check_balance(mturk, committed - before)
    from hits.mturk.qualifications import ensure_qualification_type

    type_ids: dict[int, str] = {}
    tested = tested_task_types(batch)
    for done, hit in enumerate(selected):
        if hit.task_type_id in tested and hit.task_type_id not in type_ids:
            type_ids[hit.task_type_id] = ensure_qualification_type(mturk, hit.task_type, batch).qualification_type_id
        params = create_hit_request(hit, type_ids.get(hit.task_type_id), rewards.get(hit.task_type_id))
        if not budget.reserve_for_publish(report, batch, hit_cost(hit, rewards), creation_key(hit), f"HIT {hit.pk} ({params['MaxAssignments']} places)"):
            # Bonuses or extra places took the room since the first look: this HIT and the rest wait.
            report.remaining += len(selected) - done
            break
        try:
            created = create_hit(mturk, params)
        except tokens.Made as exc:
            # Created on MTurk (money on hold), its HITId not read yet: tracked, and settled by the next sync.
            budget.settle(creation_key(hit))  # counted from now on as a HIT MTurk made (``fees.made_commitment``)
            report.made.append({"hit": hit.pk, "error": str(exc)[:300]})
            log.warning("CreateHIT of HIT %s: MTurk has the HIT, its HITId is read at the next sync: %s", hit.pk, exc)
            continue
        except MTurkError as exc:
            if refused_for_good(exc):
                budget.release(creation_key(hit))  # MTurk created nothing: the money is free again
                note_refused(hit, exc, report)  # this HIT waits for a retry; the rest of the batch goes on
                continue
            # Otherwise the answer may have been lost: the money stays held until MTurk's records settle it.
            if exc.code in RETRYABLE_CODES:
                raise  # MTurk throttles or faults after every retry: the next calls would fail too; the next sync goes on
            # A lost reply that MTurk's records could not settle yet: this HIT waits for the next publish (which
            # reads the records again, never re-sending blind); the rest of the batch goes on.
            report.unsettled.append({"hit": hit.pk, "error": str(exc)[:300]})
            log.warning("CreateHIT of HIT %s not settled yet: %s", hit.pk, exc)
            continue
        if created.recovered:
            report.recovered += 1
        created = created.found if created.recovered else created.response["HIT"]
        record_published(hit, created, params, mturk.sandbox)
        report.published += 1
        report.hit_ids.append(created["HITId"])
    return report


# MTurk's error type for a request it refuses as such (a bad parameter, a limit): sending it again changes nothing.
# Told by the error's type (``__type``), never by its message; ServiceFault and throttling are retried instead.
LASTING_REFUSAL = "RequestError"


def refused_for_good(error: MTurkError) -> bool:
    """Whether MTurk refused a CreateHIT for a lasting reason: the same request would be refused again."""
    return error.code == LASTING_REFUSAL


def note_refused(hit: HIT, error: MTurkError, report: "PublishReport") -> None:
    """Store a lasting CreateHIT refusal on the HIT (shown on the progress page, with a retry)."""
    from django.utils import timezone

    HIT.objects.filter(pk=hit.pk).update(publish_error=str(error)[:1000], publish_error_at=timezone.now())
    report.refused.append({"hit": hit.pk, "error": str(error)[:300]})
    log.warning("CreateHIT of HIT %s refused: %s", hit.pk, error)


def retry_publish(batch: Batch, hit_ids=None) -> int:
    """The researcher's retry of HITs MTurk refused: their errors are cleared and a publish is queued.
    Returns how many HITs will be tried again."""
    refused = HIT.objects.filter(batch=batch, mturk__isnull=True).exclude(publish_error="")
    if hit_ids is not None:
        refused = refused.filter(pk__in=list(hit_ids))
    with transaction.atomic():
        count = refused.update(publish_error="", publish_error_at=None)
        if count:
            publish_soon(batch)
    return count


def refused_hits(batch: Batch):
    """HITs of the batch MTurk refused to create, with their errors (for the progress page and the API)."""
    return HIT.objects.filter(batch=batch, mturk__isnull=True).exclude(publish_error="").order_by("pk")


def waiting_commitment(batch: Batch) -> Decimal:
    """Money the batch will commit at its next publish: its unpublished open HITs, and the places its published
    HITs were given locally but not yet on MTurk (not in ``fees.committed`` yet)."""
    rewards = regular_rewards(batch)
    held = held_keys(batch)  # in flight: already counted as reserved (``hits.budget``)
    total = Decimal("0")
    for hit in unpublished_hits(batch):
        if not waits_for_regular_hits(hit, rewards) and creation_key(hit) not in held:
            total += hit_cost(hit, rewards)
    for published in MTurkHIT.objects.filter(hit__batch=batch, hit__state=HIT.State.OPEN, deleted_at__isnull=True, gone_at__isnull=True).select_related("hit"):
        wanted = places_wanted(published)
        if wanted > published.max_assignments and growth_key(published, wanted) not in held:
            total += (published.reward + fees.mturk_fee(published.reward, wanted)) * (wanted - published.max_assignments)
    return total.quantize(fees.CENT)


def hit_cost(hit: HIT, rewards: dict[int, Decimal]) -> Decimal:
    """What publishing ``hit`` commits: (reward + fee) x the places it is created with."""
    return fees.hit_commitment(mturk_reward(hit, rewards.get(hit.task_type_id)), mturk_max_assignments(hit))


def creation_key(hit: HIT) -> str:
    """The key of the budget reservation of a HIT's CreateHIT (``hits.budget``)."""
    return f"mturk-create-{request_token(hit)}"


def growth_key(published: MTurkHIT, wanted: int) -> str:
    """The key of the budget reservation of a CreateAdditionalAssignmentsForHIT up to ``wanted`` places."""
    return f"mturk-grow-{published.request_token}-{wanted}"


def held_keys(batch: Batch) -> set[str]:
    """The keys of the batch's reservations held for calls in flight."""
    return set(BudgetReservation.objects.filter(batch=batch, state=BudgetReservation.State.HELD).values_list("key", flat=True))


def create_hit(mturk: MTurk, params: dict) -> "tokens.Sent":
    """CreateHIT, never re-sent blind: what MTurk answered, or the HIT its records show the call created."""
    annotation = params["RequesterAnnotation"]
    return tokens.call(
        "CreateHIT", mturk=mturk, key=params["UniqueRequestToken"], params=params,
        went_through=lambda: find_hit_by_annotation(mturk, annotation),
    )


def grown_on_mturk(mturk: MTurk, published: MTurkHIT, wanted: int) -> dict | None:
    """The HIT (GetHIT) if MTurk already gives it ``wanted`` places (an earlier CreateAdditionalAssignmentsForHIT
    went through), else None."""
    found = mturk.call("GetHIT", HITId=published.mturk_hit_id)["HIT"]
    return found if int(found.get("MaxAssignments") or 0) >= wanted else None


def find_hit_by_annotation(mturk: MTurk, annotation: str) -> dict | None:
    """The account's HIT whose RequesterAnnotation is ``annotation`` (ListHITs, every page)."""
    for item in mturk.pages("ListHITs", "HITs", MaxResults=100):
        if item.get("RequesterAnnotation") == annotation:
            return item
    return None


def record_published(hit: HIT, created: dict, params: dict, sandbox: bool) -> MTurkHIT | None:
    """Remember a created MTurk HIT (own transaction; a concurrent publish of the same HIT is ignored)."""
    try:
        with transaction.atomic():
            published = MTurkHIT.objects.create(
                hit=hit,
                sandbox=sandbox,
                mturk_hit_id=created["HITId"],
                hit_type_id=created.get("HITTypeId", ""),
                request_token=params["UniqueRequestToken"],
                max_assignments=params["MaxAssignments"],
                reward=Decimal(params["Reward"]),
            )
            budget.settle(creation_key(hit))  # the HIT now counts in ``fees.hits_committed``
            return published
    except IntegrityError:
        log.info("HIT %s was recorded by a concurrent publish", hit.pk)
        return None


def progress(batch: Batch) -> dict:
    """How far publishing has gone: HITs on MTurk, open HITs still waiting, money committed."""
    return {
        "on_mturk": MTurkHIT.objects.filter(hit__batch=batch).count() + made_hits(batch).count(),
        "waiting": unpublished_hits(batch).count(),
        "committed": str(fees.committed(batch)),
        "budget_cap": str(batch.budget_cap) if batch.budget_cap is not None else None,
    }


def publish_soon(batch: Batch | None) -> None:
    """Hook for apps that create HITs: on an MTurk batch, publish the new HITs once the transaction commits."""
    if batch is not None and batch.on_mturk:
        send_after_commit("hits.mturk.publish_batch", batch.pk)
