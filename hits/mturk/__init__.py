"""Amazon Mechanical Turk backend: publish HITs, sync assignments, qualify and pay workers through boto3.

Protocol-agnostic like the rest of ``hits``: a batch whose ``backend`` is
``mturk-sandbox`` or ``mturk-live`` has its HITs published as MTurk HITs
with an ExternalQuestion pointing at the platform's own HIT page
(``hits.mturk.views``), so MTurk workers see the same pages and their
answers go through the same validation and services as local workers.

- ``client``: the boto3 client (sandbox or live endpoint) and retries.
- ``publishing``: CreateHIT requests, idempotent publishing, budget and balance.
- ``sync``: ListAssignmentsForHIT reconciliation, approve/reject, bonuses, expiry.
- ``qualifications``: one MTurk qualification type per task type; grant, revoke, block.
- ``fees``: MTurk's commission and the money a batch has committed.
- ``standin``: a local stand-in for MTurk (``manage.py mturk_standin``, ``MTURK_ENDPOINT_URL``) to rehearse campaigns,
  a package with one module per concern.
- ``market``: MTurk behind the seam (``hits.markets``), the only way the rest of ``hits`` reaches this package.
"""
