"""Simulated Prolific participants, through the Prolific stand-in (``hits.prolific.standin``)."""

from __future__ import annotations

import json
import random
import re
import urllib.parse

from annotation.management.simulation.answers import Answerer
from annotation.management.simulation.browser import HttpWorker, http_request
from annotation.management.simulation.crowd import run_rounds
from annotation.management.simulation.report import (
    REJECTION_CATEGORY,
    REJECTION_MESSAGE,
    ProlificFigures,
    SimulationReport,
    StageFigures,
)
from annotation.models import Campaign
from hits.models import HIT, Assignment

def standin_state(standin_url: str) -> dict:
    """The Prolific stand-in's ``/__control/state/``; a clear error when the URL is not a stand-in."""
    try:
        status, body = http_request("GET", f"{standin_url.rstrip('/')}/__control/state/")
    except OSError as exc:  # nothing listens there
        status, body = f"nothing ({exc})", ""
    if status != 200:
        raise ValueError(f"{standin_url} is not a Prolific stand-in (its /__control/state/ answered {status}): "
                         "run manage.py prolific_standin and point PROLIFIC_API_URL at it")
    return json.loads(body)


def refuse_https_redirect(status: int, location: str) -> None:
    """The platform served in-process speaks plain HTTP: a redirect to HTTPS (``DEBUG`` off, so
    ``SECURE_SSL_REDIRECT`` on) would send every simulated participant away without work."""
    if status in (301, 302) and (location or "").startswith("https://"):
        raise ValueError("the platform redirects the study URL to HTTPS (DEBUG is off, so SECURE_SSL_REDIRECT is on): "
                         "for a local rehearsal set DEBUG=1 (or SECURE_SSL_REDIRECT=0)")


class _Participant:
    """One simulated Prolific participant: an id as Prolific's, and the studies they took part in."""

    def __init__(self, pid: str, careless: bool):
        self.pid, self.careless = pid, careless
        self.studies: set[str] = set()  # studies where Prolific gave them a submission (one per study)


def simulate_prolific_crowd(
    campaign: Campaign,
    n_participants: int,
    *,
    standin_url: str,
    accuracy: float = 0.95,
    seed: int = 0,
    careless: int = 0,
    forged: int = 1,
    reject: int = 1,
    base_url: str | None = None,
    max_seconds: float = 3600,
    max_rounds_idle: int = 2,
    progress=None,
) -> SimulationReport:
    """Work through a Prolific campaign with simulated participants, as on Prolific but against the local stand-in.

    The campaign's studies are published (``hits.prolific.publishing.publish_batch``) unless they are already.
    Each round, every participant who has no submission yet in a study tries to start it on Prolific (the
    stand-in's ``/__control/participants/``: it refuses one who is not in the study's allowlist group, e.g. before
    passing the screening test), opens the study URL Prolific gives on the platform (served in-process unless
    ``base_url``), does the session's HITs on the platform's pages as a browser does, and comes back to Prolific
    with the completion code the platform redirects to.  The first careful participant with a second HIT open in a main
    study returns it on Prolific there, the next one stops and is timed out by Prolific (the stand-in's clock moves
    past the study's maximum time).  ``careless`` participants answer at random (they fail a screening test).
    ``forged`` sessions open the study URL with a well-formed PROLIFIC_PID and SESSION_ID Prolific never issued:
    their work stays pending and is discarded once the confirmation grace passes.

    After each round the platform's sync runs (``hits.prolific.sync.sync_batch``: confirm, discard, end sessions,
    grade tests, group changes, reviews and bonuses), then the simulated researcher reviews what is confirmed:
    the first ``reject`` completed main-study sessions are rejected whole (category ``REJECTION_CATEGORY`` and a
    message), the rest approved; the stand-in's clock then moves on by its settle delay, so bonuses paid settle.
    Once the campaign ends, rounds of sync, review and clock settle what is left; the report's ``prolific``
    figures end with the HITs, Prolific's submissions by status and the money on both sides."""
    from hits.prolific.models import ProlificSession, ProlificStudy
    from hits.prolific.publishing import publish_batch

    if n_participants < 1 or careless > n_participants:
        raise ValueError("need at least one participant, and no more careless participants than participants")
    if forged < 0 or reject < 0:
        raise ValueError("forged and reject cannot be negative")
    if campaign.batch_id is None:
        campaign.refresh_from_db(fields=["batch"])
    if campaign.batch_id is None:
        raise ValueError(f"campaign '{campaign.slug}' has no HITs yet: launch it first")
    standin_url = standin_url.rstrip("/")
    standin_state(standin_url)
    rng = random.Random(seed)
    answerer = Answerer(rng, accuracy)
    participants = [_Participant(f"{rng.getrandbits(96):024x}", i < careless) for i in range(n_participants)]
    # Who leaves a main-study session after one HIT, with the next one open: the first careful participants there.
    leaving = ["returns", "times out"]
    figures = ProlificFigures(participants=n_participants)
    report = SimulationReport(prolific=figures)
    batch = campaign.batch
    if not ProlificStudy.objects.filter(batch=batch, prolific_id__isnull=False).exists():
        published = publish_batch(batch)
        for error in published.errors:
            figures.sync_errors.append(f"publish: {error}")
    forged_left = [forged]
    rejected_sessions: set[int] = set()

    def one_round(url: str) -> bool:
        did_work = False
        studies = list(ProlificStudy.objects.filter(batch_id=batch.pk, prolific_id__isnull=False)
                       .select_related("task_type").order_by("-kind", "pk"))  # screening studies first
        order = list(participants)
        rng.shuffle(order)
        for person in order:
            for study in studies:
                if study.prolific_id not in person.studies and _prolific_session(person, study, standin_url, url, answerer, report, leaving):
                    did_work = True
        if forged_left[0] and studies:
            forged_left[0] -= _forged_session(studies, url, rng, report)
        _prolific_settle(batch, standin_url, report, rejected_sessions, reject)
        return did_work

    report = run_rounds(campaign, rng, report, base_url, one_round, max_seconds=max_seconds,
                         max_rounds_idle=max_rounds_idle, progress=progress)
    # The campaign is over (or stuck): what is confirmed is reviewed, decisions sent, bonuses paid and settled.
    for _ in range(3):
        _prolific_settle(batch, standin_url, report, rejected_sessions, reject)
    _prolific_totals(batch, standin_url, figures)
    figures.screening_passed, figures.screening_failed = _screening_results(batch)
    figures.rejected_sessions = len(rejected_sessions)
    unsettled = ProlificSession.objects.filter(study__batch=batch, confirmed_at__isnull=True).exclude(
        state=ProlificSession.State.DISCARDED).count()
    if unsettled:
        figures.sync_errors.append(f"{unsettled} sessions neither confirmed nor discarded")
    return report


def _prolific_session(person: _Participant, study, standin_url: str, base_url: str, answerer: Answerer, report,
                      leaving: list[str]) -> bool:
    """The participant takes part in ``study`` on Prolific and does its session on the platform's pages.
    True when they submitted at least one HIT."""
    figures = report.prolific
    status, body = http_request("POST", f"{standin_url}/__control/participants/",
                         {"study_id": study.prolific_id, "participant_id": person.pid}, as_json=True)
    if status not in (200, 201):
        figures.refused += 1
        return False
    started = json.loads(body)
    person.studies.add(study.prolific_id)
    figures.started += 1
    session_id = started["session_id"]
    parts = urllib.parse.urlsplit(started["url"])
    browser = HttpWorker(base_url, person.pid, "")
    status, location, _ = browser.request(f"{parts.path}?{parts.query}")
    refuse_https_redirect(status, location)
    done = 0
    while True:
        match = re.search(r"/work/assignments/(\d+)/", location or "") if status == 302 else None
        if match is None:
            code = urllib.parse.parse_qs(urllib.parse.urlsplit(location or "").query).get("cc")
            if status == 302 and code:
                # Prolific's completion page with the study's code: the submission goes to AWAITING REVIEW.
                http_request("POST", f"{standin_url}/__control/submissions/{session_id}/complete/", {"code": code[0]}, as_json=True)
                figures.completed += 1
            else:  # no work for them (the page asks to return the study), or a refusal
                http_request("POST", f"{standin_url}/__control/submissions/{session_id}/return/", {}, as_json=True)
                figures.no_work += 1
            return done > 0
        pk = int(match.group(1))
        if done == 1 and leaving and study.kind == "main" and not person.careless:
            _leave_mid_session(leaving.pop(0), study, session_id, standin_url, figures)
            return True
        status, _, _ = browser.request(f"/work/assignments/{pk}/")  # the HIT page (sets the CSRF cookie)
        if status != 200:  # the page refused: the participant gives the study back on Prolific
            http_request("POST", f"{standin_url}/__control/submissions/{session_id}/return/", {}, as_json=True)
            figures.no_work += 1
            return done > 0
        assignment = Assignment.objects.select_related("hit", "hit__task_type").get(pk=pk)
        slug = assignment.hit.task_type.slug
        stage = report.stages.setdefault(slug, StageFigures())
        stage.accepted += 1
        data = getattr(answerer, slug)(assignment.hit, person.pid, person.careless)
        data["action"] = "submit"
        status, location, _ = browser.request(f"/work/assignments/{pk}/", data)
        if status == 302:
            done += 1
            stage.submitted += 1
            figures.hits_submitted += 1
        else:  # refused by validation: given back, the session goes on with another HIT
            stage.refused += 1
            status, location, _ = browser.request(f"/work/assignments/{pk}/", {"action": "return"})


def _leave_mid_session(role: str, study, session_id: str, standin_url: str, figures: ProlificFigures) -> None:
    """After one HIT, with the next one open: return the study on Prolific, or stop until Prolific times it out."""
    if role == "returns":
        http_request("POST", f"{standin_url}/__control/submissions/{session_id}/return/", {}, as_json=True)
        figures.returned += 1
    else:
        # Nobody else is working now (the simulation is sequential): the clock passes this study's maximum time.
        maximum = next(s["maximum_allowed_time"] for s in standin_state(standin_url)["studies"] if s["id"] == study.prolific_id)
        http_request("POST", f"{standin_url}/__control/clock/", {"advance_seconds": maximum * 60 + 1}, as_json=True)
        figures.timed_out += 1
    # The platform's periodic sync learns it before the next participant arrives: the open HIT is freed for them.
    _sync(study.batch, figures)


def _forged_session(studies, base_url: str, rng: random.Random, report) -> int:
    """Someone opens a study URL with a PROLIFIC_PID and SESSION_ID Prolific never issued: refused at arrival
    (the platform asks Prolific for the submission); were Prolific unreachable, the work would stay pending only.
    The first study (a screening study when there is one: its test is open to anyone); returns 1 (one tried)."""
    figures = report.prolific
    study = studies[0]
    pid, session_id = f"{rng.getrandbits(96):024x}", f"{rng.getrandbits(96):024x}"
    browser = HttpWorker(base_url, pid, "")
    query = urllib.parse.urlencode({"PROLIFIC_PID": pid, "STUDY_ID": study.prolific_id, "SESSION_ID": session_id})
    status, location, _ = browser.request(f"/prolific/start/?{query}")
    match = re.search(r"/work/assignments/(\d+)/", location or "") if status == 302 else None
    figures.forged_sessions += 1
    if match is not None:
        pk = int(match.group(1))
        browser.request(f"/work/assignments/{pk}/")
        hit = Assignment.objects.select_related("hit__task_type").get(pk=pk).hit
        data = getattr(Answerer(rng, 0.0), hit.task_type.slug)(hit, pid, True)
        status, _, _ = browser.request(f"/work/assignments/{pk}/", {**data, "action": "submit"})
        figures.forged_hits += int(status == 302)
    return 1


def _prolific_settle(batch, standin_url: str, report, rejected_sessions: set, reject: int) -> None:
    """The platform's sync, the simulated researcher's review, the sync that sends it, the stand-in's clock."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from hits.prolific.models import ProlificSession

    figures = report.prolific
    _sync(batch, figures)
    if ProlificSession.objects.filter(study__batch=batch, confirmed_at__isnull=True).exclude(
            state=ProlificSession.State.DISCARDED).exists():
        # Sessions Prolific does not list (made-up ids): the confirmation grace passes, and they are discarded.
        _sync(batch, figures, now=timezone.now() + timedelta(seconds=settings.PROLIFIC_CONFIRM_GRACE + 1))
    if _review(batch, figures, rejected_sessions, reject):
        _sync(batch, figures)
    settle = standin_state(standin_url)["settle_seconds"]
    http_request("POST", f"{standin_url}/__control/clock/", {"advance_seconds": settle + 1}, as_json=True)


def _sync(batch, figures: ProlificFigures, now=None) -> None:
    from hits.prolific.sync import sync_batch

    result = sync_batch(batch, now=now)
    figures.syncs += 1
    figures.sync_errors.extend(result.errors)


def _review(batch, figures: ProlificFigures, rejected_sessions: set, reject: int) -> int:
    """The researcher's review of the confirmed work: whole sessions rejected (the first ``reject`` completed
    main-study ones, with a category and a message, as Prolific requires), everything else approved."""
    from hits import payments
    from hits.prolific.models import ProlificSession, ProlificStudy
    from hits.prolific.review import note_rejection_category, session_of

    decided = 0
    waiting = Assignment.objects.filter(hit__batch=batch, state=Assignment.State.SUBMITTED).select_related(
        "hit__batch", "hit__task_type", "worker").order_by("pk")
    for assignment in waiting:
        session = session_of(assignment)
        if session is None:
            continue
        if session.pk not in rejected_sessions and len(rejected_sessions) < reject and \
                session.study.kind == ProlificStudy.Kind.MAIN and session.state == ProlificSession.State.COMPLETED:
            rejected_sessions.add(session.pk)
        if session.pk in rejected_sessions:
            payments.reject_assignment(assignment, REJECTION_MESSAGE, settle=False)
            note_rejection_category(assignment, REJECTION_CATEGORY)
            figures.rejected += 1
        else:
            payments.approve_assignment(assignment, "Thank you for your work.", settle=False)
            figures.approved += 1
        decided += 1
    return decided


def _screening_results(batch) -> tuple[int, int]:
    """Participants who passed and failed a screening study's test (their qualification on the platform)."""
    from hits.models import Qualification
    from hits.prolific.models import ProlificSession, ProlificStudy

    passed = failed = 0
    screened = ProlificSession.objects.filter(study__batch=batch, study__kind=ProlificStudy.Kind.SCREENING,
                                              confirmed_at__isnull=False).select_related("study")
    for session in screened:
        state = Qualification.objects.filter(worker_id=session.worker_id, task_type_id=session.study.task_type_id,
                                             batch=batch).values_list("state", flat=True).first()
        if state == Qualification.State.QUALIFIED:
            passed += 1
        elif state is not None:
            failed += 1
    return passed, failed


def _prolific_totals(batch, standin_url: str, figures: ProlificFigures) -> None:
    """HITs by state, Prolific's submissions by status, and the money on both sides (USD)."""
    from collections import Counter
    from decimal import Decimal

    from django.db.models import Sum

    from hits.markets.money import currency_of
    from hits.models import LedgerEntry
    from hits.prolific.models import ProlificBonus, ProlificStudy

    figures.hits = dict(Counter(HIT.objects.filter(batch=batch).values_list("state", flat=True)))
    figures.bonuses = dict(Counter(ProlificBonus.objects.filter(batch=batch).values_list("state", flat=True)))
    state = standin_state(standin_url)
    ours = set(ProlificStudy.objects.filter(batch=batch).exclude(prolific_id=None).values_list("prolific_id", flat=True))
    figures.submissions = dict(Counter(s["status"] for s in state["submissions"] if s["study_id"] in ours))
    paid = LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PAID)
    ledger = {
        name: paid.filter(kind=kind).aggregate(total=Sum("amount"))["total"] or Decimal("0.00")
        for name, kind in (("rewards", LedgerEntry.Kind.REWARD), ("bonuses", LedgerEntry.Kind.BONUS), ("fees", LedgerEntry.Kind.FEE))
    }
    figures.ledger = {k: f"{v:.2f}" for k, v in {**ledger, "total": sum(ledger.values())}.items()}
    market = {"rewards": 0, "bonuses": 0, "fees": 0}
    for entry in state["ledger"]:
        if entry["study_id"] in ours:
            market["rewards" if entry["kind"] == "reward" else "bonuses"] += entry["amount"]
            market["fees"] += entry["fees"] + entry.get("vat", 0)  # Prolific's fees with their VAT, as the ledger's
    market["total"] = sum(market.values())
    batch.refresh_from_db()
    figures.currency = currency_of(batch)
    figures.market = {k: f"{Decimal(v) / 100:.2f}" for k, v in market.items()}
