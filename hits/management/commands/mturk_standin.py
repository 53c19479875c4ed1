"""``manage.py mturk_standin``: run the local MTurk stand-in in the foreground (Ctrl-C stops it)."""

from __future__ import annotations

from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError

from hits.markets.registry import market_named
from hits.markets.standin import add_listen_arguments, serve_until_interrupted


class Command(BaseCommand):
    help = (
        "Run a local stand-in for MTurk's requester API (and its worker site) to rehearse a campaign without "
        "spending money; point the platform at it with MTURK_ENDPOINT_URL.  See hits/mturk/standin/ (one module per concern)."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser):
        add_listen_arguments(parser)
        parser.add_argument(
            "--state", default=None,
            help="JSON file keeping the stand-in's state across restarts, e.g. var/mturk-standin.json (default: memory only).",
        )
        parser.add_argument(
            "--time-scale", type=float, default=1.0,
            help="Simulated seconds per real second (e.g. 3600: an hour a second, so auto-approval comes quickly).",
        )
        parser.add_argument("--balance", default=None, help="Starting account balance in USD (default 10000.00).")
        parser.add_argument("--quiet", action="store_true", help="Do not print one line per call.")
        parser.add_argument(
            "--fault", action="append", default=[], metavar="OPERATION:KIND[:COUNT[:RATE]]",
            help="Inject a fault from the start (repeatable): KIND is throttle, service_fault, lost_reply or "
            "fault_after; OPERATION an MTurk operation or '*'; COUNT how many times ('-': until cleared, default 1); "
            "RATE the share of matching calls that fail (default 1).  E.g. --fault '*:throttle:-:0.2'.  "
            "POST/GET/DELETE /_standin/faults change them while it runs.",
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed of the fault draws (same seed, same faults).")
        parser.add_argument(
            "--access-key", default=None,
            help="The one AWS access key id the stand-in's account answers to; a call signed with another is refused "
            "(HTTP 403 UnrecognizedClientException, as AWS refuses an unknown key).  Default: any key.",
        )

    def handle(self, *args, **options):
        standin_module = market_named("mturk").standin_module()
        DEFAULT_BALANCE, Refused, StandIn = standin_module.DEFAULT_BALANCE, standin_module.Refused, standin_module.StandIn

        if options["time_scale"] <= 0:
            raise CommandError("--time-scale must be positive")
        log = None if options["quiet"] else self._log
        try:
            standin = StandIn(
                host=options["host"],
                port=options["port"],
                state_path=options["state"],
                time_scale=options["time_scale"],
                balance=options["balance"] or DEFAULT_BALANCE,
                log=log,
                seed=options["seed"],
                access_key=options["access_key"],
            )
        except Refused as exc:
            raise CommandError(exc.message) from None
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot start the MTurk stand-in: {exc}") from None
        for spec in options["fault"]:
            try:
                standin.inject(**_fault(spec))
            except ValueError as exc:
                standin.stop()
                raise CommandError(f"--fault {spec!r}: {exc}") from None
        if options["balance"] and standin.loaded:
            self.stderr.write(f"--balance ignored: {options['state']} has its own balance (POST /_standin/balance sets it)")
        self.stdout.write(f"MTurk stand-in listening on {standin.url}")
        self.stdout.write(f"  MTURK_ENDPOINT_URL={standin.url}")
        self.stdout.write(
            f"  balance ${Decimal(standin.state['balance'])}, time scale {options['time_scale']:g}, "
            f"state {options['state'] or 'in memory only'}; control API under {standin.url}/_standin/"
        )
        for fault in standin.fault_list():
            self.stdout.write(
                f"  fault: {fault['operation']} {fault['kind']} x{fault['count'] or 'until cleared'} at rate {fault['rate']:g}"
            )
        self.stdout.flush()
        serve_until_interrupted(standin)  # Ctrl-C or SIGTERM: stopped, the state saved
        self.stdout.write("MTurk stand-in stopped.")

    def _log(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()


def _fault(spec: str) -> dict:
    """``OPERATION:KIND[:COUNT[:RATE]]`` as ``StandIn.inject``'s arguments (ValueError naming the bad part)."""
    parts = spec.split(":")
    if not 2 <= len(parts) <= 4:
        raise ValueError("expected OPERATION:KIND[:COUNT[:RATE]]")
    fault = {"operation": parts[0], "kind": parts[1]}
    if len(parts) > 2:
        try:
            fault["count"] = None if parts[2] in ("-", "") else int(parts[2])
        except ValueError:
            raise ValueError(f"COUNT {parts[2]!r} is not a whole number or '-'") from None
    if len(parts) > 3:
        try:
            fault["rate"] = float(parts[3])
        except ValueError:
            raise ValueError(f"RATE {parts[3]!r} is not a number") from None
    return fault
