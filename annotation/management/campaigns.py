"""What every campaign command shares."""

from django.core.management.base import CommandError

from annotation.models import Campaign


def campaign_from_slug(slug: str) -> Campaign:
    """The campaign with this slug, or a one-line command error."""
    try:
        return Campaign.objects.get(slug=slug)
    except Campaign.DoesNotExist:
        raise CommandError(f"no campaign with slug '{slug}'") from None


def launched_hits(campaign: Campaign, created: int) -> int:
    """The HITs a launch put up: those ``launch_campaign`` created (``created``) and those the routing pass of a
    budgeted campaign posted after the commit (on the embedded default it runs then, in-process)."""
    from hits.models import HIT

    batch_id = Campaign.objects.filter(pk=campaign.pk).values_list("batch_id", flat=True).first()
    posted = HIT.objects.filter(batch_id=batch_id, kind=HIT.Kind.REGULAR).count() if batch_id else 0
    return max(created, posted)


def launch_line(campaign: Campaign, created: int) -> str:
    """``Launched 'SLUG': N HITs``, with the routing pass's HITs counted (see ``launched_hits``)."""
    from celery import current_app

    line = f"Launched '{campaign.slug}': {launched_hits(campaign, created)} HITs"
    if campaign.is_hybrid and not current_app.conf.task_always_eager:
        line += " (and the presence HITs the routing pass posts when a Celery worker runs it)"
    return line


def after_launch(campaign: Campaign, launched: bool, again: str) -> str:
    """The end of the error of a command that failed after it launched ``campaign`` (the launch is committed: the
    campaign is running), naming the command that finishes the job (``again``, without ``manage.py``)."""
    if not launched:
        return ""
    return (f". '{campaign.slug}' was launched before this failed and is running now: `manage.py {again}` finishes "
            f"the job (or pause it on its Control page)")
