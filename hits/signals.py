"""Signals other parts of the platform listen to (e.g. the MTurk backend mirrors qualifications)."""

from django.dispatch import Signal

# Sent after a worker's qualification changes (in the same transaction, use on_commit for side effects).
# Arguments: worker, task_type, state (Qualification.State value), reason (str), batch (the campaign).
qualification_changed = Signal()
# Sent after a worker is blocked or unblocked: worker, blocked (bool), reason (str).
worker_blocked = Signal()
# Sent after a researcher blocks a worker from one batch or lifts the block: worker, batch, blocked (bool), reason.
batch_block_changed = Signal()
