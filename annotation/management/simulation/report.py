"""What a simulated crowd did: figures per stage, on the MTurk and Prolific stand-ins, and the report's lines."""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION

TASK_ORDER = (GENERATION, VERIFICATION, PRESENCE)

MODE_WORDS = {
    "html": "the worker pages over HTTP",
    "fast": "the pages' services in-process, no HTML",
}


@dataclass
class StageFigures:
    accepted: int = 0
    submitted: int = 0
    refused: int = 0


@dataclass
class MTurkWorkerFigures:
    """What simulated MTurk workers did on the stand-in: HITs accepted, submitted, given back; forged pages."""

    accepted: int = 0
    submitted: int = 0
    returned: int = 0
    forged: int = 0


@dataclass
class SimulationReport:
    stages: dict[str, StageFigures] = field(default_factory=lambda: {t: StageFigures() for t in TASK_ORDER})
    campaign_state: str = ""
    seconds: float = 0.0
    stuck: bool = False
    mturk: MTurkWorkerFigures | None = None
    prolific: "ProlificFigures | None" = None
    # Examples the simulated researcher released from the duplicate review (keeping every pair).
    released_for_review: int = 0
    # How the local crowd drove the platform (``crowd.MODES``): "html" (pages over HTTP) or "fast" (services).
    mode: str = ""
    threads: int = 1  # the fast mode's concurrent threads (``simulate_crowd(threads=...)``)
    money: "MoneyFigures | None" = None  # the local rehearsal's ledger, reconciled (``money.py``)
    currency: str = "USD"
    # HIT id -> [times the simulated answers were refused, the first refusal's reason]
    refusals: dict = field(default_factory=dict)
    left: list = field(default_factory=list)  # a stuck run's remaining HITs, and why no one could do them

    def lines(self) -> list[str]:
        out = []
        if self.mode:
            threads = f", {self.threads} threads at once" if self.threads > 1 else ""
            out.append(f"mode: {self.mode} ({MODE_WORDS.get(self.mode, self.mode)}{threads})")
        for slug, figures in self.stages.items():
            out.append(
                f"{slug}: {figures.submitted} assignments submitted, {figures.refused} refused by validation"
            )
        if self.mturk is not None:
            m = self.mturk
            out.append(
                f"on the MTurk stand-in: {m.accepted} HITs accepted, {m.submitted} submitted, {m.returned} given back;"
                f" {m.forged} forged submissions"
            )
        if self.prolific is not None:
            out.extend(self.prolific.lines())
        if self.released_for_review:
            out.append(f"duplicate review: {self.released_for_review} examples released with all their pairs kept")
        if self.money is not None:
            out.extend(self.money.lines(self.currency))
        out.append(
            f"campaign {self.campaign_state}{' (stuck: no worker can take the remaining HITs)' if self.stuck else ''}"
            f" after {self.seconds:.1f} s"
        )
        out.extend(self.left)
        return out


REJECTION_CATEGORY = "LOW_EFFORT"
REJECTION_MESSAGE = (
    "Your answers in this session did not show the care the instructions asked for: several judgments contradict "
    "the reference summary. (A rehearsal's simulated review.)"
)


@dataclass
class ProlificFigures:
    """What simulated Prolific participants did on the stand-in and on the platform's pages, and the money."""

    participants: int = 0
    started: int = 0  # sessions started on Prolific
    refused: int = 0  # starts Prolific refused (not in the allowlist group yet, no free place, study not active)
    completed: int = 0  # came back with the completion code
    returned: int = 0  # returned on Prolific mid-session
    timed_out: int = 0  # stopped working; Prolific timed the submission out (stand-in clock)
    no_work: int = 0  # found no HIT for them and returned the study, as the page asks
    hits_submitted: int = 0
    forged_sessions: int = 0  # the study URL opened with a made-up (well-formed) PROLIFIC_PID and SESSION_ID
    forged_hits: int = 0  # HITs submitted in them (pending, never counted)
    screening_passed: int = 0
    screening_failed: int = 0
    approved: int = 0  # HITs the simulated researcher approved
    rejected: int = 0  # HITs rejected (whole sessions, with a category and a message)
    rejected_sessions: int = 0
    syncs: int = 0
    sync_errors: list = field(default_factory=list)
    hits: dict = field(default_factory=dict)  # the batch's HITs by state
    submissions: dict = field(default_factory=dict)  # Prolific's submissions of the batch's studies by status
    ledger: dict = field(default_factory=dict)  # paid ledger entries: rewards, bonuses, fees, total
    market: dict = field(default_factory=dict)  # what the stand-in paid: rewards, bonuses, fees (VAT in), total
    currency: str = "USD"  # both sides' (the batch's)
    bonuses: dict = field(default_factory=dict)  # bulk bonuses by state

    def lines(self) -> list[str]:
        from hits.markets.money import money as written

        money = lambda d: ", ".join(f"{k} {written(d.get(k, '0.00'), self.currency)}"  # noqa: E731
                                    for k in ("rewards", "bonuses", "fees", "total"))
        return [
            f"on the Prolific stand-in: {self.participants} participants, {self.started} sessions started "
            f"({self.refused} starts refused by Prolific), {self.completed} completed, {self.returned} returned, "
            f"{self.timed_out} timed out, {self.no_work} without work; {self.hits_submitted} HITs submitted",
            f"screening: {self.screening_passed} passed, {self.screening_failed} failed; forged: {self.forged_sessions} "
            f"sessions, {self.forged_hits} HITs (never counted)",
            f"review: {self.approved} HITs approved, {self.rejected} rejected ({self.rejected_sessions} sessions, "
            f"category {REJECTION_CATEGORY}); {self.syncs} syncs",
            "HITs: " + ", ".join(f"{n} {state}" for state, n in sorted(self.hits.items())),
            "Prolific submissions: " + ", ".join(f"{n} {status}" for status, n in sorted(self.submissions.items())),
            "bulk bonuses: " + (", ".join(f"{n} {state}" for state, n in sorted(self.bonuses.items())) or "none"),
            f"money, ledger (paid): {money(self.ledger)} (rewards: every HIT, including those Prolific paid as "
            "bonuses; bonuses: a researcher's own, and the session rewards paid for work the platform could not "
            "hand out)",
            f"money, Prolific stand-in (paid): {money(self.market)}",
            *(f"sync: {error}" for error in self.sync_errors[:10]),
        ]
