"""``manage.py prolific_standin``: run the local Prolific stand-in in the foreground (Ctrl-C stops it)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from hits.markets.registry import market_named
from hits.markets.standin import add_listen_arguments, serve_until_interrupted


class Command(BaseCommand):
    help = (
        "Run a local stand-in for Prolific's API (and its participant pages) to rehearse a campaign without "
        "spending money; point the platform at it with PROLIFIC_API_URL and PROLIFIC_API_TOKEN.  "
        "See hits/prolific/standin/."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser):
        standin = market_named("prolific").standin_module()

        add_listen_arguments(parser)
        parser.add_argument("--token", default=standin.DEFAULT_TOKEN,
                            help=f"The API token it accepts (default {standin.DEFAULT_TOKEN!r}).")
        parser.add_argument("--balance", default=standin.DEFAULT_BALANCE,
                            help=f"Starting workspace balance, in its currency (default {standin.DEFAULT_BALANCE}).")
        parser.add_argument("--currency", default="USD", type=str.upper, choices=["USD", "GBP"],
                            help="The workspace's currency, stated in its answers (default USD).")
        parser.add_argument("--vat", default=None,
                            help="VAT on Prolific's fee, a share (0.20 is 20%%; default 0.20 with GBP, 0 with USD).")
        parser.add_argument("--fee-rate", default=standin.DEFAULT_FEE_RATE,
                            help=f"Prolific's fee on rewards and bonuses (default {standin.DEFAULT_FEE_RATE}: 33.33%%).")
        parser.add_argument("--page-size", type=int, default=standin.DEFAULT_PAGE_SIZE,
                            help=f"Items per page of a listing (default {standin.DEFAULT_PAGE_SIZE}).")
        parser.add_argument("--settle-seconds", type=float, default=standin.DEFAULT_SETTLE_SECONDS,
                            help="Seconds after a pay call before the bonuses are paid "
                                 f"(default {standin.DEFAULT_SETTLE_SECONDS:g}; POST /__control/clock/ advances time).")
        parser.add_argument("--quiet", action="store_true", help="Do not print one line per request.")

    def handle(self, *args, **options):
        ProlificStandIn = market_named("prolific").standin_module().ProlificStandIn

        try:
            server = ProlificStandIn(
                host=options["host"], port=options["port"], token=options["token"], balance=options["balance"],
                fee_rate=options["fee_rate"], page_size=options["page_size"],
                settle_seconds=options["settle_seconds"], log=None if options["quiet"] else self._log,
                currency=options["currency"], vat_rate=options["vat"],
            )
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot start the Prolific stand-in: {exc}") from None
        self.stdout.write(f"Prolific stand-in listening on {server.url} (balance {options['balance']} {server.currency}, "
                          f"fee {server.fee_rate}, VAT {server.vat_rate} of the fee); export:")
        self.stdout.write(f"  PROLIFIC_API_URL={server.url}")
        self.stdout.write(f"  PROLIFIC_API_TOKEN={server.token}")
        self.stdout.write(f"  PROLIFIC_COMPLETION_URL={server.url}/submissions/complete")
        self.stdout.write(f"Control API (no token) under {server.url}/__control/ (participants, clock, faults, state, reset).")
        self.stdout.flush()
        serve_until_interrupted(server)
        self.stdout.write("Prolific stand-in stopped.")

    def _log(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()
