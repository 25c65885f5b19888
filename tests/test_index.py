"""Every approximate index path against exact search on the same data."""

from __future__ import annotations

import numpy as np
import pytest

from bimine.errors import ConfigError
from bimine.index.faiss_index import (
    IndexConfig,
    KeyIndex,
    array_shards,
    auto_factory,
    build_index,
    knn_search,
    train_shared,
)
from bimine.mining.knn import knn_exact


def clustered(n, d=32, centers=64, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centers, d)).astype(np.float32)
    x = c[rng.integers(0, centers, n)] + 0.5 * rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def recall_at(k, approx_ids, exact_ids):
    return np.mean([len(set(a) & set(e)) / k for a, e in zip(approx_ids[:, :k], exact_ids[:, :k])])


@pytest.mark.parametrize("factory,nprobe,min_recall", [
    ("Flat", 1, 1.0),
    ("IVF64,Flat", 16, 0.97),
    ("IVF64,SQ8", 16, 0.93),
    ("HNSW32", 1, 0.9),
    pytest.param("OPQ8,IVF64,PQ8", 16, 0.3, marks=pytest.mark.slow),  # 22 s: -m slow (issue 72)
    # auto's choice from 300k keys, small: fast-scan PQ candidates re-scored with float16/8-bit codes
    ("IVF64,PQ16x4fs,Refine(SQfp16)", 16, 0.93),
    ("IVF64,PQ16x4fs,Refine(SQ8)", 16, 0.9),
    ("IVF64,PQ16x4fs", 16, 0.3),
    ("IVF64_HNSW32,Flat", 16, 0.95),  # lists to probe found by an HNSW graph over the centroids
])
def test_approximate_against_exact(factory, nprobe, min_recall):
    keys, queries = clustered(8000), clustered(500, seed=1)
    cfg = IndexConfig(factory=factory, nprobe=nprobe, train_size=4000)
    idx = build_index(array_shards(keys, 3000), len(keys), keys.shape[1], cfg)  # added shard by shard
    assert idx.ntotal == len(keys)
    sims, ids = knn_search(idx, array_shards(queries, 200)(), len(queries), 4)
    es, ei = knn_exact(queries, keys, 4)
    r = recall_at(4, ids, ei)
    assert r >= min_recall, (factory, r)
    if factory == "Flat":
        np.testing.assert_array_equal(ids, ei)
        np.testing.assert_allclose(sims, es, rtol=1e-5)


def test_auto_factory_by_size():
    assert auto_factory(10_000, 384) == "Flat"
    assert auto_factory(1_000_000, 384) == "IVF4096,PQ128x4fs,Refine(SQfp16)"
    assert auto_factory(10_000_000, 384) == "IVF16384,PQ128x4fs,Refine(SQ8)"
    assert auto_factory(100_000_000, 384).startswith("OPQ64,IVF")


def test_nprobe_default_and_refine_k_factor():
    keys, queries = clustered(8000), clustered(300, seed=1)
    idx = build_index(array_shards(keys), len(keys), 32, IndexConfig(factory="IVF64,PQ16x4fs,Refine(SQfp16)"))
    assert idx.nprobe == 6  # 3/32 of 64 lists
    assert KeyIndex(32, len(keys), IndexConfig(factory="IVF64_HNSW32,Flat")).nprobe == 6
    assert KeyIndex(384, 10**6, IndexConfig(factory="IVF4096,Flat")).nprobe == 384
    assert build_index(array_shards(keys), len(keys), 32, IndexConfig(factory="IVF64,Flat", nprobe=500)).nprobe == 64
    _, ei = knn_exact(queries, keys, 4)
    rec = {}
    for kf in (1, 32):
        idx.cfg = IndexConfig(factory=idx.factory, nprobe=64, k_factor=kf)
        rec[kf] = recall_at(4, knn_search(idx, array_shards(queries)(), len(queries), 4)[1], ei)
    assert rec[1] < 0.6 and rec[32] >= 0.95, rec  # re-scoring more candidates recovers the exact order


def test_one_training_shared_by_both_directions():
    both = clustered(11000)  # two sides drawn from one distribution, as two languages in one space
    x, y = both[:6000], both[6000:]
    cfg = IndexConfig(factory="IVF64,PQ16x4fs,Refine(SQfp16)", nprobe=16, train_size=4000)
    shared = train_shared([(array_shards(x), len(x)), (array_shards(y), len(y))], 32, cfg)
    assert shared is not None and not shared.needs_training and shared.ntotal == 0
    ix = build_index(array_shards(x), len(x), 32, cfg, trained=shared)
    iy = build_index(array_shards(y), len(y), 32, cfg, trained=shared)
    assert (shared.ntotal, ix.ntotal, iy.ntotal) == (0, 6000, 5000)  # copies, filled independently
    for idx, keys, queries in ((ix, x, y[:500]), (iy, y, x[:500])):
        exact = knn_exact(queries, keys, 4)[1]
        own = build_index(array_shards(keys), len(keys), 32, cfg)  # trained on its own keys only
        r_shared, r_own = (recall_at(4, knn_search(i, array_shards(queries)(), len(queries), 4)[1], exact)
                           for i in (idx, own))
        assert r_shared >= 0.88 and r_shared >= r_own - 0.03, (r_shared, r_own)
    flat = IndexConfig(factory="Flat")
    assert train_shared([(array_shards(x), len(x)), (array_shards(y), len(y))], 32, flat) is None
    # "auto" picks different indexes for 1k and 400k keys: nothing to share
    assert train_shared([(array_shards(x), 1000), (array_shards(y), 400_000)], 32, IndexConfig()) is None


def test_bad_factory_and_too_small_training():
    with pytest.raises(ConfigError, match="invalid FAISS factory"):
        build_index(array_shards(clustered(100)), 100, 32, IndexConfig(factory="Nonsense42"))
    with pytest.raises(ConfigError, match="at least 64 training vectors"):
        build_index(array_shards(clustered(50)), 50, 32, IndexConfig(factory="IVF64,Flat"))
