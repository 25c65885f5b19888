"""The dev retrieval benchmark: tatoeba-test and newstest2012, en-fr/de/es, both directions.

Usage: python benchmarks/dev_sets.py --model default [--model e5-small] [--data ../shared/data]
E5 embeddings are read from the cache written by benchmarks/cache_e5_dev.py when present.
Prints JSON: {set: {"en2xx": {P@1,P@3,P@10}, "xx2en": {...}, "n": N}} per model.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from bimine.encoders import load_encoder
from bimine.eval.retrieval import evaluate_retrieval
from bimine.text.io import read_lines

SETS = [(f"tatoeba-test.en-{x}", f"dev/tatoeba-test/tatoeba-test.en-{x}", x) for x in ("fr", "de", "es")] + [
    (f"newstest2012.en-{x}", f"dev/newstest/newstest2012.en-{x}", x) for x in ("fr", "de", "es")
]


def _embed(enc, path: str, lang: str, cache: str | None) -> np.ndarray:
    if cache:
        f = os.path.join(cache, os.path.basename(path) + ".npy")
        if os.path.exists(f):
            return np.load(f)
    return enc.encode(list(read_lines(path)), lang)


def evaluate_model(model: str, data: str = "../shared/data", cache: str | None = None) -> dict:
    enc = None if (cache and model == "e5-small") else load_encoder(model)
    out = {}
    for name, stem, x in SETS:
        src, tgt = os.path.join(data, f"{stem}.en"), os.path.join(data, f"{stem}.{x}")
        xs, ys = list(read_lines(src)), list(read_lines(tgt))
        keep = [i for i in range(len(xs)) if xs[i].strip() and ys[i].strip()]
        u = _embed(enc, src, "en", cache)[keep]
        v = _embed(enc, tgt, x, cache)[keep]
        r = evaluate_retrieval(u, v, [xs[i] for i in keep], [ys[i] for i in keep])
        out[name] = {
            "n": len(keep),
            "en2xx": {str(k): round(100 * p, 2) for k, p in r["src2tgt"].precision.items()},
            "xx2en": {str(k): round(100 * p, 2) for k, p in r["tgt2src"].precision.items()},
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", default=None)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--e5-cache", default=".bench/e5")
    args = ap.parse_args()
    res = {
        m: evaluate_model(m, args.data, args.e5_cache if m == "e5-small" else None)
        for m in (args.model or ["default"])
    }
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
