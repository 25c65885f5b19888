"""Training throughput (pairs/s) from a run's log.jsonl, per phase.

Usage: python -m benchmarks.train_throughput runs/default [--hard-start STEP]
Reports the median pairs/s over the logged intervals before and after hard negatives start
(the logged rate is measured between log points, evaluation pauses excluded).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import yaml


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    args = ap.parse_args()
    cfg = yaml.safe_load(open(os.path.join(args.run, "config.yaml")))
    hn = cfg["hard_negatives"]
    start = hn["start_step"] if hn["per_example"] > 0 and not hn.get("baseline") else 10**12
    rows = [json.loads(x) for x in open(os.path.join(args.run, "log.jsonl"))]
    rates = [(r["step"], r["pairs_per_s"]) for r in rows if "pairs_per_s" in r]
    # skip the first interval (start-up) and intervals that contain an evaluation
    evals = {r["step"] for r in rows if "dev" in r}
    every = cfg["train"]["log_every"]
    clean = [(s, p) for s, p in rates[1:] if not any(s - every < e <= s for e in evals) and s != start + every]
    before = [p for s, p in clean if s <= start]
    after = [p for s, p in clean if s > start + every]
    bs = cfg["train"]["batch_size"]
    print(f"batch {bs}, threads {cfg['train']['threads']}")
    if before:
        print(f"random negatives: median {statistics.median(before):.0f} pairs/s over {len(before)} intervals")
    if after:
        print(f"with {hn['per_example']} hard negatives for {hn['fraction']:.0%} of pairs: "
              f"median {statistics.median(after):.0f} pairs/s over {len(after)} intervals")
    last = [r for r in rows if "elapsed" in r][-1]
    print(f"total: {last['step']} steps in {last['elapsed'] / 60:.1f} min (evaluation and mining included)")


if __name__ == "__main__":
    main()
