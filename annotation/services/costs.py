"""What a campaign will cost: HIT counts per stage, rewards and the crowd platform's commission.

The pipeline creates HITs stage by stage (verification after generation,
presence once an example's predicates are settled), so before launch the
preview *estimates* the later stages from what the protocol implies:

- qualification: every test item of the campaign; on MTurk an item is a HIT
  of ``MTURK_OPEN_HIT_ASSIGNMENTS`` places (9) paying at least MTurk's $0.01,
  every place paid to a worker who takes the test (the most it can cost);
  locally unpaid tests cost nothing;
- generation: one HIT per predicate, ``assignments_generation`` each;
- verification: one HIT per predicate, ``assignments_verification`` each;
- presence: one HIT per (system summary, predicate of its example) for a
  "qa" campaign, or per (system summary, group of units) for an "scu"
  campaign; with a human presence share below 100%, only that share of them
  (the judge labels the rest).  Under the "fixed" rule each has
  ``assignments_presence`` places; under the "adaptive" rule 2, and the
  "third judge" line adds one place on ``third_judge_rate`` of them (the fee
  at the grown HIT's size).  The saving is against the paper's protocol
  (``assignments_presence`` judges on every presence HIT, no routing);
- gold checks: presence HITs with known answers, paid the presence reward
  to every judge who meets them (each judge meets each at most once).  The
  estimate counts the campaign's imported gold items, each met by the judges
  a judge's stream implies: regular presence judgments x ``gold_share`` /
  (1 - ``gold_share``) spread over the items, at least
  ``assignments_presence`` (``judges`` when the crowd's size is known; every
  further judge adds ``gold_per_judge``); in an "scu" campaign with imported
  labels, the ``gold_share`` of its presence HITs that become gold checks,
  each judged by ``assignments_presence`` judges.

Redo rounds cannot be known in advance: ``redo_share`` (the expected share of
predicates that go round again, default 10%) adds their generation and
verification HITs.  Returned and abandoned places cost nothing; rejected
work and discretionary bonuses are not in the estimate.  Amazon Mechanical
Turk's commission is 20% of rewards and bonuses, plus 20% more on HITs with
10 or more assignments, at least $0.01 each; Prolific's service fee is the
campaign's ``prolific_fee_rate`` (its published 33.33% by default) of every
reward and bonus, to the cent per paid place (``hits.prolific.pricing.fee``;
a session's HITs are paid by the study's reward, the session's, so the fee
falls on every HIT's reward alike); local campaigns pay no commission.

Prolific's screening studies (``screening_stages``): a task type with a
qualification test has a screening study whose session is the whole test,
paid to every participant who takes it, pass or fail (its reward is the
test's items x the type's reward, plus Prolific's fee on it).  How many take
it cannot be known in advance: every place of the type's main study needs a
different qualified participant (Prolific gives one submission per study),
not everyone passes, and the screening study grows while places wait.  The
preview assumes ``hits.prolific.pricing.TEST_TAKERS_PER_MAIN_PLACE`` test
takers per main-study place (the Prolific guide's rehearsal measured it), the main
study's places being the type's paid places in this preview over its HITs
per session.

Prolific pays a main study's reward (the whole session's, ``hits.prolific.pricing``)
for every approved submission, also for a session the platform cut short (no
work left for it, a campaign paused): the HITs it could not hand out are paid
all the same ("unused session share" lines, ``unused_session_stages``).  The
preview counts the least of it: each type's last session, filled only by the
type's remaining HIT places.  Sessions that start while a later stage has
created only part of its HITs can be cut short too; the Prolific guide's rehearsal
measures how many.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from decimal import Decimal

from django.conf import settings
from django.db.models import Count

from annotation.models import Campaign, ContentUnit, Predicate, SystemSummary
from annotation.services.gold import share_gold_checks
from annotation.scoring.routing import hit_budget
# The commission lives with the MTurk backend (hits.mturk), which charges it to the ledger and the budget cap too.
from hits.models import HIT
from hits.mturk.fees import CENT, mturk_fee
from hits.prolific import pricing
from hits.prolific.pricing import fee as prolific_fee


@dataclass
class StageCost:
    task_type: str
    hits: int
    assignments_per_hit: int
    reward: Decimal
    rewards: Decimal
    fees: Decimal

    @property
    def total(self) -> Decimal:
        return self.rewards + self.fees


@dataclass
class CostPreview:
    backend: str
    stages: list[StageCost]
    #: Budgeted presence: the share of presence HITs people judge, and what the HITs left to the judge would cost.
    human_presence_share: float = 1.0
    presence_hits_full: int = 0
    saving: Decimal = Decimal("0.00")
    #: Presence HITs people judge (regular ones and those that became gold checks).
    presence_hits_human: int = 0
    #: What one more judge meeting every gold check adds (rewards and fees).
    gold_per_judge: Decimal = Decimal("0.00")
    #: The presence rule ("fixed" or "adaptive") and, under "adaptive", the expected share of HITs with a third judge.
    presence_judges: str = "fixed"
    third_judge_rate: float = 0.0
    #: ``Campaign.presence_judges_statement`` of the values previewed.
    judges_statement: str = ""
    #: On Prolific: test takers expected per main-study place, and per tested task type its main-study places
    #: and expected test takers (``screening_stages``).
    test_takers_per_main_place: float = 0.0
    screening: list[dict] = field(default_factory=list)
    #: On Prolific: per main study, the HITs its sessions are paid for that the platform cannot hand out
    #: (``unused_session_stages``).
    unused_sessions: list[dict] = field(default_factory=list)

    @property
    def gold(self) -> StageCost | None:
        """The gold checks' line (how many, each paid to how many judges), or None: what every page states."""
        return next((s for s in self.stages if s.task_type == "gold"), None)

    @property
    def rewards(self) -> Decimal:
        return sum((s.rewards for s in self.stages), Decimal("0"))

    @property
    def fees(self) -> Decimal:
        return sum((s.fees for s in self.stages), Decimal("0"))

    @property
    def total(self) -> Decimal:
        return self.rewards + self.fees

    def as_dict(self) -> dict:
        """JSON-ready (amounts as strings, so no float rounding creeps into money)."""
        return {
            "backend": self.backend,
            "stages": [
                {**{k: (str(v) if isinstance(v, Decimal) else v) for k, v in asdict(s).items()}, "total": str(s.total)}
                for s in self.stages
            ],
            "rewards": str(self.rewards),
            "fees": str(self.fees),
            "total": str(self.total),
            "human_presence_share": self.human_presence_share,
            "presence_hits_full": self.presence_hits_full,
            "saving": str(self.saving),
            "gold_per_judge": str(self.gold_per_judge),
            "presence_judges": self.presence_judges,
            "third_judge_rate": self.third_judge_rate,
            "judges_statement": self.judges_statement,
            "test_takers_per_main_place": self.test_takers_per_main_place,
            "screening": self.screening,
            "unused_sessions": self.unused_sessions,
        }


def _stage(task_type: str, hits: int, assignments: int, reward: Decimal, with_fee,
           fee_assignments: int | None = None) -> StageCost:
    """``hits`` x ``assignments`` paid places; ``with_fee``: the market's fee per paid place, ``fee(reward, size)``
    (None or False: no fee); on MTurk its rate follows the HIT's size (``fee_assignments``, by default
    ``assignments``)."""
    reward = Decimal(reward)
    paid = hits * assignments
    rewards = (reward * paid).quantize(CENT)
    size = assignments if fee_assignments is None else fee_assignments
    fees = (with_fee(reward, size) * paid).quantize(CENT) if with_fee else Decimal("0.00")
    return StageCost(task_type, hits, assignments, reward, rewards, fees)


def market_fee(campaign: Campaign, backend: str):
    """The fee per paid place on ``backend``, as ``fee(reward, places of the HIT)``; None for local workers."""
    if backend.startswith("mturk"):
        return mturk_fee
    if backend == Campaign.Backend.PROLIFIC:
        rate = campaign.prolific_fee_rate
        return lambda reward, size: prolific_fee(reward, rate)
    return None


def _presence_rule(campaign: Campaign) -> tuple[int, float, int]:
    """Places a presence HIT is posted with, the expected share of HITs that grow (their first judges
    disagree), and the places such a HIT grows by: the hand-out's own rule (``initial_presence_assignments``,
    2 of 3, 3 of 4 or 5), counted at its most (a HIT of 5 may stop at 4)."""
    first = campaign.initial_presence_assignments
    extra = campaign.assignments_presence - first
    if extra <= 0:
        return first, 0.0, 0
    return first, float(campaign.third_judge_rate), extra


def campaign_cost_preview(
    campaign: Campaign, backend: str | None = None, redo_share: float = 0.10, judges: int | None = None,
    test_takers: float | None = None,
) -> CostPreview:
    """Estimated cost of running ``campaign`` from launch to its last presence judgment.

    ``backend`` defaults to the campaign's; the MTurk commission applies to
    both MTurk backends, Prolific's fee (``prolific_fee_rate``) to Prolific.  ``judges``: how many people are expected to judge
    presence (each meets every gold check once); by default the estimate
    from the campaign's ``gold_share`` (see the module's docstring).  ``test_takers``: on Prolific, the test takers
    expected per main-study place (default ``hits.prolific.pricing.TEST_TAKERS_PER_MAIN_PLACE``).
    """
    backend = backend or campaign.backend
    with_fee = market_fee(campaign, backend)
    stages: list[StageCost] = []
    # On Prolific the tests are paid by the screening studies (``screening_stages``), never per item.
    qualification = None if backend == Campaign.Backend.PROLIFIC else _qualification_stage(campaign, backend.startswith("mturk"))
    if qualification is not None:
        stages.append(qualification)
    n_systems = campaign.systems.count()
    if campaign.unit_type == Campaign.UnitType.SCU:
        from annotation.models.stages import SCU_UNITS_PER_HIT

        units = dict(
            ContentUnit.objects.filter(example__campaign=campaign)
            .values("example_id")
            .annotate(n=Count("pk"))
            .values_list("example_id", "n")
        )
        summaries = SystemSummary.objects.filter(system__campaign=campaign).values_list("example_id", flat=True)
        presence_hits = sum(-(-units.get(e, 0) // SCU_UNITS_PER_HIT) for e in summaries)
    else:
        n_predicates = Predicate.objects.filter(example__campaign=campaign).count()
        rounds = n_predicates + round(n_predicates * redo_share)
        stages.append(
            _stage("generation", rounds, campaign.assignments_generation, campaign.reward_generation, with_fee)
        )
        stages.append(
            _stage("verification", rounds, campaign.assignments_verification, campaign.reward_verification, with_fee)
        )
        presence_hits = n_predicates * n_systems
    # The paper's protocol: every presence HIT judged by ``assignments_presence`` people, no routing.
    full = _stage("presence", presence_hits, campaign.assignments_presence, campaign.reward_presence, with_fee)
    share = campaign.human_presence_share
    # Budgeted presence: people judge at most the share of presence HITs (the judge labels the rest).
    human = presence_hits if share >= 1 else hit_budget(presence_hits, share)
    # Gold checks: an "scu" campaign's share of its (human) presence HITs, keyed by imported labels, plus the
    # imported gold items of any campaign; each is paid to every judge who meets it.
    share_gold = share_gold_checks(campaign, human)
    gold_items = share_gold + _imported_gold_items(campaign)
    posted, third_rate, extra = _presence_rule(campaign)
    regular = human - share_gold
    presence = _stage("presence", regular, posted, campaign.reward_presence, with_fee)
    stages.append(presence)
    third = None
    if third_rate:
        # Adaptive rule: the HITs whose first two judges disagree grow to a third place (fee at the grown size).
        third = _stage("third judge", round(regular * third_rate), extra, campaign.reward_presence, with_fee,
                       fee_assignments=posted + extra)
        stages.append(third)
    gold_per_judge = Decimal("0.00")
    if gold_items:
        per_item = _gold_judges(campaign, regular * (posted + third_rate * extra), judges) if not share_gold else campaign.assignments_presence
        stages.append(_stage("gold", gold_items, per_item, campaign.reward_presence, with_fee,
                             fee_assignments=min(posted, settings.MTURK_OPEN_HIT_ASSIGNMENTS)))
        gold_per_judge = _stage("gold", gold_items, 1, campaign.reward_presence, with_fee, fee_assignments=posted).total
    # What budgeted presence and the adaptive rule save against the paper's protocol (gold checks aside).
    people = _stage("presence", human, posted, campaign.reward_presence, with_fee).total
    if third_rate:
        people += _stage("third judge", round(human * third_rate), extra, campaign.reward_presence, with_fee,
                         fee_assignments=posted + extra).total
    saving = full.total - people
    preview = CostPreview(backend=backend, stages=stages, human_presence_share=share, presence_hits_full=presence_hits,
                          saving=saving, presence_hits_human=human, gold_per_judge=gold_per_judge,
                          presence_judges=campaign.presence_judges, third_judge_rate=third_rate,
                          judges_statement=campaign.presence_judges_statement)
    if backend == Campaign.Backend.PROLIFIC:
        takers = pricing.TEST_TAKERS_PER_MAIN_PLACE if test_takers is None else test_takers
        screening, preview.screening = screening_stages(campaign, stages, takers, with_fee)
        unused, preview.unused_sessions = unused_session_stages(campaign, stages, with_fee)
        preview.stages = screening + stages + unused
        preview.test_takers_per_main_place = float(takers)
    return preview


#: The preview's stages whose HITs a task type's main study serves (gold checks come in presence sessions).
STUDY_OF_STAGE = {"generation": "generation", "verification": "verification", "presence": "presence",
                  "third judge": "presence", "gold": "presence"}


def screening_stages(campaign: Campaign, stages: list[StageCost], takers, with_fee) -> tuple[list[StageCost], list[dict]]:
    """Prolific's screening studies, one stage per task type with a qualification test (see the module's docstring):
    main-study places = ceil(the type's paid places in ``stages`` / its HITs per session); test takers =
    ceil(places x ``takers``); each is paid the test's items x the type's reward, plus Prolific's fee on it.  Returns
    the stages and, per type, what they assume."""
    if campaign.batch_id is None:
        return [], []
    from annotation.services.prolific import REWARD_FIELDS
    from annotation.services.task_types import task_type

    items = dict(
        HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.QUALIFICATION)
        .exclude(state=HIT.State.CANCELLED)
        .values("task_type__slug").annotate(n=Count("pk")).values_list("task_type__slug", "n")
    )
    places = hit_places(stages)
    result, assumed = [], []
    for slug in REWARD_FIELDS:
        if not items.get(slug) or not places.get(slug):
            continue
        per_session = pricing.hits_per_submission(task_type(slug), campaign.prolific_hits_per_submission)
        main_places = math.ceil(places[slug] / per_session)
        n_takers = math.ceil(main_places * Decimal(str(takers)))
        reward = Decimal(getattr(campaign, REWARD_FIELDS[slug]))
        test_reward = reward * items[slug]
        # Prolific's fee falls on the submission's reward (the whole test), once per taker.
        fee = with_fee(test_reward, n_takers) if with_fee else Decimal("0.00")
        result.append(StageCost(f"screening: {slug}", items[slug], n_takers, reward, (test_reward * n_takers).quantize(CENT),
                                (fee * n_takers).quantize(CENT)))
        assumed.append({"task_type": slug, "hit_places": places[slug], "hits_per_session": per_session,
                        "main_places": main_places, "test_items": items[slug], "test_takers": n_takers})
    return result, assumed


def hit_places(stages: list[StageCost]) -> dict[str, int]:
    """Paid HIT places per main study (task type) in the preview's ``stages``."""
    places: dict[str, int] = {}
    for stage in stages:
        study = STUDY_OF_STAGE.get(stage.task_type)
        if study is not None:
            places[study] = places.get(study, 0) + stage.hits * stage.assignments_per_hit
    return places


def unused_session_stages(campaign: Campaign, stages: list[StageCost], with_fee) -> tuple[list[StageCost], list[dict]]:
    """What Prolific's session pricing adds (see the module's docstring): a main study's reward pays a whole
    session (``hits_per_submission`` HITs), also a session the platform cuts short (no work left for it, the
    campaign paused).  At the least, the type's paid HIT places do not fill its last session: sessions =
    ceil(places / HITs per session), and (sessions x HITs per session - places) HIT rewards (plus Prolific's fee)
    pay for work the platform could not hand out.  Returns one stage per main study with such HITs, and per study
    what they assume."""
    from annotation.services.prolific import REWARD_FIELDS
    from annotation.services.task_types import task_type

    result, assumed = [], []
    for slug, places in hit_places(stages).items():
        per_session = pricing.hits_per_submission(task_type(slug), campaign.prolific_hits_per_submission)
        sessions = math.ceil(places / per_session)
        unused = sessions * per_session - places
        if not unused:
            continue
        reward = Decimal(getattr(campaign, REWARD_FIELDS[slug]))
        stage = _stage(f"unused session share: {slug}", unused, 1, reward, with_fee)
        result.append(stage)
        assumed.append({"task_type": slug, "hit_places": places, "hits_per_session": per_session,
                        "sessions": sessions, "unused_hits": unused, "cost": str(stage.total)})
    return result, assumed


def _gold_judges(campaign: Campaign, presence_assignments: float, judges: int | None) -> int:
    """How many judges are expected to meet each gold check."""
    if judges is not None:
        return max(int(judges), 1)
    items = _imported_gold_items(campaign) or 1
    share = min(float(campaign.gold_share), 0.9)
    # A judge's stream holds gold at ``gold_share``: gold judgments = regular ones x share / (1 - share), spread
    # over the items (each judge meets each once), and never fewer than one HIT's worth of judges.
    stream = presence_assignments * share / (1 - share) / items
    return max(campaign.assignments_presence, round(stream))


def _qualification_stage(campaign: Campaign, with_fee: bool) -> StageCost | None:
    """The qualification tests' items: on MTurk each is a HIT of ``MTURK_OPEN_HIT_ASSIGNMENTS`` places, every
    place paid (at least MTurk's $0.01) to a worker who takes the test; locally unpaid tests cost nothing."""
    if campaign.batch_id is None:
        return None
    items = list(
        HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.QUALIFICATION)
        .exclude(state=HIT.State.CANCELLED)
        .values_list("reward", "max_assignments")
    )
    if not items:
        return None
    if not with_fee:
        paid = [(Decimal(r), n) for r, n in items if r]
        if not paid:
            return None
        return StageCost("qualification", len(paid), 0, paid[0][0],
                         sum((r * n for r, n in paid), Decimal("0")).quantize(CENT), Decimal("0.00"))
    places = settings.MTURK_OPEN_HIT_ASSIGNMENTS
    rewards = fees_ = Decimal("0")
    for reward, max_assignments in items:
        reward = max(Decimal(reward), CENT)
        n = min(max_assignments, places)
        rewards += reward * n
        fees_ += mturk_fee(reward, n) * n
    first = max(Decimal(items[0][0]), CENT)
    return StageCost("qualification", len(items), min(items[0][1], places), first, rewards.quantize(CENT),
                     fees_.quantize(CENT))


def _imported_gold_items(campaign: Campaign) -> int:
    """The campaign's gold items defined with its qualification tests (not the presence HITs turned gold)."""
    if campaign.batch_id is None:
        return 0
    return (
        HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.GOLD, payload__has_key="inline")
        .exclude(state=HIT.State.CANCELLED)
        .count()
    )
