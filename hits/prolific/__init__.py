"""The Prolific backend (issue 31): studies, participant sessions, bonuses and participant groups.

The same seams as ``hits.mturk``: publish, sync, pay, qualify, block, reconcile.  A Prolific campaign's
batch has ``backend = "prolific"``; its participants work on the platform's own HIT pages."""
