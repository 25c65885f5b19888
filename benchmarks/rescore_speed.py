"""Speed of the rescoring stage (issue 15): rescored pairs per second, and its share of a mining run.

Usage: python -m benchmarks.rescore_speed [--n 100000 1000000] [--rescorer trees] [--cross default]
       [--out .bench/rescore-speed]

The sides of ``benchmarks.mining_scale`` (N distinct lines each of the training data: English
and French against German and Spanish, then Bible files). For each N, two fresh processes:

1. ``bimine mine A B --work-dir W`` (the plain run, end to end from text);
2. ``bimine mine A B --work-dir W --rescore R``: embeddings and kNN lists are reused from run 1,
   so its work is the rescoring of the same selected pairs (the ``rescore`` step of its summary).

With ``--cross R`` (a rescorer with a cross-encoder stage: ``default``, or a folder from
``train-rescorer --cross``), a third process ``bimine mine A B --work-dir W --rescore R``: the trees again, then the
cross-encoder on the candidates at or above its floor (``cross_pairs``).

Reported: the pairs rescored, the ``rescore`` step's seconds and pairs per second, run 2's whole
wall time (start-up and loading the reused files included), and the share of the rescoring in a
rescored run, ``rescore / (run 1 wall + rescore)``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess

from benchmarks.harness import write_json
from benchmarks.mining_scale import run_mine, scale_inputs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[100000])
    ap.add_argument("--rescorer", default="trees")
    ap.add_argument("--cross", default=None, help="also a rescorer with a cross-encoder stage")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default=".bench/rescore-speed")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.data, "train")):
        print(f"needs {args.data}/train: skipped")
        return
    results = []
    for n, fa, fb, work in scale_inputs(args.data, args.out, args.n):
        common = [fa, fb, "--src-lang", "en", "--tgt-lang", "de", "--work-dir", work]
        plain = run_mine([*common, "-o", os.path.join(args.out, f"plain.{n}.tsv")])
        rescored = run_mine([*common, "-o", os.path.join(args.out, f"rescored.{n}.tsv"), "--rescore", args.rescorer])
        step = float(re.search(r"rescore ([\d.]+)s", rescored["steps"]).group(1))
        res = {"n": n, "plain": plain, "rescored": rescored, "pairs": rescored["pairs"], "rescore_s": step,
               "pairs_per_s": round(rescored["pairs"] / step, 1),
               "share_of_rescored_run": round(step / (plain["wall_s"] + step), 3)}
        if args.cross:
            crossed = run_mine([*common, "-o", os.path.join(args.out, f"cross.{n}.tsv"), "--rescore", args.cross])
            cstep = float(re.search(r"rescore ([\d.]+)s", crossed["steps"]).group(1))
            res["cross"] = {"run": crossed, "rescore_s": cstep, "cross_pairs": crossed.get("cross_pairs"),
                            "cross_pairs_per_s": round(crossed.get("cross_pairs", 0) / max(cstep - step, 1e-9), 1),
                            "share_of_rescored_run": round(cstep / (plain["wall_s"] + cstep), 3)}
        results.append(res)
        print(json.dumps(res), flush=True)
        subprocess.run(["rm", "-rf", work])
    write_json(os.path.join(args.out, "results.json"), results)


if __name__ == "__main__":
    main()
