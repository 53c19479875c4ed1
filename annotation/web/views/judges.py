"""The judges page of a campaign: automatic judges against the gold labels, beside the leaderboard."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotation.automation.judges.base import JudgeError
from annotation.automation.judges.extras import INSTALL_COMMAND, PIP_COMMANDS, missing_extras
from annotation.selectors.campaigns import campaigns_visible_to

#: Judges offered on the page (any registered name can be run from the command line).
PAGE_JUDGES = [
    ("trained", "Trained judge (MiniLM cross-encoder, offline)"),
    ("lexical", "Content-word recall (lexical baseline)"),
    ("rouge1", "ROUGE-1 recall"),
    ("rouge2", "ROUGE-2 recall"),
    ("rougeL", "ROUGE-L recall"),
    ("llm", "LLM (OpenAI-compatible endpoint from the settings)"),
]


def _kendall(results: dict | None, group: str = "all") -> dict:
    return (((results or {}).get("correlation") or {}).get(group) or {}).get("kendall") or {}


@login_required
@require_http_methods(["GET", "POST"])
def campaign_judges(request, slug):
    """GET: judge-vs-gold agreement and Kendall's tau per judge and for ROUGE, and the runs' progress.
    POST: start a run (SemiAutoQAPyramid, or AutoQAPyramid with "generate_qas")."""
    from annotation.automation.autoscore import compare_judges, start_autoscore_run

    campaign = get_object_or_404(campaigns_visible_to(request.user), slug=slug)
    if request.method == "POST":
        judge = request.POST.get("judge", "")
        if judge not in dict(PAGE_JUDGES):
            messages.error(request, "Choose one of the judges offered.")
            return redirect("campaign-judges", slug=campaign.slug)
        try:
            run = start_autoscore_run(campaign, judge, generate_qas=bool(request.POST.get("generate_qas")), user=request.user)
        except (JudgeError, ValueError) as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Run {run.pk} queued: {run.n_chunks} chunks with the {judge} judge.")
        return redirect("campaign-judges", slug=campaign.slug)
    comparison = compare_judges(campaign)
    rows = []
    for entry in comparison["runs"]:
        presence = entry["presence"] or {}
        tau = _kendall(entry)
        rows.append({**entry, "accuracy": presence.get("accuracy"), "f1_present": presence.get("f1_present"),
                     "tau_system": tau.get("system"), "tau_summary": tau.get("summary"),
                     "tau_examples": tau.get("n_examples"), "tau_undefined": tau.get("n_undefined")})
    rouge_rows = [
        {"name": f"{variant} recall", "tau_system": _kendall({"correlation": figures}).get("system"),
         "tau_summary": _kendall({"correlation": figures}).get("summary"),
         "tau_examples": _kendall({"correlation": figures}).get("n_examples"),
         "tau_undefined": _kendall({"correlation": figures}).get("n_undefined")}
        for variant, figures in (comparison["rouge"] or {}).items()
    ]
    runs = list(campaign.autoscore_runs.all()[:10])
    curves = _hybrid_curves()
    return render(
        request,
        "annotation/judges.html",
        {
            "campaign": campaign,
            "rows": rows,
            "rouge_rows": rouge_rows,
            "runs": runs,
            "busy": any(r.state in ("pending", "running") for r in runs),
            "judges": PAGE_JUDGES,
            "missing_extras": missing_extras(),
            "install_command": INSTALL_COMMAND,
            "pip_commands": PIP_COMMANDS,
            "curves": curves,
            "calibration": _calibration(campaign),
        },
    )


def _calibration(campaign) -> dict | None:
    """A budgeted campaign's calibration of its routing judge (the latest routing pass): rule, ECE before and after
    and a reliability plot, or why there is none yet (too few human labels: the scores count labels until then)."""
    if not campaign.is_hybrid:
        return None
    from annotation.scoring.calibration import rule_text
    from annotation.selectors.hybrid import latest_labelling, scoring_rule
    from annotation.web.charts import line_chart

    run = latest_labelling(campaign)
    figures = (run.results or {}).get("calibration") if run else None
    scoring, reason = scoring_rule(campaign, figures)
    result = {"setting": campaign.get_judge_scoring_display(), "scoring": scoring, "reason": reason, "figures": figures,
              "rule": rule_text(), "fallback": scoring != campaign.judge_scoring, "judge_version": run.judge_version if run else None, "svg": None,
              "sample": _calibration_sample(figures)}
    if figures and (figures.get("fitted") or figures.get("not_applied")):
        def points(bins):
            return [(b["mean_probability"], b["share_present"]) for b in bins if b["n"]]

        result["svg"] = line_chart(
            [{"name": "perfect calibration", "points": [(0.0, 0.0), (1.0, 1.0)], "color": "#9aa3b5", "dashed": True},
             {"name": f"judge as it is (ECE {figures['ece_before']:.3f})", "points": points(figures["bins_before"]), "color": "#c0392b"},
             {"name": f"calibrated, out of fold (ECE {figures['ece_after']:.3f})", "points": points(figures["bins_after"]), "color": "#2456c9"}],
            x_label="predicted probability of presence (bin mean)", y_label="share present", chart_id="reliability-plot",
            label="Reliability of the routing judge's probabilities: share present against predicted probability, per bin",
        )
    return result


def _calibration_sample(figures: dict | None) -> str:
    """What the calibration figures describe: under the active rule a 1/pi-weighted, representative sample of the
    campaign's units; under the uncertainty rule only the units routing chose."""
    if figures and figures.get("weighted"):
        return ("Measured on a representative sample: people judged HITs drawn at random with known probabilities pi, "
                "and each of their units is weighted by 1/pi (the bins, the error and the fit).")
    return ("Measured on the units routing chose for people (the judge's least sure), not a representative sample: "
            "the figure may flatter or harm the units nobody judged.")


def _hybrid_curves() -> list[dict]:
    """Saved ``evaluate_hybrid --curve --save`` results as charts: routed against random, by human share."""
    from annotation.automation.judges.hybrid import saved_curves
    from annotation.web.charts import line_chart

    charts = []
    for data in saved_curves():
        curve = data["curve"]
        for key, title in (("summary_pearson", "summary-level Pearson r"), ("accuracy", "presence accuracy")):
            routed = [(p["routed"]["human_share"], p["routed"][key]) for p in curve]
            chance = [(p["random"]["human_share"], p["random"][key]) for p in curve]
            low = min([y for _, y in routed + chance if y is not None] or [0.0])
            charts.append({
                "name": data["name"], "title": title, "key": key, "measure": data.get("measure"), "judge": data.get("judge"),
                "rounds": data.get("rounds"), "folds": data.get("folds"), "points": curve,
                "svg": line_chart(
                    [{"name": f"least sure first ({data.get('measure')})", "points": routed, "color": "#2456c9"},
                     {"name": "random HITs", "points": chance, "color": "#c0392b", "dashed": True}],
                    x_label="human presence share", y_label="Pearson r" if key == "summary_pearson" else "accuracy", y_min=max(0.0, round(low - 0.05, 1)), y_max=1.0,
                    chart_id=f"curve-{data['name']}-{key}", label=f"{title} against the human presence share, {data['name']}",
                ),
            })
    return charts
