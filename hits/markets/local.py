"""The market of the platform's own pages: local workers take HITs on the site and are paid outside it."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import send_mail

from hits.markets.base import Delivery, Market, NotOnAMarket

log = logging.getLogger(__name__)

# Django's own default: mail to an SMTP server on this machine, which a platform has only when someone set it up.
DEFAULT_EMAIL = ("django.core.mail.backends.smtp.EmailBackend", "localhost")


def email_configured() -> bool:
    """Whether messages also go out by e-mail: ``EMAIL_BACKEND`` or ``EMAIL_HOST`` set beyond Django's default
    (an SMTP server on localhost, which nobody has unless they set one up)."""
    return (settings.EMAIL_BACKEND, settings.EMAIL_HOST) != DEFAULT_EMAIL


class LocalMarket(Market):
    name = "local"
    label = "Local workers"
    backends = ("local",)

    def publish(self, batch):
        """Nothing to publish: the batch's open HITs are on the platform's pages already."""
        return None

    def sync(self, batch):
        """Nothing to read: the platform's own records are the only ones."""
        return None

    def send_message(self, batch, subject: str, body: str, workers: list) -> dict:
        """The message is on the worker's page (``/work/``) as soon as it is recorded; it is also e-mailed to a
        worker whose account has an address when e-mail is configured (``email_configured``).  A failed e-mail
        is said in the detail; the page notice stands."""
        mail = email_configured()
        done = {}
        for worker in workers:
            address = (worker.user.email if worker.user_id else "") or ""
            if not mail or not address:
                done[worker.pk] = Delivery("sent", "page notice" + ("" if mail else "; e-mail is not configured")
                                           + ("" if address or not mail else "; no e-mail address"))
                continue
            try:
                send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [address])
            except Exception as exc:  # the SMTP server's refusal or absence: the page notice still stands
                log.warning("e-mail of a message to %s failed: %s", worker, exc)
                done[worker.pk] = Delivery("sent", f"page notice; e-mail failed: {exc}"[:500])
            else:
                done[worker.pk] = Delivery("sent", "page notice and e-mail", emailed=True)
        return done

    def reconcile(self, batch, save: bool = True):
        raise NotOnAMarket(
            f"batch '{batch}' runs on the platform's own pages: there are no market records to reconcile with "
            "(its ledger entries are owed until marked paid)"
        )

    def preview(self, batch) -> list[dict]:
        """No requests: nothing is sent anywhere."""
        return []


market = LocalMarket()
