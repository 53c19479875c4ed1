"""Signals other parts of the platform listen to (e.g. the MTurk backend mirrors qualifications)."""

from django.dispatch import Signal

# Sent after a worker's qualification changes (in the same transaction, use on_commit for side effects).
# Arguments: worker, task_type, state (Qualification.State value), reason (str).
qualification_changed = Signal()
# Sent after a worker is blocked or unblocked: worker, blocked (bool), reason (str).
worker_blocked = Signal()
