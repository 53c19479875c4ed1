"""The Prolific backend (issue 31): studies, participant sessions, bonuses and participant groups.

Behind the same seam as ``hits.mturk`` (``hits.markets``; ``market`` is this package's adapter): publish, sync,
pay, qualify, block, reconcile, preview.  A Prolific campaign's batch has ``backend = "prolific"``; its
participants work on the platform's own HIT pages."""

# Where a study's participants arrive (``external_study_url`` = PUBLIC_BASE_URL + this + Prolific's three
# parameters); the view is ``hits.prolific.views.start`` (URL name ``prolific:start``).
STUDY_START_PATH = "/prolific/start/"
STUDY_URL_PARAMETERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
