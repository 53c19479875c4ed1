"""A simulated crowd that works through a campaign over HTTP, like real workers.

Each simulated worker logs in through the login form, asks for the next HIT
of each task type, reads the HIT (the simulator may look at the database to
decide what to answer: it plays a person who understands the sentence) and
posts the same form fields a browser would post.  Everything it does goes
through the real pages, validation and services.

How simulated workers answer:

- writers turn the predicate's syntactic dependents (subject, object,
  prepositional, temporal, locative, causal arguments) into template
  questions ("Who <verb> something?") with the dependent's words as answer;
- verifiers know a pair is sound when its answer is one of the predicate's
  dependents, and say so, right in a share ``accuracy`` of their answers;
- presence judges answer the imported gold label where one exists, else
  whether the answer's content words all occur in the candidate, right in a
  share ``accuracy`` of their answers;
- qualification and gold HITs are answered from their key, with the same
  accuracy;
- careless workers (ids ``sim-careless-<n>``) answer at random.

``same_answers``: whether a presence answer is right depends on the seed, the
unit, the system and how many judgments the unit already has, not on who
answers: two campaigns on the same data and seed (e.g. one under each presence
rule) get the same k-th judgment of every unit, whatever the hand-out order.
"""

from __future__ import annotations

import http.cookiejar
import json
import random
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from socketserver import ThreadingMixIn

from django.contrib.auth import get_user_model
from django.db.models import F
from django.core.handlers.wsgi import WSGIHandler

from annotation.text.spans import normalise, sentence_tokens
from annotation.models import Campaign, ContentUnit, GoldPresence, Predicate, PresenceJudgment, SystemSummary
from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from hits.models import HIT, Assignment, BatchChoice, Worker
from hits.services import record_choice, seed_hand_out

TASK_ORDER = (GENERATION, VERIFICATION, PRESENCE)
_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_STOPWORDS = {
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "by", "with", "from", "is", "was", "were",
    "are", "be", "been", "has", "have", "had", "it", "its", "that", "this", "as",
}
_PERSON_WORDS = {"he", "she", "they", "i", "we", "you", "him", "her", "them", "who", "someone", "people", "police"}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class HttpWorker:
    """One simulated person's browser: cookies, CSRF token, no automatic redirects."""

    def __init__(self, base_url: str, username: str, password: str):
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies), _NoRedirect())

    def request(self, path: str, data: dict | None = None) -> tuple[int, str, str]:
        """(status, Location header, body) of a GET, or of a POST when ``data`` is given."""
        url = path if path.startswith("http") else self.base_url + path
        body = None
        headers = {"Referer": self.base_url + "/"}
        if data is not None:
            data = {**data, "csrfmiddlewaretoken": self._csrf_token()}
            body = urllib.parse.urlencode(data, doseq=True).encode()
        req = urllib.request.Request(url, data=body, headers=headers)
        try:
            with self.opener.open(req, timeout=60) as response:
                return response.status, response.headers.get("Location", ""), response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("Location", ""), exc.read().decode(errors="replace")

    def _csrf_token(self) -> str:
        for cookie in self.cookies:
            if cookie.name == "csrftoken":
                return cookie.value
        return ""

    def log_in(self) -> None:
        status, _, body = self.request("/accounts/login/")
        match = _CSRF_INPUT.search(body)
        if status != 200 or not match:
            raise RuntimeError(f"login page answered {status}")
        status, location, _ = self.request(
            "/accounts/login/", {"username": self.username, "password": self.password, "next": "/work/"}
        )
        if status != 302:
            raise RuntimeError(f"{self.username} could not log in (status {status})")


@dataclass
class StageFigures:
    accepted: int = 0
    submitted: int = 0
    refused: int = 0


@dataclass
class MTurkWorkerFigures:
    """What simulated MTurk workers did on the stand-in: HITs accepted, submitted, given back; forged pages."""

    accepted: int = 0
    submitted: int = 0
    returned: int = 0
    forged: int = 0


@dataclass
class SimulationReport:
    stages: dict[str, StageFigures] = field(default_factory=lambda: {t: StageFigures() for t in TASK_ORDER})
    campaign_state: str = ""
    seconds: float = 0.0
    stuck: bool = False
    mturk: MTurkWorkerFigures | None = None
    prolific: "ProlificFigures | None" = None
    # Examples the simulated researcher released from the duplicate review (keeping every pair).
    released_for_review: int = 0

    def lines(self) -> list[str]:
        out = []
        for slug, figures in self.stages.items():
            out.append(
                f"{slug}: {figures.submitted} assignments submitted, {figures.refused} refused by validation"
            )
        if self.mturk is not None:
            m = self.mturk
            out.append(
                f"on the MTurk stand-in: {m.accepted} HITs accepted, {m.submitted} submitted, {m.returned} given back;"
                f" {m.forged} forged submissions"
            )
        if self.prolific is not None:
            out.extend(self.prolific.lines())
        if self.released_for_review:
            out.append(f"duplicate review: {self.released_for_review} examples released with all their pairs kept")
        out.append(
            f"campaign {self.campaign_state}{' (stuck: no worker can take the remaining HITs)' if self.stuck else ''}"
            f" after {self.seconds:.1f} s"
        )
        return out


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def _closing_connections(app):
    """Each request runs in a new thread: close its database connection when the request ends."""
    from django.db import connections

    def wrapped(environ, start_response):
        try:
            return list(app(environ, start_response))
        finally:
            connections.close_all()

    return wrapped


def serve_in_background():
    """Serve the Django application on a free loopback port; returns (server, base URL)."""
    server = make_server(
        "127.0.0.1", 0, _closing_connections(WSGIHandler()), server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class Answerer:
    """Decides what a simulated worker answers (see the module docstring).

    A worker's accuracy is applied deterministically: errors are spread
    evenly over their answers (an accuracy of 0.9 is exactly one wrong answer
    in ten, starting at a seeded offset), so a simulation is reproducible
    and a worker's figures converge quickly to their accuracy.
    """

    def __init__(self, rng: random.Random, accuracy: float, accuracies: dict[str, float] | None = None,
                 same_answers_seed: int | None = None):
        self.rng = rng
        self.accuracy = accuracy
        self.same_answers_seed = same_answers_seed
        self.accuracies = accuracies or {}
        self._arguments: dict[int, list[tuple[str, str]]] = {}
        self._answered: dict[str, int] = {}
        self._offset: dict[str, float] = {}

    def right(self, worker: str, stream: str = "") -> bool:
        """Whether the worker's next answer is right (evenly spread errors at their accuracy).

        Each stream (kind of HIT) spreads its errors on its own, so that gold
        items see the worker's accuracy as well as regular ones do.
        """
        error_rate = 1.0 - self.accuracies.get(worker, self.accuracy)
        key = f"{worker}:{stream}"
        k = self._answered.get(key, 0)
        self._answered[key] = k + 1
        offset = self._offset.setdefault(key, self.rng.random())
        return int((k + 1) * error_rate + offset) == int(k * error_rate + offset)

    def arguments(self, predicate: Predicate) -> list[tuple[str, str]]:
        """(question, answer) templates from the predicate's dependents in the parse."""
        if predicate.pk not in self._arguments:
            self._arguments[predicate.pk] = template_questions(predicate.sentence.text, predicate.start, predicate.end, predicate.lemma)
        return self._arguments[predicate.pk]

    def generation(self, hit: HIT, worker: str, careless: bool) -> dict:
        inline = hit.payload.get("inline")
        if inline:
            sentence, lemma = inline["sentence"], inline["sentence"][inline["start"] : inline["end"]]
            wh = ["Who", "What", "When", "Where", "How"]
            arguments = (hit.answer_key or {}).get("arguments", [])
            pairs = [(f"{wh[i % 5]} did someone {lemma}?", answers[0]) for i, answers in enumerate(arguments)]
            if not careless and not self.right(worker, hit.kind) and len(pairs) > 1:
                pairs = pairs[1:]  # leaves one argument uncovered
        else:
            predicate = Predicate.objects.select_related("sentence").get(pk=hit.payload["predicate"])
            sentence = predicate.sentence.text
            kept = set(
                ContentUnit.objects.filter(predicate=predicate, state=ContentUnit.State.KEPT).values_list("question", flat=True)
            )
            pairs = [(q, a) for q, a in self.arguments(predicate) if q not in kept][:5] or [
                (f"What did someone {predicate.lemma}?", predicate.text)
            ]
        if careless:
            # Random words around the verb: past the server's checks (a question word, the verb, words of
            # the sentence confirmed as an exception), so only the verifiers can catch it.
            tokens = [t["text"] for t in sentence_tokens(sentence) if t["text"].isalnum()] or [sentence.split()[0]]
            verb = lemma if inline else predicate.text
            return {"q1": f"What {verb} {self.rng.choice(tokens)}?", "q1_keep": "1", "q1_a1": self.rng.choice(tokens)}
        data = {}
        for i, (question, answer) in enumerate(pairs[:5], start=1):
            data[f"q{i}"] = question
            data[f"q{i}_a1"] = answer
        return data

    def verification(self, hit: HIT, worker: str, careless: bool) -> dict:
        inline = hit.payload.get("inline")
        data = {}
        if inline:
            key = (hit.answer_key or {}).get("verdicts", {})
            items = [(q["id"], key[q["id"]]["valid"], (key[q["id"]]["answers"] or q["answers"] or [""])[0]) for q in inline["questions"]]
        else:
            predicate = Predicate.objects.select_related("sentence").get(pk=hit.payload["predicate"])
            sound_answers = {normalise(a) for _, a in self.arguments(predicate)} | {normalise(predicate.text)}
            items = [
                (u.pk, bool(u.answers) and normalise(u.answers[0]) in sound_answers, u.answers[0] if u.answers else predicate.text)
                for u in ContentUnit.objects.filter(pk__in=hit.payload["units"])
            ]
        for pk, sound, answer in items:
            valid = self.rng.random() < 0.5 if careless else (sound if self.right(worker, hit.kind) else not sound)
            data[f"v_{pk}"] = "valid" if valid else "invalid"
            if valid:
                data[f"v_{pk}_a1"] = answer
        return data

    def presence(self, hit: HIT, worker: str, careless: bool) -> dict:
        inline = hit.payload.get("inline")
        data = {}
        if inline or hit.kind == HIT.Kind.GOLD:
            truths = {str(k): v for k, v in (hit.answer_key or {}).get("labels", {}).items()}
            ids = [p["id"] for p in inline["pairs"]] if inline else hit.payload["units"]
            items = [(pk, truths[str(pk)]) for pk in ids]
        else:
            summary = SystemSummary.objects.get(pk=hit.payload["summary"])
            gold = dict(
                GoldPresence.objects.filter(
                    summary=summary, unit_id__in=hit.payload["units"], origin=GoldPresence.Origin.IMPORTED
                ).values_list("unit_id", "present")
            )
            words = set(re.findall(r"\w+", summary.text.lower()))
            items = []
            for unit in ContentUnit.objects.filter(pk__in=hit.payload["units"]):
                truth = gold.get(unit.pk)
                if truth is None:
                    content = [w for w in re.findall(r"\w+", " ".join(unit.answers or [unit.text]).lower()) if w not in _STOPWORDS]
                    truth = bool(content) and all(w in words for w in content)
                items.append((unit.pk, truth))
        # The page names the units by position, in the HIT's order.
        order = [str(p["id"]) for p in hit.payload["inline"]["pairs"]] if hit.payload.get("inline") else [str(u) for u in hit.payload["units"]]
        positional = self.same_answers_seed is not None and not (inline or hit.kind == HIT.Kind.GOLD)
        for pk, truth in items:
            if careless:
                label = self.rng.random() < 0.5
            elif positional:
                label = truth if self.right_by_position(hit, pk, worker) else not truth
            else:
                label = truth if self.right(worker, hit.kind) else not truth
            data[f"p_{order.index(str(pk)) + 1}"] = "1" if label else "0"
        return data

    def right_by_position(self, hit: HIT, unit_id: int, worker: str) -> bool:
        """``same_answers``: whether the next judgment of this unit in this summary is right, from the seed, the
        example, the unit's index, the system and the judgments the unit has so far (names, not database ids,
        so two campaigns on the same data agree)."""
        unit = ContentUnit.objects.select_related("example").get(pk=unit_id)
        summary = SystemSummary.objects.select_related("system").get(pk=hit.payload["summary"])
        k = PresenceJudgment.objects.filter(unit_id=unit_id, summary=summary, excluded=False).count()
        key = f"{self.same_answers_seed}:{unit.example.external_id}:{unit.index}:{summary.system.name}:{k}"
        return random.Random(key).random() < self.accuracies.get(worker, self.accuracy)


def template_questions(sentence: str, start: int, end: int, lemma: str) -> list[tuple[str, str]]:
    """QA-SRL-like template questions for a predicate, from spaCy's dependency parse.

    Each argument dependent of the predicate becomes one question whose
    answer is the dependent's whole phrase (always a substring of the sentence).
    """
    from annotation.text.predicates import english_pipeline

    doc = english_pipeline()(sentence)
    head = next((t for t in doc if t.idx == start), None) or next((t for t in doc if t.idx <= start < t.idx + len(t)), None)
    if head is None:
        return []
    verb = lemma.split()[0] if lemma else head.lemma_
    pairs: list[tuple[str, str]] = []
    for child in head.children:
        span = doc[child.left_edge.i : child.right_edge.i + 1]
        answer = span.text
        if child.dep_ in ("nsubj", "nsubjpass", "csubj", "agent"):
            if child.dep_ == "agent":
                span = doc[child.i + 1 : child.right_edge.i + 1] if child.right_edge.i > child.i else span
                answer = span.text
            who = "Who" if child.ent_type_ == "PERSON" or child.lower_ in _PERSON_WORDS or child.pos_ == "PROPN" else "What"
            if child.dep_ == "nsubjpass":
                pairs.append((f"{who} was {head.text}?", answer))
            elif head.tag_ in ("VBD", "VBZ", "VBP"):
                pairs.append((f"{who} {head.text} something?", answer))
            else:
                pairs.append((f"{who} might {verb} something?", answer))
        elif child.dep_ in ("dobj", "attr", "dative", "oprd", "acomp"):
            pairs.append((f"What did someone {verb}?", answer))
        elif child.dep_ == "prep" and child.right_edge.i > child.i:
            obj = doc[child.i + 1 : child.right_edge.i + 1].text
            wh = "When" if any(t.ent_type_ in ("DATE", "TIME") for t in doc[child.i : child.right_edge.i + 1]) else (
                "Where" if child.lower_ in ("in", "at", "near", "inside", "outside", "across") else "What"
            )
            if wh == "What":
                pairs.append((f"What did someone {verb} {child.lower_}?", obj))
            else:
                pairs.append((f"{wh} did someone {verb} something?", answer))
        elif child.dep_ in ("npadvmod", "advmod") and child.ent_type_ in ("DATE", "TIME"):
            pairs.append((f"When did someone {verb}?", answer))
        elif child.dep_ in ("xcomp", "ccomp", "advcl") and span.text.strip():
            pairs.append((f"What did someone {verb} to do?", answer))
    seen, unique = set(), []
    for question, answer in pairs:
        if answer and question not in seen and answer in sentence:
            seen.add(question)
            unique.append((question, answer))
    return unique


def ensure_simulated_workers(n: int, careless: int, password: str, batch_id: int | None = None) -> list[tuple[str, bool]]:
    """Accounts sim-1.. and sim-careless-1.. with a known password; returns (username, careless).

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
) -> SimulationReport:
    """Work through ``campaign`` with simulated workers over HTTP until it is done or stuck (``same_answers``:
    see the module docstring)."""
    if n_workers < 1 or careless > n_workers:
        raise ValueError("need at least one worker, and no more careless workers than workers")
    rng = random.Random(seed)
    answerer = Answerer(rng, accuracy, accuracies, same_answers_seed=seed if same_answers else None)
    password = f"sim-{rng.getrandbits(64):x}"
    if campaign.batch_id is None:
        campaign.refresh_from_db(fields=["batch"])  # launched since the caller loaded it
    if campaign.batch_id is None:
        raise ValueError(f"campaign '{campaign.slug}' has no HITs yet: launch it first")
    names = ensure_simulated_workers(n_workers, careless, password, campaign.batch_id)
    for username, _ in names:
        # The simulated crowd was invited to this campaign: its tests are offered to them.
        record_choice(Worker.objects.get(user__username=username), campaign.batch, BatchChoice.How.INVITATION)
    report = SimulationReport()
    people = []

    def one_round(url: str) -> bool:
        if not people:
            for username, is_careless in names:
                person = HttpWorker(url, username, password)
                person.log_in()
                people.append((person, is_careless))
        did_work = False
        order = list(people)
        rng.shuffle(order)
        for person, is_careless in order:
            for slug in TASK_ORDER:
                if _work_once(person, slug, is_careless, answerer, report):
                    did_work = True
        return did_work

    return _run_rounds(
        campaign, rng, report, base_url, one_round, max_seconds=max_seconds, max_rounds_idle=max_rounds_idle,
        progress=progress, when_idle=lambda deadline: _follow_ups_may_change(campaign, deadline),
    )


def _run_rounds(campaign, rng, report, base_url, one_round, *, max_seconds, max_rounds_idle, progress=None, when_idle=None):
    """Serve the platform in-process (unless ``base_url``) and call ``one_round(base_url)`` until the campaign
    ends, ``max_seconds`` pass, or ``max_rounds_idle`` rounds in a row did nothing and ``when_idle(deadline)``
    does not expect a change; fills and returns ``report``."""
    server = None
    if base_url is None:
        # The platform's hand-out draws gold HITs into a worker's stream at random; served in-process, the
        # whole run (not only the simulated answers) then follows the seed.
        seed_hand_out(rng.getrandbits(64))
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
                break
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
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


def _follow_ups_may_change(campaign: Campaign, deadline: float) -> bool:
    """With a Redis broker, a completed HIT's follow-ups (gold labels, the campaign's end) run in a Celery
    worker a few seconds after the submission: before calling an idle run stuck, wait for them (up to a
    few coalescing windows).  True when the campaign's state changed meanwhile (the loop then looks again)."""
    from annotation.services import coalesce

    if not coalesce.enabled() or campaign.state != Campaign.State.RUNNING:
        return False
    until = min(deadline, time.perf_counter() + 3 * coalesce.window_seconds() + 5)
    while time.perf_counter() < until:
        time.sleep(0.5)
        campaign.refresh_from_db()
        if campaign.state != Campaign.State.RUNNING:
            return True
    return False


def _work_once(person: HttpWorker, slug: str, careless: bool, answerer: Answerer, report: SimulationReport) -> bool:
    status, location, _ = person.request(f"/work/{slug}/start/", {})
    match = re.search(r"/work/assignments/(\d+)/", location or "")
    if status != 302 or not match:
        return False
    assignment = Assignment.objects.select_related("hit").get(pk=int(match.group(1)))
    figures = report.stages[slug]
    figures.accepted += 1
    data = getattr(answerer, slug)(assignment.hit, person.username, careless)
    data["action"] = "submit"
    status, _, _ = person.request(f"/work/assignments/{assignment.pk}/", data)
    if status == 302:
        figures.submitted += 1
        return True
    figures.refused += 1
    person.request(f"/work/assignments/{assignment.pk}/", {"action": "return"})
    return False


# --- simulated MTurk workers, through the MTurk stand-in (hits.mturk.standin) ----------------------

_TOKEN_INPUT = re.compile(r'name="token" value="([^"]+)"')
_SUBMIT_FORM = re.compile(r'<form method="post" id="mturk-submit"[^>]*? action="([^"]+)">(.*?)</form>', re.DOTALL)
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def _http(method: str, url: str, data: dict | None = None, as_json: bool = False):
    """(status, body text) of one request; errors are answers too."""
    body = None
    headers = {}
    if data is not None:
        if as_json:
            body, headers["Content-Type"] = json.dumps(data).encode(), "application/json"
        else:
            body, headers["Content-Type"] = urllib.parse.urlencode(data, doseq=True).encode(), "application/x-www-form-urlencoded"
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


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

    return _run_rounds(
        campaign, rng, report, base_url, one_round, max_seconds=max_seconds, max_rounds_idle=max_rounds_idle, progress=progress,
    )


def _mturk_work_once(worker_id, careless, ours, standin_url, base_url, answerer, report) -> bool:
    from hits.mturk.models import MTurkHIT

    status, body = _http("GET", f"{standin_url}/_standin/worker/hits?" + urllib.parse.urlencode({"WorkerId": worker_id}))
    if status != 200:
        return False
    for item in json.loads(body)["HITs"]:
        if item["HITId"] not in ours:
            continue
        status, body = _http("POST", f"{standin_url}/_standin/worker/accept", {"HITId": item["HITId"], "WorkerId": worker_id}, as_json=True)
        if status != 200:
            continue
        accepted = json.loads(body)
        report.mturk.accepted += 1
        parts = urllib.parse.urlsplit(accepted["URL"])
        page_url = f"{base_url}{parts.path}?{parts.query}"
        status, page = _http("GET", page_url)
        token = _TOKEN_INPUT.search(page) if status == 200 else None
        hit = MTurkHIT.objects.select_related("hit__task_type").get(mturk_hit_id=item["HITId"]).hit
        if token is None:
            _give_back(standin_url, accepted, report)
            continue
        slug = hit.task_type.slug
        answers = getattr(answerer, slug)(hit, worker_id, careless)
        figures = report.stages[slug]
        figures.accepted += 1
        status, done = _http("POST", f"{base_url}{parts.path}", {
            **answers, "hitId": item["HITId"], "assignmentId": accepted["AssignmentId"], "workerId": worker_id,
            "token": token.group(1),
        })
        form = _SUBMIT_FORM.search(done) if status == 200 else None
        if form is None:
            figures.refused += 1
            _give_back(standin_url, accepted, report)
            continue
        action = urllib.parse.urlsplit(form.group(1))
        status, _ = _http("POST", f"{standin_url}{action.path}", dict(_HIDDEN.findall(form.group(2))))
        if status == 200:
            figures.submitted += 1
            report.mturk.submitted += 1
        return True
    return False


def _give_back(standin_url: str, accepted: dict, report) -> None:
    _http("POST", f"{standin_url}/_standin/worker/return", {"AssignmentId": accepted["AssignmentId"]}, as_json=True)
    report.mturk.returned += 1


def _forge_once(hit_id: str, base_url: str, rng: random.Random, report) -> int:
    """Someone opens the framed page with made-up ids and submits: stored as pending, never on MTurk."""
    fake_assignment, fake_worker = f"FORGED{rng.getrandbits(40):X}", f"FAKE{rng.getrandbits(30):X}"
    path = "/work/mturk/hit/"
    query = urllib.parse.urlencode({"hitId": hit_id, "assignmentId": fake_assignment, "workerId": fake_worker,
                                    "turkSubmitTo": _standin_submit_host()})
    status, page = _http("GET", f"{base_url}{path}?{query}")
    token = _TOKEN_INPUT.search(page) if status == 200 else None
    if token is None:
        return 0
    from hits.mturk.models import MTurkHIT

    hit = MTurkHIT.objects.select_related("hit__task_type").get(mturk_hit_id=hit_id).hit
    answers = getattr(Answerer(rng, 0.0), hit.task_type.slug)(hit, fake_worker, True)
    status, _ = _http("POST", f"{base_url}{path}", {**answers, "hitId": hit_id, "assignmentId": fake_assignment,
                                                    "workerId": fake_worker, "token": token.group(1)})
    if status == 200:
        report.mturk.forged += 1
        return 1
    return 0


def _standin_submit_host() -> str:
    from django.conf import settings

    return settings.MTURK_ENDPOINT_URL.rstrip("/")


# --- simulated Prolific participants, through the Prolific stand-in (hits.prolific.standin) ---------------

REJECTION_CATEGORY = "LOW_EFFORT"
REJECTION_MESSAGE = (
    "Your answers in this session did not show the care the instructions asked for: several judgments contradict "
    "the reference summary. (A rehearsal's simulated review.)"
)


@dataclass
class ProlificFigures:
    """What simulated Prolific participants did on the stand-in and on the platform's pages, and the money."""

    participants: int = 0
    started: int = 0  # sessions started on Prolific
    refused: int = 0  # starts Prolific refused (not in the allowlist group yet, no free place, study not active)
    completed: int = 0  # came back with the completion code
    returned: int = 0  # returned on Prolific mid-session
    timed_out: int = 0  # stopped working; Prolific timed the submission out (stand-in clock)
    no_work: int = 0  # found no HIT for them and returned the study, as the page asks
    hits_submitted: int = 0
    forged_sessions: int = 0  # the study URL opened with a made-up (well-formed) PROLIFIC_PID and SESSION_ID
    forged_hits: int = 0  # HITs submitted in them (pending, never counted)
    screening_passed: int = 0
    screening_failed: int = 0
    approved: int = 0  # HITs the simulated researcher approved
    rejected: int = 0  # HITs rejected (whole sessions, with a category and a message)
    rejected_sessions: int = 0
    syncs: int = 0
    sync_errors: list = field(default_factory=list)
    hits: dict = field(default_factory=dict)  # the batch's HITs by state
    submissions: dict = field(default_factory=dict)  # Prolific's submissions of the batch's studies by status
    ledger: dict = field(default_factory=dict)  # paid ledger entries: rewards, bonuses, fees, total (USD)
    market: dict = field(default_factory=dict)  # what the stand-in paid: rewards, bonuses, fees, total (USD)
    bonuses: dict = field(default_factory=dict)  # bulk bonuses by state

    def lines(self) -> list[str]:
        money = lambda d: ", ".join(f"{k} ${d.get(k, '0.00')}" for k in ("rewards", "bonuses", "fees", "total"))  # noqa: E731
        return [
            f"on the Prolific stand-in: {self.participants} participants, {self.started} sessions started "
            f"({self.refused} starts refused by Prolific), {self.completed} completed, {self.returned} returned, "
            f"{self.timed_out} timed out, {self.no_work} without work; {self.hits_submitted} HITs submitted",
            f"screening: {self.screening_passed} passed, {self.screening_failed} failed; forged: {self.forged_sessions} "
            f"sessions, {self.forged_hits} HITs (never counted)",
            f"review: {self.approved} HITs approved, {self.rejected} rejected ({self.rejected_sessions} sessions, "
            f"category {REJECTION_CATEGORY}); {self.syncs} syncs",
            "HITs: " + ", ".join(f"{n} {state}" for state, n in sorted(self.hits.items())),
            "Prolific submissions: " + ", ".join(f"{n} {status}" for status, n in sorted(self.submissions.items())),
            "bulk bonuses: " + (", ".join(f"{n} {state}" for state, n in sorted(self.bonuses.items())) or "none"),
            f"money, ledger (paid): {money(self.ledger)} (rewards: every HIT, including those Prolific paid as "
            "bonuses; bonuses: a researcher's own)",
            f"money, Prolific stand-in (paid): {money(self.market)}",
            *(f"sync: {error}" for error in self.sync_errors[:10]),
        ]


def standin_state(standin_url: str) -> dict:
    """The Prolific stand-in's ``/__control/state/``; a clear error when the URL is not a stand-in."""
    try:
        status, body = _http("GET", f"{standin_url.rstrip('/')}/__control/state/")
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

    report = _run_rounds(campaign, rng, report, base_url, one_round, max_seconds=max_seconds,
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
    status, body = _http("POST", f"{standin_url}/__control/participants/",
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
                _http("POST", f"{standin_url}/__control/submissions/{session_id}/complete/", {"code": code[0]}, as_json=True)
                figures.completed += 1
            else:  # no work for them (the page asks to return the study), or a refusal
                _http("POST", f"{standin_url}/__control/submissions/{session_id}/return/", {}, as_json=True)
                figures.no_work += 1
            return done > 0
        pk = int(match.group(1))
        if done == 1 and leaving and study.kind == "main" and not person.careless:
            _leave_mid_session(leaving.pop(0), study, session_id, standin_url, figures)
            return True
        status, _, _ = browser.request(f"/work/assignments/{pk}/")  # the HIT page (sets the CSRF cookie)
        if status != 200:  # the page refused: the participant gives the study back on Prolific
            _http("POST", f"{standin_url}/__control/submissions/{session_id}/return/", {}, as_json=True)
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
        _http("POST", f"{standin_url}/__control/submissions/{session_id}/return/", {}, as_json=True)
        figures.returned += 1
    else:
        # Nobody else is working now (the simulation is sequential): the clock passes this study's maximum time.
        maximum = next(s["maximum_allowed_time"] for s in standin_state(standin_url)["studies"] if s["id"] == study.prolific_id)
        _http("POST", f"{standin_url}/__control/clock/", {"advance_seconds": maximum * 60 + 1}, as_json=True)
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
    _http("POST", f"{standin_url}/__control/clock/", {"advance_seconds": settle + 1}, as_json=True)


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
            market["fees"] += entry["fees"]
    market["total"] = sum(market.values())
    figures.market = {k: f"{Decimal(v) / 100:.2f}" for k, v in market.items()}
