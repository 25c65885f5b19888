"""What a trained BiGRU ranks above the true pairs of the noise-ratio test (issue 58): its
scores of the Cartesian product of the first 1,000 pairs of newstest2013 en-fr (no noise).

Reports the ROC-AUC over all 10^6 candidates (the figure the dev ROC-AUC against 7 random
targets stands for), how many wrong targets outscore each source's own (its rank), the F1 at
the best threshold, whether the scores saturate, the share of the variance that is a per-source
or per-target offset (a "hub" target outscores the true one for many sources), and the share
of test tokens never seen in training; then the wrong pairs with the highest scores.

    python -m benchmarks.bigru_candidates .bench/filter-noise/bigru.en-fr.tokens.e3.safetensors \\
        --train .bench/filter-noise/train.en-fr
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

import numpy as np

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def logits(clf, src: list[str], tgt: list[str]) -> np.ndarray:
    """The BiGRU's logits (before the sigmoid) of every source with every target."""
    import torch

    hs, ht = clf.encode_texts(src), clf.encode_texts(tgt)
    n, m = len(src), len(tgt)
    out = np.empty((n, m))
    with torch.inference_mode():
        for r in range(0, n, 100):
            blk = torch.from_numpy(np.repeat(hs[r: r + 100], m, 0))
            out[r: r + 100] = clf.module.match(blk, torch.from_numpy(np.tile(ht, (len(blk) // m, 1)))).numpy(
            ).reshape(-1, m)
    return out


def analyse(path: str, n: int, train: str | None) -> dict:
    from bimine.scoring.classifiers import PairClassifier, roc_auc
    from bimine.scoring.logistic import best_f1_threshold

    test = os.path.join(SHARED, "dev", "newstest", "newstest2013.en-fr")
    with open(f"{test}.en", encoding="utf-8") as f:
        a = f.read().split("\n")[:n]
    with open(f"{test}.fr", encoding="utf-8") as f:
        b = f.read().split("\n")[:n]
    clf = PairClassifier.load(path)
    z = logits(clf, a, b)
    gold = np.eye(n, dtype=bool)
    own = np.diag(z)
    rank = (z > own[:, None]).sum(1)
    import torch

    sat = int((torch.sigmoid(torch.from_numpy(z).float()) == 1).sum())
    _, p, r, f1 = best_f1_threshold(z.ravel(), gold.ravel())
    rowm, colm = z.mean(1, keepdims=True), z.mean(0, keepdims=True)
    centred = z - rowm - colm + z.mean()
    out = {
        "model": os.path.basename(path), "n": n, "auc_cartesian": roc_auc(z.ravel(), gold.ravel()),
        "dev_auc_random_targets": clf.config.get("dev_roc_auc"),
        "best_F1": f1, "P": p, "R": r, "own_target_first": float((rank == 0).mean()),
        "median_rank_of_own_target": float(np.median(rank)), "mean_wrong_above_own": float(rank.mean()),
        "wrong_above_median_true": int((z[~gold] > np.median(own)).sum()),
        "saturated_float32": sat, "logit_range": [float(z.min()), float(z.max())],
        "variance_share_source_offset": float(rowm.var() / z.var()),
        "variance_share_target_offset": float(colm.var() / z.var()),
        "own_first_after_removing_offsets": float((centred.argmax(1) == np.arange(n)).mean()),
        "hubs": Counter(z.argmax(1).tolist()).most_common(3),
    }
    if train:
        tok = clf.tokenizer()
        seen: set[int] = set()
        for side in ("en", "fr"):
            with open(f"{train}.{side}", encoding="utf-8") as f:
                lines = f.read().split("\n")
            for ids in tok.many(lines):
                seen.update(ids)
        rows = [i for ids in tok.many(a + b) for i in ids]
        out["test_tokens_unseen_in_training"] = float(np.mean([i not in seen for i in rows]))
    wrong = np.where(gold, -np.inf, z)
    top = np.argsort(-wrong.ravel())[:5]
    out["top_wrong"] = [{"logit": float(z.flat[k]), "own_logit": float(own[k // n]), "src": a[k // n][:100],
                         "tgt": b[k % n][:100], "own_tgt": b[k // n][:100]} for k in top]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--train", default=None, help="the training files' stem (STEM.en, STEM.fr): unseen-token share")
    args = ap.parse_args(argv)
    if not os.path.isdir(SHARED):
        print(f"skipped: {SHARED} not found (the shared dev data)")
        return 0
    for path in args.models:
        r = analyse(path, args.n, args.train)
        print(f"## {r['model']}")
        for k, v in r.items():
            if k not in ("model", "top_wrong"):
                print(f"- {k}: {round(v, 4) if isinstance(v, float) else v}")
        print("- highest-scoring wrong pairs:")
        for w in r["top_wrong"]:
            print(f"  - logit {w['logit']:.2f} (own target {w['own_logit']:.2f}): {w['src']!r} -> {w['tgt']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
