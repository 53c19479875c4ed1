"""The unit inspector (issue 40): every presence unit of a campaign (a unit x a system summary of its example) with
its crowd votes, the crowd's majority, the judge's label and probability, the label that counts and who decided it.

The listing runs in a bounded number of queries whatever the campaign's size: one count and one page of
(unit, summary) keys (``LIMIT``), computed in SQL with only the joins the chosen filters and sort need, then
one query each for the page's texts, votes, gold labels and judge labels.  Nothing is read per row.

The filters and sorts on votes read the crowd's stored majority (``GoldPresence`` of origin "majority": its counts
of the votes that count, kept by ``annotation.services.gold.refresh_gold``); the page shows the votes counted from
the judgments themselves.

Who decided a unit (``decided_by``): "researcher" (a gold override, ``annotation.services.gold_overrides``),
"people" (the crowd's majority), "judge" (a budgeted campaign's unit no person labelled, labelled by its judge),
"imported" (a label imported with the data), or "" (nothing yet).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Case, Count, F, FilteredRelation, FloatField, Q, Value, When
from django.db.models.functions import Cast, Coalesce, Greatest

from annotation.models import (
    AutoPresence, AutoscoreRun, Campaign, ContentUnit, GoldPresence, PresenceJudgment, System, SystemSummary,
)
from annotation.selectors.hybrid import latest_labelling

PER_PAGE = 50
MAX_PER_PAGE = 500
MAX_SEARCH = 200

AGREEMENT = {
    "unanimous": "every counted vote the same",
    "split": "votes differ, with a majority",
    "tie": "as many present as not present",
    "none": "no counted vote",
}
DECIDED = {
    "people": "the crowd's majority",
    "judge": "the automatic judge (no person labelled it)",
    "researcher": "a researcher's override",
    "imported": "a label imported with the data",
    "none": "nobody yet",
}
GOLD = {"yes": "has an imported (known) label, usable as a gold check", "no": "has no imported label"}
SORTS = {
    "example": "example, then unit, then system",
    "system": "system, then example and unit",
    "agreement": "least agreement first",
    "votes": "most votes first",
    "probability": "judge's probability, lowest first (units it labelled)",
    "-probability": "judge's probability, highest first (units it labelled)",
}


class InspectorError(ValueError):
    """A filter's value is not one the inspector knows: ``errors`` maps each parameter to its message."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


@dataclass
class Filters:
    system: str = ""
    example: str = ""
    agreement: str = ""
    disagreement: bool = False
    gold: str = ""
    decided: str = ""
    q: str = ""
    sort: str = "example"
    page: int = 1
    page_size: int = PER_PAGE
    errors: dict = field(default_factory=dict)

    def query(self, **changes) -> dict:
        """The query-string parameters of these filters (page links, sort links)."""
        values = {
            "system": self.system, "example": self.example, "agreement": self.agreement,
            "disagreement": "1" if self.disagreement else "", "gold": self.gold, "decided": self.decided,
            "q": self.q, "sort": "" if self.sort == "example" else self.sort,
            "page_size": "" if self.page_size == PER_PAGE else str(self.page_size),
        }
        values.update({k: str(v) for k, v in changes.items()})
        return {k: v for k, v in values.items() if v}


def _choice(params, name: str, choices: dict, errors: dict, default: str = "") -> str:
    value = (params.get(name) or "").strip()
    if value and value not in choices:
        errors[name] = f"must be one of {', '.join(choices)} (not {value[:40]!r})"
        return default
    return value or default


def _number(params, name: str, default: int, high: int, errors: dict) -> int:
    raw = (params.get(name) or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw[:12]) <= high:
        errors[name] = f"must be a whole number from 1 to {high}"
        return default
    return int(raw)


def parse_filters(params) -> Filters:
    """The inspector's filters from a query string (a ``QueryDict`` or a dict); unknown values are collected in
    ``errors`` (the page shows them and ignores that filter, the API answers 400)."""
    errors: dict[str, str] = {}
    flag = (params.get("disagreement") or "").strip().lower()
    if flag not in ("", "0", "1", "true", "false", "yes", "no"):
        errors["disagreement"] = "must be 1 or 0"
    q = (params.get("q") or "").strip()
    if len(q) > MAX_SEARCH:
        errors["q"] = f"at most {MAX_SEARCH} characters"
        q = q[:MAX_SEARCH]
    return Filters(
        system=(params.get("system") or "").strip()[:200],
        example=(params.get("example") or "").strip()[:200],
        agreement=_choice(params, "agreement", AGREEMENT, errors),
        disagreement=flag in ("1", "true", "yes"),
        gold=_choice(params, "gold", GOLD, errors),
        decided=_choice(params, "decided", DECIDED, errors),
        q=q,
        sort=_choice(params, "sort", SORTS, errors, default="example"),
        page=_number(params, "page", 1, 10**9, errors),
        page_size=_number(params, "page_size", PER_PAGE, MAX_PER_PAGE, errors),
        errors=errors,
    )


def judge_run(campaign: Campaign):
    """The run whose labels the inspector shows: a budgeted campaign's latest labelling pass, otherwise the
    campaign's latest finished automatic scoring of its own units (None when there is none)."""
    if campaign.is_hybrid:
        return latest_labelling(campaign)
    return (
        AutoscoreRun.objects.filter(campaign=campaign, state=AutoscoreRun.State.FINISHED, generate_qas=False)
        .order_by("-finished_at", "-pk").first()
    )


def unit_rows(campaign: Campaign):
    """Every presence unit of the campaign as (unit, summary) rows: ``pk`` is the unit, ``summary_id`` the summary
    (a join through the example: each unit is judged in every system's summary of its example)."""
    units = ContentUnit.objects.filter(example__campaign=campaign)
    if campaign.unit_type == Campaign.UnitType.SCU:
        units = units.filter(kind=ContentUnit.Kind.SCU)
    else:
        units = units.filter(state=ContentUnit.State.KEPT)
    return units.annotate(
        summary_id=F("example__summaries__id"),
        system_id=F("example__summaries__system_id"),
        system_name=F("example__summaries__system__name"),
    ).filter(summary_id__isnull=False)


class _Rows:
    """The rows being filtered, with the labels of each (unit, summary) joined only when a filter or the sort needs
    them: ``maj`` (the crowd's majority), ``ovr`` (an override), ``imp`` (an imported label), ``auto`` (the judge's
    label in ``run``).  Joins, not correlated subqueries: SQLite runs a subquery per row, three times slower."""

    def __init__(self, rows, run):
        self.rows, self.run, self.joined = rows, run, set()

    def need(self, *names):
        for name in names:
            if name in self.joined:
                continue
            if name == "auto":
                relation = FilteredRelation("auto_presences", condition=Q(
                    auto_presences__run=self.run, auto_presences__summary_id=F("summary_id")))
            else:
                relation = FilteredRelation("gold", condition=Q(gold__origin=ORIGINS[name], gold__summary_id=F("summary_id")))
            self.rows = self.rows.annotate(**{name: relation})
            self.joined.add(name)
        return self


ORIGINS = {"maj": GoldPresence.Origin.MAJORITY, "ovr": GoldPresence.Origin.OVERRIDE, "imp": GoldPresence.Origin.IMPORTED}
AGREEMENT_Q = {
    "none": Q(maj__id__isnull=True) | Q(maj__n_judgments=0),
    "unanimous": Q(maj__n_judgments__gt=0) & (Q(maj__n_present=0) | Q(maj__n_present=F("maj__n_judgments"))),
    "split": Q(maj__n_present__gt=0, maj__n_present__lt=F("maj__n_judgments"))
    & (Q(twice_present__lt=F("maj__n_judgments")) | Q(twice_present__gt=F("maj__n_judgments"))),
    "tie": Q(maj__n_judgments__gt=0, twice_present=F("maj__n_judgments")),
}


def _decided_q(campaign: Campaign, run) -> dict:
    """decided_by value -> its condition on the joined labels (the order of ``_row``).  Written without negations:
    Django turns a negated condition on a joined relation into a subquery, which cannot see ``summary_id``."""
    hybrid = campaign.is_hybrid
    people = Q(maj__id__isnull=False) & (Q(maj__present__isnull=False) if hybrid else Q())
    no_people = (Q(maj__id__isnull=True) | Q(maj__present__isnull=True)) if hybrid else Q(maj__id__isnull=True)
    judged = hybrid and run is not None
    free = Q(ovr__id__isnull=True)
    no_judge = Q(auto__id__isnull=True) if judged else Q()
    return {
        "researcher": Q(ovr__id__isnull=False),
        "people": free & people,
        "judge": (free & no_people & Q(auto__id__isnull=False)) if judged else Q(pk__in=[]),
        "imported": free & no_people & no_judge & Q(imp__id__isnull=False),
        "none": free & no_people & no_judge & Q(imp__id__isnull=True),
    }


def filtered(campaign: Campaign, filters: Filters, run=None):
    """The (unit, summary) rows the filters keep, in the chosen order (a queryset, not yet evaluated)."""
    rows = unit_rows(campaign)
    if filters.system:
        rows = rows.filter(system_name=filters.system)
    if filters.example:
        rows = rows.filter(example__external_id=filters.example)
    if filters.q:
        rows = rows.filter(
            Q(text__icontains=filters.q) | Q(example__external_id__icontains=filters.q) | Q(system_name__icontains=filters.q)
        )
    joined = _Rows(rows, run)
    if filters.gold:
        joined.need("imp")
        joined.rows = joined.rows.filter(imp__id__isnull=filters.gold == "no")
    if filters.agreement:
        joined.need("maj")
        joined.rows = joined.rows.annotate(twice_present=F("maj__n_present") * 2).filter(AGREEMENT_Q[filters.agreement])
    if filters.disagreement:
        if run is None:
            return rows.none()
        joined.need("maj", "auto")
        joined.rows = joined.rows.filter(Q(auto__present=True, maj__present=False) | Q(auto__present=False, maj__present=True))
    if filters.decided:
        joined.need("maj", "ovr", "imp", *(("auto",) if run is not None else ()))
        joined.rows = joined.rows.filter(_decided_q(campaign, run)[filters.decided])
    order = _ordering(filters, joined, run)  # may join what the sort needs
    return joined.rows.order_by(*order)


def _ordering(filters: Filters, joined: _Rows, run) -> list:
    base = ["example__position", "index", "system_name", "summary_id"]
    if filters.sort == "system":
        return ["system_name", "example__position", "index", "summary_id"]
    if filters.sort in ("agreement", "votes"):
        joined.need("maj")
    if filters.sort == "agreement":
        # The majority's share of the counted votes, least first; units without votes last.
        votes = F("maj__n_judgments")
        share = Case(
            When(Q(maj__id__isnull=True) | Q(maj__n_judgments=0), then=Value(2.0)),
            default=Cast(Greatest(F("maj__n_present"), votes - F("maj__n_present")), FloatField()) / Cast(votes, FloatField()),
            output_field=FloatField(),
        )
        joined.rows = joined.rows.annotate(agreement_share=share)
        return ["agreement_share", *base]
    if filters.sort == "votes":
        return [F("maj__n_judgments").desc(nulls_last=True), *base]
    if filters.sort in ("probability", "-probability") and run is not None:
        # The units the judge labelled, in the order of its index (run, probability): a page costs a walk of 50
        # index entries, not a sort of every row.
        joined.need("auto")
        joined.rows = joined.rows.filter(auto__id__isnull=False)
        if filters.sort == "probability":
            return [F("auto__probability").asc(), F("auto__id").asc()]
        return [F("auto__probability").desc(), F("auto__id").desc()]
    return base


def inspect(campaign: Campaign, filters: Filters) -> dict:
    """One page of the inspector: ``rows`` (``page_rows``), ``count``, ``page``, ``pages``, ``page_size``, the judge
    run shown (``run``) and the campaign's ``systems`` (names, for the filter)."""
    run = judge_run(campaign)
    rows = filtered(campaign, filters, run)
    count = rows.count()
    pages = max(1, -(-count // filters.page_size))
    page = min(filters.page, pages)
    start = (page - 1) * filters.page_size
    keys = [(u, s) for u, s in rows.values_list("pk", "summary_id")[start:start + filters.page_size]]
    return {
        "rows": page_rows(campaign, keys, run),
        "count": count,
        "page": page,
        "pages": pages,
        "page_size": filters.page_size,
        "run": run,
        "systems": list(System.objects.filter(campaign=campaign).order_by("name").values_list("name", flat=True)),
    }


def page_rows(campaign: Campaign, keys: list[tuple[int, int]], run) -> list[dict]:
    """The inspector's rows for these (unit, summary) keys, in their order: five queries whatever their number."""
    if not keys:
        return []
    unit_ids = {u for u, _ in keys}
    summary_ids = {s for _, s in keys}
    units = {
        row["pk"]: row for row in ContentUnit.objects.filter(pk__in=unit_ids).values(
            "pk", "text", "question", "answers", "kind", "example_id", "example__external_id")
    }
    summaries = dict(SystemSummary.objects.filter(pk__in=summary_ids).values_list("pk", "system__name"))
    votes: dict[tuple[int, int], dict] = {}
    for row in (PresenceJudgment.objects.filter(unit_id__in=unit_ids, summary_id__in=summary_ids)
                .values("unit_id", "summary_id")
                .annotate(n=Count("pk", filter=Q(excluded=False)), yes=Count("pk", filter=Q(excluded=False, present=True)),
                          excluded=Count("pk", filter=Q(excluded=True)))):
        votes[(row["unit_id"], row["summary_id"])] = row
    gold: dict[tuple[int, int], dict] = {}
    for unit_id, summary_id, origin, present, how in GoldPresence.objects.filter(
        unit_id__in=unit_ids, summary_id__in=summary_ids
    ).values_list("unit_id", "summary_id", "origin", "present", "decided_by"):
        gold.setdefault((unit_id, summary_id), {})[origin] = {"present": present, "decided_by": how}
    judge = {}
    if run is not None:
        judge = {
            (u, s): {"present": p, "probability": prob, "calibrated": cal}
            for u, s, p, prob, cal in AutoPresence.objects.filter(
                run=run, unit_id__in=unit_ids, summary_id__in=summary_ids
            ).values_list("unit_id", "summary_id", "present", "probability", "calibrated")
        }
    return [_row(campaign, units[u], s, summaries[s], votes.get((u, s)), gold.get((u, s), {}), judge.get((u, s)))
            for u, s in keys]


def _row(campaign: Campaign, unit: dict, summary_id: int, system: str, votes, gold: dict, judge) -> dict:
    n = votes["n"] if votes else 0
    yes = votes["yes"] if votes else 0
    majority = gold.get(GoldPresence.Origin.MAJORITY)
    override = gold.get(GoldPresence.Origin.OVERRIDE)
    imported = gold.get(GoldPresence.Origin.IMPORTED)
    if override is not None:
        decided, label = "researcher", override["present"]
    elif majority is not None and (majority["present"] is not None or not campaign.is_hybrid):
        decided, label = "people", majority["present"]
    elif campaign.is_hybrid and judge is not None:
        decided, label = "judge", judge["present"]
    elif imported is not None:
        decided, label = "imported", imported["present"]
    else:
        decided, label = "none", None
    return {
        "unit": unit["pk"],
        "summary": summary_id,
        "text": unit["text"],
        "kind": unit["kind"],
        "example_id": unit["example_id"],
        "example": unit["example__external_id"],
        "system": system,
        "votes": {"present": yes, "not_present": n - yes, "total": n, "excluded": votes["excluded"] if votes else 0},
        "agreement": _agreement(n, yes),
        "majority": majority["present"] if majority else None,
        "majority_rule": majority["decided_by"] if majority else "",
        "judge": judge,
        "judge_disagrees": bool(judge and majority and majority["present"] is not None and judge["present"] != majority["present"]),
        "imported": imported["present"] if imported else None,
        "gold": label,
        "decided_by": decided,
        "overridden": override is not None,
    }


def _agreement(n: int, yes: int) -> str:
    if n == 0:
        return "none"
    if 2 * yes == n:
        return "tie"
    return "unanimous" if yes in (0, n) else "split"
