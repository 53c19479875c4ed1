"""Export of a campaign, enough to reproduce the study from the export alone.

- ``examples.jsonl``: one object per example: id, reference, source, the QA
  pairs (or units) per predicate, gold labels per system with the rule that
  produced each (``gold_rule``: fixed majority, adaptive first two agree,
  adaptive majority of three, tie rule, imported), and per-system summary
  scores;
- ``judgments.csv``: every presence judgment (worker ids pseudonymised on
  request; ``excluded`` 1 for judgments that do not count, ``rejected`` 1 for those of rejected work, which
  count unless excluded too); text cells that a spreadsheet would
  read as a formula are prefixed with a quote (``annotation.services.spreadsheets``);
- ``verifications.csv``: every verifier's verdict on every QA pair (valid or
  not, the answers they selected; ``excluded`` and ``rejected`` as for judgments);
- ``systems.csv``: the system-level score table (QAPyramid with its 95%
  interval, nQAPyramid, predicate-level score, alpha, summaries);
- ``campaign.json``: the campaign's settings and the export's counts (under budgeted presence, the hybrid
  scores with the rule they follow, ``hybrid_scores.rule``);
- ``hybrid_units.csv`` (budgeted presence only): every candidate unit with the human majority label and the
  judge's outputs in separate columns (``human_label``, ``judge_label``, ``judge_probability``,
  ``judge_calibrated``), which of them scored it (``scored_by``) and the value it counts as, its HIT's design
  under the active rule (pi ``inclusion_probability``, xi ``routed``, ``stratum``, ``decided_round``), the judge's
  ``cross_fitted`` f and the unit's ``display_score``;
- ``hybrid_systems.csv`` (budgeted presence only): the ranking's scores with both intervals, each column named by
  its target (``HYBRID_SYSTEM_COLUMNS``), or under the uncertainty rule no interval and the reason.  The gold labels
  elsewhere in the export (``examples.jsonl``'s ``gold``) are people's only: nothing the judge said is gold;
- ``pairs.csv``: every pair of systems (``PAIR_COLUMNS``): the difference, its 95% interval (and under the active
  rule the example interval), the p-values before and after Holm's adjustment and ``separated``, or why the pair is
  not compared; ``campaign.json``'s ``pairs`` names the method (no row at all: its ``pairs_no_comparison`` says why).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.forms.models import model_to_dict

from annotation.models import (
    Campaign,
    ContentUnit,
    Example,
    GoldPresence,
    PresenceJudgment,
    SummaryScore,
    System,
    SystemSummary,
    Verification,
)
from annotation.selectors.pairs import PAIR_COLUMNS, pair_comparisons, pair_rows
from annotation.selectors.scores import rank_systems
from annotation.services.gold import rule_of_label
from annotation.services.spreadsheets import csv_writer
from hits.models import Assignment

REJECTED = Assignment.State.REJECTED

#: The columns of ``hybrid_systems.csv``: each interval named by its target.
HYBRID_SYSTEM_COLUMNS = [
    "rank", "system", "score", "ci95_low_full_human_score_on_these_examples", "ci95_high_full_human_score_on_these_examples",
    "ci95_low_score_on_documents_like_these", "ci95_high_score_on_documents_like_these", "human_share", "units",
    "summaries", "no_interval_reason",
]


def pseudonym(worker_id: str, salt: str) -> str:
    return "w-" + hashlib.sha256(f"{salt}:{worker_id}".encode()).hexdigest()[:12]


def export_campaign(
    campaign: Campaign, out_dir: Path | str, *, pseudonymise: bool = False, salt: str = "", progress=None
) -> dict:
    """Write the export files (see the module docstring) into ``out_dir``; returns what was written.

    ``progress(done, total, message)``, when given, counts examples written
    (every 50), then one step for the judgments and one for the settings.
    """
    progress = progress or (lambda done, total, message="": None)
    n_total = Example.objects.filter(campaign=campaign).count() + 2
    progress(0, n_total, "examples")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    units_by_example: dict[int, list] = {}
    for unit in ContentUnit.objects.filter(example__campaign=campaign).select_related("predicate").order_by("example_id", "index"):
        units_by_example.setdefault(unit.example_id, []).append(unit)
    gold_by_summary: dict[int, dict] = {}
    rule_by_summary: dict[int, dict] = {}
    for unit_id, summary_id, present, origin, n, n_present, how in GoldPresence.objects.filter(
        summary__system__campaign=campaign
    ).values_list("unit_id", "summary_id", "present", "origin", "n_judgments", "n_present", "decided_by"):
        gold_by_summary.setdefault(summary_id, {}).setdefault(unit_id, {})[origin] = present
        rules = rule_by_summary.setdefault(summary_id, {})
        if origin == GoldPresence.Origin.OVERRIDE:
            rules[unit_id] = "researcher's override"
        elif origin == GoldPresence.Origin.MAJORITY:
            if rules.get(unit_id) != "researcher's override":
                rules[unit_id] = rule_of_label(campaign, n, n_present, how)
        else:
            rules.setdefault(unit_id, "imported")
    summaries_by_example: dict[int, list] = {}
    for summary in SystemSummary.objects.filter(system__campaign=campaign).select_related("system"):
        summaries_by_example.setdefault(summary.example_id, []).append(summary)
    scores = {s.summary_id: s for s in SummaryScore.objects.filter(summary__system__campaign=campaign)}
    n_examples = 0
    with (out / "examples.jsonl").open("w", encoding="utf-8") as f:
        for example in Example.objects.filter(campaign=campaign).order_by("position"):
            predicates: dict[str, dict] = {}
            for unit in units_by_example.get(example.pk, []):
                key = str(unit.predicate_id) if unit.predicate_id else "units"
                entry = predicates.setdefault(key, {
                    "predicate": (unit.predicate.text or unit.predicate.external_id) if unit.predicate_id else None,
                    "pairs": [],
                })
                entry["pairs"].append({"id": unit.pk, "question": unit.question, "answers": unit.answers, "text": unit.text, "state": unit.state})
            systems = {}
            for summary in summaries_by_example.get(example.pk, []):
                gold = gold_by_summary.get(summary.pk, {})
                score = scores.get(summary.pk)
                systems[summary.system.name] = {
                    "summary": summary.text,
                    "gold": {str(u): labels.get("override", labels.get("majority", labels.get("imported"))) for u, labels in gold.items()},
                    # Which rule produced each label (issue 29): "fixed 3: majority of 3", "adaptive: first 2
                    # agree", "adaptive: majority of 3", "tie rule (absent): 1-1", "imported", ...
                    "gold_rule": {str(u): rule for u, rule in rule_by_summary.get(summary.pk, {}).items()},
                    "imported_gold": {str(u): labels["imported"] for u, labels in gold.items() if "imported" in labels} or None,
                    "qapyramid": score.qapyramid if score else None,
                    "nqapyramid": score.nqapyramid if score else None,
                }
            f.write(json.dumps({"id": example.external_id, "reference": example.reference, "source": example.source or None,
                                "predicates": list(predicates.values()), "systems": systems}, ensure_ascii=False) + "\n")
            n_examples += 1
            if n_examples % 50 == 0:
                progress(min(n_examples, n_total - 2), n_total, "examples")
    progress(n_total - 2, n_total, "judgments")
    n_judgments = 0
    with (out / "judgments.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv_writer(f)
        writer.writerow(["example", "system", "unit", "question", "answers", "worker", "present", "excluded", "assignment", "rejected"])
        rows = PresenceJudgment.objects.filter(summary__system__campaign=campaign).values_list(
            "summary__example__external_id", "summary__system__name", "unit_id", "unit__question", "unit__answers",
            "worker__external_id", "present", "excluded", "assignment_id", "assignment__state",
        ).order_by("summary__example__position", "summary__system__name", "unit_id", "pk")
        for example_id, system, unit_id, question, answers, worker, present, excluded, assignment, state in rows.iterator(chunk_size=5000):
            writer.writerow([
                example_id, system, unit_id, question, " / ".join(answers or []),
                pseudonym(worker, salt) if pseudonymise else worker, int(present), int(excluded), assignment or "",
                int(state == REJECTED),
            ])
            n_judgments += 1
    worker_name = (lambda w: pseudonym(w, salt)) if pseudonymise else (lambda w: w)
    n_verifications = 0
    with (out / "verifications.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv_writer(f)
        writer.writerow(["example", "unit", "question", "worker", "valid", "answers", "assignment", "excluded", "rejected"])
        rows = Verification.objects.filter(unit__example__campaign=campaign).values_list(
            "unit__example__external_id", "unit_id", "unit__question", "worker__external_id", "valid", "answers", "assignment_id",
            "excluded", "assignment__state",
        ).order_by("unit__example__position", "unit_id", "pk")
        for example_id, unit_id, question, worker, valid, answers, assignment, excluded, state in rows.iterator(chunk_size=5000):
            writer.writerow([
                example_id, unit_id, question, worker_name(worker), int(valid), " / ".join(answers or []), assignment or "",
                int(excluded), int(state == REJECTED),
            ])
            n_verifications += 1
    with (out / "systems.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv_writer(f)
        writer.writerow(["system", "qapyramid", "ci95_low", "ci95_high", "nqapyramid", "predicate_level", "alpha", "summaries"])
        for system in System.objects.filter(campaign=campaign).select_related("score").order_by("name"):
            score = getattr(system, "score", None)
            figures = [score.qapyramid, score.qapyramid_low, score.qapyramid_high, score.nqapyramid, score.predicate_level,
                       score.alpha, score.n_summaries] if score else [None] * 6 + [0]
            writer.writerow([system.name, *figures])
    settings = model_to_dict(campaign, exclude=["owner", "shared_with", "batch"])
    settings = {k: (str(v) if not isinstance(v, (int, float, str, bool, type(None))) else v) for k, v in settings.items()}
    extra = {}
    if campaign.is_hybrid:
        from annotation.selectors.hybrid import hybrid_scores
        from annotation.services.scores import ensure_hybrid_scores

        ensure_hybrid_scores(campaign)
        # Budgeted presence: the scores mixing human and judge labels, the human share per system, the judge version.
        extra["hybrid_scores"] = hybrid_scores(campaign)
        from annotation.selectors.hybrid import UNIT_COLUMNS, hybrid_unit_rows

        with (out / "hybrid_units.csv").open("w", encoding="utf-8", newline="") as f:
            writer = csv_writer(f)
            writer.writerow(UNIT_COLUMNS)
            for row in hybrid_unit_rows(campaign):
                writer.writerow(["" if v is None else v for v in row])
        with (out / "hybrid_systems.csv").open("w", encoding="utf-8", newline="") as f:
            writer = csv_writer(f)
            writer.writerow(HYBRID_SYSTEM_COLUMNS)
            for name, figures in rank_systems(extra["hybrid_scores"]["systems"]).items():
                writer.writerow(["" if v is None else v for v in (
                    figures["rank"], name, figures.get("score", figures.get("qapyramid")), *figures["ci95"],
                    *(figures.get("ci95_examples") or [None, None]), figures.get("human_share"), figures["n_units"],
                    figures["n_summaries"], figures.get("no_interval_reason", ""))])
    # Every pair of systems with the adjusted verdict (``annotation.selectors.pairs``); the method in campaign.json.
    figures = {s.name: {"qapyramid": s.score.qapyramid if hasattr(s, "score") else None}
               for s in System.objects.filter(campaign=campaign).select_related("score")}
    if campaign.is_hybrid:
        figures = {name: extra["hybrid_scores"]["systems"].get(name) or {} for name in figures}
    comparisons = pair_comparisons(campaign, list(rank_systems(figures)), hybrid=extra.get("hybrid_scores"))
    with (out / "pairs.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv_writer(f)
        writer.writerow(PAIR_COLUMNS)
        writer.writerows(pair_rows(comparisons))
    extra["pairs"] = {key: comparisons[key] for key in ("pairs_method", "pairs_statement", "pairs_no_comparison")}
    (out / "campaign.json").write_text(
        json.dumps({"campaign": settings, "counts": {"examples": n_examples, "judgments": n_judgments, "verifications": n_verifications},
                    "pseudonymised": pseudonymise, **extra}, indent=2),
        encoding="utf-8",
    )
    progress(n_total, n_total, "exported")
    return {"dir": str(out), "examples": n_examples, "judgments": n_judgments}
