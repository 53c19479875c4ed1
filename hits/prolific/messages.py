"""Messages to Prolific participants (issue 40): Prolific's "send a message to multiple participants".

``POST /api/v1/messages/bulk/`` with ``ids`` (participant ids), ``body`` and ``study_id`` (the study that is the
reason for the message), as Prolific's API reference documents it.  A Prolific message has no subject: the
subject is its first line.  A participant is written to about the batch's study they last took part in (Prolific
ties every message to a study); one call per study, at most ``BULK_SIZE`` participants a call.  The call is
all or nothing: when Prolific refuses it (4xx: nothing sent), each participant is written to alone ("send a
message": ``recipient_id``, ``body``, ``study_id``), so that only those Prolific refuses fail, with its reason.
No answer or a 5xx leaves the call's participants "unknown" (the message may have gone out; it is not re-sent
blind: the researcher may send again).
"""

from __future__ import annotations

from hits.markets.base import Delivery
from hits.models import Batch
from hits.prolific.client import Prolific, ProlificError
from hits.prolific.models import ProlificSession

BULK_SIZE = 500  # participants per call: well under the bulk limit Prolific states (4,000 by default)
BULK_PATH, ONE_PATH = "/messages/bulk/", "/messages/"


def message_text(subject: str, body: str) -> str:
    return f"{subject}\n\n{body}"


def studies_of(batch: Batch, workers: list) -> dict:
    """``{worker pk: Prolific study id}``: the batch's study each worker last took part in (one query)."""
    found = {}
    sessions = (ProlificSession.objects.filter(study__batch=batch, worker__in=workers, study__prolific_id__isnull=False)
                .order_by("worker_id", "-started_at", "-pk").values_list("worker_id", "study__prolific_id"))
    for worker_id, study_id in sessions:
        found.setdefault(worker_id, study_id)
    return found


def send_message(batch: Batch, subject: str, body: str, workers: list, client: Prolific | None = None) -> dict:
    """``ProlificMarket.send_message``: ``{worker pk: Delivery}``."""
    done, calls = {}, {}
    studies = studies_of(batch, workers)
    for worker in workers:
        study_id = studies.get(worker.pk)
        if not worker.prolific_pid or study_id is None:
            done[worker.pk] = Delivery("failed", "no Prolific participant id or study: this worker did not come "
                                                 "from this campaign's Prolific studies", "no-prolific-id")
        else:
            calls.setdefault(study_id, []).append(worker)
    if not calls:
        return done
    own = client is None
    client = client or Prolific()
    try:
        for study_id, group in calls.items():
            for start in range(0, len(group), BULK_SIZE):
                part = group[start : start + BULK_SIZE]
                done.update(_send(client, study_id, message_text(subject, body), part))
    finally:
        if own:
            client.close()
    return done


def _send(client: Prolific, study_id: str, text: str, workers: list) -> dict:
    """One bulk call; if Prolific refuses it (it sent nothing) and it named several participants, each is written
    to alone (``POST /messages/``), so that one participant Prolific will not message fails alone."""
    payload = {"ids": [w.prolific_pid for w in workers], "body": text, "study_id": study_id}
    try:
        client.request("POST", BULK_PATH, json=payload, safe=False)
    except ProlificError as exc:
        if exc.ambiguous or len(workers) == 1:
            return {w.pk: _failure(exc) for w in workers}
        done = {}
        for worker in workers:
            try:
                client.request("POST", ONE_PATH, json={"recipient_id": worker.prolific_pid, "body": text,
                                                       "study_id": study_id}, safe=False)
            except ProlificError as alone:
                done[worker.pk] = _failure(alone)
            else:
                done[worker.pk] = Delivery("sent", f"Prolific message (study {study_id})")
        return done
    return {w.pk: Delivery("sent", f"Prolific message (study {study_id})") for w in workers}


def _failure(exc: ProlificError) -> Delivery:
    if exc.ambiguous:
        return Delivery("unknown", f"no clear answer from Prolific: {exc}"[:500], str(exc.status or ""))
    return Delivery("failed", f"Prolific refused: {exc}"[:500], str(exc.status or ""))
