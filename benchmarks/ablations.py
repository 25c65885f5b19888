"""Ablations like paper 000 Table 2 / paper 001 Table 1, on the dev sets.

Trains one short run per variant (same data and architecture as configs/en-fr-de-es.yaml, the
pre-issue-9 default; fewer steps), then evaluates P@1/3/10 both ways on tatoeba-test and newstest2012 (en-fr/de/es).
Usage: python -m benchmarks.ablations [--steps 2000] [--out .bench/ablations]
Results: OUT/<variant>.json; `benchmarks/report_retrieval.py` turns them into a table.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from bimine.config import apply_overrides, load_yaml
from bimine.training.trainer import Trainer, load_train_config

# one factor at a time from paper 000's setup (random negatives, one direction, no margin)
VARIANTS = {
    "random-uni-m0": ["loss.bidirectional=false", "loss.margin=0.0"],
    "random-bi-m0": ["loss.bidirectional=true", "loss.margin=0.0"],
    "random-bi-m0.3": ["loss.bidirectional=true", "loss.margin=0.3"],
    "hard3-bi-m0.3": ["loss.bidirectional=true", "loss.margin=0.3", "hard_negatives.per_example=3"],
    "hard3-uni-m0": ["loss.bidirectional=false", "loss.margin=0.0", "hard_negatives.per_example=3"],
    "random-uni-m0.3": ["loss.bidirectional=false", "loss.margin=0.3"],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/en-fr-de-es.yaml")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--out", default=".bench/ablations")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    from benchmarks.dev_sets import evaluate_model

    for name, over in VARIANTS.items():
        if args.only and name not in args.only:
            continue
        res_path = os.path.join(args.out, f"{name}.json")
        if os.path.exists(res_path):
            continue
        base = [
            f"train.steps={args.steps}",
            "train.eval_every=100000",
            "hard_negatives.per_example=0",
            f"hard_negatives.start_step={args.steps // 2}",
            "train.checkpoint_every=100000",
            f"train.threads={args.threads}",
        ]
        data = apply_overrides(load_yaml(args.config), base + over)
        data["data"]["dev"] = []
        cfg = load_train_config(data, os.path.dirname(os.path.abspath(args.config)))
        t = time.time()
        model_dir = Trainer(cfg, os.path.join(args.out, name)).fit(progress=False)
        minutes = (time.time() - t) / 60
        res = {
            "variant": name,
            "overrides": over,
            "steps": args.steps,
            "train_minutes": round(minutes, 1),
            "scores": evaluate_model(str(model_dir)),
        }
        with open(res_path, "w") as f:
            json.dump(res, f, indent=1)
        print(name, json.dumps(res["scores"]), flush=True)


if __name__ == "__main__":
    main()
