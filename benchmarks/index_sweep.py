"""Recall@k against exact search, and search time, for FAISS indexes over real embeddings.

Usage: python -m benchmarks.index_sweep A.txt B.txt [--factory F ...] [--nprobe 16 64 256]
       [--k-factor 8 32] [--out .bench/sweep]

Embeds A and B with the shipped model into stores under --out (reused when present; e.g. the
files that benchmarks/mining_scale.py writes), builds each index over B once, then for every
(nprobe, k_factor) searches 2,000 random A rows for recall@4 against exact search and 20,000
for the time, given as seconds per 1M queries. k_factor matters only for Refine(...) indexes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from benchmarks.harness import timed, write_json


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--factory", nargs="+",
                    default=["IVF4096,SQ8", "IVF4096,Flat", "IVF4096,PQ128x4fs,Refine(SQfp16)"])
    ap.add_argument("--nprobe", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--k-factor", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--out", default=".bench/sweep")
    args = ap.parse_args()

    from benchmarks.common import recall_at_k
    from bimine.index.faiss_index import IndexConfig, build_index, knn_search
    from bimine.mining.knn import knn_exact
    from bimine.store import EmbeddingStore

    os.makedirs(args.out, exist_ok=True)
    stores = []
    for path, lang in ((args.a, "en"), (args.b, "de")):
        st = os.path.join(args.out, os.path.basename(path) + ".store")
        subprocess.run([sys.executable, "-m", "bimine", "embed", path, "-l", lang, "-o", st, "--store",
                        "--no-progress"], check=True)
        stores.append(EmbeddingStore.open(st))
    a, keys = stores[0].load(), stores[1].load().astype(np.float32)
    rng = np.random.default_rng(0)
    q = a[np.sort(rng.choice(len(a), 2000, replace=False))].astype(np.float32)
    qt = a[rng.choice(len(a), 20000, replace=False)].astype(np.float32)
    (exact_sims, exact), t = timed(lambda: knn_exact(q, keys, max(args.k, 100)))
    exact_s = t["wall_s"] / len(q) * 1e6
    exact = exact[:, : args.k]
    # how flat the neighbourhoods are: median cosine of the 1st, 4th, 10th and 100th neighbour
    flat = {f"median cos nn{j}": round(float(np.median(exact_sims[:, j - 1])), 3) for j in (1, 4, 10, 100)}
    print(json.dumps({"factory": "exact (Flat)", "n_keys": len(keys), "s_per_1M_queries": round(exact_s), **flat}),
          flush=True)
    results = []
    for fac in args.factory:
        idx, t = timed(lambda fac=fac: build_index(lambda: iter([(0, keys)]), len(keys), keys.shape[1],
                                                   IndexConfig(factory=fac)))
        build_s = t["wall_s"]
        for nprobe in args.nprobe:
            for kf in args.k_factor if idx.refines else [0]:
                idx.cfg = IndexConfig(factory=fac, nprobe=nprobe, k_factor=kf or 1)
                _, ids = knn_search(idx, iter([(0, q)]), len(q), args.k)
                r = recall_at_k(ids, exact, args.k)
                _, t = timed(lambda idx=idx: knn_search(idx, iter([(0, qt)]), len(qt), args.k))
                res = {"factory": fac, "n_keys": len(keys), "build_s": round(build_s, 1), "nprobe": idx.nprobe,
                       "k_factor": kf or None, f"recall@{args.k}": round(float(r), 4),
                       "s_per_1M_queries": round(t["wall_s"] / len(qt) * 1e6)}
                results.append(res)
                print(json.dumps(res), flush=True)
        del idx
    write_json(os.path.join(args.out, "results.json"), results)


if __name__ == "__main__":
    main()
