"""How far an approximate FAISS index moves the in-corpus margin of ``bimine filter`` (issue 10),
and what it saves.

Usage (from the repository root)::

    python -m benchmarks.margin_index [--pairs 200000] [--configs ...] [--json .bench/margin_index.json]

The margin score (paper 002 Eq. 2) sets each pair's cosine against the mean cosine of each
side's ``k`` = 4 nearest neighbours among all sentences of the other side of the corpus. Exact
search costs ~n^2 (two directions); an IVF index scans a few lists per query. The margin needs
only the *mean similarity* of the neighbours, not the neighbours themselves, so it tolerates
a lower recall than mining does (a missed neighbour is replaced by the next one, a little less
similar).

Input: the first ``--pairs`` en-fr pairs of the shared training data (the same file as
``benchmarks.filter_speed``), embedded once with the shipped default model (cached in
``.bench/margin_index``). For exact search (Flat) and each index configuration: wall seconds
of :func:`bimine.scoring.pair_scores.corpus_margin` (training, filling and both searches; 2
threads), recall@4 of 2,000 queries per direction against the exact lists, and against the
exact margin: the mean and 99th-percentile absolute difference, Spearman's rank correlation,
and the share of pairs whose keep/drop decision changes when the lowest 10 % (or 30 %) by
margin are dropped.
"""

from __future__ import annotations

import json
import os

import numpy as np

from benchmarks.filter_speed import DEFAULT_DATA, make_inputs
from benchmarks.harness import Bench

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, ".bench", "margin_index")


def embeddings(files: dict, n: int) -> tuple[np.ndarray, np.ndarray]:
    from bimine import load_encoder

    os.makedirs(OUT, exist_ok=True)
    paths = [os.path.join(OUT, f"{lang}-{n}.npy") for lang in ("en", "fr")]
    if all(os.path.exists(p) for p in paths):
        return np.load(paths[0]), np.load(paths[1])
    enc = load_encoder()
    out = []
    for lang, p in zip(("en", "fr"), paths):
        with open(files[lang], encoding="utf-8", newline="") as f:
            texts = f.read().rstrip("\n").split("\n")
        e = enc.encode(texts, lang).astype(np.float32)
        np.save(p + ".tmp.npy", e)
        os.replace(p + ".tmp.npy", p)
        out.append(e)
    return out[0], out[1]


def knn_lists(u: np.ndarray, v: np.ndarray, index, queries: np.ndarray) -> np.ndarray:
    """Top-4 ids of ``queries`` rows of u among v with the index config ``index`` (for recall)."""
    from bimine.mining.pipeline import knn_both_ways, side_from_array
    from bimine.mining.spec import MineConfig

    _, ids, _, _ = knn_both_ways(side_from_array(u[queries], np.arange(len(queries))),
                                 side_from_array(v, np.arange(len(v))), MineConfig(k=4, index=index),
                                 need_backward=False)
    return ids


def recall(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean([len(set(x) & set(y)) / 4 for x, y in zip(a.tolist(), b.tolist())]))


def main() -> None:
    bench = Bench("margin_index", __doc__, json_default=os.path.join(REPO, ".bench", "margin_index.json"))
    bench.arg("--data", default=DEFAULT_DATA)
    bench.arg("--pairs", type=int, default=200_000)
    bench.arg("--configs", nargs="+", default=["auto:0", "fast:4", "fast:8", "fast:16", "fast:64"],
              help="FACTORY:NPROBE; 'fast' is IVF(4 sqrt(n) lists),PQ(d/3)x4fs,Refine(SQfp16) at k_factor 8; "
                   "'auto' is filter's default; Flat is always run")
    args = bench.parse()

    import faiss
    from scipy.stats import spearmanr

    from bimine.index.faiss_index import IndexConfig
    from bimine.scoring.pair_scores import corpus_margin, margin_index

    faiss.omp_set_num_threads(2)
    files, _ = make_inputs(args.data, [args.pairs])
    u, v = embeddings(files[args.pairs], args.pairs)
    n, d = u.shape
    rng = np.random.default_rng(0)
    q = np.sort(rng.choice(n, size=min(2000, n), replace=False))
    flat = IndexConfig(factory="Flat")
    exact, t_exact = bench.timed(lambda: corpus_margin(u, v, index=flat))
    exact_ids = knn_lists(u, v, flat, q)
    rows = bench.rows
    rows.append({"config": "Flat (exact)", "seconds": round(t_exact["wall_s"], 1), "recall@4": 1.0})
    for spec in args.configs:
        name, _, probe = spec.rpartition(":")
        if name == "auto":
            cfg = margin_index(n, d)
        elif name == "fast":  # filter's IVF at another nprobe
            cfg = margin_index(n, d, exact_below=0, nprobe=int(probe))
        else:
            cfg = IndexConfig(factory=name, nprobe=int(probe), k_factor=8)
        got, sec = bench.timed(lambda cfg=cfg: corpus_margin(u, v, index=cfg))
        diff = np.abs(got - exact)
        row = {"config": f"{cfg.factory}, nprobe {cfg.nprobe}, k_factor {cfg.k_factor}" + (" (default)" if name == "auto" else ""),
               "seconds": round(sec["wall_s"], 1),
               "recall@4": round(recall(knn_lists(u, v, cfg, q), exact_ids), 3),
               "mean |diff|": float(f"{diff.mean():.2g}"), "p99 |diff|": float(f"{np.quantile(diff, 0.99):.2g}"),
               "spearman": round(float(spearmanr(got, exact).statistic), 5)}
        for frac in (0.1, 0.3):
            cut_e, cut_g = np.quantile(exact, frac), np.quantile(got, frac)
            row[f"decisions changed, drop {int(frac * 100)} %"] = round(float(np.mean((exact >= cut_e) != (got >= cut_g))), 5)
        rows.append(row)
        print(json.dumps(row), flush=True)
    bench.extra.update(pairs=n, dim=d, margin="ratio, k = 4")
    res = bench.save()
    keys = list(rows[-1])
    print(f"\n{n:,} pairs, d = {d}, {res['date']}\n")
    print(bench.table([{k: r.get(k, "") for k in keys} for r in rows], keys))


if __name__ == "__main__":
    main()
