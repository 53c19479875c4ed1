"""What stops a rehearsal on a market's stand-in, in the market's own words (``manage.py simulate_crowd``).

A rehearsal whose market refuses its credentials, or whose work is stuck for a reason the platform can name (a
balance or budget cap that stops publishing, HITs or studies the market refused, calls failing), must end with
that reason and a non-zero exit, not "stuck" and success.  ``check_credentials`` makes one harmless read on the
market before anything is launched; ``why_stuck`` runs the market's sync once more (safe to run any number of
times) and gathers what it and the records say.
"""

from __future__ import annotations

from annotation.models import Campaign

SHOWN = 5


class RehearsalFailed(Exception):
    """The rehearsal cannot go on: the market refused its credentials (the message is the market's error)."""


def check_credentials(campaign: Campaign) -> None:
    """One read the market answers only to valid credentials (MTurk: GetAccountBalance; Prolific: GET
    ``users/me/``); raises ``RehearsalFailed`` with the market's error when it refuses (or does not answer)."""
    if campaign.backend == Campaign.Backend.PROLIFIC:
        from hits.prolific.client import Prolific, ProlificError

        try:
            with Prolific() as prolific:
                prolific.get("/api/v1/users/me/")
        except ProlificError as exc:
            raise RehearsalFailed(f"Prolific refused the rehearsal's credentials (PROLIFIC_API_TOKEN): {exc}") from None
    elif campaign.backend in (Campaign.Backend.MTURK_SANDBOX, Campaign.Backend.MTURK_LIVE):
        from hits.mturk.client import MTurk, MTurkError

        try:
            MTurk(sandbox=campaign.backend != Campaign.Backend.MTURK_LIVE).call("GetAccountBalance")
        except MTurkError as exc:
            raise RehearsalFailed(
                f"MTurk refused the rehearsal's credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY): {exc}"
            ) from None


def why_stuck(campaign: Campaign) -> list[str]:
    """Why the campaign's work on its market does not move, as far as the platform can name it (empty: no reason
    known, e.g. too few simulated workers for the protocol's rules)."""
    batch = campaign.batch if campaign.batch_id else None
    if batch is None:
        return []
    if batch.on_mturk:
        reasons = _mturk(batch)
    elif batch.on_prolific:
        reasons = _prolific(batch)
    else:
        return []
    return list(dict.fromkeys(reasons))[:SHOWN]  # each once, in order


def _mturk(batch) -> list[str]:
    from hits.mturk.publishing import refused_hits
    from hits.mturk.sync import sync_batch

    report = sync_batch(batch)
    reasons = [f"open HITs wait unpublished: {report.not_publishing}"] if report.not_publishing else []
    reasons += [f"MTurk refused HIT {hit.pk}: {hit.publish_error}"[:300] for hit in refused_hits(batch)[:SHOWN]]
    return reasons + list(report.errors)


def _prolific(batch) -> list[str]:
    from hits.prolific.models import ProlificStudy
    from hits.prolific.sync import sync_batch

    reasons = [
        f"study {study.internal_name} is not published on Prolific: {study.last_error}"[:300]
        for study in ProlificStudy.objects.filter(batch=batch, prolific_id__isnull=True).exclude(last_error="")
    ]
    return reasons + list(sync_batch(batch).errors)
