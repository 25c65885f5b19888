"""Per-stage constants of mining, measured on this machine on one core each, and the cost
model of docs/distributed.md for N x N lines on W workers built from them.

Usage: python -m benchmarks.cost_model [--sides .bench/ray] [--out .bench/cost] [--n 100000000]

Embeddings: the default model on the first 300,000 lines of the sides ``benchmarks.ray_mine``
writes (``a.300000.txt``: keys, ``b.300000.txt``: queries); run that benchmark first, or
``--sides`` a folder holding such files. Every FAISS call runs on one thread, as a mining task
does. Measured:

- embed: lines/s of the default model on one thread (20,000 lines of side A, in process);
- coarse: seconds per query to find the ``nprobe`` nearest of ``nlist`` centroids (the IVF
  quantiser every key shard's index runs again for each query), nlist 4,096 to 32,768;
- scan: seconds per code scanned and per list probed, per kind of code (4-bit fast-scan
  PQ128 with float16 re-scoring, the <= 20M default; OPQ64 + 8-bit PQ64, the > 20M default),
  a least-squares fit over searches of indexes of 100,000 and 300,000 keys (IVF1024) at
  ``nprobe`` 16 and 96; the intercept less the quantiser is the rest of a shard's cost per
  query (re-scoring, heaps);
- add: seconds per key added (coarse assignment + encoding) at nlist 1,024; at other nlist
  the quantiser's difference is added;
- train: k-means seconds for 40 x nlist samples at nlist 512 to 2,048 (fit: c x nlist^2).

The model (per direction, summed over both): embed 2N / (W r); fill N t_add / W; search
N x [(N/S) (t_coarse + t_shard + f nlist t_list) + f N t_code] / W with f the fraction of
the lists probed (3/32, the default); train once, on one worker. Network: the key-shard indexes each read
by every search task, the neighbour lists (k x 12 bytes a query), the text sent to the
embedding tasks; workers are cores, 16 to a node, and Ray copies each key index to a node
once (its tasks then read it from the node's shared memory, if the node's object store holds
all of them). It is checked against the measured 300k run of docs/benchmarks.md §10.
Results: ``OUT/constants.json`` (reused when present: ``--remeasure`` to measure again).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from functools import partial

import numpy as np

from benchmarks.harness import machine, table, timed, write_json

K = 4
NPROBE_FRACTION = 3 / 32  # the default nprobe (bimine.index.faiss_index.effective_nprobe)
CHUNK = 8192  # query rows per search call (faiss_index.SEARCH_CHUNK)
CORES_PER_NODE = 16  # the model's workers are cores, 16 to a node
COLUMNS = ("workers", "key shard", "embed", "train", "fill", "search", "total", "quantiser share of search",
           "memory/worker", "key indexes (object store/node)", "disk", "network: indexes to nodes / lists / text")


def embeddings(sides: str, out: str) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Keys and queries (300,000 each, float32) cached in OUT; the one-thread embedding rate
    (lines/s) and the mean bytes per line of text."""
    from bimine.encoders import load_encoder

    enc = load_encoder("default")
    files = [os.path.join(sides, f"{s}.300000.txt") for s in "ab"]
    for f in files:
        if not os.path.exists(f):
            raise SystemExit(f"{f}: missing; run python -m benchmarks.ray_mine --n 300000 first")
    cached = [os.path.join(out, f"{s}.npy") for s in "ab"]
    lines_a = open(files[0], encoding="utf-8").read().splitlines()
    one = enc.spec.with_threads(1).load()
    sample = lines_a[:20000]
    one.encode(sample[:512], "en")  # warm-up (compiled kernels)
    rate = len(sample) / timed(lambda: one.encode(sample, "en"), repeat=3)[1]["wall_min_s"]
    text_bytes = os.path.getsize(files[0]) / len(lines_a)
    arrays = []
    for f, c in zip(files, cached):
        if not os.path.exists(c):
            lines = open(f, encoding="utf-8").read().splitlines()
            np.save(c, enc.encode(lines, "en").astype(np.float32))
        arrays.append(np.load(c))
    return arrays[0], arrays[1], rate, text_bytes


def measure(keys: np.ndarray, queries: np.ndarray) -> dict:
    import faiss

    faiss.omp_set_num_threads(1)
    d = keys.shape[1]
    q = np.ascontiguousarray(queries[:CHUNK])
    rng = np.random.default_rng(0)
    out: dict = {"d": d, "keys": len(keys), "queries_timed": len(q)}

    # the coarse quantiser: nprobe nearest of nlist centroids (random unit centroids: the cost
    # does not depend on their values)
    coarse = {}
    for nlist in (1024, 2048, 4096, 8192, 16384, 32768):
        cent = rng.standard_normal((nlist, d)).astype(np.float32)
        cent /= np.linalg.norm(cent, axis=1, keepdims=True)
        quant = faiss.IndexFlatIP(d)
        quant.add(cent)
        nprobe = max(1, int(NPROBE_FRACTION * nlist))
        coarse[nlist] = timed(lambda quant=quant, nprobe=nprobe: quant.search(q, nprobe))[1]["wall_s"] / len(q)
        print(f"coarse nlist {nlist} nprobe {nprobe}: {coarse[nlist] * 1e6:.0f} us/query", flush=True)
    out["coarse_s_per_query"] = coarse

    # k-means for 40 x nlist samples
    train = {}
    for nlist in (512, 1024, 2048):
        sample = keys[rng.choice(len(keys), 40 * nlist, replace=False)]
        quant = faiss.IndexFlatIP(d)
        ivf = faiss.IndexIVFFlat(quant, d, nlist, faiss.METRIC_INNER_PRODUCT)
        train[nlist] = timed(partial(ivf.train, sample))[1]["wall_s"]
        print(f"train IVF{nlist} on {len(sample)}: {train[nlist]:.1f} s", flush=True)
    out["train_s"] = train
    out["train_c"] = float(np.mean([train[n] / n**2 for n in train]))

    # scan cost per code, and what else a shard costs per query, for the two code kinds
    scan = {}
    for name, factory, nlist, refine in (("pq128x4fs+refine", "IVF1024,PQ128x4fs,Refine(SQfp16)", 1024, True),
                                         ("opq64+pq64", "OPQ64,IVF1024,PQ64", 1024, False)):
        idx = faiss.index_factory(d, factory, faiss.METRIC_INNER_PRODUCT)
        t_train = timed(partial(idx.train, keys[rng.choice(len(keys), 60000, replace=False)]))[1]["wall_s"]
        parts = {}
        for n in (len(keys) // 3, len(keys)):  # two list lengths: the per-list and the per-code cost apart
            parts[n] = faiss.clone_index(idx)
            t_add = timed(partial(parts[n].add, keys[:n]))[1]["wall_s"] / n
        rows, times = [], []
        for n, part in parts.items():
            if refine:
                part.k_factor = 32
            for nprobe in (16, 96):
                faiss.extract_index_ivf(part).nprobe = nprobe
                times.append(timed(lambda part=part: part.search(q, K))[1]["wall_s"] / len(q))
                rows.append([1.0, nprobe, nprobe * n / nlist])
        (a, t_list, t_code), *_ = np.linalg.lstsq(np.array(rows), np.array(times), rcond=None)
        shard = max(0.0, a - coarse[nlist])
        scan[name] = {"factory": factory, "t_code_s": float(t_code), "t_list_s": float(t_list),
                      "t_shard_s": float(shard), "t_add_s_at_nlist1024": t_add, "train_s": t_train,
                      "bytes_per_key": _bytes_per_key(parts[len(keys)]), "fit_rows": rows, "s_per_query": times}
        print(f"{name}: {t_code * 1e9:.2f} ns/code, {t_list * 1e6:.2f} us/list probed, {shard * 1e6:.0f} us/query/shard "
              f"besides the quantiser and lists, add {t_add * 1e6:.1f} us/key at nlist 1024, "
              f"{scan[name]['bytes_per_key']:.0f} B/key", flush=True)
    out["scan"] = scan

    # the 300k run's settings (docs/benchmarks.md §10), one thread: IVF2048, nprobe 192, 3 key shards of 100k
    idx = faiss.index_factory(d, "IVF2048,PQ128x4fs,Refine(SQfp16)", faiss.METRIC_INNER_PRODUCT)
    idx.train(keys[rng.choice(len(keys), 40 * 2048, replace=False)])
    shards = []
    for a in range(0, len(keys), 100000):
        shards.append(faiss.clone_index(idx))
        shards[-1].add(keys[a : a + 100000])
        faiss.extract_index_ivf(shards[-1]).nprobe = 192
        shards[-1].k_factor = 32
    out["check_300k_s_per_query"] = timed(lambda: [sh.search(q, K) for sh in shards])[1]["wall_s"] / len(q)
    print(f"check: 300k settings, one thread: {out['check_300k_s_per_query'] * 1e6:.0f} us/query", flush=True)
    return out


def _bytes_per_key(idx) -> float:
    import faiss

    return len(faiss.serialize_index(idx)) / idx.ntotal


def model(c: dict, n: int, workers: int, shard: int, piece: int, kind: str, nlist: int) -> dict:
    """Seconds (both directions), memory per worker, disk and network for N x N."""
    sc = c["scan"][kind]
    t_coarse = np.interp(nlist, sorted(c["coarse_s_per_query"]), [c["coarse_s_per_query"][k] for k in
                                                                    sorted(c["coarse_s_per_query"])])
    shards = -(-n // shard)
    nprobe = NPROBE_FRACTION * nlist
    per_query = shards * (t_coarse + sc["t_shard_s"] + nprobe * sc["t_list_s"]) + NPROBE_FRACTION * n * sc["t_code_s"]
    # adding a key: its coarse assignment (grows with nlist, as a query's) plus encoding
    t_add = sc["t_add_s_at_nlist1024"] + max(0.0, t_coarse - c["coarse_s_per_query"][1024])
    seconds = {
        "embed": 2 * n / (workers * c["embed_lines_per_s"]),
        "train": c["train_c"] * nlist**2 + sc["train_s"],
        "fill": 2 * n * t_add / workers,
        "search": 2 * n * per_query / workers,
    }
    index_shard = shard * sc["bytes_per_key"] + nlist * c["d"] * 4
    search_tasks = -(-n // piece)
    return {
        "seconds": seconds, "total_s": sum(seconds.values()),
        "quantiser_share": shards * t_coarse / per_query,
        # a fill task holds its shard as float32 and the index; a search task a query piece and one index
        "memory_per_worker_gb": max(shard * c["d"] * 4 + index_shard,
                                    index_shard + piece * c["d"] * 4 + piece * K * 12 * 2) / 1e9,
        "disk_gb": (2 * n * c["d"] * 2 + 2 * shards * index_shard) / 1e9,
        # Ray copies an object to a node once; the node's tasks read it from shared memory
        "object_store_per_node_gb": shards * index_shard / 1e9,
        "network_gb": {"index_reads": 2 * -(-workers // CORES_PER_NODE) * shards * index_shard / 1e9,
                       "index_reads_by_tasks": 2 * search_tasks * shards * index_shard / 1e9,
                       "neighbour_lists": 2 * n * K * 12 / 1e9,
                       "text_to_embed": 2 * n * c["text_bytes_per_line"] / 1e9},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sides", default=".bench/ray")
    ap.add_argument("--out", default=".bench/cost")
    ap.add_argument("--n", type=int, default=100_000_000)
    ap.add_argument("--remeasure", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "constants.json")
    if os.path.exists(path) and not args.remeasure:
        c = json.load(open(path))
        c["coarse_s_per_query"] = {int(k): v for k, v in c["coarse_s_per_query"].items()}
    else:
        keys, queries, rate, text_bytes = embeddings(args.sides, args.out)
        print(f"embed: {rate:,.0f} lines/s on one thread; {text_bytes:.0f} bytes/line of text", flush=True)
        c = {"date": time.strftime("%Y-%m-%d %H:%M"), "embed_lines_per_s": rate, "text_bytes_per_line": text_bytes,
             **measure(keys, queries), "machine": machine(busy=False)}
        write_json(path, c)

    # check: the 300k run of docs/benchmarks.md §10 (IVF2048, nprobe 192, 3 key shards, 2 cores)
    sc = c["scan"]["pq128x4fs+refine"]
    t_coarse_2048 = c["coarse_s_per_query"][2048]
    per_q = 3 * (t_coarse_2048 + sc["t_shard_s"] + 192 * sc["t_list_s"]) + 192 / 2048 * 300000 * sc["t_code_s"]
    print(f"check: the model's {per_q * 1e6:.0f} us/query at the 300k run's settings against "
          f"{c['check_300k_s_per_query'] * 1e6:.0f} us measured on one thread; 300k queries on 2 cores: "
          f"{300000 * per_q / 2:.0f} s predicted, 115.2 s and 109.8 s measured per direction "
          "(docs/benchmarks.md §10)")

    from bimine.index.faiss_index import auto_factory, nlist_of

    factory = auto_factory(args.n, c["d"])
    nlist = nlist_of(factory)
    kinds = [("opq64+pq64" if factory.startswith("OPQ") else "pq128x4fs+refine", factory)]
    if kinds[0][0] == "opq64+pq64":  # and the <= 20M kind of codes at the same nlist, for comparison
        kinds.append(("pq128x4fs+refine", f"IVF{nlist},PQ{c['d'] // 3}x4fs,Refine(SQfp16)"))
    for kind, fac in kinds:
        print(f"\nN = {args.n:,} a side, index {fac} ({kind} constants), nprobe 3/32 of the lists, k = {K}; "
              "one worker = one core")
        rows = []
        for shard in (1_000_000, 10_000_000):
            for w in (16, 64, 256, 1024):
                piece = min(shard, -(-args.n // (4 * w)))
                m = model(c, args.n, w, shard, piece, kind, nlist)
                s = m["seconds"]
                net = m["network_gb"]
                rows.append([w, f"{shard / 1e6:g}M", *(_h(s[k]) for k in ("embed", "train", "fill", "search")),
                             f"**{_h(m['total_s'])}**", f"{100 * m['quantiser_share']:.0f}%",
                             f"{m['memory_per_worker_gb']:.1f} GB", f"{m['object_store_per_node_gb']:.0f} GB",
                             f"{m['disk_gb']:,.0f} GB",
                             f"{net['index_reads']:,.0f} / {net['neighbour_lists']:.1f} / {net['text_to_embed']:.1f} GB"])
        print(table([dict(zip(COLUMNS, r)) for r in rows], COLUMNS))


def _h(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 3 * 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


if __name__ == "__main__":
    main()
