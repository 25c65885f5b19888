"""Second-stage rescoring (issue 15, paper 001 §6.2 / Table 6) on the newstest BUCC-style dev sets.

Usage (from the repository root)::

    python -m benchmarks.rescore_dev --model default --recipe ../data/recipe [--langs 40] [--json OUT]

Training candidates: for each of the ``--langs`` recipe languages with the most pairs, a
BUCC-style corpus planted from the recipe's ``pairs/en-<lang>.tsv.gz`` (``--gold`` pairs among
the other-language sides of ``--distractors`` pairs and the English sides of as many others;
:func:`bimine.eval.bucc.plant_pairs`), mined with the model (Eq. 9, strategy max, k = 4); gold
pairs are the positives, every other selected candidate a negative (``--ratio 10``: negatives
sampled 1:10 as in 001). Rows split 80/20 into train and dev (the dev rows set the stored threshold).

Evaluation: the newstest BUCC-style sets of ``benchmarks.bucc_newstest`` (fr/de/es-en, 150 gold
pairs per split); every score's threshold is the best-F1 one on the train split, applied to the
test split (as in 001 Table 6): raw cosine, Eq. 9 and Eq. 10 mining (strategy max), and the
rescorer on the Eq. 9 candidates. Without the data the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time

import numpy as np

from bimine.encoders import load_encoder
from bimine.eval.bucc import bucc_eval, embed_split, evaluate_at, make_newstest_bucc, pr_curve, read_bucc
from bimine.mining.pipeline import MineConfig
from bimine.mining.rescore import mine_candidates, planted_corpus, train_rescorer

DATA = os.environ.get("BIMINE_SHARED_DATA", "../shared/data")


def recipe_pairs(recipe: str, lang: str, min_words: int = 0):
    """(other-language, English) pairs of the recipe's file for ``lang``, in file order, those
    whose English side has at least ``min_words`` words."""
    with gzip.open(os.path.join(recipe, "pairs", f"en-{lang}.tsv.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            en, _, xx = line.rstrip("\n").partition("\t")
            if len(en.split()) >= min_words:
                yield xx, en


def top_languages(recipe: str, n: int) -> list[str]:
    with open(os.path.join(recipe, "manifest.json"), encoding="utf-8") as f:
        langs = json.load(f)["languages"]
    count = {k: (v["pairs"] if isinstance(v, dict) else v) for k, v in langs.items()}
    return sorted(count, key=lambda k: -count[k])[:n]


def candidate_rows(split, encoder, xx: str, cfg: MineConfig, vectors=None):
    from bimine.divergence.vdpwi import WordVectors

    e = embed_split(split, encoder, xx, "en")
    c = mine_candidates(e.x, e.y, split.src, split.tgt, vectors or WordVectors(encoder), xx, "en", cfg)
    pairs = [(split.src_ids[a], split.tgt_ids[b]) for a, b in zip(c.src.tolist(), c.tgt.tolist())]
    label = np.array([p in split.gold for p in pairs], dtype=np.int8)
    return c, pairs, label, e


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--recipe", default="../data/recipe")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--langs", type=int, default=40, help="recipe languages with the most pairs to train on")
    ap.add_argument("--gold", type=int, default=300)
    ap.add_argument("--distractors", type=int, default=6000)
    ap.add_argument("--min-words", type=int, default=0, help="only pairs with this many English words")
    ap.add_argument("--near", type=int, default=0, help="hard distractors: nearest neighbours of each gold sentence")
    ap.add_argument("--pool", type=int, default=20000, help="with --near: pairs each side's distractors come from")
    ap.add_argument("--ratio", type=int, default=0, help="negatives per positive (0: all candidates)")
    ap.add_argument("--trees", type=int, default=300)
    ap.add_argument("--eval-langs", nargs="+", default=["fr", "de", "es"])
    ap.add_argument("--out", default=".bench/rescore")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.data, "dev", "newstest")) or not os.path.isdir(os.path.join(args.recipe, "pairs")):
        print(f"needs {args.data}/dev/newstest and the recipe's pairs in {args.recipe}: skipped")
        return
    enc = load_encoder(args.model)
    cfg = MineConfig(score="eq9", strategy="max", k=4)
    t0 = time.time()
    xs, ys = [], []
    for lang in top_languages(args.recipe, args.langs):
        split = planted_corpus(recipe_pairs(args.recipe, lang, args.min_words), enc, lang, "en", gold=args.gold,
                               distractors=args.distractors, near=args.near, pool=args.pool, prefix=lang)
        c, _, label, _ = candidate_rows(split, enc, lang, cfg)
        xs.append(c.features)
        ys.append(label)
        print(f"{lang}: {len(split.src)} x {len(split.tgt)} sentences, {len(label)} candidates, "
              f"{int(label.sum())} of {len(split.gold)} gold among them", flush=True)
    x, y = np.concatenate(xs), np.concatenate(ys)
    rng = np.random.default_rng(0)
    dev = rng.random(len(y)) < 0.2
    tr = ~dev
    if args.ratio:
        neg = np.flatnonzero(tr & (y == 0))
        keep_neg = rng.choice(neg, size=min(len(neg), args.ratio * int((tr & (y == 1)).sum())), replace=False)
        tr = np.zeros(len(y), bool)
        tr[np.flatnonzero(~dev & (y == 1))] = True
        tr[keep_neg] = True
    t1 = time.time()
    r = train_rescorer(x[tr], y[tr], x_dev=x[dev], y_dev=y[dev], encoder=enc.model_id, trees=args.trees)
    t2 = time.time()
    print(f"candidates {t1 - t0:.0f} s, training {t2 - t1:.0f} s on {int(tr.sum())} rows ({int(y[tr].sum())} positive); "
          f"dev F1 {r.meta['dev_f1']:.3f} at {r.threshold:.3f}", flush=True)
    results = []
    for xx in args.eval_langs:
        d = os.path.join(args.out, "sets")
        make_newstest_bucc(os.path.join(args.data, "dev/newstest"), xx, d)
        splits = {s: read_bucc(*(os.path.join(d, f"{xx}-en.{s}.{e}") for e in (xx, "en", "gold"))) for s in ("train", "test")}
        got = {s: candidate_rows(sp, enc, xx, cfg) for s, sp in splits.items()}
        row = {"pair": f"{xx}-en", "model": args.model}
        for name in ("absolute", "eq9", "eq10"):
            emb = {s: got[s][3] for s in splits}
            res = bucc_eval(emb["train"], emb["test"], MineConfig(score=name, strategy="max"))
            row[name] = res["test"]["f1"]
        curve = pr_curve(r.predict(got["train"][0].features), got["train"][1], splits["train"].gold)
        thr = float(curve["threshold"][int(np.argmax(curve["f1"]))])
        row["rescorer"] = evaluate_at(r.predict(got["test"][0].features), got["test"][1], splits["test"].gold, thr)["f1"]
        row["rescorer_stored_threshold"] = evaluate_at(r.predict(got["test"][0].features), got["test"][1],
                                                       splits["test"].gold, r.threshold)["f1"]
        row["gold_in_candidates"] = int(got["test"][2].sum())
        results.append(row)
        print(json.dumps({k: (round(100 * v, 2) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results, "meta": r.meta}, f, indent=1)


if __name__ == "__main__":
    main()
