"""Fixtures of the automated-scoring tests: a small SCU campaign with gold labels."""

from __future__ import annotations

import pytest

from annotation.services.campaign_import import import_campaign

REFERENCES = [
    "<t> The mayor opened a new park on Monday . </t> <t> Children played there all day . </t>",
    "<t> Storms closed the airport in Denver . </t> <t> Hundreds of flights were cancelled . </t>",
    "<t> The company reported record profits . </t> <t> Its shares rose ten percent . </t>",
]
UNITS = [
    ["The mayor opened a park", "The park is new", "The park opened on Monday", "Children played in the park"],
    ["Storms closed the airport", "The airport is in Denver", "Hundreds of flights were cancelled"],
    ["The company reported record profits", "Shares rose ten percent"],
]
SUMMARIES = {
    "good": [
        "<t> The mayor opened a new park on Monday . </t> <t> Children played in it . </t>",
        "<t> Storms closed the Denver airport . </t> <t> Hundreds of flights were cancelled . </t>",
        "<t> The company reported record profits and its shares rose ten percent . </t>",
    ],
    "fair": [
        "<t> A park was opened by the mayor . </t>",
        "<t> Storms closed the airport . </t>",
        "<t> The company reported profits . </t>",
    ],
    "poor": [
        "<t> The weather was nice . </t>",
        "<t> Flights were cancelled . </t>",
        "<t> A company exists . </t>",
    ],
}


def _labels(system: str) -> list[list[int]]:
    table = {
        "good": [[1, 1, 1, 1], [1, 1, 1], [1, 1]],
        "fair": [[1, 0, 0, 0], [1, 0, 0], [1, 0]],
        "poor": [[0, 0, 0, 0], [0, 0, 1], [0, 0]],
    }
    return table[system]


def write_scu_folder(folder):
    (folder / "summaries").mkdir(parents=True)
    (folder / "labels").mkdir()
    (folder / "ids.txt").write_text("".join(f"ex{i}\n" for i in range(len(REFERENCES))))
    (folder / "references.txt").write_text("".join(r + "\n" for r in REFERENCES))
    (folder / "SCUs.txt").write_text("".join("\t".join(u) + "\n" for u in UNITS))
    for system, lines in SUMMARIES.items():
        (folder / "summaries" / f"{system}.summary").write_text("".join(line + "\n" for line in lines))
        (folder / "labels" / f"{system}.label").write_text(
            "".join("\t".join(str(v) for v in row) + "\n" for row in _labels(system))
        )
    return folder


@pytest.fixture
def scu_folder(tmp_path):
    return write_scu_folder(tmp_path / "tiny")


@pytest.fixture
def gold_campaign(scu_folder, researcher):
    campaign = import_campaign(name="Judges", folder=scu_folder).campaign
    campaign.owner = researcher
    campaign.save()
    return campaign


@pytest.fixture(autouse=True)
def models_dir(settings, tmp_path):
    """Trained judges of these tests live in a private models directory."""
    settings.MODELS_DIR = tmp_path / "models"
    return settings.MODELS_DIR


@pytest.fixture(autouse=True)
def tasks_in_process(eager_celery):
    """Chunks run in the test process even when CI configures a broker (the crash test starts real workers)."""
    yield
