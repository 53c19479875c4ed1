"""Presence-judge benchmark: inference throughput of the trained (cross-encoder) judge with
length-sorted batches and dynamic padding against padding every input to 400 tokens (same model:
pair features, frozen bottom layers, top layers and head), and the lexical judge.

The judge is the saved ``trained`` model when it is a cross-encoder, else one with an untrained top
of the default settings (the same computation, so the same speed).

Prints one line per figure:
  judges inference=dynamic judge=cross-encoder(saved|untrained-top) pairs=N pairs_per_s=X
  judges inference=pad400 judge=... pairs=N pairs_per_s=Y
  judges padding_speedup=Z
  judges lexical pairs=N pairs_per_s=W
With BENCH_JUDGES_FULL=1 it also runs the whole 5-fold evaluation on REALSumm with the zero-shot
test on PyrXSum (about 20 minutes on 2 cores) and prints its figures.  Uses ../shared/data when present,
otherwise synthetic texts for the speed figures.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import django  # noqa: E402

django.setup()

from annotation.automation.judges.base import PresencePair  # noqa: E402

DATA = REPO.parent / "shared" / "data"
N_EXAMPLES = int(os.environ.get("BENCH_JUDGES_EXAMPLES", "8"))
N_SYSTEMS = int(os.environ.get("BENCH_JUDGES_SYSTEMS", "8"))


def sample_pairs() -> list[PresencePair]:
    """REALSumm pairs of the first examples and systems, or synthetic ones of similar lengths."""
    from annotation.automation.judges.datasets import dataset_from_folder

    folder = DATA / "realsumm"
    if folder.is_dir():
        data = dataset_from_folder(folder)
        examples = list(dict.fromkeys(data.examples))[:N_EXAMPLES]
        systems = list(dict.fromkeys(data.systems))[:N_SYSTEMS]
        return [p for p, e, s in zip(data.pairs, data.examples, data.systems) if e in examples and s in systems]
    words = "the mayor opened a new park on monday while children played there all day long".split()
    pairs = []
    for e in range(N_EXAMPLES):
        for s in range(N_SYSTEMS):
            summary = " . ".join(" ".join(words[(e + s + k) % len(words):] + words[:k]) for k in range(4)) + " ."
            pairs += [PresencePair(summary, " ".join(words[u : u + 6])) for u in range(10)]
    return pairs


def cross_encoder_judge():
    from annotation.automation.judges.base import JudgeError
    from annotation.automation.judges.crossencoder import CrossEncoderJudge
    from annotation.automation.judges.trained import load_trained_judge

    try:
        judge = load_trained_judge()
        if isinstance(judge, CrossEncoderJudge):
            return judge, "saved"
    except JudgeError:
        pass
    return CrossEncoderJudge.untrained(), "untrained-top"


def main() -> int:
    from annotation.automation.judges.lexical import ContentWordJudge

    pairs = sample_pairs()
    judge, origin = cross_encoder_judge()
    judge.predict(pairs[:20])  # warm-up (first call allocations)
    rates = {}
    for mode, pad_to in (("dynamic", None), ("pad400", 400)):
        started = time.perf_counter()
        judge.predict(pairs, pad_to=pad_to)
        rates[mode] = len(pairs) / (time.perf_counter() - started)
        print(f"judges inference={mode} judge=cross-encoder({origin}) pairs={len(pairs)} "
              f"pairs_per_s={rates[mode]:.1f}", flush=True)
    print(f"judges padding_speedup={rates['dynamic'] / rates['pad400']:.2f}", flush=True)
    judge = ContentWordJudge()
    started = time.perf_counter()
    judge.predict(pairs)
    print(f"judges lexical pairs={len(pairs)} pairs_per_s={len(pairs) / (time.perf_counter() - started):.0f}", flush=True)
    if os.environ.get("BENCH_JUDGES_FULL") == "1" and (DATA / "realsumm").is_dir():
        from annotation.automation.judges.evaluation import cross_validate
        from annotation.automation.judges.datasets import dataset_from_folder

        test = dataset_from_folder(DATA / "pyrxsum") if (DATA / "pyrxsum").is_dir() else None
        started = time.perf_counter()
        result = cross_validate(dataset_from_folder(DATA / "realsumm"), folds=5, test_data=test)
        keys = ("accuracy", "f1_present", "summary_pearson", "summary_pearson_probability", "system_pearson", "summary_kendall",
                "system_kendall", "train_seconds", "pairs_per_second")
        print("judges eval=realsumm-5fold " + " ".join(f"{k}={result[k]}" for k in keys)
              + f" wall_s={time.perf_counter() - started:.0f}", flush=True)
        if "zero_shot" in result:
            z = result["zero_shot"]
            print("judges eval=pyrxsum-zero-shot " + " ".join(f"{k}={z[k]}" for k in keys[:7]), flush=True)
        if os.environ.get("BENCH_JUDGES_JSON"):
            Path(os.environ["BENCH_JUDGES_JSON"]).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
