"""The trained judge: training on a small data set, saving, reloading, judging, evaluating."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.automation.judges import registry
from annotation.automation.judges.base import JudgeError
from annotation.automation.judges.datasets import dataset_from_folder
from annotation.automation.judges.trained import load_trained_judge

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


# Small settings keep the cross-encoder tests fast: short inputs, a few epochs of small batches.
FAST = ["--epochs", "4", "--max-length", "64", "--batch-size", "16"]


def test_train_save_reload_and_judge(learnable_folder, models_dir, capsys):
    call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "tiny", *FAST)
    printed = json.loads(capsys.readouterr().out)
    assert printed["training_data"]["pairs"] == 240 and printed["validation"]["pairs"] > 0
    metadata = json.loads((models_dir / "tiny" / "metadata.json").read_text())
    assert metadata["kind"] == "cross-encoder" and metadata["training_data"]["sources"] == [str(learnable_folder)]
    assert set(metadata) >= {"features", "settings", "threshold", "validation", "training_metrics", "seconds",
                             "history", "weights_sha256", "head_sha256", "encoder_sha256", "feature_mean", "feature_std",
                             "stack"}
    assert metadata["settings"]["frozen_layers"] == 5 and metadata["settings"]["max_length"] == 64
    assert len(metadata["history"]) == 4 and 1 <= metadata["validation"]["epoch"] <= 4
    assert metadata["training_metrics"]["accuracy"] > 0.9  # the signal is plain: the judge learned it
    assert (models_dir / "tiny" / "top.safetensors").exists() and (models_dir / "tiny" / "head.joblib").exists()
    # the held-out examples weighed the cross-encoder against the features head and chose the threshold
    assert len(metadata["stack"]) == 3 and metadata["threshold"] == metadata["validation"]["threshold"]
    data = dataset_from_folder(learnable_folder)
    registry.forget_judges()
    judge = registry.get_judge("trained:tiny")
    first = judge.predict(data.pairs[:40])
    registry.forget_judges()
    again = load_trained_judge("tiny").predict(data.pairs[:40])
    assert np.allclose(first, again, atol=1e-6)  # the saved model reloads and predicts the same
    assert np.mean(judge.decide(first) == np.array(data.labels[:40], bool)) > 0.9
    assert judge.version.startswith("trained-2/tiny/")
    # Inputs padded to a fixed length give the same probabilities as length-sorted dynamic padding.
    assert np.allclose(judge.predict(data.pairs[:40], pad_to=96), first, atol=2e-3)


def test_new_weights_get_a_new_version_and_changed_weights_are_refused(learnable_folder, models_dir):
    call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "tiny", *FAST)
    first = load_trained_judge("tiny").version
    call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "tiny",
                 "--epochs", "2", "--max-length", "64", "--batch-size", "16")
    registry.forget_judges()
    second = registry.get_judge("trained:tiny").version
    assert second != first and second.startswith("trained-2/tiny/")  # cached answers of the old weights are not reused
    for name in ("head.joblib", "top.safetensors"):
        path = models_dir / "tiny" / name
        original = path.read_bytes()
        path.write_bytes(original[:-8] + b"tampered")
        with pytest.raises(JudgeError, match=f"{name} does not match its metadata"):
            load_trained_judge("tiny")
        path.write_bytes(original)
    assert load_trained_judge("tiny").version == second
    weights = models_dir / "tiny" / "top.safetensors"
    weights.unlink()
    with pytest.raises(JudgeError, match="no top.safetensors"):
        load_trained_judge("tiny")


def test_features_kind_is_still_available(learnable_folder, models_dir):
    call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "feat", "--kind", "features")
    metadata = json.loads((models_dir / "feat" / "metadata.json").read_text())
    assert metadata["kind"] == "features" and metadata["training_metrics"]["accuracy"] > 0.9
    judge = load_trained_judge("feat")
    assert judge.version.startswith("trained-1/feat/")
    data = dataset_from_folder(learnable_folder)
    assert np.mean(judge.decide(judge.predict(data.pairs[:40])) == np.array(data.labels[:40], bool)) > 0.9


def test_cached_bottom_states_feed_the_top_exactly():
    """Bottom layers computed once and the (untrained) top copies reproduce the whole encoder."""
    import torch

    from annotation.automation.judges.crossencoder import CrossEncoderSettings, bottom_states, build_top
    from annotation.automation.judges.encoder import shared_encoder

    encoder = shared_encoder()
    texts = [("the mayor opened a park", "the mayor opened a new park on monday . children played there ."),
             ("prices rose", "officials gave no details .")]
    batch = encoder.tokenizer([a for a, _ in texts], [b for _, b in texts], padding=True, return_tensors="pt")
    with torch.inference_mode():
        whole = encoder.model(**batch).last_hidden_state
    states = bottom_states(encoder, 3, texts, max_length=64)
    top = build_top(encoder.model, CrossEncoderSettings(frozen_layers=3), n_features=0)
    assert len(top.layers) == 3
    for i, state in enumerate(states):
        n = int(batch["attention_mask"][i].sum())
        assert state.dtype == torch.float16 and state.shape == (n, encoder.model.config.hidden_size)
        with torch.inference_mode():
            from annotation.automation.judges.crossencoder import run_layers

            out = run_layers(top.layers, encoder.model.config, state.float()[None], torch.ones(1, n, dtype=torch.long))
        assert torch.allclose(out[0], whole[i, :n], atol=2e-2)
    # The top's layers are copies: training them never changes the shared (frozen) encoder.
    assert top.layers[0].attention.self.query.weight.data_ptr() != encoder.model.encoder.layer[3].attention.self.query.weight.data_ptr()


def test_trained_judge_scores_a_campaign(learnable_folder, gold_campaign, django_capture_on_commit_callbacks):
    from annotation.automation.autoscore import start_autoscore_run

    call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "tiny", *FAST)
    call_command("train_presence_judge", "--campaign", gold_campaign.slug, "--out", "from-campaign", *FAST)
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
    with pytest.raises(CommandError, match="--frozen-layers must be"):
        call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "x", "--frozen-layers", "6")
    call_command("train_presence_judge", "--folder", str(learnable_folder), "--out", "tiny", "--kind", "features")
    head = models_dir / "tiny" / "head.joblib"
    head.write_bytes(head.read_bytes() + b"tampered")
    with pytest.raises(JudgeError, match="does not match its metadata"):
        load_trained_judge("tiny")


@pytest.mark.parametrize("kind", ["cross-encoder", "features"])
def test_evaluation_command_prints_the_figures(learnable_folder, capsys, kind):
    call_command("evaluate_presence_judge", "--folder", str(learnable_folder), "--folds", "3", "--format", "json",
                 "--test-folder", str(learnable_folder), "--kind", kind, *FAST)
    result = json.loads(capsys.readouterr().out)
    for key in ("accuracy", "f1_present", "summary_pearson", "system_pearson", "summary_kendall", "summary_kendall_undefined",
                "system_kendall", "train_seconds", "pairs_per_second", "summary_pearson_probability"):
        assert key in result
    assert result["kind"] == kind and result["accuracy"] > 0.9 and result["pairs"] == 240
    assert len(result["thresholds"]) == 3
    assert result["zero_shot"]["pairs"] == 240 and result["zero_shot"]["accuracy"] > 0.9
    if kind == "cross-encoder":
        folds = result["fold_details"]
        assert [f["fold"] for f in folds] == [0, 1, 2] and all(f["validation"]["pairs"] > 0 for f in folds)
        assert all(f["test"]["accuracy"] > 0.85 for f in folds)
    with pytest.raises(CommandError, match="cannot be split into 20 folds"):
        call_command("evaluate_presence_judge", "--folder", str(learnable_folder), "--folds", "20")
