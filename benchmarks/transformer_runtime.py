"""Inference runtimes of a transformer model on the CPU (issue 16): plain PyTorch (the packed
float32 module), dynamic int8 linear layers and ONNX Runtime, side by side in one run.

Usage:
    python -m benchmarks.transformer_runtime MODEL_FOLDER [--runtime torch --runtime int8 --runtime onnx]
        [--lines 3000] [--repeats 3] [--json OUT]

For each runtime (``TransformerEncoder(runtime=...)``):

- load seconds (the ONNX runtime exports the module to ONNX in memory while loading);
- in-process speed: ``encode`` of ``--lines`` newstest2012 English sentences after a warm-up,
  the median of ``--repeats`` runs (whole-process speed is ``benchmarks.encoders_table``'s,
  with the default runtime);
- the vectors against PyTorch float32's on those sentences: mean and minimum cosine;
- tatoeba-test and newstest2012 en-fr/de/es P@1 (``benchmarks.dev_sets``), both directions,
  and their change from float32's: a runtime "keeps the scores" if no P@1 moves by more than
  0.2 points.

Skips (exit 0) when the data folder is absent; a runtime whose library is missing
(``onnxruntime``) is reported as such and left out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from benchmarks.dev_sets import evaluate_model
from benchmarks.harness import timed, write_json
from bimine.encoders.transformer import RUNTIMES, TransformerEncoder
from bimine.errors import ConfigError
from bimine.text.io import read_lines


def measure(model: str, runtime: str, sentences: list[str], repeats: int, data: str) -> tuple[dict, np.ndarray]:
    enc, load = timed(lambda: TransformerEncoder.load(model, runtime=runtime))
    enc.encode(sentences[:64], "en")  # warm-up
    vectors, t = timed(lambda: enc.encode(sentences, "en"), repeat=repeats)
    dev = evaluate_model(enc, data)
    p1 = {name: [d["en2xx"]["1"], d["xx2en"]["1"]] for name, d in dev.items()}
    return {"load_s": round(load["wall_s"], 2), "sentences_per_s": round(len(sentences) / t["wall_s"], 1),
            "p1": p1}, vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a transformer model folder (written by bimine train)")
    ap.add_argument("--runtime", action="append", choices=RUNTIMES, default=None)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--lines", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        print(f"skipped: {args.data} not found")
        return
    runtimes = args.runtime or list(RUNTIMES)
    if "torch" not in runtimes:
        runtimes = ["torch", *runtimes]  # the reference of the cosines and P@1 changes
    news = [s for s in read_lines(os.path.join(args.data, "dev/newstest/newstest2012.en-fr.en")) if s.strip()]
    sentences = news[: args.lines]
    out, ref = {}, None
    for runtime in runtimes:
        print(f"{runtime} ...", file=sys.stderr, flush=True)
        try:
            row, vectors = measure(args.model, runtime, sentences, args.repeats, args.data)
        except ConfigError as e:
            out[runtime] = {"error": str(e)}
            print(json.dumps({runtime: out[runtime]}), flush=True)
            continue
        if ref is None:
            ref = (row, vectors)
        cos = np.sum(vectors * ref[1], axis=1)
        row["cosine_mean"], row["cosine_min"] = round(float(cos.mean()), 6), round(float(cos.min()), 6)
        row["p1_change_max"] = round(max(abs(a - b) for name in row["p1"]
                                         for a, b in zip(row["p1"][name], ref[0]["p1"][name])), 2)
        out[runtime] = row
        print(json.dumps({runtime: row}), flush=True)
    if args.json:
        write_json(args.json, out)
    print(f"\n{len(sentences)} newstest2012 English sentences, median of {args.repeats} runs\n")
    print("| runtime | load | sentences/s in process | cosine to float32 mean / min | P@1 mean | largest P@1 change |")
    print("|---|---:|---:|---:|---:|---:|")
    for runtime, r in out.items():
        if "error" in r:
            print(f"| {runtime} | not run: {r['error']} | | | | |")
            continue
        p1 = np.mean([v for pair in r["p1"].values() for v in pair])
        print(f"| {runtime} | {r['load_s']:.1f} s | {r['sentences_per_s']:,.0f} | {r['cosine_mean']:.6f} / "
              f"{r['cosine_min']:.6f} | {p1:.2f} | {r['p1_change_max']:.2f} |")


if __name__ == "__main__":
    main()
