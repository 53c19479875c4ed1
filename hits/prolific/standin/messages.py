"""The Prolific stand-in's messages: "Send a message" (``POST /messages/``: ``recipient_id``, ``body``,
``study_id``) and "Send a message to multiple participants" (``POST /messages/bulk/``: ``ids``, ``body``,
``study_id``), as Prolific's API reference documents them; every message is kept in ``state['messages']`` for tests
(``GET /__control/messages/``, and the control ``state/``).

What it checks: the three fields are required (a list of ids for the bulk call); the study must exist (404);
every recipient must have a submission in the study, in any status (Prolific states this of broadcasts, which
reach "as many people as a bulk message"); at most ``BULK_LIMIT`` recipients a call (4,000 by default, as
Prolific states).  A refused bulk call sends nothing (all or nothing).  It answers 204 with no body (the reference
describes no body).  What it does not model: conversations and replies, reading messages, the sanitising of the
text, Prolific's exact error wording.
"""

from __future__ import annotations

from hits.prolific.standin.common import Refused, iso, new_id

BULK_LIMIT = 4000


def _text(body: dict, name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value.strip():
        raise Refused(400, {name: ["This field is required."]})
    return value


class Messages:
    """Mixed into ``ProlificStandIn``: messages to participants (``state['messages']``), under its lock."""

    def _recipients(self, study: dict, ids: list[str]) -> None:
        taking_part = {s["participant_id"] for s in self._submissions_of(study)}
        strangers = [i for i in ids if i not in taking_part]
        if strangers:
            raise Refused(400, {"ids": [f"Every recipient must have a submission for the study {study['id']}; "
                                        f"these have none: {strangers[:20]!r}"]})

    def _keep(self, ids: list[str], text: str, study_id: str, now: float, bulk: bool) -> None:
        self.state.setdefault("messages", []).extend(
            {"id": new_id(), "recipient_id": i, "body": text, "study_id": study_id, "sent_at": iso(now), "bulk": bulk}
            for i in ids
        )

    def send_message(self, body, now: float) -> None:
        if not isinstance(body, dict):
            raise Refused(400, "The request body must be a JSON object")
        recipient, text, study_id = _text(body, "recipient_id"), _text(body, "body"), _text(body, "study_id")
        study = self._study(study_id)
        self._recipients(study, [recipient])
        self._keep([recipient], text, study_id, now, bulk=False)

    def bulk_message(self, body, now: float) -> None:
        if not isinstance(body, dict):
            raise Refused(400, "The request body must be a JSON object")
        ids = body.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
            raise Refused(400, {"ids": ["A list of participant ids is required."]})
        if len(ids) > BULK_LIMIT:
            raise Refused(400, {"ids": [f"At most {BULK_LIMIT} recipients a message, not {len(ids)}."]})
        text, study_id = _text(body, "body"), _text(body, "study_id")
        study = self._study(study_id)
        self._recipients(study, ids)
        self._keep(list(dict.fromkeys(ids)), text, study_id, now, bulk=True)

    def messages(self) -> list[dict]:
        with self.lock:
            return [dict(m) for m in self.state.get("messages", [])]
