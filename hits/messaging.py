"""Messages to workers (issue 40): a researcher writes to one worker, some or all workers of a campaign's batch.

Every message is recorded first (``WorkerMessage``, one ``MessageRecipient`` per worker, "pending"), then sent
through the batch's market (``Market.send_message``): the platform's own pages show it on ``/work/`` (and e-mail
it when e-mail is configured), MTurk's NotifyWorkers and Prolific's messages carry it to their workers.  Each
recipient keeps what became of their copy: sent, failed (with the market's code and reason) or unknown (no clear
answer: it may have arrived).  A message's ``key`` makes sending repeat-safe: the same key again returns the
message already recorded and sends nothing.  ``resend`` tries again the copies not known to be sent.
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

from django.db import transaction
from django.db.models import Case, Count, Q, Value, When
from django.utils import timezone

from hits.markets.registry import market_for
from hits.models import Batch, MessageRecipient, Worker, WorkerMessage

# ASCII control characters other than tab, line feed and carriage return: refused (MTurk refuses them too).
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
KEY = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
# A copy left "sending" this long ago was cut short (the process died mid-call): ``resend`` may take it again.
STALE_SENDING = timedelta(minutes=10)
LOG_LIMIT = 100  # messages shown in a campaign's log, newest first
Status = MessageRecipient.Status


class MessageRefused(ValueError):
    """The message cannot be sent as asked (empty, too long, unknown workers...); nothing was recorded."""


def clean_text(batch: Batch, subject: str, body: str) -> tuple[str, str]:
    """The subject and message as sent, or ``MessageRefused`` saying what is wrong with them."""
    market = market_for(batch)
    subject, body = (subject or "").strip(), (body or "").strip()
    problems = []
    if not subject:
        problems.append("the subject is empty")
    elif len(subject) > market.message_subject_limit:
        problems.append(f"the subject has {len(subject)} characters; {market.label} takes at most {market.message_subject_limit}")
    if not body:
        problems.append("the message is empty")
    elif len(body) > market.message_body_limit:
        problems.append(f"the message has {len(body)} characters; {market.label} takes at most {market.message_body_limit}")
    if CONTROL.search(subject) or CONTROL.search(body):
        problems.append("the text holds control characters (other than tabs and line breaks)")
    if problems:
        raise MessageRefused("; ".join(problems))
    return subject, body


def batch_workers(batch: Batch, external_ids=None):
    """The workers who took a HIT of the batch (all of them, or those named ``external_ids``); a name that is not
    one of them is refused, whether or not it exists elsewhere (the same answer: no existence leak)."""
    workers = Worker.objects.filter(pk__in=Worker.objects.filter(assignments__hit__batch=batch).values("pk"))
    if external_ids is None:
        return list(workers.select_related("user").order_by("external_id"))
    names = list(dict.fromkeys(str(n).strip() for n in external_ids if str(n).strip()))
    found = list(workers.filter(external_id__in=names).select_related("user").order_by("external_id"))
    unknown = sorted(set(names) - {w.external_id for w in found})
    if unknown:
        raise MessageRefused(f"not workers of this campaign: {', '.join(unknown[:20])}" + (" ..." if len(unknown) > 20 else ""))
    return found


def record_message(batch: Batch, sender, subject: str, body: str, workers: list, key: str | None = None) -> tuple[WorkerMessage, bool]:
    """Record the message and a pending copy per worker: ``(message, created)``.  A ``key`` used before returns
    that message (``created`` False) if it was for this batch, and is refused otherwise."""
    if key is not None and not KEY.match(key):
        raise MessageRefused("the key must be 1 to 64 letters, digits or . _ : -")
    key = key or uuid.uuid4().hex
    existing = WorkerMessage.objects.filter(key=key).first()
    if existing is not None:
        if existing.batch_id != batch.pk:
            raise MessageRefused("that key was used for a message of another campaign")
        return existing, False
    subject, body = clean_text(batch, subject, body)
    if not workers:
        raise MessageRefused("no worker to send the message to: tick at least one")
    with transaction.atomic():
        message, created = WorkerMessage.objects.get_or_create(key=key, defaults=dict(
            batch=batch, sender=sender if getattr(sender, "pk", None) else None,
            sender_name=getattr(sender, "get_username", lambda: "")() or "system",
            market=market_for(batch).name, subject=subject, body=body,
        ))
        if created:
            MessageRecipient.objects.bulk_create(MessageRecipient(message=message, worker=w) for w in workers)
    return message, created


#: A message to at most this many workers is sent in the request (one NotifyWorkers call on MTurk), so the
#: researcher sees at once what became of every copy; to more, by a background job (Celery, in-process under the
#: embedded default): Prolific takes one call per worker and MTurk one per 100, too many for a request to wait for.
DELIVER_IN_REQUEST = 100
DELIVER_TASK = "hits.deliver_message"


def send_message(batch: Batch, sender, subject: str, body: str, workers: list, key: str | None = None) -> WorkerMessage:
    """Record the message, then send it (a repeated key sends nothing again): now, or by a background job when it
    goes to more than ``DELIVER_IN_REQUEST`` workers (its copies stay "pending" until the job takes them)."""
    message, created = record_message(batch, sender, subject, body, workers, key)
    if created:
        deliver_soon(message, len(workers))
    return message


def deliver_soon(message: WorkerMessage, n_copies: int) -> bool:
    """Send the message's pending copies in this request when they are few, else queue ``deliver_message`` after the
    commit (``hits.outbox``: never lost if the broker is down).  True when sent here."""
    if n_copies <= DELIVER_IN_REQUEST:
        deliver(message)
        return True
    from hits.outbox import send_after_commit

    send_after_commit(DELIVER_TASK, message.pk)
    return False


def in_background(message: WorkerMessage) -> bool:
    """Whether copies of the message still wait for the background job (pending, never tried)."""
    return message.recipients.filter(status=Status.PENDING).exists()


def _claim(message: WorkerMessage, statuses) -> list[MessageRecipient]:
    """The copies to send now, marked "sending" under the message's lock so that two senders never take the same."""
    with transaction.atomic():
        WorkerMessage.objects.select_for_update().filter(pk=message.pk).first()
        wanted = Q(status__in=[s for s in statuses if s != Status.SENDING])
        if Status.SENDING in statuses:
            wanted |= Q(status=Status.SENDING, updated_at__lt=timezone.now() - STALE_SENDING)
        claimed = list(message.recipients.filter(wanted).select_related("worker__user").order_by("pk"))
        MessageRecipient.objects.filter(pk__in=[r.pk for r in claimed]).update(status=Status.SENDING, updated_at=timezone.now())
    return claimed


def deliver(message: WorkerMessage, statuses=(Status.PENDING,)) -> WorkerMessage:
    """Send the copies in ``statuses`` through the batch's market and record what became of each."""
    claimed = _claim(message, statuses)
    if not claimed:
        return message
    market = market_for(message.batch)
    try:
        results = market.send_message(message.batch, message.subject, message.body, [r.worker for r in claimed])
    except Exception as exc:  # a bug or an outage beyond the market's own handling: whether it went out is unknown
        results = {}
        detail = f"sending stopped: {exc}"[:500]
    else:
        detail = "the market gave no answer for this worker"
    now = timezone.now()
    for recipient in claimed:
        delivery = results.get(recipient.worker_id)
        if delivery is None:
            recipient.status, recipient.code, recipient.detail = Status.UNKNOWN, "", detail
        else:
            recipient.status, recipient.code = delivery.status, delivery.code[:64]
            recipient.detail, recipient.emailed = delivery.detail[:500], delivery.emailed
        recipient.updated_at = now
    MessageRecipient.objects.bulk_update(claimed, ["status", "code", "detail", "emailed", "updated_at"])
    WorkerMessage.objects.filter(pk=message.pk).update(sent_at=now)
    message.sent_at = now
    return message


def resend(message: WorkerMessage) -> WorkerMessage:
    """Send again every copy not known to be sent: failed, unknown, never sent, or left "sending" by a cut-short
    attempt.  A copy MTurk refused for good (HardFailure) is tried again too: the researcher asked."""
    return deliver(message, (Status.PENDING, Status.FAILED, Status.UNKNOWN, Status.SENDING))


def message_log(batch: Batch, limit: int = LOG_LIMIT) -> list[WorkerMessage]:
    """The batch's messages, newest first, with their copies and workers (three queries), and counts by status."""
    counts = {s: Count("recipients", filter=Q(recipients__status=s)) for s in Status.values}
    messages = list(
        WorkerMessage.objects.filter(batch=batch).annotate(**{f"n_{s}": c for s, c in counts.items()})
        .order_by("-created_at", "-pk").prefetch_related("recipients__worker")[:limit]
    )
    for message in messages:
        with_copies(message, message.recipients.all())
        message.unsent = sum(getattr(message, f"n_{s}") for s in Status.values if s != Status.SENT)
    return messages


def with_copies(message: WorkerMessage, recipients) -> WorkerMessage:
    """The message with ``copies``: its recipients (with their workers) in the workers' order."""
    message.copies = sorted(recipients, key=lambda r: r.worker.external_id)
    return message


def notices(worker: Worker, limit: int = 50) -> list[MessageRecipient]:
    """The worker's messages sent on the platform's own pages: unread first, then the newest."""
    return list(
        MessageRecipient.objects.filter(worker=worker, message__market="local", status=Status.SENT)
        .select_related("message")
        .annotate(was_read=Case(When(read_at__isnull=True, then=Value(0)), default=Value(1)))
        .order_by("was_read", "-message__created_at", "-pk")[:limit]
    )


def mark_read(worker: Worker, recipient_pk) -> bool:
    """Mark one of the worker's own messages read (another worker's is not theirs to touch): whether it was."""
    return bool(
        MessageRecipient.objects.filter(pk=recipient_pk, worker=worker, read_at__isnull=True).update(read_at=timezone.now())
    )
