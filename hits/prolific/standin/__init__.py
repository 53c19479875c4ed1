"""A local stand-in for Prolific: the subset of its API the platform uses, and the participant's side of it.

Run ``python manage.py prolific_standin --port 8766 [--token T] [--balance 1000.00]`` and set
``PROLIFIC_API_URL`` / ``PROLIFIC_API_TOKEN`` (and ``PROLIFIC_COMPLETION_URL`` to its
``/submissions/complete``) as it prints them: the platform's client (``hits.prolific.client``) then talks to
it instead of Prolific.  Tests use ``running_standin(token=...)`` (a free port on 127.0.0.1, served in a
thread, shut down cleanly) and its ``.url``, ``.control(method, path, json)`` and ``.state()``.

The API (``/api/v1/``, ``Authorization: Token <token>``; no token or a wrong one: 401), written from
Prolific's published reference (docs.prolific.com/api-reference):

- studies: create (UNPUBLISHED), list, retrieve, PATCH (``total_available_places`` may only grow), and
  ``transition``: UNPUBLISHED -PUBLISH-> ACTIVE, refused while the workspace's available balance cannot
  cover reward + fee of every place; ACTIVE -PAUSE-> PAUSED -START-> ACTIVE; ACTIVE|PAUSED -STOP->
  AWAITING REVIEW while submissions wait for review, then COMPLETED.  A study whose places are all taken,
  none still being worked on, is AWAITING REVIEW (COMPLETED once all are reviewed) as on Prolific.  A
  transition to the state a study is in, or one its state does not allow, is a 400.
- submissions (a participant's attempt; its id is the study URL's SESSION_ID): ACTIVE, RETURNED,
  TIMED-OUT, AWAITING REVIEW, APPROVED, REJECTED.  Late moves (researcher help): a TIMED-OUT participant "can
  still complete" while "not replaced by another participant"; one AWAITING REVIEW may still return.
  ``transition`` APPROVE (reward + fee charged) or REJECT (``message`` of at least 100 characters and a
  ``rejection_category`` from Prolific's list) only from AWAITING REVIEW; the same action again on a submission already there is ignored (Prolific: "this endpoint
  is idempotent").  ``bulk-approve`` by participant or submission ids, all or nothing.  RETURNED,
  TIMED-OUT and REJECTED free the place.  Shapes as the reference documents them: the study's list shows each
  submission short (``SubmissionShort``: no ``bonus_payments``), ``GET /submissions/{id}/`` in full
  (``participant``, ``study_id``, ``entered_code``, ``bonus_payments``): ``routes``.
- bonuses in two steps: ``submissions/bonus-payments/`` creates (``csv_bonuses`` lines
  ``<participant or submission id>,<amount in dollars>``; every id must have a submission in the study)
  and pays nothing; ``bulk-bonus-payments/{id}/pay/`` answers 202 and pays asynchronously: the money
  leaves the balance and lands in the submissions' ``bonus_payments`` once the stand-in's clock has passed
  ``settle_seconds`` since the call.  NOT idempotent, as Prolific warns: a second pay call pays again.
- participant groups (create, list, retrieve; participants listed, added repeat-safely, removed) and the
  ``participant_group_allowlist`` / ``participant_group_blocklist`` study filters, enforced when a
  participant starts.
- ``users/me/``, ``workspaces/`` (one), ``workspaces/{id}/``, ``projects/{id}/`` and ``workspaces/{id}/balance/`` (cents: ``total_balance``, ``available_balance`` = the
  total less what active studies hold and bonuses being paid, with breakdowns), and
  ``study-cost-calculator/``.  Money (``money``): in the workspace's ``currency`` (USD or GBP, stated
  as ``currency_code`` on the workspace, the study and the balance); Prolific's fee, ``fee_rate`` (33.33% by
  default, Prolific's published platform fee) of every reward and bonus, plus VAT at ``vat_rate`` of the fee
  (by default 20% in a GBP workspace, none in a USD one), each rounded half up to the minor unit.
- messages: ``messages/`` (one participant) and ``messages/bulk/`` (``ids``), each about a study the recipients
  took part in, answered 204 and kept for tests (``GET /__control/messages/``): ``messages``.
- listings are paginated (``page_size`` items, 5 by default, or ``?page_size=``; ``_links.next.href``;
  ``meta.count``).
- errors are shaped like Prolific's: ``{"error": {"status", "title", "detail", "additional_information"}}``.

The participant's side (no token; what a browser does on Prolific): ``GET /studies/{id}/start?participant_id=P``
("take part": an ACTIVE submission, a cookie naming the participant, 302 to the study's URL with
PROLIFIC_PID, STUDY_ID and SESSION_ID filled in) and ``GET /submissions/complete?cc=CODE`` (the
participant's ACTIVE submission in the study with that completion code goes to AWAITING REVIEW, or
APPROVED for a code whose action is AUTOMATICALLY_APPROVE; a wrong code changes nothing and says so).

The control API (no token), under ``/__control/``: ``participants/`` (a participant starts a study),
``submissions/{id}/complete/`` (``{"code"}``), ``.../return/``, ``.../timeout/``, ``clock/``
(``{"advance_seconds"}``: ACTIVE submissions past ``maximum_allowed_time`` time out, due bonus payments
settle), ``faults/`` (POST ``{"method", "path" (a regex searched in the request path), "kind": "lost_reply"
| "error" | "throttle", "status", "times", "retry_after"}``, GET, DELETE), ``balance/`` (``{"balance"}``
in dollars: sets the total), ``state/`` (everything, with the money paid per participant) and ``reset/``.
Faults hit the API only: ``lost_reply`` does the request and drops the connection without an answer,
``error`` answers ``status`` (503) without doing it, ``throttle`` answers 429 with ``Retry-After``.

What it does not model: Prolific's own rate limits (only injected), reserved places, screen-out and
partial-approval codes, conversations and replies to messages, study collections, custom screeners other than the two group filters,
multiple workspaces, currencies other than USD and GBP, and the exact wording and numeric ``error_code`` of
Prolific's errors.  Pay per hour and the least maximum time, as Prolific computes them: ``rates``.

The package, one module per concern (none over 500 lines): ``state`` (``ProlificStandIn``: settings, state,
clock, dispatch, paging, ``state/``), ``studies``, ``submissions``, ``money`` (currency, fee, VAT, balance,
cost calculator, bonuses), ``rates``, ``workspace`` (researcher, workspace, project, participant groups),
``messages``, ``faults``, ``routes`` (the wire: route table, request handler, participant pages, control API),
``common`` (statuses, ids, ``Refused``) and ``control`` (``running_standin`` for tests).  What both
stand-ins share (clock, server, dropped connection) is ``hits.markets.standin``.  Standard library only:
it imports nothing from Django or the platform.
"""

from hits.prolific.standin.common import (  # noqa: F401 - the stand-in's names, importable from the package
    ACTIVE, API, APPROVED, AWAITING_REVIEW, COMPLETED, CONTROL, HEX_ID, PAUSED, REJECTED, RETURNED, TIMED_OUT,
    UNPUBLISHED, Refused, cents, iso, new_id, whole,
)
from hits.prolific.standin.control import RunningStandIn, running_standin  # noqa: F401
from hits.prolific.standin.money import DEFAULT_VAT  # noqa: F401
from hits.prolific.standin.state import (  # noqa: F401
    DEFAULT_BALANCE, DEFAULT_FEE_RATE, DEFAULT_PAGE_SIZE, DEFAULT_SETTLE_SECONDS, DEFAULT_TOKEN, ProlificStandIn,
)
