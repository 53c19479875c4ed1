"""Publishing a batch on Prolific: its studies, their participant-group filters and their places.

What is published:

- one main study per (batch, task type) with open regular work: its sessions are ``hits_per_submission`` HITs of
  the type, and its ``reward`` and ``estimated_completion_time`` are the whole session's (``hits.prolific.pricing``
  says what it pays and for how long);
- one screening study per task type the batch tests (open qualification items, while the type has open regular
  work): its session is the whole test (every open item of the type); passing it puts the participant in the
  batch's QUALIFIED group of the type, to which that type's main study is limited (``participant_group_allowlist``);
- every study excludes the batch's BLOCKED group (``participant_group_blocklist``).

Places (``total_available_places``; Prolific gives a participant one submission per study):

- a main study: the sessions that hold or held a place (working or completed) plus enough new sessions for the
  open places their HITs still have: ceil(max(0, open places - what working sessions have left) /
  hits_per_submission);
- a screening study: the sessions that took a place, plus ``SCREENING_PLACES_PER_MAIN_PLACE`` (2) x the main
  study's free places no qualified participant is waiting for (``screening_places``): every main place needs a
  different qualified participant, one who has not had a session of the main study yet (Prolific's one
  submission per study), and a test is not passed by everyone (the factor is a guess to revise from a
  campaign's pass rate);
- places only grow (a PATCH of ``total_available_places``): ``ensure_places(batch)``, which the sync calls, grows
  them as later stages create HITs, and creates the studies of task types whose work appeared since.

Money: Prolific takes every place's pay up front when a study is published (and returns what is not used), so a
study commits places x its reward (the session's pay) x (1 + the batch's ``prolific_fee_rate``); the batch's ``budget_cap`` is never
passed by a study created or grown here (``committed``).

Record before send: a study (``ProlificStudy``: its ``internal_name`` and completion code, ``completion_code``) and a group
(``ProlificParticipantGroup``: its name) are recorded before their create call.  After an ambiguous failure (no
answer, or a 5xx) nothing is sent again in that run: the next publish first looks for the study (by
``internal_name``) or group (by name) in Prolific's lists, records what it finds, and creates only what is not
there.  The PUBLISH transition, PATCH of places and group lookups are safe to repeat.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
from dataclasses import asdict, dataclass, field
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Sum
from django.utils import timezone

from config.baseurl import public_base_url
from hits import budget
from hits.models import HIT, Batch, TaskType
from hits.markets.money import CENT, DEFAULT, currency_of, money
from hits.markets.publishing import PublishRefused, publishing_lock, regular_rewards
from hits.prolific import STUDY_START_PATH, STUDY_URL_PARAMETERS, money as market_money, pricing
from hits.prolific.client import Prolific, ProlificError
from hits.prolific.models import ProlificParticipantGroup, ProlificSession, ProlificStudy

log = logging.getLogger(__name__)

NAME_PREFIX = "qapyramid"
SCREENING_PLACES_PER_MAIN_PLACE = 2
STUDIES = "/api/v1/studies/"
GROUPS = "/api/v1/participant-groups/"
# Sessions that hold (or held, for good) a place on Prolific.
PLACE_HOLDING = (ProlificSession.State.ACTIVE, ProlificSession.State.COMPLETED)

__all__ = ["PublishRefused", "PublishReport", "publish_batch", "ensure_places", "planned_requests", "committed"]


@dataclass
class PublishReport:
    created: list[str] = field(default_factory=list)  # internal names of studies created (or found again) now
    recovered: int = 0  # studies or groups found in Prolific's lists after an earlier lost reply
    published: list[str] = field(default_factory=list)
    grown: list[dict] = field(default_factory=list)  # {"study", "from", "to"}
    groups: list[str] = field(default_factory=list)
    committed: str = "0.00"
    stopped: str = ""
    errors: list[dict] = field(default_factory=list)  # {"study"|"group", "error"}: this one waits, the rest went on

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class StudyPlan:
    """What one study should be now (before or after it exists on Prolific)."""

    task_type: TaskType
    kind: str
    reward: Decimal  # USD per submission: the whole session's
    places: int
    hits_per_submission: int
    estimated_minutes: int
    maximum_minutes: int
    tested: bool
    hit_reward: Decimal = Decimal("0.00")  # one HIT's reward: the session's reward is hits_per_submission of them


# --- names and bodies -------------------------------------------------------------------------------------------

def internal_name(batch: Batch, task_type: TaskType, kind: str) -> str:
    """The study's ``internal_name``: stable for (batch, task type, kind), unique across database resets (the
    batch's random key), so Prolific's list tells whether a create call went through."""
    return f"{NAME_PREFIX}-{batch.key}-{task_type.slug}-{kind}"[:200]


def group_name(batch: Batch, kind: str, task_type: TaskType | None = None) -> str:
    suffix = f"-{task_type.slug}" if task_type is not None else ""
    return f"{NAME_PREFIX}-{batch.key}-{kind}{suffix}"[:200]


def study_url() -> str:
    return public_base_url() + STUDY_START_PATH + "?" + STUDY_URL_PARAMETERS


def completion_code(batch: Batch, task_type: TaskType, kind: str) -> str:
    """The study's completion code: fixed by the batch's random key (kept from the first dry run or publish) and
    the server's ``SECRET_KEY``, so a dry run shows the very code the publish sends, and participants cannot
    guess it (8 hexadecimal characters of an HMAC, as random as a drawn code without the secret).  Recorded on
    the study before its create call; a recorded study keeps its code."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"completion-code:{internal_name(batch, task_type, kind)}".encode(),
                      hashlib.sha256).hexdigest()
    return digest[:8].upper()


def study_description(plan: StudyPlan, currency: str = DEFAULT) -> str:
    task_type = plan.task_type
    about = (task_type.description or task_type.name).strip()
    if plan.kind == ProlificStudy.Kind.SCREENING:
        return (f"A short qualification test of {plan.hits_per_submission} items: {about} Passing it opens the main "
                f"study of this task to you. Paid {money(plan.reward, currency)} for the whole test.")
    return (f"{about} A session is {plan.hits_per_submission} tasks, about {plan.estimated_minutes} min in all, paid "
            f"{money(plan.reward, currency)} by this study's reward. If the platform runs out of tasks before the "
            "end, you are sent back early with the completion code and paid the whole reward.")


def study_body(plan: StudyPlan, name: str, code: str, group_ids: dict, currency: str = DEFAULT) -> dict:
    """The create-study body (Prolific's field names); ``group_ids`` maps ("qualified"|"blocked") to group ids."""
    task_type = plan.task_type
    title = task_type.name if plan.kind == ProlificStudy.Kind.MAIN else f"Qualification test: {task_type.name}"
    filters = []
    if plan.kind == ProlificStudy.Kind.MAIN and plan.tested:
        filters.append({"filter_id": "participant_group_allowlist", "selected_values": [group_ids["qualified"]]})
    filters.append({"filter_id": "participant_group_blocklist", "selected_values": [group_ids["blocked"]]})
    return {
        "name": title[:120],
        "internal_name": name,
        "description": study_description(plan, currency),
        "external_study_url": study_url(),
        "prolific_id_option": "url_parameters",
        "completion_codes": [{"code": code, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
        "total_available_places": plan.places,
        "estimated_completion_time": plan.estimated_minutes,
        "maximum_allowed_time": plan.maximum_minutes,
        "reward": pricing.cents(plan.reward),
        "device_compatibility": ["desktop"],
        "filters": filters,
    }


# --- what the batch needs ---------------------------------------------------------------------------------------

def open_places(batch: Batch, task_type: TaskType) -> int:
    """Places of the batch's unfinished regular HITs of the type that no one holds yet."""
    row = HIT.objects.filter(
        batch=batch, task_type=task_type, kind=HIT.Kind.REGULAR, state__in=HIT.UNFINISHED_STATES,
        n_taken__lt=F("max_assignments"),
    ).aggregate(places=Sum("max_assignments"), taken=Sum("n_taken"))
    return (row["places"] or 0) - (row["taken"] or 0)


def test_items(batch: Batch, task_type: TaskType) -> int:
    return HIT.objects.filter(batch=batch, task_type=task_type, kind=HIT.Kind.QUALIFICATION,
                              state__in=HIT.UNFINISHED_STATES).count()


def main_places(batch: Batch, task_type: TaskType, hits_per_submission: int, study: ProlificStudy | None) -> int:
    """The places the main study of the type should have now (see the module's docstring)."""
    sessions = ProlificSession.objects.filter(study=study, state__in=PLACE_HOLDING) if study is not None else None
    held = sessions.count() if sessions is not None else 0
    left_in_working = 0
    if sessions is not None:
        for done in sessions.filter(state=ProlificSession.State.ACTIVE).values_list("hits_done", flat=True):
            left_in_working += max(0, hits_per_submission - done)
    needed = max(0, open_places(batch, task_type) - left_in_working)
    return held + math.ceil(needed / hits_per_submission)


def screening_places(batch: Batch, task_type: TaskType, main: ProlificStudy | None, screening: ProlificStudy | None,
                     main_total: int) -> int:
    """The places the screening study of the type should have now: those taken, plus
    ``SCREENING_PLACES_PER_MAIN_PLACE`` for every free place of the main study that no qualified participant is
    waiting to take.  (Prolific gives a participant one submission per study: a qualified participant who already
    did a session of the main study cannot take a place it gains later, e.g. for redo rounds; new participants
    must pass the test first.)"""
    from hits.models import Qualification

    taken = ProlificSession.objects.filter(study=screening, state__in=PLACE_HOLDING).count() if screening else 0
    in_main = ProlificSession.objects.filter(study=main, state__in=PLACE_HOLDING).count() if main else 0
    worked = ProlificSession.objects.filter(study=main).values("worker_id") if main else []
    waiting = Qualification.objects.filter(
        batch=batch, task_type=task_type, state=Qualification.State.QUALIFIED, worker__prolific_pid__isnull=False,
    ).exclude(worker_id__in=worked).count()
    return taken + SCREENING_PLACES_PER_MAIN_PLACE * max(0, main_total - in_main - waiting)


def plans(batch: Batch) -> list[StudyPlan]:
    """The studies the batch needs now, main before screening, in task-type order."""
    rewards = regular_rewards(batch)
    existing = {(s.task_type_id, s.kind): s for s in ProlificStudy.objects.filter(batch=batch)}
    working = (
        HIT.objects.filter(batch=batch, kind=HIT.Kind.REGULAR, state__in=HIT.UNFINISHED_STATES)
        .values_list("task_type_id", flat=True).distinct()
    )
    result = []
    for task_type in TaskType.objects.filter(pk__in=list(working) + [k[0] for k in existing]).order_by("position", "slug"):
        main = existing.get((task_type.pk, ProlificStudy.Kind.MAIN))
        if task_type.pk not in rewards:
            continue
        reward = Decimal(rewards[task_type.pk]).quantize(CENT)
        per_submission = main.hits_per_submission if main else pricing.hits_per_submission(
            task_type, batch.prolific_hits_per_submission, batch)
        items = test_items(batch, task_type)
        screening = existing.get((task_type.pk, ProlificStudy.Kind.SCREENING))
        tested = bool(items) or screening is not None
        places = main_places(batch, task_type, per_submission, main)
        if main is not None or places:
            # A created study keeps what Prolific was told (only its places can change there).
            session_reward = main.reward if main else (reward * per_submission).quantize(CENT)
            minutes = main.estimated_minutes if main else pricing.estimated_minutes(task_type, per_submission, batch)
            result.append(StudyPlan(task_type, ProlificStudy.Kind.MAIN, session_reward, max(places, main.places if main else 0),
                                    per_submission, minutes, pricing.maximum_allowed_minutes(task_type, per_submission, minutes),
                                    tested, reward))
        if items and (screening is not None or places):
            size = screening.hits_per_submission if screening else items
            wanted = screening_places(batch, task_type, main, screening, max(places, main.places if main else 0))
            test_reward = screening.reward if screening else (reward * size).quantize(CENT)
            minutes = screening.estimated_minutes if screening else pricing.estimated_minutes(task_type, size, batch)
            result.append(StudyPlan(task_type, ProlificStudy.Kind.SCREENING, test_reward,
                                    max(wanted, screening.places if screening else 0), size, minutes,
                                    pricing.maximum_allowed_minutes(task_type, size, minutes), True, reward))
    return result


def study_commitment(reward: Decimal, places: int, fee_rate: Decimal) -> Decimal:
    """Money ``places`` sessions commit: places x (the session's reward + fee(reward))."""
    return (places * (Decimal(reward) + pricing.fee(reward, fee_rate))).quantize(CENT)


def committed(batch: Batch) -> Decimal:
    """Money the batch's studies commit on Prolific (every place paid its session's reward, with its fee)."""
    total = Decimal("0")
    for study in ProlificStudy.objects.filter(batch=batch).exclude(prolific_id=None):
        total += study_commitment(study.reward, study.places, batch.prolific_fee_rate)
    return total.quantize(CENT)


def plan_commitment(plan: StudyPlan, places: int, fee_rate: Decimal) -> Decimal:
    return study_commitment(plan.reward, places, fee_rate)


def plan_rate(plan: StudyPlan, currency: str = DEFAULT) -> pricing.HourlyRate:
    """The plan's session against Prolific's minimum in ``currency``: its reward over its estimated minutes."""
    return pricing.HourlyRate(plan.task_type.slug, plan.hit_reward, plan.estimated_minutes, plan.hits_per_submission,
                              currency)


def check_plans(batch: Batch, wanted: list[StudyPlan]) -> None:
    """Refuse (``pricing.HourlyRateTooLow``) when a study to be created would pay under Prolific's hourly minimum
    (in the batch's currency) for its whole session (a created study was checked when it was created, and its
    reward and estimate cannot change on Prolific)."""
    created = set(ProlificStudy.objects.filter(batch=batch).exclude(prolific_id=None).values_list("task_type_id", "kind"))
    currency = currency_of(batch)
    pricing.check_rates([plan_rate(plan, currency) for plan in wanted if (plan.task_type.pk, plan.kind) not in created])


# --- dry run ----------------------------------------------------------------------------------------------------

def planned_requests(batch: Batch, prolific: Prolific | None = None) -> list[dict]:
    """The requests a publish of ``batch`` would send now (``{"method", "path", "body"}``), changing nothing on
    Prolific.  The bodies are the publish's: the completion code is the batch's (``completion_code``), and the
    groups' scope is resolved as the publish does (``PROLIFIC_WORKSPACE_ID``, else the token's workspace or
    project read with ``GET /users/me/`` when ``prolific`` is given or a token is set).  What Prolific chooses
    shows as a placeholder in angle brackets: a group's or study's id, and the scope when no token can ask."""
    wanted = plans(batch)
    check_plans(batch, wanted)
    scope = _dry_run_scope(prolific)
    requests: list[dict] = []
    known = {(g.kind, g.task_type_id): g for g in ProlificParticipantGroup.objects.filter(batch=batch)}
    group_ids: dict = {}

    def group(kind: str, task_type: TaskType | None) -> str:
        key = (kind, task_type.pk if task_type else None)
        if key in group_ids:
            return group_ids[key]
        record = known.get(key)
        name = record.name if record else group_name(batch, kind, task_type)
        if record is not None and record.prolific_id:
            group_ids[key] = record.prolific_id
        else:
            requests.append({"method": "POST", "path": GROUPS, "body": {"name": name, **scope}})
            group_ids[key] = f"<id of group {name}>"
        return group_ids[key]

    studies = {(s.task_type_id, s.kind): s for s in ProlificStudy.objects.filter(batch=batch)}
    for plan in wanted:
        study = studies.get((plan.task_type.pk, plan.kind))
        if study is not None and study.prolific_id:
            if plan.places > study.places:
                requests.append({"method": "PATCH", "path": f"{STUDIES}{study.prolific_id}/",
                                 "body": {"total_available_places": plan.places}})
            continue
        ids = {"blocked": group(ProlificParticipantGroup.Kind.BLOCKED, None)}
        if plan.tested and plan.kind == ProlificStudy.Kind.MAIN:
            ids["qualified"] = group(ProlificParticipantGroup.Kind.QUALIFIED, plan.task_type)
        name = internal_name(batch, plan.task_type, plan.kind)
        code = study.completion_code if study is not None else completion_code(batch, plan.task_type, plan.kind)
        requests.append({"method": "POST", "path": STUDIES, "body": study_body(plan, name, code, ids, currency_of(batch))})
        requests.append({"method": "POST", "path": f"{STUDIES}<id of study {name}>/transition/",
                         "body": {"action": "PUBLISH"}})
    return requests


def _dry_run_scope(prolific: Prolific | None) -> dict:
    """The groups' scope the publish would use (``_group_scope``; only a GET is sent), or a placeholder when
    there is no token or Prolific cannot be asked now."""
    placeholder = {"workspace_id": "<the token's workspace (GET /api/v1/users/me/)>"}
    if getattr(settings, "PROLIFIC_WORKSPACE_ID", ""):
        return _group_scope(prolific)  # the setting: no call
    if prolific is None and not settings.PROLIFIC_API_TOKEN:
        return placeholder
    try:
        if prolific is not None:
            return _group_scope(prolific)
        with Prolific() as own:
            return _group_scope(own)
    except ProlificError as exc:
        log.warning("Dry run: the token's workspace could not be read (%s); a placeholder is shown", exc)
        return placeholder


# --- publishing -------------------------------------------------------------------------------------------------

def publish_batch(batch: Batch, prolific: Prolific | None = None) -> PublishReport:
    """Create, filter and publish the studies the batch needs, and grow the places of those it has; safe to run
    again at any point (see the module's docstring).  Refuses (``PublishRefused``) a batch not on Prolific and
    (``pricing.HourlyRateTooLow``) a study under Prolific's hourly minimum."""
    batch.refresh_from_db()
    if not batch.on_prolific:
        raise PublishRefused(f"batch '{batch}' does not run on Prolific (its backend is {batch.backend})")
    if batch.state != Batch.State.ACTIVE:
        return PublishReport(stopped=f"the batch is {batch.state}")
    own = prolific is None
    prolific = prolific or Prolific()
    try:
        try:  # the currency first: the hourly minimum and every amount sent are in it
            market_money.record_currency(batch, prolific)
        except market_money.CurrencyRefused as exc:
            raise PublishRefused(str(exc)) from None
        wanted = plans(batch)
        check_plans(batch, wanted)
        with publishing_lock(batch) as acquired:
            if not acquired:
                return PublishReport(stopped="another publish of this batch is running")
            return _publish(batch, wanted, prolific)
    finally:
        if own:
            prolific.close()


def ensure_places(batch: Batch, prolific: Prolific | None = None) -> PublishReport:
    """What the sync calls after new HITs appear: grow the studies' places, and create the studies of task types
    whose work appeared since (``publish_batch``); a batch not active on Prolific is left alone."""
    batch.refresh_from_db()
    if not batch.on_prolific or batch.state != Batch.State.ACTIVE:
        return PublishReport(stopped=f"the batch is {batch.state} on {batch.backend}")
    return publish_batch(batch, prolific)


def _publish(batch: Batch, wanted: list[StudyPlan], prolific: Prolific) -> PublishReport:
    report = PublishReport()
    studies = {(s.task_type_id, s.kind): s for s in ProlificStudy.objects.filter(batch=batch)}
    scope: dict | None = None
    for plan in wanted:
        study = studies.get((plan.task_type.pk, plan.kind))
        if study is not None and study.prolific_id:
            if study.last_error.startswith(market_money.MIXED):
                report.errors.append({"study": study.internal_name, "error": study.last_error})
                continue
            _grow(batch, study, plan, prolific, report)
            if study.place_fee is None:
                read_place_charges(prolific, study)
            if study.status == "UNPUBLISHED" or not study.published_at:
                _publish_study(prolific, study, report)
            continue
        cost = plan_commitment(plan, plan.places, batch.prolific_fee_rate)
        key = f"prolific-study-{internal_name(batch, plan.task_type, plan.kind)}"
        # Held against the cap before the create call, with every other commitment in flight (``hits.budget``).
        if not budget.reserve_for_publish(report, batch, cost, key, f"the {plan.kind} study of {plan.task_type.slug} ({plan.places} places)"):
            continue
        try:
            if scope is None:
                scope = _group_scope(prolific)
            ids = {"blocked": _ensure_group(prolific, batch, ProlificParticipantGroup.Kind.BLOCKED, None, scope, report)}
            if plan.tested and plan.kind == ProlificStudy.Kind.MAIN:
                ids["qualified"] = _ensure_group(prolific, batch, ProlificParticipantGroup.Kind.QUALIFIED, plan.task_type, scope, report)
        except ProlificError as exc:
            budget.release(key)  # no study call was sent
            report.errors.append({"group": plan.task_type.slug, "error": str(exc)[:300]})
            report.stopped = report.stopped or f"a participant group could not be made: {exc}"
            continue
        fresh = study is None
        study = _record_study(batch, plan, study)
        try:
            body = study_body(plan, study.internal_name, study.completion_code, ids, currency_of(batch))
            created = _create_study(prolific, study, body, report, fresh=fresh, key=key)
        except ProlificError as exc:
            budget.release(key)  # refused for good: no study, nothing committed (a lost reply keeps it held)
            ProlificStudy.objects.filter(pk=study.pk).update(last_error=f"create: {exc}"[:1000])
            report.errors.append({"study": study.internal_name, "error": str(exc)[:300]})
            continue
        if created is None:
            continue
        problem = market_money.study_currency_problem(batch, created)
        if problem:
            ProlificStudy.objects.filter(pk=study.pk).update(last_error=problem)
            report.errors.append({"study": study.internal_name, "error": problem})
            continue
        read_place_charges(prolific, study)
        report.created.append(study.internal_name)
        _publish_study(prolific, study, report)
    report.committed = str(committed(batch))
    return report


def _record_study(batch: Batch, plan: StudyPlan, study: ProlificStudy | None) -> ProlificStudy:
    """Record the study before its create call (its name and completion code are fixed here, once)."""
    values = dict(reward=plan.reward, places=plan.places, hits_per_submission=plan.hits_per_submission,
                  estimated_minutes=plan.estimated_minutes)
    if study is not None:
        ProlificStudy.objects.filter(pk=study.pk).update(**values)
        for key, value in values.items():
            setattr(study, key, value)
        return study
    try:
        with transaction.atomic():
            return ProlificStudy.objects.create(
                batch=batch, task_type=plan.task_type, kind=plan.kind,
                completion_code=completion_code(batch, plan.task_type, plan.kind),
                internal_name=internal_name(batch, plan.task_type, plan.kind), **values,
            )
    except IntegrityError:  # recorded by a concurrent publish
        return ProlificStudy.objects.get(batch=batch, task_type=plan.task_type, kind=plan.kind)


def find_study(prolific: Prolific, name: str) -> dict | None:
    """The study whose ``internal_name`` is ``name`` in Prolific's list (every page), or None."""
    for item in prolific.paginate(STUDIES):
        if item.get("internal_name") == name:
            return item
    return None


def _create_study(prolific: Prolific, study: ProlificStudy, body: dict, report: PublishReport, *, fresh: bool,
                  key: str) -> dict | None:
    """Create the recorded study once: a record not ``fresh`` (recorded by an earlier run) may stand for a call whose
    reply was lost, so Prolific's list is read first.  Returns the study, or None when a lost reply leaves it
    unknown for now."""
    if not fresh:
        found = find_study(prolific, study.internal_name)
        if found is not None:
            report.recovered += 1
            _remember_study(study, found, key)
            return found
    try:
        created = prolific.request("POST", STUDIES, json=body, safe=False)
    except ProlificError as exc:
        if not exc.ambiguous:
            raise
        # The call may have created the study: never sent again blind; the list is read now and at the next publish.
        found = _quietly(lambda: find_study(prolific, study.internal_name))
        if found is None:
            ProlificStudy.objects.filter(pk=study.pk).update(last_error=f"create: reply lost, not in Prolific's list yet: {exc}"[:1000])
            report.errors.append({"study": study.internal_name, "error": f"reply lost; Prolific's records are read again at the next publish: {exc}"[:300]})
            return None
        report.recovered += 1
        created = found
    _remember_study(study, created, key)
    return created


def _remember_study(study: ProlificStudy, found: dict, key: str) -> None:
    """Record the study Prolific made; from then on its places count in ``committed``, not its reservation."""
    study.prolific_id = found["id"]
    study.status = found.get("status") or "UNPUBLISHED"
    study.last_error = ""
    with transaction.atomic():
        ProlificStudy.objects.filter(pk=study.pk).update(prolific_id=study.prolific_id, status=study.status, last_error="")
        budget.settle(key)


def _publish_study(prolific: Prolific, study: ProlificStudy, report: PublishReport) -> None:
    """The PUBLISH transition (safe to repeat: an ACTIVE study is left as it is)."""
    try:
        status = transition(prolific, study, "PUBLISH")
    except ProlificError as exc:
        # E.g. the balance cannot cover the places: the study stays a draft; the next publish tries again.
        ProlificStudy.objects.filter(pk=study.pk).update(last_error=f"publish: {exc}"[:1000])
        report.errors.append({"study": study.internal_name, "error": str(exc)[:300]})
        return
    ProlificStudy.objects.filter(pk=study.pk).update(published_at=timezone.now(), status=status, last_error="")
    report.published.append(study.internal_name)


#: The status each study transition leads to (STOP: AWAITING REVIEW or COMPLETED).
TARGETS = {"PUBLISH": ("ACTIVE",), "START": ("ACTIVE",), "PAUSE": ("PAUSED",), "STOP": ("AWAITING REVIEW", "COMPLETED")}


def transition(prolific: Prolific, study: ProlificStudy, action: str) -> str:
    """Send a study transition; a refusal because the study is already there counts as done (read back with a GET).
    Returns the study's status."""
    try:
        answer = prolific.request("POST", f"{STUDIES}{study.prolific_id}/transition/", json={"action": action}, safe=True)
    except ProlificError as exc:
        if exc.status != 400:
            raise
        current = prolific.get(f"{STUDIES}{study.prolific_id}/") or {}
        if current.get("status") not in TARGETS[action]:
            raise
        answer = current
    status = (answer or {}).get("status") or TARGETS[action][0]
    ProlificStudy.objects.filter(pk=study.pk).update(status=status)
    study.status = status
    return status


def _grow(batch: Batch, study: ProlificStudy, plan: StudyPlan, prolific: Prolific, report: PublishReport) -> None:
    """PATCH ``total_available_places`` up to the plan's places, within the budget cap (safe to repeat): the
    places' money is reserved before the call (``hits.budget``), released if Prolific refuses, kept after a lost
    reply until a later PATCH is answered."""
    if plan.places <= study.places:
        return
    cost = plan_commitment(plan, plan.places - study.places, batch.prolific_fee_rate)
    key = f"prolific-places-{study.internal_name}-{study.places}"
    if not budget.reserve_for_publish(report, batch, cost, key, f"{plan.places - study.places} more places of {study.internal_name}"):
        return
    try:
        prolific.request("PATCH", f"{STUDIES}{study.prolific_id}/", json={"total_available_places": plan.places}, safe=True)
    except ProlificError as exc:
        if not exc.ambiguous:
            budget.release(key)
        ProlificStudy.objects.filter(pk=study.pk).update(last_error=f"places: {exc}"[:1000])
        report.errors.append({"study": study.internal_name, "error": str(exc)[:300]})
        return
    report.grown.append({"study": study.internal_name, "from": study.places, "to": plan.places})
    with transaction.atomic():
        ProlificStudy.objects.filter(pk=study.pk).update(places=plan.places)
        budget.settle(key)
    study.places = plan.places


def read_place_charges(prolific: Prolific, study: ProlificStudy) -> None:
    """Record what Prolific states one submission's reward costs in fees and VAT (``money.place_charges``); a
    failure leaves them unknown (the ledger keeps its estimate until the next read)."""
    try:
        fee, vat = market_money.place_charges(prolific, study.reward)
    except ProlificError as exc:
        log.warning("Prolific's cost of a place of %s could not be read: %s", study.internal_name, exc)
        return
    ProlificStudy.objects.filter(pk=study.pk).update(place_fee=fee, place_vat=vat)
    study.place_fee, study.place_vat = fee, vat


# --- participant groups -----------------------------------------------------------------------------------------

def _group_scope(prolific: Prolific) -> dict:
    """Where groups are made: ``PROLIFIC_WORKSPACE_ID`` when set, else the token's workspace (``/users/me/``)."""
    workspace = getattr(settings, "PROLIFIC_WORKSPACE_ID", "")
    if workspace:
        return {"workspace_id": workspace}
    me = prolific.get("/api/v1/users/me/") or {}
    for key in ("current_workspace_id", "workspace_id"):
        if me.get(key):
            return {"workspace_id": me[key]}
    if me.get("current_project_id"):
        return {"project_id": me["current_project_id"]}
    return {}


def find_group(prolific: Prolific, name: str, scope: dict) -> dict | None:
    for item in prolific.paginate(GROUPS, params=scope or None):
        if item.get("name") == name:
            return item
    return None


def _ensure_group(prolific: Prolific, batch: Batch, kind: str, task_type: TaskType | None, scope: dict,
                  report: PublishReport) -> str:
    """The Prolific id of the batch's group: recorded before its create call, found by name after a lost reply."""
    try:
        with transaction.atomic():
            group, made = ProlificParticipantGroup.objects.get_or_create(
                batch=batch, task_type=task_type, kind=kind, defaults={"name": group_name(batch, kind, task_type)})
    except IntegrityError:
        group, made = ProlificParticipantGroup.objects.get(batch=batch, task_type=task_type, kind=kind), False
    if group.prolific_id:
        return group.prolific_id
    if not made:  # recorded earlier without an id: an earlier create may have gone through
        found = find_group(prolific, group.name, scope)
        if found is not None:
            report.recovered += 1
            return _remember_group(group, found, report)
    try:
        created = prolific.request("POST", GROUPS, json={"name": group.name, **scope}, safe=False)
    except ProlificError as exc:
        if not exc.ambiguous:
            raise
        found = _quietly(lambda: find_group(prolific, group.name, scope))
        if found is None:
            raise
        report.recovered += 1
        created = found
    return _remember_group(group, created, report)


def _remember_group(group: ProlificParticipantGroup, found: dict, report: PublishReport) -> str:
    ProlificParticipantGroup.objects.filter(pk=group.pk).update(prolific_id=found["id"])
    report.groups.append(group.name)
    return found["id"]


def _quietly(read):
    """A read of Prolific's records right after a lost reply; its own failure means "not known yet"."""
    try:
        return read()
    except ProlificError as exc:
        log.warning("Prolific's records could not be read after a lost reply: %s", exc)
        return None
