"""Simulated MTurk workers, through the MTurk stand-in (``hits.mturk.standin``)."""

from __future__ import annotations

import json
import random
import re
import urllib.parse

from django.db.models import F

from annotation.management.simulation.answers import Answerer
from annotation.management.simulation.browser import http_request
from annotation.management.simulation.crowd import run_rounds
from annotation.management.simulation.report import MTurkWorkerFigures, SimulationReport
from annotation.models import Campaign
from hits.models import HIT

_TOKEN_INPUT = re.compile(r'name="token" value="([^"]+)"')
_SUBMIT_FORM = re.compile(r'<form method="post" id="mturk-submit"[^>]*? action="([^"]+)">(.*?)</form>', re.DOTALL)
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def simulate_mturk_crowd(
    campaign: Campaign,
    n_workers: int,
    *,
    standin_url: str,
    accuracy: float = 0.95,
    seed: int = 0,
    careless: int = 0,
    forged: int = 0,
    base_url: str | None = None,
    max_seconds: float = 3600,
    max_rounds_idle: int = 2,
    progress=None,
) -> SimulationReport:
    """Work through an MTurk campaign with simulated MTurk workers, as on MTurk but against the local stand-in.

    Each round, every worker looks for the campaign's HITs on the stand-in's worker side, accepts one, loads
    the framed HIT page the stand-in points to (served by the platform: in-process unless ``base_url``),
    submits the answers there, then posts MTurk's ``externalSubmit`` form to the stand-in, as a browser in
    MTurk's frame does.  A worker the platform refuses (e.g. a writer asked to verify their own questions)
    returns the HIT on the stand-in.  ``forged`` extra submissions open the page with made-up ids and never
    reach MTurk.  Between rounds the platform's own sync runs (``hits.mturk.sync.sync_batch``): it confirms
    what MTurk has, publishes the next stage's HITs, frees returned places and discards the forged work.
    """
    from hits.mturk.models import MTurkHIT
    from hits.mturk.sync import sync_batch

    if n_workers < 1 or careless > n_workers:
        raise ValueError("need at least one worker, and no more careless workers than workers")
    rng = random.Random(seed)
    answerer = Answerer(rng, accuracy)
    standin_url = standin_url.rstrip("/")
    workers = [(f"ASIMW{i:03d}", i <= careless) for i in range(1, n_workers + 1)]
    report = SimulationReport(mturk=MTurkWorkerFigures())
    forged_left = [forged]

    def one_round(url: str) -> bool:
        did_work = False
        order = list(workers)
        rng.shuffle(order)
        ours = set(MTurkHIT.objects.filter(hit__batch_id=campaign.batch_id).values_list("mturk_hit_id", flat=True))
        for worker_id, is_careless in order:
            if _mturk_work_once(worker_id, is_careless, ours, standin_url, url, answerer, report):
                did_work = True
        if forged_left[0]:
            # Made-up ids on a HIT that has a free place (else the page refuses before storing anything).
            target = (
                MTurkHIT.objects.filter(hit__batch_id=campaign.batch_id, hit__state=HIT.State.OPEN, hit__n_taken__lt=F("hit__max_assignments"))
                .order_by("pk").values_list("mturk_hit_id", flat=True).first()
            )
            if target:
                forged_left[0] -= _forge_once(target, url, rng, report)
        sync_batch(campaign.batch)
        return did_work

    return run_rounds(
        campaign, rng, report, base_url, one_round, max_seconds=max_seconds, max_rounds_idle=max_rounds_idle, progress=progress,
    )


def _mturk_work_once(worker_id, careless, ours, standin_url, base_url, answerer, report) -> bool:
    from hits.mturk.models import MTurkHIT

    status, body = http_request("GET", f"{standin_url}/_standin/worker/hits?" + urllib.parse.urlencode({"WorkerId": worker_id}))
    if status != 200:
        return False
    for item in json.loads(body)["HITs"]:
        if item["HITId"] not in ours:
            continue
        status, body = http_request("POST", f"{standin_url}/_standin/worker/accept", {"HITId": item["HITId"], "WorkerId": worker_id}, as_json=True)
        if status != 200:
            continue
        accepted = json.loads(body)
        report.mturk.accepted += 1
        parts = urllib.parse.urlsplit(accepted["URL"])
        page_url = f"{base_url}{parts.path}?{parts.query}"
        status, page = http_request("GET", page_url)
        token = _TOKEN_INPUT.search(page) if status == 200 else None
        hit = MTurkHIT.objects.select_related("hit__task_type").get(mturk_hit_id=item["HITId"]).hit
        if token is None:
            _give_back(standin_url, accepted, report)
            continue
        slug = hit.task_type.slug
        answers = getattr(answerer, slug)(hit, worker_id, careless)
        figures = report.stages[slug]
        figures.accepted += 1
        status, done = http_request("POST", f"{base_url}{parts.path}", {
            **answers, "hitId": item["HITId"], "assignmentId": accepted["AssignmentId"], "workerId": worker_id,
            "token": token.group(1),
        })
        form = _SUBMIT_FORM.search(done) if status == 200 else None
        if form is None:
            figures.refused += 1
            _give_back(standin_url, accepted, report)
            continue
        action = urllib.parse.urlsplit(form.group(1))
        status, _ = http_request("POST", f"{standin_url}{action.path}", dict(_HIDDEN.findall(form.group(2))))
        if status == 200:
            figures.submitted += 1
            report.mturk.submitted += 1
        return True
    return False


def _give_back(standin_url: str, accepted: dict, report) -> None:
    http_request("POST", f"{standin_url}/_standin/worker/return", {"AssignmentId": accepted["AssignmentId"]}, as_json=True)
    report.mturk.returned += 1


def _forge_once(hit_id: str, base_url: str, rng: random.Random, report) -> int:
    """Someone opens the framed page with made-up ids and submits: stored as pending, never on MTurk."""
    fake_assignment, fake_worker = f"FORGED{rng.getrandbits(40):X}", f"FAKE{rng.getrandbits(30):X}"
    path = "/work/mturk/hit/"
    query = urllib.parse.urlencode({"hitId": hit_id, "assignmentId": fake_assignment, "workerId": fake_worker,
                                    "turkSubmitTo": _standin_submit_host()})
    status, page = http_request("GET", f"{base_url}{path}?{query}")
    token = _TOKEN_INPUT.search(page) if status == 200 else None
    if token is None:
        return 0
    from hits.mturk.models import MTurkHIT

    hit = MTurkHIT.objects.select_related("hit__task_type").get(mturk_hit_id=hit_id).hit
    answers = getattr(Answerer(rng, 0.0), hit.task_type.slug)(hit, fake_worker, True)
    status, _ = http_request("POST", f"{base_url}{path}", {**answers, "hitId": hit_id, "assignmentId": fake_assignment,
                                                    "workerId": fake_worker, "token": token.group(1)})
    if status == 200:
        report.mturk.forged += 1
        return 1
    return 0


def _standin_submit_host() -> str:
    from django.conf import settings

    return settings.MTURK_ENDPOINT_URL.rstrip("/")


