"""Messages to Prolific participants over HTTP against the stand-in (issue 40): one bulk call per study, a
participant Prolific will not message fails alone, a lost answer is "unknown" (never re-sent blind), and a worker
who did not come from Prolific is failed without a call."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hits import messaging
from hits.models import MessageRecipient, Worker
from tests.prolific.pd_world import do_hits, forged, make_batch, publish_study, start

pytestmark = pytest.mark.django_db


def _world(standin):
    batch = make_batch()
    study = publish_study(standin, batch, places=5)
    sessions = [start(standin, study) for _ in range(2)]
    for session in sessions:
        do_hits(session, 1)
    return batch, study, sessions


def _statuses(message) -> dict:
    return dict(MessageRecipient.objects.filter(message=message).values_list("worker__external_id", "status"))


def test_participants_get_one_bulk_message_about_their_study(prolific_standin, researcher):
    batch, study, sessions = _world(prolific_standin)
    workers = messaging.batch_workers(batch)
    message = messaging.send_message(batch, researcher, "New work", "More HITs are up.", workers)
    assert set(_statuses(message).values()) == {"sent"} and len(workers) == 2
    sent = prolific_standin.control("GET", "/__control/messages/")["messages"]
    assert sorted(m["recipient_id"] for m in sent) == sorted(s.participant_id for s in sessions)
    assert {(m["body"], m["study_id"], m["bulk"]) for m in sent} == {("New work\n\nMore HITs are up.", study.prolific_id, True)}


def test_a_participant_prolific_refuses_fails_alone(prolific_standin, researcher):
    batch, study, sessions = _world(prolific_standin)
    stranger = forged(study)  # a session here, none on Prolific: Prolific will not message them about the study
    do_hits(stranger, 1)
    local = Worker.objects.create(external_id="local-ann")
    do_hits(SimpleNamespace(study=study, worker=local), 1)  # a worker of the batch who never came from Prolific
    message = messaging.send_message(batch, researcher, "Thanks", "Thank you.", messaging.batch_workers(batch))
    statuses = _statuses(message)
    assert statuses.pop(stranger.worker.external_id) == "failed"
    assert statuses.pop("local-ann") == "failed"
    assert set(statuses.values()) == {"sent"} and len(statuses) == 2
    refused = MessageRecipient.objects.get(message=message, worker=stranger.worker)
    assert refused.code == "400" and "Prolific refused" in refused.detail and "submission" in refused.detail
    assert MessageRecipient.objects.get(message=message, worker=local).code == "no-prolific-id"
    sent = prolific_standin.control("GET", "/__control/messages/")["messages"]
    assert sorted(m["recipient_id"] for m in sent) == sorted(s.participant_id for s in sessions)
    assert not any(m["bulk"] for m in sent)  # the refused bulk call sent nothing; each was then written to alone


def test_a_lost_answer_is_unknown_and_a_resend_goes_out(prolific_standin, researcher):
    batch, study, sessions = _world(prolific_standin)
    prolific_standin.control("POST", "/__control/faults/", {"method": "POST", "path": "messages/bulk", "kind": "lost_reply", "times": 1})
    message = messaging.send_message(batch, researcher, "Hello", "Hi.", messaging.batch_workers(batch))
    assert set(_statuses(message).values()) == {"unknown"}
    assert len(prolific_standin.control("GET", "/__control/messages/")["messages"]) == 2  # it did go out
    messaging.resend(message)  # the researcher asks: sent again
    assert set(_statuses(message).values()) == {"sent"}
    assert len(prolific_standin.control("GET", "/__control/messages/")["messages"]) == 4


def test_the_standin_checks_what_the_reference_requires(prolific_standin):
    from hits.prolific.client import Prolific, ProlificError

    batch, study, sessions = _world(prolific_standin)
    with Prolific() as client:
        for payload, named in [({"body": "b", "study_id": study.prolific_id}, "ids"),
                               ({"ids": [sessions[0].participant_id], "study_id": study.prolific_id}, "body"),
                               ({"ids": [sessions[0].participant_id], "body": "b"}, "study_id")]:
            with pytest.raises(ProlificError) as caught:
                client.request("POST", "/messages/bulk/", json=payload)
            assert caught.value.status == 400 and named in str(caught.value.detail)
        with pytest.raises(ProlificError) as caught:
            client.request("POST", "/messages/", json={"recipient_id": sessions[0].participant_id, "body": "b",
                                                       "study_id": "0" * 24})
        assert caught.value.status == 404
        assert client.request("POST", "/messages/", json={"recipient_id": sessions[0].participant_id, "body": "b",
                                                          "study_id": study.prolific_id}) is None
