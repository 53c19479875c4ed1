"""``manage.py calibrate_length_alpha``: choose the length-penalty alpha of nQAPyramid on a campaign's data."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation import scoring
from annotation.management.campaigns import campaign_from_slug
from annotation.models import Campaign, SummaryScore
from annotation.services.scores import recompute_summary_scores


class Command(BaseCommand):
    help = (
        "Try alpha = 1..10 and pick the one that makes length-penalised QAPyramid least correlated (Pearson) "
        "with the summaries' effective length; --apply stores it in the campaign and recomputes the scores."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--apply", action="store_true", help="Save the chosen alpha as the campaign's setting.")

    def handle(self, *args, **options):
        campaign = campaign_from_slug(options["campaign"])
        if not SummaryScore.objects.filter(summary__system__campaign=campaign).exists():
            recompute_summary_scores(campaign)
        rows = [
            (q, text, reference)
            for q, text, reference in SummaryScore.objects.filter(summary__system__campaign=campaign, qapyramid__isnull=False)
            .values_list("qapyramid", "summary__text", "summary__example__reference")
            if text.strip() and reference.strip()
        ]
        if len(rows) < 3:
            raise CommandError("calibration needs scored summaries with their texts and references (at least 3)")
        tokens = [scoring.word_tokens(text) for _, text, _ in rows]
        rp = [scoring.repetition_rate(t) for t in tokens]
        best, correlations = scoring.calibrate_length_alpha(
            [q for q, _, _ in rows],
            [len(t) for t in tokens],
            [scoring.token_length(reference) for _, _, reference in rows],
            scoring.repetition_penalty(rp),
        )
        for alpha, r in correlations.items():
            self.stdout.write(f"alpha={alpha:<3} pearson_r={r:+.3f}{'  <- least correlated' if alpha == best else ''}")
        if best is None:
            raise CommandError("no alpha gives a defined correlation on this data")
        if options["apply"]:
            Campaign.objects.filter(pk=campaign.pk).update(length_penalty_alpha=best)
            recompute_summary_scores(Campaign.objects.get(pk=campaign.pk))
            self.stdout.write(f"Length-penalty alpha of '{campaign.slug}' set to {best}; scores recomputed.")
