"""The download of an export's archive, shared by the page and the API (``/campaigns/jobs/ID/download/``,
``/api/jobs/ID/download/``): from the exports storage, whichever node wrote it."""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse, HttpResponseRedirect

from annotation.models import Job
from annotation.services import filestore
from annotation.services.jobs import export_gone_reason


class ExportGone(Exception):
    """The export's archive is no longer in the store (expired or removed): 410 Gone, with the reason."""


def export_download(job: Job, name: str):
    """The archive ``name`` of the done export ``job``.

    A store with signed links (a bucket, ``STORAGE_SIGNED_URL_SECONDS`` > 0): a redirect to a link valid that
    long, and the browser fetches the archive from the store.  Otherwise the archive is streamed from the store
    in blocks (``FileResponse``): never read whole into the web process's memory.
    """
    filename = name.rsplit("/", 1)[-1]
    seconds = settings.STORAGE_SIGNED_URL_SECONDS
    if not filestore.is_local(filestore.EXPORTS) and seconds > 0:
        if not filestore.exists(filestore.EXPORTS, name):
            raise ExportGone(export_gone_reason(job))
        response = HttpResponseRedirect(filestore.signed_url(filestore.EXPORTS, name, seconds, filename))
        response["Cache-Control"] = "no-store"
        return response
    try:
        stream = filestore.open_stream(filestore.EXPORTS, name)
    except FileNotFoundError:
        raise ExportGone(export_gone_reason(job)) from None
    response = FileResponse(stream, as_attachment=True, filename=filename, content_type="application/zip")
    response["Cache-Control"] = "no-store"
    return response
