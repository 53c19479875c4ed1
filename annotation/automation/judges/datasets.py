"""Training and evaluation data of the trained judges: labelled (summary, unit) pairs, from a REALSumm or
PyrXSum folder or from campaigns' gold labels."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from annotation.importing.readers import ProblemList, read_folder
from annotation.automation.judges.base import JudgeError, PresencePair
from annotation.models import ContentUnit, SystemSummary
from annotation.selectors.scores import gold_rows


@dataclass
class PresenceDataset:
    """Labelled (summary, unit) pairs; ``examples`` groups pairs for splits by example."""

    pairs: list[PresencePair] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.pairs)

    def add(self, summary: str, unit: str, label: int, example: str, system: str) -> None:
        self.pairs.append(PresencePair(summary=summary, unit=unit))
        self.labels.append(int(label))
        self.examples.append(example)
        self.systems.append(system)


def dataset_from_folder(folder) -> PresenceDataset:
    """Pairs and gold labels of a REALSumm/PyrXSum folder (clear error when it is not one)."""
    folder = Path(folder)
    problems = ProblemList()
    contents = read_folder(folder, problems)
    if problems:
        raise JudgeError(f"{folder}: " + "; ".join(f"{p.file}:{p.line or ''} {p.message}" for p in problems[:5]))
    if contents.units is None or not contents.units.labels:
        raise JudgeError(f"{folder} has no SCUs.txt with labels/<system>.label files to train on")
    data = PresenceDataset(sources=[str(folder)])
    for record in contents.summaries:
        labels = contents.units.labels.get(record.system, {}).get(record.id)
        if labels is None:
            continue
        for unit, label in zip(contents.units.units[record.id], labels):
            data.add(record.summary, unit, label, f"{folder.name}/{record.id}", record.system)
    return data


def dataset_from_campaigns(campaigns) -> PresenceDataset:
    """Pairs of the campaigns' gold labels (the crowd majority where there is one, else the imported label)."""
    data = PresenceDataset()
    for campaign in campaigns:
        rows = [r for r in gold_rows(campaign) if r[3] >= 0]
        units = dict(ContentUnit.objects.filter(example__campaign=campaign).values_list("pk", "text"))
        summaries = {
            pk: (text, example, system)
            for pk, text, example, system in SystemSummary.objects.filter(system__campaign=campaign).values_list(
                "pk", "text", "example__external_id", "system__name"
            )
        }
        for unit, summary, _, present in rows:
            text, example, system = summaries[summary]
            data.add(text, units[unit], present, f"{campaign.slug}/{example}", system)
        data.sources.append(f"campaign:{campaign.slug}")
    return data
