"""Messages to a local campaign's workers (issue 40): sent from the workers page (ticked or all) and the API,
logged with sender and time, shown on the worker's /work/ page (unread first, marked read), e-mailed when e-mail
is configured, and refused whole (nothing recorded) when the text or the workers are wrong."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.services.pipeline import launch_campaign
from hits.models import HIT, Assignment, MessageRecipient, Worker, WorkerMessage
from hits.services import worker_for_user

pytestmark = pytest.mark.django_db


WORKER_PASSWORD = "pw-for-tests-123"


def workers_who_worked(campaign, *names, django_user_model=None, emails=None):
    """Launch the campaign; workers (with accounts, password ``WORKER_PASSWORD``) who did a HIT of it:
    {name: (logged-in client, worker)}."""
    launch_campaign(campaign)
    campaign.refresh_from_db()
    hit = HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR).first()
    found = {}
    for name in names:
        user = django_user_model.objects.create_user(username=name, password=WORKER_PASSWORD,
                                                     email=(emails or {}).get(name, ""))
        worker = worker_for_user(user)
        now = timezone.now()
        Assignment.objects.create(hit=hit, worker=worker, state=Assignment.State.SUBMITTED, accepted_at=now,
                                  expires_at=now + timedelta(minutes=30), submitted_at=now, work_seconds=60, answers={})
        client = Client()
        client.force_login(user)
        found[name] = (client, worker)
    return found


def _send(client, campaign, **fields):
    data = {"subject": "Thanks", "body": "Thank you for your work.", "key": "", **fields}
    return client.post(reverse("campaign-messages", args=[campaign.slug]), data)


def test_message_ticked_workers_shows_on_their_work_page_and_in_the_log(client_rita, draft, rita, django_user_model):
    crowd = workers_who_worked(draft, "ann", "bob", "cid", django_user_model=django_user_model)
    workers_page = client_rita.get(reverse("campaign-workers", args=[draft.slug])).content.decode()
    assert 'name="workers" value="ann" form="message-form"' in workers_page and 'id="message-form"' in workers_page

    response = _send(client_rita, draft, workers=["ann", "bob"], to="ticked", subject="New HITs", body="More work\nis up.")
    assert response.status_code == 302
    [message] = WorkerMessage.objects.all()
    assert (message.sender, message.sender_name, message.market, message.subject) == (rita, "rita", "local", "New HITs")
    assert message.sent_at is not None
    assert sorted(message.recipients.values_list("worker__external_id", "status")) == [("ann", "sent"), ("bob", "sent")]

    log = client_rita.get(reverse("campaign-messages", args=[draft.slug])).content.decode()
    assert "New HITs" in log and '<span class="sender">rita</span>' in log and 'data-worker="ann"' in log
    assert 'data-worker="cid"' not in log

    ann_page = crowd["ann"][0].get("/work/").content.decode()
    assert 'id="worker-messages"' in ann_page and "New HITs" in ann_page and "More work<br>is up." in ann_page
    assert "New HITs" not in crowd["cid"][0].get("/work/").content.decode()


def test_all_workers_unread_first_and_marked_read(client_rita, draft, django_user_model):
    crowd = workers_who_worked(draft, "ann", "bob", django_user_model=django_user_model)
    _send(client_rita, draft, to="all", subject="First", body="one")
    _send(client_rita, draft, to="all", subject="Second", body="two")
    assert MessageRecipient.objects.filter(worker__external_id__in=["ann", "bob"]).count() == 4
    client, ann = crowd["ann"]
    first = MessageRecipient.objects.get(worker=ann, message__subject="First")
    second = MessageRecipient.objects.get(worker=ann, message__subject="Second")
    page = client.get("/work/").content.decode()
    assert page.index("Second") < page.index("First")  # newest first among the unread

    assert client.post(reverse("worker-message-read", args=[second.pk])).status_code == 302
    page = client.get("/work/").content.decode()
    assert page.index("First") < page.index("Second")  # the unread one now comes first
    assert page.count("Mark as read") == 1
    second.refresh_from_db()
    assert second.read_at is not None

    # Bob cannot mark Ann's copy read.
    crowd["bob"][0].post(reverse("worker-message-read", args=[first.pk]))
    first.refresh_from_db()
    assert first.read_at is None
    # The researcher sees who read it.
    log = client_rita.get(reverse("campaign-messages", args=[draft.slug])).content.decode()
    assert log.count("· read ") == 1


def test_email_sent_with_a_configured_backend_and_page_notice_without_an_address(client_rita, draft, django_user_model, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    workers_who_worked(draft, "ann", "bob", django_user_model=django_user_model, emails={"ann": "ann@example.org"})
    _send(client_rita, draft, to="all", subject="Pay day", body="Bonuses are out.")
    assert [(m.subject, m.body, m.to) for m in mail.outbox] == [("Pay day", "Bonuses are out.", ["ann@example.org"])]
    ann = MessageRecipient.objects.get(worker__external_id="ann")
    bob = MessageRecipient.objects.get(worker__external_id="bob")
    assert ann.emailed and ann.detail == "page notice and e-mail"
    assert not bob.emailed and bob.status == "sent" and "no e-mail address" in bob.detail


def test_no_email_with_django_default_backend(client_rita, draft, django_user_model, settings):
    settings.EMAIL_BACKEND, settings.EMAIL_HOST = "django.core.mail.backends.smtp.EmailBackend", "localhost"
    workers_who_worked(draft, "ann", django_user_model=django_user_model, emails={"ann": "ann@example.org"})
    _send(client_rita, draft, to="all")
    ann = MessageRecipient.objects.get(worker__external_id="ann")
    assert ann.status == "sent" and not ann.emailed and "e-mail is not configured" in ann.detail


@pytest.mark.parametrize("fields, error", [
    ({"subject": "", "to": "all"}, "the subject is empty"),
    ({"body": "  ", "to": "all"}, "the message is empty"),
    ({"subject": "x" * 201, "to": "all"}, "the subject has 201 characters"),
    ({"body": "x" * 4097, "to": "all"}, "the message has 4097 characters"),
    ({"body": "bell\x07", "to": "all"}, "control characters"),
    ({"to": "ticked"}, "tick at least one"),
    ({"to": "ticked", "workers": ["ann", "zed"]}, "not workers of this campaign: zed"),
])
def test_refused_messages_record_nothing_and_keep_the_text(client_rita, draft, django_user_model, fields, error):
    workers_who_worked(draft, "ann", django_user_model=django_user_model)
    Worker.objects.create(external_id="zed")  # exists, but never worked on this campaign
    response = _send(client_rita, draft, **fields)
    page = response.content.decode()
    assert response.status_code == 400 and "Nothing was sent" in page and error in page
    assert not WorkerMessage.objects.exists()
    if fields.get("subject", "Thanks") == "Thanks":
        assert 'value="Thanks"' in page  # what was written comes back


def test_the_same_key_twice_sends_once(client_rita, draft, django_user_model):
    workers_who_worked(draft, "ann", django_user_model=django_user_model)
    for _ in range(2):
        assert _send(client_rita, draft, to="all", key="form-1").status_code == 302
    assert WorkerMessage.objects.count() == 1 and MessageRecipient.objects.count() == 1


def test_another_researcher_cannot_message_or_read_the_log(draft, django_user_model, other_researcher):
    workers_who_worked(draft, "ann", django_user_model=django_user_model)
    client = Client()
    client.force_login(other_researcher)
    assert _send(client, draft, to="all").status_code == 404
    assert client.get(reverse("campaign-messages", args=[draft.slug])).status_code == 404
    assert not WorkerMessage.objects.exists()


def test_api_sends_lists_and_repeats_safely(client_rita, draft, django_user_model):
    workers_who_worked(draft, "ann", "bob", django_user_model=django_user_model)
    url = f"/api/campaigns/{draft.slug}/messages/"
    sent = client_rita.post(url, {"subject": "API", "body": "From a script.", "workers": ["bob"], "key": "k-1"},
                            content_type="application/json")
    assert sent.status_code == 201, sent.content
    body = sent.json()
    assert body["sender"] == "rita" and [(r["worker"], r["status"]) for r in body["recipients"]] == [("bob", "sent")]
    again = client_rita.post(url, {"subject": "API", "body": "From a script.", "workers": ["bob"], "key": "k-1"},
                             content_type="application/json")
    assert again.status_code == 200 and again.json()["id"] == body["id"] and WorkerMessage.objects.count() == 1
    both = client_rita.post(url, {"subject": "S", "body": "B", "all": True}, content_type="application/json")
    assert both.status_code == 201 and len(both.json()["recipients"]) == 2
    bad = client_rita.post(url, {"subject": "S", "body": "B", "workers": ["nobody"]}, content_type="application/json")
    assert bad.status_code == 400 and "not workers of this campaign: nobody" in bad.json()["detail"]
    neither = client_rita.post(url, {"subject": "S", "body": "B"}, content_type="application/json")
    assert neither.status_code == 400
    listed = client_rita.get(url).json()
    assert [m["subject"] for m in listed["results"]] == ["S", "API"]


def test_log_page_runs_in_a_bounded_number_of_queries(client_rita, draft, django_user_model, django_assert_max_num_queries):
    workers_who_worked(draft, "ann", "bob", "cid", django_user_model=django_user_model)
    for i in range(5):
        _send(client_rita, draft, to="all", subject=f"Message {i}")
    with django_assert_max_num_queries(20):
        page = client_rita.get(reverse("campaign-messages", args=[draft.slug]))
    assert page.content.decode().count('class="message-log"') == 5


def test_a_message_to_many_workers_goes_out_in_the_background(client_rita, draft, django_user_model, monkeypatch, eager_celery,
                                                              django_capture_on_commit_callbacks):
    """More workers than ``DELIVER_IN_REQUEST``: the request records the copies and says they are being sent; the
    background job sends them after the commit (here in-process); a repeated job sends nothing twice."""
    from hits import messaging
    from hits.tasks import deliver_message_task

    monkeypatch.setattr(messaging, "DELIVER_IN_REQUEST", 2)
    crowd = workers_who_worked(draft, "ann", "bob", "cid", django_user_model=django_user_model)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = _send(client_rita, draft, to="all", subject="Big news", body="For everyone.")
    [message] = WorkerMessage.objects.all()
    assert set(message.recipients.values_list("status", flat=True)) == {"pending"}  # nothing sent in the request
    page = client_rita.get(response["Location"]).content.decode()
    assert "3 copies are being sent in the background" in page
    assert "Big news" not in crowd["ann"][0].get("/work/").content.decode()

    for callback in queued:
        callback()  # the commit: the job runs
    assert sorted(message.recipients.values_list("worker__external_id", "status")) == [("ann", "sent"), ("bob", "sent"), ("cid", "sent")]
    assert "Big news" in crowd["ann"][0].get("/work/").content.decode()
    assert deliver_message_task(message.pk) == 0  # run again (a redelivered task): nothing left to send
    assert MessageRecipient.objects.filter(message=message, status="sent").count() == 3


def test_a_message_to_few_workers_is_sent_in_the_request(client_rita, draft, django_user_model, monkeypatch):
    from hits import messaging

    monkeypatch.setattr(messaging, "DELIVER_IN_REQUEST", 2)
    workers_who_worked(draft, "ann", "bob", "cid", django_user_model=django_user_model)
    response = _send(client_rita, draft, workers=["ann", "bob"], to="ticked", subject="Two only", body="Hi.")
    page = client_rita.get(response["Location"]).content.decode()
    assert "sent to 2 worker(s)" in page
    assert set(MessageRecipient.objects.values_list("status", flat=True)) == {"sent"}
