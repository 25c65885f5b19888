"""Dev scores of one trained checkpoint exported with each embedding-table storage.

Usage: python -m benchmarks.quantization RUN_DIR [none int8 int4 pq40 ...]
Loads RUN_DIR/checkpoint, exports it once per storage form to a temporary folder and prints
newstest2012 P@1 (en->xx, xx->en) and the model file size for each.
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
from bimine.training.model import TorchDAN
from bimine.training.trainer import export_model, load_train_config


def main() -> None:
    run = sys.argv[1]
    forms = sys.argv[2:] or ["none", "int8", "int4"]
    torch.set_num_threads(1)
    cfg = load_train_config(yaml.safe_load(open(f"{run}/config.yaml")), ".")
    model = TorchDAN(cfg.model)
    state = load_file(f"{run}/checkpoint/state.safetensors")
    model.load_state_dict({k[6:]: v for k, v in state.items() if k.startswith("model.")})
    step = json.load(open(f"{run}/checkpoint/state.json"))["step"]
    print(f"{run} checkpoint at step {step}")
    with tempfile.TemporaryDirectory() as tmp:
        for q in forms:
            cfg.export_quantize = q
            out = Path(tmp) / q
            export_model(model, cfg, out, {"step": step})
            r = evaluate_model(str(out))
            mb = os.path.getsize(out / "model.safetensors") / 1e6
            news = {k.split(".")[1]: (v["en2xx"]["1"], v["xx2en"]["1"]) for k, v in r.items() if "news" in k}
            print(f"{q:>6} {mb:7.1f} MB  newstest2012 P@1 {news}", flush=True)


if __name__ == "__main__":
    main()
