"""The trained judge: training on a small data set, saving, reloading, judging, evaluating."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.judges import registry
from annotation.judges.base import JudgeError
from annotation.judges.trained import dataset_from_folder, load_trained_judge

FACTS = [
    "the council approved the budget", "the river flooded the town", "the striker scored twice",
    "the factory closed in march", "the minister resigned on friday", "prices rose sharply last year",
    "the museum reopened after repairs", "the storm damaged hundreds of homes", "the senator denied the claims",
    "the airline cancelled many flights", "the police arrested two men", "the school banned mobile phones",
]
FILLER = ["officials gave no details", "more news is expected soon", "the report was published online"]


@pytest.fixture
def learnable_folder(tmp_path):
    """12 examples x 4 systems x 5 units; a unit is present exactly when its sentence is in the summary."""
    rng = random.Random(0)
    folder = tmp_path / "learnable"
    (folder / "summaries").mkdir(parents=True)
    (folder / "labels").mkdir()
    ids, refs, units = [], [], []
    for e in range(12):
        facts = [FACTS[(e + k) % len(FACTS)] for k in range(5)]
        ids.append(f"x{e}")
        refs.append(" . ".join(facts) + " .")
        units.append(facts)
    for s in range(4):
        summaries, labels = [], []
        for facts in units:
            keep = [rng.random() < 0.5 for _ in facts]
            parts = [f for f, k in zip(facts, keep) if k] + [rng.choice(FILLER)]
            summaries.append(" <t> " + " . </t> <t> ".join(parts) + " . </t>")
            labels.append("\t".join(str(int(k)) for k in keep))
        (folder / "summaries" / f"sys{s}.summary").write_text("\n".join(summaries) + "\n")
        (folder / "labels" / f"sys{s}.label").write_text("\n".join(labels) + "\n")
    (folder / "ids.txt").write_text("\n".join(ids) + "\n")
    (folder / "references.txt").write_text("\n".join(refs) + "\n")
    (folder / "SCUs.txt").write_text("\n".join("\t".join(u) for u in units) + "\n")
    return folder


def test_train_save_reload_and_judge(learnable_folder, models_dir, capsys):
    call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "tiny")
    printed = json.loads(capsys.readouterr().out)
    assert printed["training_data"]["pairs"] == 240 and printed["validation"]["n"] > 0
    metadata = json.loads((models_dir / "tiny" / "metadata.json").read_text())
    assert metadata["training_data"]["sources"] == [str(learnable_folder)]
    assert set(metadata) >= {"features", "head", "threshold", "validation", "training_metrics", "seconds", "head_sha256"}
    assert metadata["training_metrics"]["accuracy"] > 0.9  # the signal is plain: the judge learned it
    data = dataset_from_folder(learnable_folder)
    registry.forget_judges()
    judge = registry.get_judge("trained:tiny")
    first = judge.predict(data.pairs[:40])
    registry.forget_judges()
    again = load_trained_judge("tiny").predict(data.pairs[:40])
    assert np.allclose(first, again)  # the saved model reloads and predicts the same
    assert np.mean(judge.decide(first) == np.array(data.labels[:40], bool)) > 0.9
    assert judge.version.startswith("trained-1/tiny/")


def test_trained_judge_scores_a_campaign(learnable_folder, gold_campaign, django_capture_on_commit_callbacks):
    from annotation.services.autoscore import start_autoscore_run

    call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "tiny")
    call_command("train_presence_judge", "--campaign", gold_campaign.slug, "--out", "from-campaign")
    registry.forget_judges()
    with django_capture_on_commit_callbacks(execute=True):
        run = start_autoscore_run(gold_campaign, "trained:tiny")
    run.refresh_from_db()
    assert run.state == "finished" and run.results["presence"]["n"] == 27
    meta = load_trained_judge("from-campaign").metadata
    assert meta["training_data"]["sources"] == [f"campaign:{gold_campaign.slug}"] and meta["training_data"]["pairs"] == 27


@pytest.mark.django_db
def test_bad_training_requests(learnable_folder, tmp_path, models_dir):
    with pytest.raises(CommandError, match="--campaign SLUG or --folder"):
        call_command("train_presence_judge")
    with pytest.raises(CommandError, match="invalid model name"):
        call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "../escape")
    with pytest.raises(CommandError, match="is not a directory"):
        call_command("train_presence_judge", "--folder", str(tmp_path / "nowhere"), "--out", "x")
    with pytest.raises(CommandError, match="no campaign"):
        call_command("train_presence_judge", "--campaign", "missing", "--out", "x")
    assert not (models_dir / "x").exists()
    call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "tiny")
    head = models_dir / "tiny" / "head.joblib"
    head.write_bytes(head.read_bytes() + b"tampered")
    with pytest.raises(JudgeError, match="does not match its metadata"):
        load_trained_judge("tiny")


def test_evaluation_command_prints_the_figures(learnable_folder, capsys):
    call_command("evaluate_presence_judge", "--folder", str(learnable_folder), "--folds", "3", "--format", "json",
                 "--test-folder", str(learnable_folder))
    result = json.loads(capsys.readouterr().out)
    for key in ("accuracy", "f1", "summary_pearson", "system_pearson", "summary_kendall", "system_kendall",
                "train_seconds", "pairs_per_second"):
        assert key in result
    assert result["accuracy"] > 0.9 and result["pairs"] == 240 and len(result["thresholds"]) == 3
    assert result["zero_shot"]["pairs"] == 240
    with pytest.raises(CommandError, match="cannot be split into 20 folds"):
        call_command("evaluate_presence_judge", "--folder", str(learnable_folder), "--folds", "20")
