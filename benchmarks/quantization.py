"""Dev scores of one trained checkpoint exported with each embedding-table storage.

Usage: python -m benchmarks.quantization RUN_DIR [none int8 int4 pq40 ...] [--xsim SETS]
Loads RUN_DIR/checkpoint, exports it once per storage form to a temporary folder and prints
newstest2012 P@1 (en->xx, xx->en) and the model file size for each; with ``--xsim mya,khm,...``
(NTREX set names, or ``issue56`` for the sets of issue 56's table) also each set's xsim error
(mean of the two directions, %, as ``python -m benchmarks.xsim``) and their mean.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import torch
import yaml
from safetensors.torch import load_file

from benchmarks.dev_sets import evaluate_model
from benchmarks.xsim import evaluate, ntrex_sets
from bimine.text.subwords import from_tensors
from bimine.text.translit import table_from_tensors
from bimine.training.model import TorchDAN
from bimine.training.trainer import export_model, load_train_config

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data")


def main() -> None:
    args = sys.argv[1:]
    xsim_names: list[str] = []
    if "--xsim" in args:
        i = args.index("--xsim")
        if i + 1 >= len(args):
            raise SystemExit("--xsim needs comma-separated NTREX set names (or issue56)")
        xsim_names = args[i + 1].split(",")
        del args[i : i + 2]
    if not args:
        raise SystemExit(__doc__)
    run = args[0]
    forms = args[1:] or ["none", "int8", "int4"]
    sets = xsim_sets(xsim_names)
    torch.set_num_threads(1)
    cfg = load_train_config(yaml.safe_load(open(f"{run}/config.yaml")), ".")
    model = TorchDAN(cfg.model)
    state = load_file(f"{run}/checkpoint/state.safetensors")
    model.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("model.")})
    step = json.load(open(f"{run}/checkpoint/state.json"))["step"]
    print(f"{run} checkpoint at step {step}")
    # the romanisation table and subword model the run used, from its exported model (None: not used)
    shipped = load_file(f"{run}/model/model.safetensors") if os.path.isfile(f"{run}/model/model.safetensors") else {}
    translit, subwords = table_from_tensors(shipped), from_tensors(shipped)
    if cfg.model.features.subwords and subwords is None:
        raise SystemExit(f"{run}/model has no subword model: export the run first (it ends with one)")
    with tempfile.TemporaryDirectory() as tmp:
        for q in forms:
            cfg.export_quantize = q
            out = Path(tmp) / q
            export_model(model, cfg, out, {"step": step}, translit_table=translit, subword_model=subwords)
            r = evaluate_model(str(out))
            mb = os.path.getsize(out / "model.safetensors") / 1e6
            news = {k.split(".")[1]: (v["en2xx"]["1"], v["xx2en"]["1"]) for k, v in r.items() if "news" in k}
            print(f"{q:>6} {mb:7.1f} MB  newstest2012 P@1 {news}", flush=True)
            if sets:
                from bimine import load_encoder

                res = evaluate(load_encoder(str(out)), sets, q)
                errs = {n: r["mean"] for n, r in res.items()}
                print(f"{q:>6} xsim % " + " ".join(f"{n} {e:.2f}" for n, e in errs.items())
                      + f"; mean {sum(errs.values()) / len(errs):.2f}", flush=True)


def xsim_sets(names: list[str]) -> list[tuple[str, str, str, str]]:
    """The NTREX sets of ``names`` (``issue56``: those of issue 56's first table)."""
    if not names:
        return []
    if names == ["issue56"]:
        from benchmarks.xsim_ablation import ISSUE_SETS

        names = ISSUE_SETS
    every = {s[0]: s for s in ntrex_sets(DATA)}
    unknown = [n for n in names if n not in every]
    if unknown:
        raise SystemExit(f"--xsim: no NTREX set {', '.join(unknown)} under {DATA}")
    return [every[n] for n in names]


if __name__ == "__main__":
    main()
