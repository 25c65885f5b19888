"""The noise-ratio experiment of paper 003 §5.1, on dev newstest, for every pair score.

Test set: the first 1,000 pairs of newstest2013 (en-fr by default); with a noise ratio r, the
targets of r x 1,000 of them (seeded positions) are replaced by targets of newstest2013
lines after 1,000 (003 takes them from held-out pairs of its test corpus). Every source is
scored against every target (the Cartesian product, 10^6 pairs, of which 1,000 x (1 - r)
are parallel), and each score's precision, recall and F1 are reported at the threshold with
the best F1 (as 003 Table 1), with and without 003 §5.2's greedy one-to-one post-processing.

Scores: the model's cosine; the ratio margin against the k = 4 nearest neighbours of each
side among the candidates (002 Eq. 2); the calibrated confidence (000), the classifier on
frozen embeddings (002) and the siamese BiGRU (003), each trained by ``bimine
train-classifier`` on en-fr pairs of ``shared/data/train`` (a seeded window of up to 8,000
pairs from each source) with newstest2012 as the dev set of the decision threshold; and the
combinations (002 Eq. 3: the sum of the min-max normalised scores, Eq. 4): margin + fc (002's
margin + classifier), margin + confidence, and all five.

    python -m benchmarks.filter_noise_ratio                # en-fr, default model
    python -m benchmarks.filter_noise_ratio --pair en-de --model e5-small
    python -m benchmarks.filter_noise_ratio --kinds bigru --bigru .bench/bigru/run/bigru.safetensors

Trained classifiers are cached under ``.bench/filter-noise/`` (delete to retrain); the table
goes to stdout, figures and JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time

import numpy as np

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
TRAIN_SOURCES = ("tatoeba-manythings/tatoeba", "python-docs/python-docs", "django-docs/django-docs",
                 "multi30k/multi30k", "gnome-help/gnome-help", "bible-sword/pairs/bible")
RATIOS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def _lines(path: str) -> list[str]:
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def training_pairs(src: str, tgt: str, per_source: int, seed: int) -> tuple[list[str], list[str], dict]:
    """A seeded contiguous window of up to ``per_source`` pairs from each training source of
    the pair (document order kept, for adjacent-sentence negatives), empty sides and repeated
    pairs left out."""
    rng = np.random.default_rng(seed)
    a_all, b_all, counts, seen = [], [], {}, set()
    for name in TRAIN_SOURCES:
        base = os.path.join(SHARED, "train", f"{name}.{src}-{tgt}")
        if not os.path.exists(f"{base}.{src}.gz"):
            continue
        a, b = _lines(f"{base}.{src}.gz"), _lines(f"{base}.{tgt}.gz")
        start = int(rng.integers(0, max(1, len(a) - per_source)))
        n = 0
        for x, y in zip(a[start: start + per_source], b[start: start + per_source]):
            if x.strip() and y.strip() and (x, y) not in seen:
                seen.add((x, y))
                a_all.append(x)
                b_all.append(y)
                n += 1
        counts[name.split("/")[-1]] = n
    return a_all, b_all, counts


def train_all(pair: str, model: str, folder: str, per_source: int, seed: int, kinds, epochs: dict) -> dict:
    src, tgt = pair.split("-")
    os.makedirs(folder, exist_ok=True)
    tr = os.path.join(folder, f"train.{pair}")
    if not os.path.exists(f"{tr}.{tgt}"):
        a, b, counts = training_pairs(src, tgt, per_source, seed)
        for side, lines in ((src, a), (tgt, b)):
            with open(f"{tr}.{side}.tmp", "w", encoding="utf-8") as f:
                f.writelines(x + "\n" for x in lines)
            os.replace(f"{tr}.{side}.tmp", f"{tr}.{side}")
        with open(f"{tr}.json", "w") as f:
            json.dump(counts, f)
    dev = os.path.join(SHARED, "dev", "newstest", f"newstest2012.{pair}")
    paths = {}
    tag = model.replace("/", "_")
    for kind in kinds:
        out = os.path.join(folder, f"{kind}.{pair}.{tag if kind != 'bigru' else 'tokens'}.e{epochs[kind]}.safetensors")
        if not os.path.exists(out):
            cmd = [sys.executable, "-m", "bimine", "train-classifier", kind, "--src", f"{tr}.{src}", "--tgt",
                   f"{tr}.{tgt}", "--src-lang", src, "--tgt-lang", tgt, "--dev-src", f"{dev}.{src}", "--dev-tgt",
                   f"{dev}.{tgt}", "-o", out, "-m", model, "--epochs", str(epochs[kind]), "--seed", str(seed)]
            print("$", " ".join(cmd), file=sys.stderr, flush=True)
            t = time.time()
            subprocess.run(cmd, check=True)
            print(f"  {kind}: {time.time() - t:.0f} s", file=sys.stderr, flush=True)
        paths[kind] = out
    return paths


def margin_matrix(sim: np.ndarray, k: int = 4) -> np.ndarray:
    """002 Eq. 2 on a full similarity matrix: cos(x, y) over the mean of the average cosine of
    x to its k nearest targets and of y to its k nearest sources."""
    k = min(k, sim.shape[0], sim.shape[1])
    rx = -np.partition(-sim, k - 1, axis=1)[:, :k].mean(1)
    ry = -np.partition(-sim, k - 1, axis=0)[:k, :].mean(0)
    return sim / ((rx[:, None] + ry[None, :]) / 2)


def minmax(m: np.ndarray) -> np.ndarray:
    lo, hi = np.nanmin(m), np.nanmax(m)
    return (m - lo) / (hi - lo) if hi > lo else np.zeros_like(m)


def greedy_one_to_one(m: np.ndarray, threshold: float) -> np.ndarray:
    """003 §5.2: the pairs at or above the threshold, best first, each source and target used
    once; returns a boolean matrix of the chosen pairs."""
    from bimine.filtering.select import greedy_one_to_one as g

    r, c = np.nonzero(m >= threshold)
    keep = g(r, c, m[r, c])
    out = np.zeros(m.shape, dtype=bool)
    out[r[keep], c[keep]] = True
    return out


def prf(pred: np.ndarray, gold: np.ndarray) -> tuple[float, float, float]:
    tp = float((pred & gold).sum())
    p = tp / max(pred.sum(), 1)
    r = tp / max(gold.sum(), 1)
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def evaluate(m: np.ndarray, gold: np.ndarray) -> dict:
    from bimine.scoring.logistic import best_f1_threshold

    t, p, r, f = best_f1_threshold(m.ravel(), gold.ravel())
    # the one-to-one variant: best F1 over thresholds after greedy post-processing (candidate
    # thresholds: quantiles of the scores of the top candidates)
    top = np.sort(m.ravel())[::-1][: max(4 * int(gold.sum()), 200)]
    best = (0.0, 0.0, 0.0, float("nan"))
    for th in np.unique(np.quantile(top, np.linspace(0, 1, 41))):
        pp, rr, ff = prf(greedy_one_to_one(m, th), gold)
        if ff > best[2]:
            best = (pp, rr, ff, float(th))
    return {"threshold": t, "P": p, "R": r, "F1": f, "P_1to1": best[0], "R_1to1": best[1], "F1_1to1": best[2],
            "threshold_1to1": best[3]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="en-fr")
    ap.add_argument("--model", default="default")
    ap.add_argument("--per-source", type=int, default=8000)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bigru-epochs", type=int, default=5)
    ap.add_argument("--kinds", default="confidence,fc,bigru")
    ap.add_argument("--bigru", default=None, metavar="PATH",
                    help="a BiGRU already trained (for example by benchmarks.bigru_train) in place of the one "
                         "this benchmark trains")
    ap.add_argument("--out", default=".bench/filter-noise")
    args = ap.parse_args(argv)
    if not os.path.isdir(SHARED):
        print(f"skipped: {SHARED} not found (the shared dev data)")
        return 0
    from bimine.encoders import load_encoder
    from bimine.scoring.classifiers import PairClassifier

    src, tgt = args.pair.split("-")
    kinds = [k for k in args.kinds.split(",") if k]
    epochs = {"confidence": 5, "fc": 10, "bigru": args.bigru_epochs}
    paths = train_all(args.pair, args.model, args.out, args.per_source, args.seed,
                      [k for k in kinds if not (k == "bigru" and args.bigru)], epochs)
    if args.bigru and "bigru" in kinds:
        paths["bigru"] = args.bigru
    clfs = {k: PairClassifier.load(p) for k, p in paths.items()}
    test = os.path.join(SHARED, "dev", "newstest", f"newstest2013.{args.pair}")
    a, b = _lines(f"{test}.{src}"), _lines(f"{test}.{tgt}")
    xs, ys, pool = a[: args.n], b[: args.n], b[args.n:]
    enc = load_encoder(args.model)
    u = enc.encode(xs, src)
    hs = clfs["bigru"].encode_texts(xs) if "bigru" in clfs else None
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(args.n)  # positions replaced first
    repl = rng.choice(len(pool), size=args.n, replace=False)
    results = {}
    t0 = time.time()
    for ratio in RATIOS:
        k = int(round(ratio * args.n))
        y_t = list(ys)
        for j in range(k):
            y_t[order[j]] = pool[repl[j]]
        gold = np.zeros((args.n, args.n), dtype=bool)
        parallel = np.setdiff1d(np.arange(args.n), order[:k])
        gold[parallel, parallel] = True
        v = enc.encode(y_t, tgt)
        sims = {"cosine": u @ v.T}
        sims["margin"] = margin_matrix(sims["cosine"])
        for kind, clf in clfs.items():
            if kind == "bigru":
                ht = clf.encode_texts(y_t)
                mat = np.empty((args.n, args.n))
                for r0 in range(0, args.n, 100):
                    blk = hs[r0: r0 + 100]
                    mat[r0: r0 + len(blk)] = clf.match_vectors(np.repeat(blk, args.n, 0), np.tile(ht, (len(blk), 1))
                                                               ).reshape(len(blk), -1)
                sims[kind] = mat
            else:
                sims[kind] = clf.score_matrix(xs, y_t, enc, src_lang=src, tgt_lang=tgt)
        singles = list(sims)
        for parts in (("margin", "fc"), ("margin", "confidence"), tuple(singles)):
            if len(parts) > 1 and all(p in sims for p in parts):
                name = "all five" if parts == tuple(singles) and len(parts) == 5 else " + ".join(parts)
                sims[f"combined ({name})"] = sum(minmax(sims[p]) for p in parts)
        results[f"{ratio:.1f}"] = {name: evaluate(m, gold) for name, m in sims.items()}
        print(f"noise {ratio:.1f}: " + ", ".join(f"{n} F1 {r['F1']:.3f}" for n, r in results[f"{ratio:.1f}"].items()),
              file=sys.stderr, flush=True)
    os.makedirs(args.out, exist_ok=True)
    meta = {"pair": args.pair, "model": args.model, "model_id": enc.model_id, "n": args.n, "seed": args.seed,
            "classifiers": {k: {"path": paths[k], **{x: c.config.get(x) for x in (
                "train_pairs", "epochs", "dev_f1", "dev_roc_auc", "threshold", "train_seconds", "train_seconds_total",
                "tokens", "hidden", "emb", "hard_negatives", "dev_cartesian_F1")}} for k, c in clfs.items()},
            "seconds": round(time.time() - t0, 1)}
    with open(os.path.join(args.out, f"noise-ratio.{args.pair}.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    print(table(results, meta))
    plot(results, os.path.join(args.out, f"noise-ratio.{args.pair}.png"), args.pair)
    return 0


def table(results: dict, meta: dict) -> str:
    names = list(next(iter(results.values())))
    lines = [f"Noise-ratio experiment (003 §5.1), {meta['pair']}, model {meta['model']} ({meta['model_id']}), "
             f"{meta['n']} x {meta['n']} candidate pairs; P/R/F1 (%) at the threshold with the best F1 "
             "[with greedy one-to-one]", ""]
    for ratio in ("0.0", "0.5", "0.9"):
        if ratio not in results:
            continue
        lines += [f"noise ratio {float(ratio):.0%}:", "", "| score | P | R | F1 | P 1-1 | R 1-1 | F1 1-1 |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for n in names:
            r = results[ratio][n]
            lines.append(f"| {n} | {100 * r['P']:.1f} | {100 * r['R']:.1f} | {100 * r['F1']:.1f} | "
                         f"{100 * r['P_1to1']:.1f} | {100 * r['R_1to1']:.1f} | {100 * r['F1_1to1']:.1f} |")
        lines.append("")
    lines += ["F1 (%) by noise ratio:", "", "| score | " + " | ".join(f"{float(r):.0%}" for r in results) + " |",
              "|---|" + "---:|" * len(results)]
    for n in names:
        lines.append(f"| {n} | " + " | ".join(f"{100 * results[r][n]['F1']:.1f}" for r in results) + " |")
    return "\n".join(lines)


def plot(results: dict, path: str, pair: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no figure", file=sys.stderr)
        return
    ratios = [float(r) for r in results]
    names = list(next(iter(results.values())))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), sharey=True)
    for ax, metric, title in zip(axes, ("P", "R", "F1"), ("Precision", "Recall", "F1")):
        for n in names:
            ax.plot([100 * x for x in ratios], [100 * results[r][n][metric] for r in results], marker="o", label=n)
        ax.set_title(f"{title} at the best-F1 threshold ({pair})")
        ax.set_xlabel("noise ratio (%)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("%")
    axes[2].legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"figure: {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
